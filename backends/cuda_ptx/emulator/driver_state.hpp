// Internal state of the emulator's Driver API provider (the one emulated device and its primary
// context): allocations, modules, functions, streams, events, graphs and the sticky error.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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
// A stream runs its operations in issue order on its own worker thread, as a GPU runs a stream
// while the host goes on: the caller returns once the operation is queued. Queue fields are
// guarded by DriverState::queue_mu.
struct EmuStream {
  bool capturing = false;
  bool capture_invalid = false;
  std::unique_ptr<EmuGraph> capture;
  std::deque<Node> queue;
  bool running = false;  // the worker is executing an operation it has taken off the queue
  bool stop = false;
  std::condition_variable wake;
  std::thread worker;
};
// Guarded by DriverState::queue_mu: records are queued operations, done once the stream ran them.
struct EmuEvent {
  bool timing = true;
  bool recorded = false;
  std::uint64_t records_issued = 0;
  std::uint64_t records_done = 0;
  std::chrono::steady_clock::time_point when;
};

struct DriverState {
  std::recursive_mutex mu;
  // The streams' queues and the events' record counts. Taken after `mu` when both are held; a
  // caller that waits for a stream releases `mu` first, since the operations take it.
  std::mutex queue_mu;
  std::condition_variable progress;  // an operation finished
  bool initialized = false;
  int context_refs = 0;
  CUresult sticky = CUDA_SUCCESS;  // set by a failed launch; every later call returns it until reset
  std::string last_report;
  CheckOptions check;
  // Host threads a launch's CTAs run on: the machine's hardware threads unless TRINE_EMU_THREADS
  // says otherwise (results are the same bytes for any count).
  int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  AllocationTable allocations;
  std::map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> blocks;
  std::uint64_t allocated = 0;
  std::map<const void*, std::size_t> host_blocks;  // cuMemAllocHost's page-locked blocks and sizes
  std::set<EmuModule*> modules;
  std::set<EmuFunction*> functions;
  std::set<EmuStream*> streams;
  std::set<EmuEvent*> events;
  std::set<EmuGraph*> graphs;
};

DriverState& state();
constexpr std::uint64_t kTotalMemory = 8ull << 30;

// Queues an operation on a stream (the null stream runs it now), or records it when the stream is
// capturing.
CUresult submit(CUstream stream, Node node);
// Blocks, without holding `mu`, until every operation queued on the streams so far has run.
void drain_all_streams();
EmuStream* find_stream(CUstream s);

void fill_stream_entries(DriverApi& api);

}  // namespace trine::cuda::emu
