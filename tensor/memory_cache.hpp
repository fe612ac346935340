// Internal: allocation through the per-device memory cache (trine/memory.hpp).
#pragma once

#include <cstddef>

#include "trine/device.hpp"

namespace trine::detail {

class Backend;

// What a block holds: storage (tensors, a backend's temporaries), or staging memory (host-visible
// memory a device copies through where its storage memory is not: Backend::allocate_staging). The
// two are cached apart, under the device's one limit and stats.
enum class MemoryKind { storage, staging };

// `bytes` on `device`: a cached block of the same kind and size class when there is one, else the
// backend's allocate (rounded up to the size class when the block is large enough to be cached).
// When the backend is out of memory, the device's cache and what the backend keeps for replays
// (Backend::drop_recordings) are released and the allocation tried once more before
// Error(out_of_memory) reaches the caller.
void* cached_allocate(Backend& backend, Device device, std::size_t bytes, MemoryKind kind = MemoryKind::storage);
// Back to the cache, or to the backend when the block is small or the cache is full. Never throws.
// Only called once no submission uses the memory (Storage's destructor, a failed placement, a
// completed submission's temporaries). `bytes` and `kind` as allocated.
void cached_deallocate(Backend& backend, Device device, void* handle, std::size_t bytes,
                       MemoryKind kind = MemoryKind::storage) noexcept;

// Returns every cached block of `device` to `backend` (the registry does this before a backend is
// destroyed at exit).
void release_cache(Backend& backend, Device device) noexcept;

}  // namespace trine::detail
