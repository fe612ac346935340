// The device memory buffers are bound in: per memory type, a few large VkDeviceMemory blocks that
// small and medium buffers are carved from, and memory of its own for each large buffer; the
// device's count of VkDeviceMemory objects kept under maxMemoryAllocationCount, its heaps' bytes
// under their sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "trine/debug.hpp"

namespace trine::vulkan {

struct DeviceCaps;

// Block sizes: the first block of a memory type is k_block_bytes_min, each next one as large as
// all that type's blocks together (so the count stays logarithmic in what is used), up to
// k_block_bytes_max, less where the heap (an eighth of it) or maxMemoryAllocationSize is smaller.
inline constexpr std::size_t k_block_bytes_min = std::size_t{4} << 20;
inline constexpr std::size_t k_block_bytes_max = std::size_t{64} << 20;

class MemoryPool {
 public:
  struct Block;

  // Where one buffer's memory lies: a piece of a block, or memory of its own (`own`). Move-only;
  // handed back through release().
  struct Span {
    Block* block = nullptr;               // the block it was carved from; null when dedicated
    vk::raii::DeviceMemory own{nullptr};  // dedicated memory
    vk::DeviceMemory memory;              // what the buffer binds: the block's memory or `own`
    vk::DeviceSize offset = 0;            // in `memory`
    vk::DeviceSize size = 0;
    std::uint32_t type = 0;           // its memory type
    unsigned char* mapped = nullptr;  // the span's first byte, when its memory is mapped
  };

  // `device` and `caps` outlive the pool (DeviceContext owns all three). Reads the heap sizes from
  // `physical`; TRINE_VULKAN_MAX_ALLOCATIONS=N lowers maxMemoryAllocationCount to N (for tests).
  MemoryPool(const vk::raii::Device& device, const vk::raii::PhysicalDevice& physical, const DeviceCaps& caps,
             int index);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Memory of `type` for a buffer with requirements `req`, offset aligned to req.alignment and to
  // minStorageBufferOffsetAlignment; mapped for good when `mapped` (the type must be host-visible
  // and coherent). `bytes` (what the caller asked for) only names the request in errors.
  // Thread-safe. Throws Error(out_of_memory) when the driver, the heap or maxMemoryAllocationCount
  // says no, the pool as it was before the call (the device stays usable).
  Span allocate(const vk::MemoryRequirements& req, std::uint32_t type, bool mapped, std::size_t bytes);
  // Gives `s`'s memory back (any buffer bound to it already destroyed); an emptied block goes back
  // to the driver unless it is the one empty block its memory type keeps. Thread-safe, never throws.
  void release(Span& s) noexcept;

  debug::DeviceMemoryStats stats() const;

 private:
  struct Group;  // the blocks of one (memory type, mapped)

  // The callers of these hold mu_.
  Group& group(std::uint32_t type, bool mapped);
  Block& new_block(Group& g, vk::DeviceSize need, std::size_t bytes);
  void count_memory(std::uint32_t type, vk::DeviceSize size, std::size_t bytes);
  void uncount_memory(std::uint32_t type, vk::DeviceSize size) noexcept;
  bool drop_empty_blocks() noexcept;

  // A new VkDeviceMemory (counted already), mapped when asked; the error names the request.
  vk::raii::DeviceMemory allocate_memory(std::uint32_t type, vk::DeviceSize size, bool mapped, unsigned char** map,
                                         std::size_t bytes);
  std::string where() const;

  const vk::raii::Device& device_;
  const DeviceCaps& caps_;
  int index_;
  std::vector<std::uint32_t> heap_of_type_;  // memory type -> heap index
  std::vector<vk::DeviceSize> heap_bytes_;   // each heap's size
  std::vector<vk::DeviceSize> heap_used_;    // what this pool holds of each heap
  std::size_t memory_objects_max_ = 0;
  vk::DeviceSize block_bytes_max_ = 0;
  vk::DeviceSize block_bytes_min_ = 0;
  mutable std::mutex mu_;
  std::size_t memory_objects_ = 0;  // blocks + dedicated, the count maxMemoryAllocationCount bounds
  std::size_t dedicated_ = 0;
  std::vector<std::unique_ptr<Group>> groups_;  // one or two: storage, and staging when apart
};

}  // namespace trine::vulkan
