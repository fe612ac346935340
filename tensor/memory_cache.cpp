// The per-device memory cache: size classes of 1/8 of a power of two, a bound, release on failure.
#include "tensor/memory_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "trine/error.hpp"
#include "trine/memory.hpp"

namespace trine::detail {
namespace {

// Cached requests round up to a multiple of 1/8 of their power of two (64 bytes at least): at most
// 12.5% more memory past 512 bytes, and a tensor of the same shape always finds the block its
// predecessor left.
std::size_t size_class(std::size_t bytes, std::size_t min_block) {
  if (bytes < min_block) return bytes;
  const std::size_t step = std::max<std::size_t>(std::bit_floor(bytes) / 8, 64);
  return (bytes + step - 1) / step * step;
}

// Whether a block of `bytes` is allocated at its size class (and so may be cached): always, unless
// the class is over what the device can allocate at once while `bytes` is not.
bool at_class(const Backend& backend, Device device, std::size_t bytes, std::size_t cls) {
  return cls == bytes || backend.fits(device.index, cls) || !backend.fits(device.index, bytes);
}

// TRINE_CACHE_LIMIT when set (for every device), else the backend's bound for a device with its own
// memory, else 1/8 of the host's memory, at most 4 GiB.
std::size_t default_limit(const Backend* backend, Device d) {
  if (const char* env = std::getenv("TRINE_CACHE_LIMIT"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end == '\0') return static_cast<std::size_t>(v);
  }
  if (backend)
    if (const std::size_t own = backend->cache_limit(d.index)) return own;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const std::size_t phys = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                                                 : std::size_t{1} << 33;
  return std::min<std::size_t>(phys / 8, std::size_t{4} << 30);
}

struct DeviceCache {
  std::mutex mu;
  bool limit_set = false;  // by set_cache_limit, or from the backend once it was known
  std::multimap<std::pair<std::size_t, MemoryKind>, void*> free;  // (size class, kind) -> block
  memory::Stats stats;
  Backend* backend = nullptr;
};

struct Caches {
  std::mutex mu;
  std::map<std::pair<int, int>, std::unique_ptr<DeviceCache>> by_device;  // (kind, index)

  DeviceCache& of(Device d, Backend* backend) {
    std::lock_guard<std::mutex> lock(mu);
    auto& c = by_device[{static_cast<int>(d.kind), d.index}];
    if (!c) {
      c = std::make_unique<DeviceCache>();
      c->stats.cache_limit = default_limit(nullptr, d);
    }
    if (backend && !c->backend) {
      // (asked before any block is cached: a stats() call may have made the entry without it)
      std::lock_guard<std::mutex> own(c->mu);
      c->backend = backend;
      if (!c->limit_set) c->stats.cache_limit = default_limit(backend, d);
      c->limit_set = true;
    }
    return *c;
  }
};

Caches& caches() {
  // Never destroyed: Storage destructors of static tensors may still return memory at exit.
  static Caches* c = new Caches;
  return *c;
}

// Returns every block of `c` to its backend; the caller holds c.mu.
void release_locked(DeviceCache& c, Device d) {
  for (auto& [size, handle] : c.free) c.backend->deallocate(d.index, handle);
  c.free.clear();
  c.stats.cached_bytes = 0;
}

}  // namespace

void* cached_allocate(Backend& backend, Device device, std::size_t bytes, MemoryKind kind) {
  auto allocate = [&](std::size_t n) {
    return kind == MemoryKind::staging ? backend.allocate_staging(device.index, n) : backend.allocate(device.index, n);
  };
  const std::size_t min_block = backend.cache_min_block();
  if (bytes < min_block) return allocate(bytes);
  const std::size_t cls = size_class(bytes, min_block);
  // A size whose class would not fit the device (its largest allocation) but which does itself:
  // allocated exactly and never cached (cached_deallocate sees the same), or it could not exist.
  if (!at_class(backend, device, bytes, cls)) return allocate(bytes);
  DeviceCache& c = caches().of(device, &backend);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto it = c.free.find({cls, kind}); it != c.free.end()) {
      void* handle = it->second;
      c.free.erase(it);
      c.stats.cached_bytes -= cls;
      ++c.stats.hits;
      backend.prepare(handle, bytes);
      return handle;
    }
    ++c.stats.misses;
  }
  void* handle = nullptr;
  try {
    handle = allocate(cls);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
    const bool dropped = backend.drop_recordings();
    {
      std::lock_guard<std::mutex> lock(c.mu);
      if (c.free.empty() && !dropped) throw;
      release_locked(c, device);
      ++c.stats.releases;
    }
    handle = allocate(cls);  // once more; its out_of_memory is final
  }
  backend.prepare(handle, bytes);
  return handle;
}

void cached_deallocate(Backend& backend, Device device, void* handle, std::size_t bytes, MemoryKind kind) noexcept {
  const std::size_t min_block = backend.cache_min_block();
  if (bytes < min_block) {
    backend.deallocate(device.index, handle);
    return;
  }
  const std::size_t cls = size_class(bytes, min_block);
  if (!at_class(backend, device, bytes, cls)) {  // allocated exactly (cached_allocate)
    backend.deallocate(device.index, handle);
    return;
  }
  DeviceCache& c = caches().of(device, &backend);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.stats.cached_bytes + cls > c.stats.cache_limit) {
    backend.deallocate(device.index, handle);
    return;
  }
  try {
    c.free.emplace(std::make_pair(cls, kind), handle);
    c.stats.cached_bytes += cls;
  } catch (...) {  // no memory for the map node: give the block back instead
    backend.deallocate(device.index, handle);
  }
}

void release_cache(Backend& backend, Device device) noexcept {
  DeviceCache& c = caches().of(device, &backend);
  std::lock_guard<std::mutex> lock(c.mu);
  release_locked(c, device);
}

}  // namespace trine::detail

namespace trine::memory {

void set_cache_limit(std::size_t bytes, Device device) {
  detail::backend_for(device, "set_cache_limit");
  auto& c = detail::caches().of(device, nullptr);
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.cache_limit = bytes;
  c.limit_set = true;
  if (c.backend) {
    // The largest blocks go first: fewest calls to get under the new limit.
    while (c.stats.cached_bytes > bytes && !c.free.empty()) {
      auto it = std::prev(c.free.end());
      c.backend->deallocate(device.index, it->second);
      c.stats.cached_bytes -= it->first.first;
      c.free.erase(it);
    }
  }
}

void clear_cache(Device device) {
  detail::backend_for(device, "clear_cache").drop_recordings();
  auto& c = detail::caches().of(device, nullptr);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.backend) detail::release_locked(c, device);
}

Stats stats(Device device) {
  detail::backend_for(device, "memory_stats");
  auto& c = detail::caches().of(device, nullptr);
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

}  // namespace trine::memory
