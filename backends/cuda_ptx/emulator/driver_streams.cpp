// Streams, events and graphs of the emulator's Driver API. Work runs when it is issued, in issue
// order, so every stream is complete whenever the caller looks (cuStreamQuery and cuEventQuery
// answer CUDA_SUCCESS); stream capture records the operations and a graph replays them.
#include "backends/cuda_ptx/emulator/driver_state.hpp"

namespace trine::cuda::emu {
namespace {

#define EMU_ENTER()                                       \
  DriverState& st = state();                              \
  std::lock_guard lock(st.mu);                            \
  if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  if (st.sticky != CUDA_SUCCESS) return st.sticky

bool valid_stream(DriverState& st, CUstream s) { return s == nullptr || st.streams.count(reinterpret_cast<EmuStream*>(s)); }

CUresult stream_create(CUstream* out, unsigned flags) {
  EMU_ENTER();
  if (!out || (flags & ~CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  auto* s = new EmuStream;
  st.streams.insert(s);
  *out = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}
CUresult stream_destroy(CUstream h) {
  EMU_ENTER();
  auto* s = reinterpret_cast<EmuStream*>(h);
  if (!st.streams.erase(s)) return CUDA_ERROR_INVALID_HANDLE;
  delete s;
  return CUDA_SUCCESS;
}
CUresult stream_synchronize(CUstream h) {
  EMU_ENTER();
  if (!valid_stream(st, h)) return CUDA_ERROR_INVALID_HANDLE;
  if (h && reinterpret_cast<EmuStream*>(h)->capturing) {
    reinterpret_cast<EmuStream*>(h)->capture_invalid = true;  // synchronising a capturing stream is illegal
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  return CUDA_SUCCESS;
}
CUresult stream_query(CUstream h) {
  EMU_ENTER();
  return valid_stream(st, h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags) {
  EMU_ENTER();
  if (!valid_stream(st, h) || !st.events.count(reinterpret_cast<EmuEvent*>(e))) return CUDA_ERROR_INVALID_HANDLE;
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // the event's work is already done
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
  EMU_ENTER();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  if (!st.events.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}
CUresult event_record(CUevent h, CUstream s) {
  EMU_ENTER();
  auto* e = reinterpret_cast<EmuEvent*>(h);
  if (!st.events.count(e) || !valid_stream(st, s)) return CUDA_ERROR_INVALID_HANDLE;
  return submit(s, [e] {
    e->recorded = true;
    e->when = std::chrono::steady_clock::now();
    return CUDA_SUCCESS;
  });
}
CUresult event_query(CUevent h) {
  EMU_ENTER();
  return st.events.count(reinterpret_cast<EmuEvent*>(h)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult event_synchronize(CUevent h) { return event_query(h); }
CUresult event_elapsed(float* ms, CUevent a, CUevent b) {
  EMU_ENTER();
  auto* ea = reinterpret_cast<EmuEvent*>(a);
  auto* eb = reinterpret_cast<EmuEvent*>(b);
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!st.events.count(ea) || !st.events.count(eb)) return CUDA_ERROR_INVALID_HANDLE;
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
  if (EmuStream* es = s ? find_stream(s) : nullptr; es && es->capturing) {
    es->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  if (s && !find_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  return node();
}

void fill_stream_entries(DriverApi& a) {
  a.cuStreamCreate = stream_create;
  a.cuStreamDestroy = stream_destroy;
  a.cuStreamSynchronize = stream_synchronize;
  a.cuStreamQuery = stream_query;
  a.cuStreamWaitEvent = stream_wait_event;
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
