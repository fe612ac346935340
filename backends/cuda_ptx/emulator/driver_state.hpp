// Internal state of the emulator's Driver API provider (the one emulated device and its primary
// context): allocations, modules, functions, streams, events, graphs and the sticky error.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/driver_provider.hpp"

namespace trine::cuda::emu {

struct EmuModule {
  Module module;
};
struct EmuFunction {
  EmuModule* module = nullptr;
  const Kernel* kernel = nullptr;
  int max_dynamic_shared = 48 * 1024;
};
using Node = std::function<CUresult()>;  // one recorded stream operation
struct EmuGraph {
  std::vector<Node> nodes;
};
struct EmuStream {
  bool capturing = false;
  bool capture_invalid = false;
  std::unique_ptr<EmuGraph> capture;
};
struct EmuEvent {
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

struct DriverState {
  std::recursive_mutex mu;
  bool initialized = false;
  int context_refs = 0;
  CUresult sticky = CUDA_SUCCESS;  // set by a failed launch; every later call returns it until reset
  std::string last_report;
  CheckOptions check;
  int threads = 1;
  AllocationTable allocations;
  std::map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> blocks;
  std::uint64_t allocated = 0;
  std::set<void*> host_blocks;
  std::set<EmuModule*> modules;
  std::set<EmuFunction*> functions;
  std::set<EmuStream*> streams;
  std::set<EmuEvent*> events;
  std::set<EmuGraph*> graphs;
};

DriverState& state();
constexpr std::uint64_t kTotalMemory = 8ull << 30;

// Runs an operation on a stream now, or records it when the stream is capturing.
CUresult submit(CUstream stream, Node node);
EmuStream* find_stream(CUstream s);

void fill_stream_entries(DriverApi& api);

}  // namespace trine::cuda::emu
