// The shared pool behind parallel_for and post: persistent workers woken per call (the caller joins
// in), and one executor thread that runs posted tasks in order.
//
// Each parallel_for publishes its own Job, written completely before it is published under mu and
// never written again except for its claim counter and its mutex-guarded tallies. A worker reaches
// a job only by reading `current` under mu, and the caller does not return (its Job lives on its
// stack) until every worker that reached the job has left it; after the caller clears `current`, a
// worker that wakes late finds nothing to join. So no thread ever reads a job that is being
// rewritten, whatever the order in which threads wake.
#include "backends/cpu_simd/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "trine/error.hpp"

namespace trine::cpu {
namespace {

int default_thread_count() {
  if (const char* env = std::getenv("TRINE_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > 1024) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[cpu] TRINE_NUM_THREADS must be an integer in 1..1024, got '") + env + "'");
    }
    return static_cast<int>(v);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// True while this thread runs a chunk: a nested parallel_for then runs serially, since the workers
// it would wait for may be the ones running its caller.
thread_local bool t_inside_chunk = false;

// One parallel_for call. fn..chunks are written before the job is published and only read after.
struct Job {
  RangeFn fn = nullptr;
  void* ctx = nullptr;
  std::int64_t n = 0;
  std::int64_t chunks = 0;
  std::atomic<std::int64_t> next{0};  // next chunk to claim; the claim alone needs no ordering
  // Guarded by State::mu.
  std::int64_t pending = 0;  // chunks not finished
  int joined = 0;            // workers that reached this job and have not left it
  std::exception_ptr error;
};

}  // namespace

struct ThreadPool::State {
  std::vector<std::thread> workers;
  std::thread executor;

  std::mutex call_mu;  // one parallel_for at a time owns the workers
  std::mutex mu;
  std::condition_variable wake, done;
  Job* current = nullptr;        // guarded by mu
  std::uint64_t generation = 0;  // guarded by mu; counts published jobs
  bool stop = false;             // guarded by mu

  std::mutex queue_mu;
  std::condition_variable queue_wake;
  std::deque<std::function<void()>> queue;   // guarded by queue_mu
  bool queue_stop = false;                   // guarded by queue_mu
  std::atomic<std::int64_t> outstanding{0};  // posted tasks not yet finished

  // Claims chunks of `job` until none are left.
  void run_chunks(Job& job) {
    const bool was_inside = t_inside_chunk;
    t_inside_chunk = true;
    for (;;) {
      const std::int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.chunks) break;
      std::exception_ptr err;
      try {
        job.fn(job.ctx, job.n * c / job.chunks, job.n * (c + 1) / job.chunks);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (err && !job.error) job.error = err;
      if (--job.pending == 0 && job.joined == 0) done.notify_all();
    }
    t_inside_chunk = was_inside;
  }

  void worker_loop() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      // `seen` keeps a worker that already helped with the current job from rejoining it in a loop.
      wake.wait(lock, [&] { return stop || (current && generation != seen); });
      if (stop) return;
      seen = generation;
      Job& job = *current;
      ++job.joined;
      lock.unlock();
      run_chunks(job);
      lock.lock();
      if (--job.joined == 0 && job.pending == 0) done.notify_all();
    }
  }

  void executor_loop() {
    std::unique_lock<std::mutex> lock(queue_mu);
    for (;;) {
      queue_wake.wait(lock, [&] { return queue_stop || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and every task has run
      std::function<void()> task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      try {
        task();
      } catch (...) {
        // The task owns its errors (the backend wraps each submission); the executor must live on.
      }
      task = nullptr;  // its captures go before the queue reports idle
      outstanding.fetch_sub(1, std::memory_order_release);
      lock.lock();
    }
  }
};

ThreadPool::ThreadPool(int threads, ThreadStarter start) : s_(std::make_unique<State>()) {
  if (!start) start = [](std::function<void()> body) { return std::thread(std::move(body)); };
  State* s = s_.get();
  try {
    s->executor = start([s] { s->executor_loop(); });
  } catch (const std::exception& e) {
    throw Error(ErrorCode::device_unavailable,
                std::string("[cpu] could not start the thread pool's executor thread: ") + e.what());
  }
  // A thread-count or address-space limit can stop us part way: run with the workers that started.
  // Nothing below throws, so the executor and those workers are always joined by the destructor.
  try {
    s->workers.reserve(static_cast<std::size_t>(std::max(0, threads - 1)));
    for (int i = 1; i < threads; ++i) s->workers.push_back(start([s] { s->worker_loop(); }));
  } catch (...) {
  }
}

ThreadPool::~ThreadPool() {
  State* s = s_.get();
  // The executor first: the tasks it still has may use the workers.
  {
    std::lock_guard<std::mutex> lock(s->queue_mu);
    s->queue_stop = true;
  }
  s->queue_wake.notify_all();
  const auto self = std::this_thread::get_id();
  if (s->executor.joinable()) {
    // exit() called from a task would otherwise wait for itself.
    if (s->executor.get_id() == self)
      s->executor.detach();
    else
      s->executor.join();
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
  }
  s->wake.notify_all();
  for (auto& t : s->workers) {
    if (t.get_id() == self)
      t.detach();
    else if (t.joinable())
      t.join();
  }
}

int ThreadPool::size() const noexcept { return 1 + static_cast<int>(s_->workers.size()); }

void ThreadPool::parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx) {
  if (n <= 0) return;
  State& s = *s_;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t max_chunks = (n + grain - 1) / grain;
  const std::int64_t chunks = std::min<std::int64_t>(max_chunks, size());
  if (chunks <= 1 || t_inside_chunk || s.workers.empty()) {
    fn(ctx, 0, n);
    return;
  }
  std::unique_lock<std::mutex> call_lock(s.call_mu, std::try_to_lock);
  if (!call_lock.owns_lock()) {  // another thread is using the workers: run serially, never deadlock
    fn(ctx, 0, n);
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.chunks = chunks;
  job.pending = chunks;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.current = &job;
    ++s.generation;
  }
  // Wake only the workers there are chunks for (the caller takes one).
  const std::int64_t helpers = chunks - 1;
  if (helpers >= static_cast<std::int64_t>(s.workers.size())) {
    s.wake.notify_all();
  } else {
    for (std::int64_t i = 0; i < helpers; ++i) s.wake.notify_one();
  }
  s.run_chunks(job);
  std::unique_lock<std::mutex> lock(s.mu);
  s.current = nullptr;  // a worker waking from now on finds no job
  s.done.wait(lock, [&] { return job.pending == 0 && job.joined == 0; });
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::post(std::function<void()> task) {
  State& s = *s_;
  {
    std::lock_guard<std::mutex> lock(s.queue_mu);
    s.queue.push_back(std::move(task));
    s.outstanding.fetch_add(1, std::memory_order_relaxed);
  }
  s.queue_wake.notify_one();
}

bool ThreadPool::queue_idle() noexcept { return s_->outstanding.load(std::memory_order_acquire) == 0; }

namespace {

ThreadPool& shared_pool() {
  static ThreadPool p(default_thread_count());
  return p;
}

}  // namespace

int thread_count() { return shared_pool().size(); }

void parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx) {
  shared_pool().parallel_for_raw(n, grain, fn, ctx);
}

void post(std::function<void()> task) { shared_pool().post(std::move(task)); }

bool queue_idle() { return shared_pool().queue_idle(); }

}  // namespace trine::cpu
