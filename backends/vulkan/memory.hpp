// Storage buffers: one VkBuffer + VkDeviceMemory per allocation for now (a pooled sub-allocator is
// the next step), mapped for good when the memory is host-visible and coherent.
#pragma once

#include <cstddef>
#include <cstdint>

#include <vulkan/vulkan_raii.hpp>

namespace trine::vulkan {

class DeviceContext;

// Sentinel bytes before and after the data (inside the buffer): transfers and bindings address
// only the data, so a guard that changed means something wrote outside its allocation.
inline constexpr std::size_t k_guard_bytes = 64;
inline constexpr unsigned char k_sentinel = 0xA5;

struct Allocation {
  vk::raii::Buffer buffer{nullptr};
  vk::raii::DeviceMemory memory{nullptr};
  std::size_t bytes = 0;     // what was asked for
  std::size_t guard = 0;     // offset of the data in the buffer (k_guard_bytes when mapped, else 0)
  std::size_t size = 0;      // buffer size: guard + data rounded up + guard
  unsigned char* mapped = nullptr;  // the buffer's first byte, when host-visible and coherent
  int device = 0;

  // The bytes a binding of the data spans (never 0: Vulkan has no empty ranges).
  std::size_t range() const noexcept { return bytes ? (bytes + 3) / 4 * 4 : 4; }
  unsigned char* data() const noexcept { return mapped ? mapped + guard : nullptr; }
};

// Throws Error(out_of_memory) when the device cannot hold `bytes` (the device stays usable).
Allocation* allocate_buffer(DeviceContext& ctx, std::size_t bytes);
void free_buffer(Allocation* a) noexcept;
bool guards_intact(const Allocation& a) noexcept;

}  // namespace trine::vulkan
