// Storage buffers: one VkBuffer + VkDeviceMemory per allocation, mapped for good when the memory is
// host-visible and coherent, and kept in a per-device cache by size class when freed, so the next
// allocation of that class costs neither a driver call nor fresh page faults. (Sub-allocating few
// large blocks is the next step.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include <vulkan/vulkan_raii.hpp>

namespace trine::vulkan {

class DeviceContext;
struct DeviceCaps;

// Sentinel bytes before and after the data (inside the buffer): transfers and bindings address
// only the data, so a guard that changed means something wrote outside its allocation.
inline constexpr std::size_t k_guard_bytes = 64;
inline constexpr unsigned char k_sentinel = 0xA5;

struct Allocation {
  vk::raii::Buffer buffer{nullptr};
  vk::raii::DeviceMemory memory{nullptr};
  std::size_t bytes = 0;            // what was asked for
  std::size_t capacity = 0;         // the size class: bytes rounded up
  std::size_t guard = 0;            // offset of the data in the buffer (a guard when mapped, else 0)
  std::size_t size = 0;             // buffer size: guard + capacity + guard
  unsigned char* mapped = nullptr;  // the buffer's first byte, when host-visible and coherent
  DeviceContext* ctx = nullptr;
  bool staging = false;  // from the host-visible staging type (a separate cache class)

  // The bytes a binding of the data spans (never 0: Vulkan has no empty ranges).
  std::size_t range() const noexcept { return bytes ? (bytes + 3) / 4 * 4 : 4; }
  unsigned char* data() const noexcept { return mapped ? mapped + guard : nullptr; }
};

// Freed allocations by capacity, up to a byte budget; owned by the DeviceContext, so emptied
// before its device goes.
class BufferCache {
 public:
  explicit BufferCache(std::size_t budget) : budget_(budget) {}
  ~BufferCache() { clear(); }
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;
  Allocation* take(std::size_t capacity, bool staging);
  void put(Allocation* a) noexcept;  // deletes it when over budget
  void clear() noexcept;

 private:
  std::mutex mu_;
  std::multimap<std::pair<std::size_t, bool>, Allocation*> free_;  // (capacity, staging)
  std::size_t cached_ = 0;
  std::size_t budget_;
};

// Whether `bytes` fit one allocation on the device at all (its heap, its largest allocation); when
// not, allocate_buffer fails with out_of_memory before asking the driver.
bool fits_allocation(const DeviceCaps& caps, std::uint64_t bytes) noexcept;

// Throws Error(out_of_memory) when the device cannot hold `bytes` (the device stays usable).
// `staging`: from host-visible coherent memory, always mapped (for uploads and readbacks on
// devices whose storage memory the host cannot map).
Allocation* allocate_buffer(DeviceContext& ctx, std::size_t bytes, bool staging = false);
void free_buffer(Allocation* a) noexcept;
bool guards_intact(const Allocation& a) noexcept;

}  // namespace trine::vulkan
