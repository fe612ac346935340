// Storage buffers: one VkBuffer per allocation, bound in memory from the device's pool (pool.hpp:
// a piece of a shared block, or memory of its own when large), mapped for good when the memory is
// host-visible and coherent. Reuse of whole buffers is not kept here: tensors, the recorder's
// temporaries and its staging buffers are allocated through the device-generic memory cache
// (tensor/memory_cache.hpp), the one place buffers are cached, counted (trine::memory::stats) and
// released (clear_cache, out of memory); what the pool holds from the driver,
// trine::debug::device_memory shows.
#pragma once

#include <cstddef>
#include <cstdint>

#include <vulkan/vulkan_raii.hpp>

#include "backends/vulkan/pool.hpp"

namespace trine::vulkan {

class DeviceContext;
struct DeviceCaps;

// Sentinel bytes before and after the data (inside the buffer): transfers and bindings address
// only the data, so a guard that changed means something wrote outside its allocation.
inline constexpr std::size_t k_guard_bytes = 64;
inline constexpr unsigned char k_sentinel = 0xA5;

struct Allocation {
  Allocation() = default;
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation();  // the buffer first, then its memory back to the device's pool

  vk::raii::Buffer buffer{nullptr};
  MemoryPool::Span span;            // the memory the buffer is bound to (at span.offset)
  std::size_t bytes = 0;            // in use: what was asked for, or what the memory cache hands it out for
  std::size_t capacity = 0;         // the most it holds: bytes when allocated, rounded up to 4
  std::size_t guard = 0;            // offset of the data in the buffer (a guard when mapped, else 0)
  std::size_t size = 0;             // buffer size: guard + capacity + guard
  unsigned char* mapped = nullptr;  // the buffer's first byte (span.mapped), when host-visible and coherent
  DeviceContext* ctx = nullptr;
  // Unique for the process: a recorded command buffer names buffers, and a freed Allocation's
  // address may come back for another buffer, so replays are keyed by this (signature_of).
  std::uint64_t id = 0;

  // The bytes a binding of the data spans (never 0: Vulkan has no empty ranges).
  std::size_t range() const noexcept { return bytes ? (bytes + 3) / 4 * 4 : 4; }
  unsigned char* data() const noexcept { return mapped ? mapped + guard : nullptr; }
};

// Whether `bytes` fit one allocation on the device at all (its heap, its largest allocation); when
// not, allocate_buffer fails with out_of_memory before asking the driver.
bool fits_allocation(const DeviceCaps& caps, std::uint64_t bytes) noexcept;

// A new buffer of `bytes`. Throws Error(out_of_memory) when the device cannot hold it (the device
// stays usable). `staging`: from host-visible coherent memory, always mapped (for uploads and
// readbacks on devices whose storage memory the host cannot map).
Allocation* allocate_buffer(DeviceContext& ctx, std::size_t bytes, bool staging = false);
void free_buffer(Allocation* a) noexcept;
// `a` (from allocate_buffer, possibly for more, or used before) now holds `bytes`: the guard after
// the data moves to follow them.
void reuse_buffer(Allocation& a, std::size_t bytes) noexcept;
bool guards_intact(const Allocation& a) noexcept;

}  // namespace trine::vulkan
