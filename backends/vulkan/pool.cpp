// The pooled sub-allocator: blocks per (memory type, mapped), a first-fit free list in each block,
// dedicated memory for large requests, and the device's limits checked before the driver is asked.
//
// Why a first-fit list rather than size classes: the memory cache above (tensor/memory_cache.hpp)
// already rounds requests to size classes and keeps whole buffers for reuse, so this pool sees a
// buffer's first allocation and its final free (a cache clear, a release on out of memory), in
// every size. What matters here is packing those densely and letting blocks drain so they can go
// back to the driver. First fit by address fills the low end of the earliest blocks first, which
// leaves the later ones to empty out; freeing coalesces with both neighbours, so a freed region is
// whole again for a larger request. The scan is linear in a block's free ranges, which stay few
// while a block is mostly full, and a block allocation (a driver call) is rarer still.
#include "backends/vulkan/pool.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>

#include "backends/assert.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

struct MemoryPool::Block {
  Group* group = nullptr;
  vk::raii::DeviceMemory memory{nullptr};
  vk::DeviceSize size = 0;
  unsigned char* mapped = nullptr;                // the whole block's mapping, made once
  std::map<vk::DeviceSize, vk::DeviceSize> free;  // offset -> length: disjoint, never adjacent
  std::size_t spans = 0;                          // live spans carved from it
  vk::DeviceSize used = 0;                        // their bytes
};

struct MemoryPool::Group {
  std::uint32_t type = 0;
  bool mapped = false;
  std::vector<std::unique_ptr<Block>> blocks;
  vk::DeviceSize reserved = 0;  // the blocks' bytes
};

namespace {

vk::DeviceSize align_up(vk::DeviceSize v, vk::DeviceSize align) { return (v + align - 1) / align * align; }

// `size` bytes at `align` from the first free range of `b` they fit in (its offset), or nothing.
std::optional<vk::DeviceSize> take_first_fit(std::map<vk::DeviceSize, vk::DeviceSize>& free, vk::DeviceSize size,
                                             vk::DeviceSize align) {
  for (auto it = free.begin(); it != free.end(); ++it) {
    const auto [start, length] = *it;
    const vk::DeviceSize at = align_up(start, align);
    if (at + size > start + length) continue;
    const vk::DeviceSize tail = start + length - (at + size);
    if (at > start) {
      it->second = at - start;  // the alignment's gap stays free, in front
    } else {
      free.erase(it);
    }
    if (tail) free.emplace(at + size, tail);
    return at;
  }
  return std::nullopt;
}

// [offset, offset + size) free again, merged with the free ranges it touches (a span is released
// once: Allocation's destructor, and release() empties the span).
void give_back_range(std::map<vk::DeviceSize, vk::DeviceSize>& free, vk::DeviceSize offset, vk::DeviceSize size) {
  auto next = free.lower_bound(offset);
  if (next != free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free.erase(prev);
    }
  }
  if (next != free.end()) {
    if (offset + size == next->first) {
      size += next->second;
      free.erase(next);
    }
  }
  free.emplace(offset, size);
}

}  // namespace

MemoryPool::MemoryPool(const vk::raii::Device& device, const vk::raii::PhysicalDevice& physical, const DeviceCaps& caps,
                       int index)
    : device_(device), caps_(caps), index_(index) {
  const auto props = physical.getMemoryProperties();
  for (std::uint32_t i = 0; i < props.memoryTypeCount; ++i) heap_of_type_.push_back(props.memoryTypes[i].heapIndex);
  for (std::uint32_t i = 0; i < props.memoryHeapCount; ++i) heap_bytes_.push_back(props.memoryHeaps[i].size);
  heap_used_.assign(heap_bytes_.size(), 0);
  memory_objects_max_ = caps.max_allocation_count;
  if (const char* env = std::getenv("TRINE_VULKAN_MAX_ALLOCATIONS"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end == '\0' && v > 0) memory_objects_max_ = std::min<std::size_t>(memory_objects_max_, v);
  }
  // A block is at most an eighth of the heaps it comes from, so blocks never crowd out a large
  // tensor's dedicated memory, and never more than one allocation may be.
  vk::DeviceSize most = k_block_bytes_max;
  for (std::uint32_t type : {caps.memory_type, caps.staging_type}) {
    if (type < heap_of_type_.size()) most = std::min(most, heap_bytes_[heap_of_type_[type]] / 8);
  }
  most = std::min<vk::DeviceSize>(most, caps.max_allocation_size);
  block_bytes_max_ = std::max<vk::DeviceSize>(std::bit_floor(most), 64 * 1024);
  block_bytes_min_ = std::min<vk::DeviceSize>(k_block_bytes_min, block_bytes_max_);
}

MemoryPool::~MemoryPool() = default;

std::string MemoryPool::where() const { return " on vulkan:" + std::to_string(index_) + " (" + caps_.name + ")"; }

MemoryPool::Group& MemoryPool::group(std::uint32_t type, bool mapped) {
  for (auto& g : groups_)
    if (g->type == type && g->mapped == mapped) return *g;
  auto g = std::make_unique<Group>();
  g->type = type;
  g->mapped = mapped;
  groups_.push_back(std::move(g));
  return *groups_.back();
}

bool MemoryPool::drop_empty_blocks() noexcept {
  bool dropped = false;
  for (auto& g : groups_) {
    auto empty = [](const std::unique_ptr<Block>& b) { return b->spans == 0; };
    for (const auto& b : g->blocks) {
      if (!empty(b)) continue;
      uncount_memory(g->type, b->size);
      g->reserved -= b->size;
      dropped = true;
    }
    std::erase_if(g->blocks, empty);
  }
  return dropped;
}

void MemoryPool::count_memory(std::uint32_t type, vk::DeviceSize size, std::size_t bytes) {
  const std::uint32_t heap = heap_of_type_[type];
  auto fits = [&] { return memory_objects_ < memory_objects_max_ && heap_used_[heap] + size <= heap_bytes_[heap]; };
  if (!fits()) drop_empty_blocks();  // an empty block kept for reuse is the first thing to give up
  if (memory_objects_ >= memory_objects_max_) {
    throw Error(ErrorCode::out_of_memory,
                "[allocate] " + std::to_string(bytes) + " bytes" + where() + ": all " +
                    std::to_string(memory_objects_max_) +
                    " VkDeviceMemory objects it allows (maxMemoryAllocationCount) are in use");
  }
  if (heap_used_[heap] + size > heap_bytes_[heap]) {
    throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where() + ": its heap " +
                                              std::to_string(heap) + " (" + std::to_string(heap_bytes_[heap]) +
                                              " bytes) has " + std::to_string(heap_used_[heap]) +
                                              " bytes allocated, too many for " + std::to_string(size) + " more");
  }
  ++memory_objects_;
  heap_used_[heap] += size;
}

void MemoryPool::uncount_memory(std::uint32_t type, vk::DeviceSize size) noexcept {
  --memory_objects_;
  heap_used_[heap_of_type_[type]] -= size;
}

vk::raii::DeviceMemory MemoryPool::allocate_memory(std::uint32_t type, vk::DeviceSize size, bool mapped,
                                                   unsigned char** map, std::size_t bytes) {
  try {
    vk::raii::DeviceMemory memory = TRINE_VK(device_.allocateMemory(vk::MemoryAllocateInfo(size, type)));
    if (mapped) *map = static_cast<unsigned char*>(TRINE_VK(memory.mapMemory(0, VK_WHOLE_SIZE)));
    return memory;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
    throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) + " bytes" + where() + ": " + e.what());
  }
}

MemoryPool::Block& MemoryPool::new_block(Group& g, vk::DeviceSize need, std::size_t bytes) {
  // As large as the group's blocks together (the first one the smallest), and large enough.
  const vk::DeviceSize grown = std::clamp<vk::DeviceSize>(std::bit_ceil(std::max<vk::DeviceSize>(g.reserved, 1)),
                                                          block_bytes_min_, block_bytes_max_);
  const vk::DeviceSize fit = std::min(block_bytes_max_, std::max(block_bytes_min_, std::bit_ceil(need)));
  auto b = std::make_unique<Block>();
  b->group = &g;
  // When the heap or the driver refuses the larger, the smaller.
  for (vk::DeviceSize size : {std::max(grown, fit), fit}) {
    bool counted = false;
    try {
      count_memory(g.type, size, bytes);
      counted = true;
      b->memory = allocate_memory(g.type, size, g.mapped, &b->mapped, bytes);
      b->size = size;
      break;
    } catch (const Error& e) {
      if (counted) uncount_memory(g.type, size);
      if (e.code() != ErrorCode::out_of_memory || size == fit) throw;
      drop_empty_blocks();
    }
  }
  b->free.emplace(0, b->size);
  g.reserved += b->size;
  g.blocks.push_back(std::move(b));
  return *g.blocks.back();
}

MemoryPool::Span MemoryPool::allocate(const vk::MemoryRequirements& req, std::uint32_t type, bool mapped,
                                      std::size_t bytes) {
  // Both alignments are powers of two: the larger is a multiple of the smaller.
  const vk::DeviceSize align =
      std::max<vk::DeviceSize>({req.alignment, caps_.min_storage_offset_alignment, vk::DeviceSize{1}});
  const vk::DeviceSize size = align_up(std::max<vk::DeviceSize>(req.size, 1), align);
  Span s;
  s.type = type;
  if (size > block_bytes_max_ / 4) {  // large: memory of its own, the driver called outside the lock
    {
      std::lock_guard<std::mutex> lock(mu_);
      count_memory(type, size, bytes);
      ++dedicated_;
    }
    try {
      s.own = allocate_memory(type, size, mapped, &s.mapped, bytes);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      uncount_memory(type, size);
      --dedicated_;
      throw;
    }
    s.memory = *s.own;
    s.size = size;
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Group& g = group(type, mapped);
  std::optional<vk::DeviceSize> at;
  Block* block = nullptr;
  for (auto& b : g.blocks) {
    if (b->size - b->used < size) continue;
    if ((at = take_first_fit(b->free, size, align))) {
      block = b.get();
      break;
    }
  }
  if (!block) {
    block = &new_block(g, size, bytes);
    at = take_first_fit(block->free, size, align);
    TRINE_ASSERT(at.has_value(), "[vulkan] a new memory block did not fit the request it was made for");
  }
  ++block->spans;
  block->used += size;
  s.block = block;
  s.memory = *block->memory;
  s.offset = *at;
  s.size = size;
  if (block->mapped) s.mapped = block->mapped + *at;
  return s;
}

void MemoryPool::release(Span& s) noexcept {
  if (!s.memory) return;
  // Dedicated memory is freed once the lock is let go (locals are destroyed in reverse order).
  vk::raii::DeviceMemory own = std::move(s.own);
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.block) {
    uncount_memory(s.type, s.size);
    --dedicated_;
  } else {
    Block& b = *s.block;
    give_back_range(b.free, s.offset, s.size);
    --b.spans;
    b.used -= s.size;
    Group& g = *b.group;
    // One empty block per group stays for the next request; a second goes back to the driver.
    const bool other_empty =
        std::any_of(g.blocks.begin(), g.blocks.end(), [&](const auto& o) { return o.get() != &b && o->spans == 0; });
    if (b.spans == 0 && other_empty) {
      uncount_memory(g.type, b.size);
      g.reserved -= b.size;
      std::erase_if(g.blocks, [&](const auto& o) { return o.get() == &b; });
    }
  }
  s = Span{};
}

debug::DeviceMemoryStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  debug::DeviceMemoryStats st;
  st.memory_objects = memory_objects_;
  st.memory_objects_max = memory_objects_max_;
  st.dedicated = dedicated_;
  st.block_bytes_max = block_bytes_max_;
  for (vk::DeviceSize used : heap_used_) st.reserved_bytes += used;
  for (const auto& g : groups_) {
    st.blocks += g->blocks.size();
    for (const auto& b : g->blocks) {
      st.pooled += b->spans;
      st.pooled_bytes += b->used;
    }
  }
  return st;
}

}  // namespace trine::vulkan
