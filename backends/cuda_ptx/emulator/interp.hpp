// The emulator's launch interface: run one decoded kernel over a grid with the checker on or off,
// and the table of global allocations the checker measures addresses against.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/ir.hpp"

namespace trine::cuda::emu {

// Global allocations by base address; the checker reports any global access outside them.
class AllocationTable {
 public:
  void add(std::uint64_t base, std::uint64_t size, std::string label = {});
  bool remove(std::uint64_t base);
  // Whether one allocation holds all of [addr, addr + size).
  bool contains(std::uint64_t addr, std::uint64_t size) const;
  // "is 4 bytes after the nearest allocation at 0x... of size 4096 bytes"
  std::string describe_nearest(std::uint64_t addr, std::uint64_t size) const;
  bool owns(std::uint64_t base) const;
  // The bounds [begin, end) of the allocation holding addr; unchanged when none does.
  void find(std::uint64_t addr, std::uint64_t& begin, std::uint64_t& end) const;
  std::uint64_t size_of(std::uint64_t base) const;

 private:
  struct Entry {
    std::uint64_t size;
    std::string label;
  };
  mutable std::mutex mu_;
  std::map<std::uint64_t, Entry> blocks_;
};

struct CheckOptions {
  bool enabled = true;  // off: no shadow state, no reports beyond what must stop the launch
  bool memcheck = true, racecheck = true, synccheck = true, initcheck = true;
  int max_reports = 32;
};

struct LaunchConfig {
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t block[3] = {1, 1, 1};
  std::uint32_t dynamic_shared = 0;
  const std::uint8_t* params = nullptr;  // packed parameter buffer, kernel.param_bytes long
  CheckOptions check;
  const AllocationTable* allocations = nullptr;  // needed for global memcheck
  int threads = 1;  // CTAs run in parallel over this many std::threads
  // A CTA that executes more warp instructions than this ends the launch with
  // CUDA_ERROR_LAUNCH_TIMEOUT: an endless loop fails instead of hanging the process.
  std::uint64_t max_warp_instructions_per_cta = 1ull << 32;
};

struct LaunchResult {
  CUresult result = CUDA_SUCCESS;
  std::string report;  // the findings, compute-sanitizer style; empty when clean
  int errors = 0;
  std::uint64_t thread_instructions = 0;  // executed instructions summed over threads
};

// Packs a cuLaunchKernel params array (one pointer per parameter) into the kernel's layout.
std::vector<std::uint8_t> pack_params(const Kernel& kernel, void* const* params);

LaunchResult launch_kernel(const Module& module, const Kernel& kernel, const LaunchConfig& config);

// Generic-address windows for shared and local memory: non-canonical on x86-64 and AArch64, so
// they never alias a host pointer (global memory is addressed by host pointers).
inline constexpr std::uint64_t kSharedWindow = 0xA000'0000'0000'0000ull;
inline constexpr std::uint64_t kLocalWindow = 0xB000'0000'0000'0000ull;
inline constexpr std::uint64_t kWindowMask = 0xF000'0000'0000'0000ull;

}  // namespace trine::cuda::emu
