// The one shared thread pool of the cpu_simd backend: persistent workers (threads created per call
// collapse small ops on 2 vCPUs) plus one executor thread that runs posted submissions in order,
// sized by TRINE_NUM_THREADS or the cores this process may use.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

namespace trine::cpu {

using RangeFn = void (*)(void* ctx, std::int64_t begin, std::int64_t end);

// A pool of `threads` threads that compute: one executor (runs posted tasks, and joins in the
// parallel_for calls those tasks make) and threads - 1 workers. The process shares one (below);
// tests build their own.
class ThreadPool {
 public:
  // Starts one thread; the pool calls it for the executor and each worker. Tests inject one that
  // fails, the way pthread_create does under a thread-count or address-space limit.
  using ThreadStarter = std::function<std::thread(std::function<void()> body)>;

  // Starts the threads it can: if a worker fails to start, the pool runs with those that did
  // (size() says how many). Throws Error(device_unavailable) when not even the executor starts,
  // Error(invalid_argument) when TRINE_POOL_SPIN_US is not an integer in 0..1000000.
  // An idle thread polls for new work for up to TRINE_POOL_SPIN_US microseconds (default 50; none
  // when `threads` exceeds the cores this process may use) before it sleeps, so back-to-back
  // calls do not pay a kernel wake-up.
  explicit ThreadPool(int threads, ThreadStarter start = {});
  // Runs every task still queued, then joins every thread. Never throws.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that compute in a parallel_for: the calling thread (or the executor) plus workers.
  int size() const noexcept;
  // See the free functions below.
  void parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx);
  void post(std::function<void()> task);
  bool queue_idle() noexcept;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Number of threads work is split over (callers included). Throws Error(invalid_argument) when
// TRINE_NUM_THREADS is set to something other than 1..1024, and Error(device_unavailable) when no
// thread at all can be started.
int thread_count();

// Calls fn(ctx, begin, end) over disjoint chunks covering [0, n), each at least `grain` long
// (except the last), on the pool and the calling thread; returns when all are done. A call from
// inside a chunk, or while another thread's parallel_for holds the workers, runs serially on the
// caller (never a deadlock, at most one extra thread computing). An exception thrown by a chunk is
// rethrown here after every chunk has finished.
void parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx);

// Queues `task` for the shared pool's executor thread and returns at once. Tasks run one at a
// time in the order they were posted (a task posted by a task runs after it); a parallel_for
// inside a task uses the workers. An exception a task throws is swallowed (the task must report
// its own errors); later tasks still run.
void post(std::function<void()> task);

// True when no posted task is queued or running. A hint, not a lock: another thread may post
// right after it returns.
bool queue_idle();

template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_for_raw(
      n, grain, [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

// The same, on a pool of one's own (tests).
template <class F>
void parallel_for(ThreadPool& pool, std::int64_t n, std::int64_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  pool.parallel_for_raw(
      n, grain, [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace trine::cpu
