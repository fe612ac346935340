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

namespace {

// Size classes: a quarter of the next power of two (at least 256 bytes), so a reused buffer wastes
// under 25% and nearby sizes share a class.
std::size_t capacity_for(std::size_t bytes) {
  std::size_t p2 = 256;
  while (p2 < bytes) p2 <<= 1;
  const std::size_t granule = std::max<std::size_t>(256, p2 / 4);
  return std::max<std::size_t>(granule, (bytes + granule - 1) / granule * granule);
}

// Fresh guards after `bytes` (the rest of the class) for a reused allocation.
void reset_tail(Allocation& a) {
  if (a.mapped) std::memset(a.mapped + a.guard + a.bytes, k_sentinel, a.size - a.guard - a.bytes);
}

Allocation* create_buffer(DeviceContext& ctx, std::size_t bytes, std::size_t capacity, bool staging,
                          const std::string& where) {
  const DeviceCaps& caps = ctx.caps();
  const bool mapped = staging || caps.host_coherent;
  const std::uint32_t type = staging ? caps.staging_type : caps.memory_type;
  // The data is bound at the guard's end, so the guard is a multiple of the binding alignment.
  const std::size_t guard = mapped ? std::max<std::size_t>(k_guard_bytes, caps.min_storage_offset_alignment) : 0;
  const std::uint64_t size = static_cast<std::uint64_t>(capacity) + 2 * guard;
  auto a = std::make_unique<Allocation>();
  a->bytes = bytes;
  a->capacity = capacity;
  a->guard = guard;
  a->size = static_cast<std::size_t>(size);
  a->ctx = &ctx;
  a->staging = staging;
  const auto& dev = ctx.device();
  vk::BufferCreateInfo info({}, size,
                            vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                                vk::BufferUsageFlagBits::eTransferDst,
                            vk::SharingMode::eExclusive);
  a->buffer = TRINE_VK(dev.createBuffer(info));
  const vk::MemoryRequirements req = a->buffer.getMemoryRequirements();
  if (!(req.memoryTypeBits & (1u << type))) {
    throw Error(ErrorCode::internal, "[allocate] storage buffers cannot use the memory type chosen" + where);
  }
  a->memory = TRINE_VK(dev.allocateMemory(vk::MemoryAllocateInfo(req.size, type)));
  TRINE_VK(a->buffer.bindMemory(*a->memory, 0));
  if (mapped) {
    a->mapped = static_cast<unsigned char*>(TRINE_VK(a->memory.mapMemory(0, VK_WHOLE_SIZE)));
    std::memset(a->mapped, k_sentinel, guard);
    reset_tail(*a);
  }
  return a.release();
}

}  // namespace

Allocation* BufferCache::take(std::size_t capacity, bool staging) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find({capacity, staging});
  if (it == free_.end()) return nullptr;
  Allocation* a = it->second;
  free_.erase(it);
  cached_ -= a->capacity;
  return a;
}

void BufferCache::put(Allocation* a) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + a->capacity <= budget_) {
      free_.emplace(std::make_pair(a->capacity, a->staging), a);
      cached_ += a->capacity;
      return;
    }
  }
  delete a;
}

void BufferCache::clear() noexcept {
  std::multimap<std::pair<std::size_t, bool>, Allocation*> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    cached_ = 0;
  }
  for (auto& [size, a] : all) delete a;
}

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
  // Near the largest allocation, no rounding up to a class.
  std::size_t capacity = capacity_for(bytes);
  if (capacity + 4096 > caps.max_allocation_size) capacity = (bytes + 255) / 256 * 256;
  if (Allocation* a = ctx.buffer_cache().take(capacity, staging)) {
    a->bytes = bytes;
    reset_tail(*a);
    return a;
  }
  try {
    return create_buffer(ctx, bytes, capacity, staging, where);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
  }
  // Out of memory: give the cached buffers back to the driver and try once more.
  ctx.buffer_cache().clear();
  try {
    return create_buffer(ctx, bytes, capacity, staging, where);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::out_of_memory) {
      throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where + ": " + e.what());
    }
    throw;
  }
}

void free_buffer(Allocation* a) noexcept {
  if (!a) return;
  a->ctx->buffer_cache().put(a);
}

bool guards_intact(const Allocation& a) noexcept {
  if (!a.mapped) return true;
  for (std::size_t i = 0; i < a.guard; ++i)
    if (a.mapped[i] != k_sentinel) return false;
  for (std::size_t i = a.guard + a.bytes; i < a.size; ++i)
    if (a.mapped[i] != k_sentinel) return false;
  return true;
}

}  // namespace trine::vulkan
