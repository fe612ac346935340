// The one shared thread pool of the cpu_simd backend: persistent workers (threads created per call
// collapse small ops on 2 vCPUs), sized by TRINE_NUM_THREADS or the cores this process may use.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace trine::cpu {

using RangeFn = void (*)(void* ctx, std::int64_t begin, std::int64_t end);

// Number of threads work is split over (callers included). Throws Error(invalid_argument) when
// TRINE_NUM_THREADS is set to something other than 1..1024.
int thread_count();

// Calls fn(ctx, begin, end) over disjoint chunks covering [0, n), each at least `grain` long
// (except the last), on the pool and the calling thread; returns when all are done. A call from
// inside a pool task runs serially on the caller. An exception thrown by a chunk is rethrown here
// after every chunk has finished.
void parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx);

// Runs `task` on the pool's executor thread, FIFO after every task posted before it; returns at
// once. The executor takes part in parallel_for like a calling thread, so the pool stays
// TRINE_NUM_THREADS threads in all. A task handles its own exceptions.
void post(std::function<void()> task);
// True when no posted task is queued or running.
bool queue_idle();

template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_for_raw(
      n, grain, [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace trine::cpu
