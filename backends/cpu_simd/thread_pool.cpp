// The shared pool behind parallel_for and post: persistent workers woken per call (the caller joins
// in), and one executor thread that runs posted tasks in order.
//
// Each parallel_for publishes its own Job, written completely before it is published under mu and
// never written again except for its claim counter and its mutex-guarded tallies. A worker reaches
// a job only by reading `current` under mu, and the caller does not return (its Job lives on its
// stack) until every worker that reached the job has left it; after the caller clears `current`, a
// worker that wakes late finds nothing to join. So no thread ever reads a job that is being
// rewritten, whatever the order in which threads wake.
//
// A wake-up through the kernel costs tens of microseconds on these VMs, more than a small GEMM
// split saves. So a thread that runs out of work (a worker after a job, the caller waiting for
// the workers' chunks, the executor after a task) first spins for a bounded time on an atomic that
// says new work has come, and only then sleeps on its condition variable. The spin only reads;
// every decision is still taken under the mutex, so it changes timing, never the protocol.
#include "backends/cpu_simd/thread_pool.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

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
  return usable_cpus();
}

// How long an idle thread of a pool of `threads` polls before it sleeps: long enough to cover the
// gap between two back-to-back calls of a caller (a few microseconds of its own work), short
// enough that a thread that is not needed gives its core back at once in human terms. A pool with
// more compute threads than cores does not spin: a polling thread would take the core of one that
// still has work. TRINE_POOL_SPIN_US overrides it (0: sleep at once).
std::int64_t spin_budget_ns(int threads) {
  if (const char* env = std::getenv("TRINE_POOL_SPIN_US"); env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 1'000'000) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[cpu] TRINE_POOL_SPIN_US must be an integer in 0..1000000, got '") + env + "'");
    }
    return static_cast<std::int64_t>(v) * 1000;
  }
  return threads <= usable_cpus() ? std::int64_t{50'000} : 0;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls ready() for at most budget_ns; true as soon as it holds. The clock is read once per 64
// polls (about a microsecond), so a poll costs a pause and an atomic load. Each of those rounds
// ends with sched_yield: a thread the pool's work just woke (the caller of an async op, waiting on
// its future) may be waiting for this core, and it must not wait for the spin to run out.
template <class Ready>
bool spin_until(std::int64_t budget_ns, const Ready& ready) {
  const std::int64_t budget = budget_ns;
  if (budget <= 0) return ready();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::nanoseconds(budget)) return ready();
    sched_yield();
  }
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
  // Set under State::mu when pending and joined both reach 0; the caller polls it before sleeping.
  std::atomic<bool> finished{false};
};

}  // namespace

struct ThreadPool::State {
  explicit State(std::int64_t spin) : spin_ns(spin) {}

  const std::int64_t spin_ns;  // how long an idle thread polls before sleeping
  std::vector<std::thread> workers;
  std::thread executor;

  std::mutex call_mu;  // one parallel_for at a time owns the workers
  std::mutex mu;
  std::condition_variable wake, done;
  Job* current = nullptr;        // guarded by mu
  std::uint64_t generation = 0;  // guarded by mu; counts published jobs
  bool stop = false;             // guarded by mu
  // Mirrors of generation and stop that idle workers poll before sleeping; written under mu.
  std::atomic<std::uint64_t> generation_hint{0};
  std::atomic<bool> stop_hint{false};

  std::mutex queue_mu;
  std::condition_variable queue_wake;
  std::deque<std::function<void()>> queue;   // guarded by queue_mu
  bool queue_stop = false;                   // guarded by queue_mu
  std::atomic<std::int64_t> outstanding{0};  // posted tasks not yet finished
  std::atomic<std::int64_t> queued{0};       // posted tasks not yet taken; the executor polls it

  // Called under mu by whoever brings the job's last chunk or last worker to zero.
  void finish_if_done(Job& job) {
    if (job.pending == 0 && job.joined == 0) {
      job.finished.store(true, std::memory_order_release);
      done.notify_all();
    }
  }

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
      --job.pending;
      finish_if_done(job);
    }
    t_inside_chunk = was_inside;
  }

  void worker_loop() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      // `seen` keeps a worker that already helped with the current job from rejoining it in a loop.
      if (!(stop || (current && generation != seen))) {
        lock.unlock();
        spin_until(spin_ns, [&] {
          return stop_hint.load(std::memory_order_relaxed) ||
                 generation_hint.load(std::memory_order_relaxed) != seen;
        });
        lock.lock();
      }
      wake.wait(lock, [&] { return stop || (current && generation != seen); });
      if (stop) return;
      seen = generation;
      Job& job = *current;
      ++job.joined;
      lock.unlock();
      run_chunks(job);
      lock.lock();
      --job.joined;
      finish_if_done(job);
    }
  }

  void executor_loop() {
    std::unique_lock<std::mutex> lock(queue_mu);
    for (;;) {
      if (!queue_stop && queue.empty()) {
        lock.unlock();
        spin_until(spin_ns, [&] { return queued.load(std::memory_order_relaxed) > 0; });
        lock.lock();
      }
      queue_wake.wait(lock, [&] { return queue_stop || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and every task has run
      std::function<void()> task = std::move(queue.front());
      queue.pop_front();
      queued.fetch_sub(1, std::memory_order_relaxed);
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

ThreadPool::ThreadPool(int threads, ThreadStarter start) : s_(std::make_unique<State>(spin_budget_ns(threads))) {
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
  // Under an address-space limit (ulimit -v) the workers' stacks would take all of it and leave the
  // process nothing to allocate the op's tensors from (whether anything was left depended on the
  // library's size modulo a stack): `headroom` holds address space back while they start.
  constexpr std::size_t headroom_bytes = std::size_t{64} << 20;
  void* headroom = threads > 1 ? mmap(nullptr, headroom_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                      -1, 0)
                               : MAP_FAILED;
  try {
    s->workers.reserve(static_cast<std::size_t>(std::max(0, threads - 1)));
    for (int i = 1; i < threads; ++i) s->workers.push_back(start([s] { s->worker_loop(); }));
  } catch (...) {
  }
  if (headroom != MAP_FAILED) munmap(headroom, headroom_bytes);
}

ThreadPool::~ThreadPool() {
  State* s = s_.get();
  // The executor first: the tasks it still has may use the workers.
  {
    std::lock_guard<std::mutex> lock(s->queue_mu);
    s->queue_stop = true;
    s->queued.fetch_add(1, std::memory_order_relaxed);  // ends a spinning executor's poll
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
    s->stop_hint.store(true, std::memory_order_relaxed);
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
    s.generation_hint.store(s.generation, std::memory_order_relaxed);
  }
  // Wake only the workers there are chunks for (the caller takes one).
  const std::int64_t helpers = chunks - 1;
  if (helpers >= static_cast<std::int64_t>(s.workers.size())) {
    s.wake.notify_all();
  } else {
    for (std::int64_t i = 0; i < helpers; ++i) s.wake.notify_one();
  }
  s.run_chunks(job);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.current = nullptr;  // a worker waking from now on finds no job
    s.finish_if_done(job);
  }
  spin_until(s.spin_ns, [&] { return job.finished.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lock(s.mu);
  s.done.wait(lock, [&] { return job.pending == 0 && job.joined == 0; });
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::post(std::function<void()> task) {
  State& s = *s_;
  {
    std::lock_guard<std::mutex> lock(s.queue_mu);
    s.queue.push_back(std::move(task));
    s.outstanding.fetch_add(1, std::memory_order_relaxed);
    s.queued.fetch_add(1, std::memory_order_relaxed);
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
