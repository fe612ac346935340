// Buffer allocation: the heap checked before the driver is asked, so an oversized request is a
// clean out_of_memory rather than whatever the driver does near its limit; the memory comes from
// the device's pool.
#include "backends/vulkan/memory.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

bool fits_allocation(const DeviceCaps& caps, std::uint64_t bytes) noexcept {
  return bytes <= caps.heap_bytes && bytes <= caps.max_allocation_size - 4096;
}

Allocation* allocate_buffer(DeviceContext& ctx, std::size_t bytes, bool staging) {
  const DeviceCaps& caps = ctx.caps();
  if (staging && !caps.has_staging) {
    throw Error(ErrorCode::unsupported, "[vulkan] vulkan:" + std::to_string(ctx.index()) +
                                            " has no host-visible memory to stage transfers through");
  }
  const std::string where = " on vulkan:" + std::to_string(ctx.index()) + " (" + caps.name + ")";
  if (!fits_allocation(caps, bytes)) {
    throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where +
                                              " exceed its heap (" + std::to_string(caps.heap_bytes) +
                                              " bytes) or its largest allocation (" +
                                              std::to_string(caps.max_allocation_size) + " bytes)");
  }
  const bool mapped = staging || caps.host_coherent;
  const std::uint32_t type = staging ? caps.staging_type : caps.memory_type;
  // The data is bound at the guard's end, so the guard is a multiple of the binding alignment.
  const std::size_t guard = mapped ? std::max<std::size_t>(k_guard_bytes, caps.min_storage_offset_alignment) : 0;
  auto a = std::make_unique<Allocation>();
  a->bytes = bytes;
  a->capacity = bytes ? (bytes + 3) / 4 * 4 : 4;  // whole words: a binding of the data spans them
  a->guard = guard;
  a->size = a->capacity + 2 * guard;
  a->ctx = &ctx;
  static std::atomic<std::uint64_t> next_id{1};
  a->id = next_id.fetch_add(1, std::memory_order_relaxed);
  const auto& dev = ctx.device();
  vk::BufferCreateInfo info({}, a->size,
                            vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                                vk::BufferUsageFlagBits::eTransferDst,
                            vk::SharingMode::eExclusive);
  // A driver's out of memory names the request; the pool's errors do already.
  auto named = [&](const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
    throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where + ": " + e.what());
  };
  vk::MemoryRequirements req;
  try {
    a->buffer = TRINE_VK(dev.createBuffer(info));
    req = a->buffer.getMemoryRequirements();
  } catch (const Error& e) {
    named(e);
  }
  if (!(req.memoryTypeBits & (1u << type))) {
    throw Error(ErrorCode::internal, "[allocate] storage buffers cannot use the memory type chosen" + where);
  }
  a->span = ctx.memory_pool().allocate(req, type, mapped, bytes);
  try {
    TRINE_VK(a->buffer.bindMemory(a->span.memory, a->span.offset));
  } catch (const Error& e) {
    named(e);
  }
  a->mapped = a->span.mapped;
  if (a->mapped) {  // the guards only: the data's pages are first touched by whoever fills them
    std::memset(a->mapped, k_sentinel, guard);
    std::memset(a->mapped + guard + bytes, k_sentinel, a->size - guard - bytes);
  }
  return a.release();
}

Allocation::~Allocation() {
  buffer.clear();
  if (ctx) ctx->memory_pool().release(span);
}

void free_buffer(Allocation* a) noexcept { delete a; }

void reuse_buffer(Allocation& a, std::size_t bytes) noexcept {
  a.bytes = std::min(bytes, a.capacity);
  if (a.mapped) std::memset(a.mapped + a.guard + a.bytes, k_sentinel, a.guard);
}

bool guards_intact(const Allocation& a) noexcept {
  if (!a.mapped) return true;
  const unsigned char* back = a.mapped + a.guard + a.bytes;
  for (std::size_t i = 0; i < a.guard; ++i)
    if (a.mapped[i] != k_sentinel || back[i] != k_sentinel) return false;
  return true;
}

}  // namespace trine::vulkan
