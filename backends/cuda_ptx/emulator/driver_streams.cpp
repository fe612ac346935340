// Streams, events and graphs of the emulator's Driver API. Each stream runs its operations in
// issue order on a worker thread of its own, so the host goes on while they run, as with a GPU:
// cuStreamQuery and cuEventQuery answer CUDA_ERROR_NOT_READY until the work is done, and a
// launch's checker finding surfaces as the sticky error of a later call. The legacy null stream
// runs operations when they are issued. Stream capture records the operations; a graph replays
// them.
#include "backends/cuda_ptx/emulator/driver_state.hpp"

#include <new>

namespace trine::cuda::emu {
namespace {

#define EMU_ENTER()                                       \
  DriverState& st = state();                              \
  std::lock_guard lock(st.mu);                            \
  if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  if (st.sticky != CUDA_SUCCESS) return st.sticky

bool valid_stream(DriverState& st, CUstream s) { return s == nullptr || st.streams.count(reinterpret_cast<EmuStream*>(s)); }

void run_stream(EmuStream* s) {
  DriverState& st = state();
  std::unique_lock lock(st.queue_mu);
  for (;;) {
    s->wake.wait(lock, [&] { return s->stop || !s->queue.empty(); });
    if (s->queue.empty()) return;  // stopped and drained
    Node node = std::move(s->queue.front());
    s->queue.pop_front();
    s->running = true;
    lock.unlock();
    try {
      node();  // a failure that matters is sticky in the driver state (see launch)
    } catch (const std::bad_alloc&) {
      // The host could not give a launch its memory (a huge .local times the threads): the
      // context fails as a GPU's would, instead of the exception ending the process.
      std::lock_guard state_lock(st.mu);
      st.last_report = "[launch] out of host memory for the launch's shared or local state";
      st.sticky = CUDA_ERROR_OUT_OF_MEMORY;
    } catch (...) {
      std::lock_guard state_lock(st.mu);
      st.last_report = "[launch] an operation failed on the stream's worker";
      st.sticky = CUDA_ERROR_UNKNOWN;
    }
    lock.lock();
    s->running = false;
    st.progress.notify_all();
  }
}

bool idle(const EmuStream* s) { return s->queue.empty() && !s->running; }

// Waits, holding only queue_mu, until `s` has run everything queued so far.
void drain(DriverState& st, EmuStream* s) {
  std::unique_lock lock(st.queue_mu);
  st.progress.wait(lock, [&] { return idle(s); });
}

CUresult stream_create(CUstream* out, unsigned flags) {
  EMU_ENTER();
  if (!out || (flags & ~CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  auto* s = new EmuStream;
  s->worker = std::thread(run_stream, s);
  st.streams.insert(s);
  *out = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}
CUresult stream_destroy(CUstream h) {
  DriverState& st = state();
  auto* s = reinterpret_cast<EmuStream*>(h);
  {
    std::lock_guard lock(st.mu);
    if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!st.streams.erase(s)) return CUDA_ERROR_INVALID_HANDLE;
  }
  // As cuStreamDestroy: work already queued still runs; then the worker ends.
  {
    std::lock_guard lock(st.queue_mu);
    s->stop = true;
  }
  s->wake.notify_all();
  s->worker.join();
  delete s;
  return CUDA_SUCCESS;
}
CUresult stream_synchronize(CUstream h) {
  DriverState& st = state();
  EmuStream* s = nullptr;
  {
    std::lock_guard lock(st.mu);
    if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (st.sticky != CUDA_SUCCESS) return st.sticky;
    if (!valid_stream(st, h)) return CUDA_ERROR_INVALID_HANDLE;
    s = reinterpret_cast<EmuStream*>(h);
    if (s && s->capturing) {
      s->capture_invalid = true;  // synchronising a capturing stream is illegal
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
  }
  if (s) {
    drain(st, s);
  } else {
    drain_all_streams();  // the legacy stream waits for the others
  }
  std::lock_guard lock(st.mu);
  return st.sticky;
}
CUresult stream_query(CUstream h) {
  EMU_ENTER();
  if (!valid_stream(st, h)) return CUDA_ERROR_INVALID_HANDLE;
  if (!h) return CUDA_SUCCESS;
  std::lock_guard q(st.queue_mu);
  return idle(reinterpret_cast<EmuStream*>(h)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
// The stream waits, on its worker, for the event's latest record issued before this call.
CUresult stream_wait_event(CUstream h, CUevent ev, unsigned flags) {
  EMU_ENTER();
  auto* e = reinterpret_cast<EmuEvent*>(ev);
  if (!valid_stream(st, h) || !st.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t target = 0;
  {
    std::lock_guard q(st.queue_mu);
    target = e->records_issued;
  }
  return submit(h, [e, target, &st] {
    std::unique_lock lock(st.queue_mu);
    st.progress.wait(lock, [&] { return e->records_done >= target; });
    return CUDA_SUCCESS;
  });
}

CUresult launch_host_func(CUstream h, CUhostFn fn, void* data) {
  EMU_ENTER();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_stream(st, h)) return CUDA_ERROR_INVALID_HANDLE;
  // Runs after a sticky error too: a host function often releases what the work held.
  return submit(h, [fn, data] {
    fn(data);
    return CUDA_SUCCESS;
  });
}

CUresult event_create(CUevent* out, unsigned flags) {
  EMU_ENTER();
  if (!out || (flags & ~(CU_EVENT_DISABLE_TIMING | 0x1u | 0x4u))) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new EmuEvent;
  e->timing = !(flags & CU_EVENT_DISABLE_TIMING);
  st.events.insert(e);
  *out = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}
CUresult event_destroy(CUevent h) {
  DriverState& st = state();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  {
    std::lock_guard lock(st.mu);
    if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (st.sticky != CUDA_SUCCESS) return st.sticky;
    if (!st.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  }
  {
    // As cuEventDestroy: a record still queued completes first (its operation refers to the event).
    std::unique_lock q(st.queue_mu);
    st.progress.wait(q, [&] { return e->records_done >= e->records_issued; });
  }
  std::lock_guard lock(st.mu);
  if (!st.events.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}
CUresult event_record(CUevent h, CUstream s) {
  EMU_ENTER();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  if (!st.events.count(e) || !valid_stream(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  EmuStream* es = s ? reinterpret_cast<EmuStream*>(s) : nullptr;
  if (!(es && es->capturing)) {
    std::lock_guard q(st.queue_mu);
    ++e->records_issued;
  }
  // Runs even after a sticky error, so that nothing waits for it forever.
  return submit(s, [e, &st] {
    std::lock_guard q(st.queue_mu);
    e->recorded = true;
    e->when = std::chrono::steady_clock::now();
    ++e->records_done;
    st.progress.notify_all();
    return CUDA_SUCCESS;
  });
}
CUresult event_query(CUevent h) {
  EMU_ENTER();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  if (!st.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard q(st.queue_mu);
  return e->records_done >= e->records_issued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult event_synchronize(CUevent h) {
  DriverState& st = state();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  std::uint64_t target = 0;
  {
    std::lock_guard lock(st.mu);
    if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (st.sticky != CUDA_SUCCESS) return st.sticky;
    if (!st.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard q(st.queue_mu);
    target = e->records_issued;
  }
  {
    std::unique_lock q(st.queue_mu);
    st.progress.wait(q, [&] { return e->records_done >= target; });
  }
  std::lock_guard lock(st.mu);
  return st.sticky;
}
CUresult event_elapsed(float* ms, CUevent a, CUevent b) {
  EMU_ENTER();
  auto* ea = reinterpret_cast<EmuEvent*>(a);
  auto* eb = reinterpret_cast<EmuEvent*>(b);
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!st.events.count(ea) || !st.events.count(eb)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard q(st.queue_mu);
  if (ea->records_done < ea->records_issued || eb->records_done < eb->records_issued) return CUDA_ERROR_NOT_READY;
  if (!ea->timing || !eb->timing || !ea->recorded || !eb->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(eb->when - ea->when).count();
  return CUDA_SUCCESS;
}

CUresult begin_capture(CUstream h, CUstreamCaptureMode) {
  EMU_ENTER();
  if (!h) return CUDA_ERROR_INVALID_VALUE;  // the legacy null stream cannot be captured
  auto* s = reinterpret_cast<EmuStream*>(h);
  if (!st.streams.count(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capturing) return CUDA_ERROR_INVALID_VALUE;
  s->capturing = true;
  s->capture_invalid = false;
  s->capture = std::make_unique<EmuGraph>();
  return CUDA_SUCCESS;
}
CUresult end_capture(CUstream h, CUgraph* out) {
  EMU_ENTER();
  auto* s = reinterpret_cast<EmuStream*>(h);
  if (!s || !st.streams.count(s) || !out) return CUDA_ERROR_INVALID_VALUE;
  if (!s->capturing) return CUDA_ERROR_INVALID_VALUE;
  s->capturing = false;
  if (s->capture_invalid) {
    s->capture.reset();
    *out = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  EmuGraph* g = s->capture.release();
  st.graphs.insert(g);
  *out = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
CUresult graph_instantiate(CUgraphExec* out, CUgraph h, unsigned long long) {
  EMU_ENTER();
  auto* g = reinterpret_cast<EmuGraph*>(h);
  if (!out || !st.graphs.count(g)) return CUDA_ERROR_INVALID_VALUE;
  auto* exec = new EmuGraph(*g);  // an executable graph is a snapshot of the graph's nodes
  st.graphs.insert(exec);
  *out = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}
CUresult graph_launch(CUgraphExec h, CUstream s) {
  EMU_ENTER();
  auto* g = reinterpret_cast<EmuGraph*>(h);
  if (!st.graphs.count(g) || !valid_stream(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  for (const Node& n : g->nodes)
    if (const CUresult r = submit(s, n); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}
CUresult graph_destroy(CUgraph h) {
  EMU_ENTER();
  auto* g = reinterpret_cast<EmuGraph*>(h);
  if (!st.graphs.erase(g)) return CUDA_ERROR_INVALID_HANDLE;
  delete g;
  return CUDA_SUCCESS;
}
CUresult graph_exec_destroy(CUgraphExec h) { return graph_destroy(reinterpret_cast<CUgraph>(h)); }

}  // namespace

EmuStream* find_stream(CUstream s) {
  DriverState& st = state();
  return st.streams.count(reinterpret_cast<EmuStream*>(s)) ? reinterpret_cast<EmuStream*>(s) : nullptr;
}

CUresult submit(CUstream s, Node node) {
  EmuStream* es = s ? find_stream(s) : nullptr;
  if (es && es->capturing) {
    es->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  if (s && !es) return CUDA_ERROR_INVALID_HANDLE;
  if (!es) return node();  // the legacy null stream: now, on the caller's thread
  {
    std::lock_guard q(state().queue_mu);
    es->queue.push_back(std::move(node));
  }
  es->wake.notify_one();
  return CUDA_SUCCESS;
}

void drain_all_streams() {
  DriverState& st = state();
  std::vector<EmuStream*> streams;
  {
    std::lock_guard lock(st.mu);
    streams.assign(st.streams.begin(), st.streams.end());
  }
  std::unique_lock q(st.queue_mu);
  st.progress.wait(q, [&] {
    for (EmuStream* s : streams)
      if (!idle(s)) return false;
    return true;
  });
}

void fill_stream_entries(DriverApi& a) {
  a.cuStreamCreate = stream_create;
  a.cuStreamDestroy = stream_destroy;
  a.cuStreamSynchronize = stream_synchronize;
  a.cuStreamQuery = stream_query;
  a.cuStreamWaitEvent = stream_wait_event;
  a.cuLaunchHostFunc = launch_host_func;
  a.cuEventCreate = event_create;
  a.cuEventDestroy = event_destroy;
  a.cuEventRecord = event_record;
  a.cuEventQuery = event_query;
  a.cuEventSynchronize = event_synchronize;
  a.cuEventElapsedTime = event_elapsed;
  a.cuStreamBeginCapture = begin_capture;
  a.cuStreamEndCapture = end_capture;
  a.cuGraphInstantiate = graph_instantiate;
  a.cuGraphLaunch = graph_launch;
  a.cuGraphExecDestroy = graph_exec_destroy;
  a.cuGraphDestroy = graph_destroy;
}

}  // namespace trine::cuda::emu
