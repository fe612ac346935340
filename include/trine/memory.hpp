// The memory cache every device's tensors are allocated through: large blocks are kept for reuse
// instead of going back to the system (a fresh 64 MiB buffer costs more in first-touch page faults
// than a memory-bound op spends computing on it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "trine/device.hpp"

namespace trine::memory {

struct Stats {
  std::size_t cached_bytes = 0;  // held for reuse now
  std::size_t cache_limit = 0;   // the most it holds
  std::uint64_t hits = 0;        // allocations served from the cache
  std::uint64_t misses = 0;      // allocations that went to the device
  std::uint64_t releases = 0;    // times the cache was emptied to satisfy an allocation
};

// Blocks of at least this many bytes are cached; smaller ones go straight to the device's allocator.
// On the cpu and cuda devices; Vulkan caches blocks of every size, each of its allocations being a
// driver call.
inline constexpr std::size_t cache_min_block = 64 * 1024;

// At most `bytes` are held for reuse on `device` (0 turns caching off there); blocks over the limit
// are returned at once. Default: TRINE_CACHE_LIMIT (bytes) if set; else, on a GPU with memory of its
// own (cuda, a discrete Vulkan device), 3/4 of that memory; else 1/8 of the host's physical memory,
// at most 4 GiB. A failed allocation empties the cache and is tried once more.
void set_cache_limit(std::size_t bytes, Device device = Device::cpu());
// Returns every cached block of `device` to its allocator.
void clear_cache(Device device = Device::cpu());
Stats stats(Device device = Device::cpu());

}  // namespace trine::memory
