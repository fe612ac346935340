// Buffer allocation: the heap checked before the driver is asked, so an oversized request is a
// clean out_of_memory rather than whatever the driver does near its limit.
#include "backends/vulkan/memory.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

Allocation* allocate_buffer(DeviceContext& ctx, std::size_t bytes) {
  const DeviceCaps& caps = ctx.caps();
  const std::string where = " on vulkan:" + std::to_string(ctx.index()) + " (" + caps.name + ")";
  // The data is bound at the guard's end, so the guard is a multiple of the binding alignment.
  const std::size_t guard =
      caps.host_coherent ? std::max<std::size_t>(k_guard_bytes, caps.min_storage_offset_alignment) : 0;
  const std::uint64_t padded = (static_cast<std::uint64_t>(bytes) + 15) / 16 * 16;
  const std::uint64_t size = padded + 2 * guard + (padded == 0 ? 16 : 0);
  if (bytes > caps.heap_bytes || size > caps.max_allocation_size) {
    throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where +
                                              " exceed its heap (" + std::to_string(caps.heap_bytes) +
                                              " bytes) or its largest allocation (" +
                                              std::to_string(caps.max_allocation_size) + " bytes)");
  }
  auto a = std::make_unique<Allocation>();
  a->bytes = bytes;
  a->guard = guard;
  a->size = static_cast<std::size_t>(size);
  a->device = ctx.index();
  const auto& dev = ctx.device();
  try {
    vk::BufferCreateInfo info({}, size,
                              vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                                  vk::BufferUsageFlagBits::eTransferDst,
                              vk::SharingMode::eExclusive);
    a->buffer = TRINE_VK(dev.createBuffer(info));
    const vk::MemoryRequirements req = a->buffer.getMemoryRequirements();
    if (!(req.memoryTypeBits & (1u << caps.memory_type))) {
      throw Error(ErrorCode::internal, "[allocate] storage buffers cannot use the memory type chosen" + where);
    }
    a->memory = TRINE_VK(dev.allocateMemory(vk::MemoryAllocateInfo(req.size, caps.memory_type)));
    TRINE_VK(a->buffer.bindMemory(*a->memory, 0));
    if (caps.host_coherent) {
      a->mapped = static_cast<unsigned char*>(TRINE_VK(a->memory.mapMemory(0, VK_WHOLE_SIZE)));
      std::memset(a->mapped, k_sentinel, guard);
      std::memset(a->mapped + guard + bytes, k_sentinel, a->size - guard - bytes);
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::out_of_memory) {
      throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where + ": " + e.what());
    }
    throw;
  }
  return a.release();
}

void free_buffer(Allocation* a) noexcept { delete a; }

bool guards_intact(const Allocation& a) noexcept {
  if (!a.mapped) return true;
  for (std::size_t i = 0; i < a.guard; ++i)
    if (a.mapped[i] != k_sentinel) return false;
  for (std::size_t i = a.guard + a.bytes; i < a.size; ++i)
    if (a.mapped[i] != k_sentinel) return false;
  return true;
}

}  // namespace trine::vulkan
