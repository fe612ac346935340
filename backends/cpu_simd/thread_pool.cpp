// The shared pool behind parallel_for: persistent workers woken per call, the caller joins in.
#include "backends/cpu_simd/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
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

thread_local bool t_inside_pool = false;

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  int size() const { return threads_; }

  void run(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx) {
    if (n <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    std::int64_t max_chunks = (n + grain - 1) / grain;
    std::int64_t chunks = std::min<std::int64_t>(max_chunks, threads_);
    if (chunks <= 1 || t_inside_pool || workers_.empty()) {
      fn(ctx, 0, n);
      return;
    }
    std::unique_lock<std::mutex> call_lock(call_mu_, std::try_to_lock);
    if (!call_lock.owns_lock()) {  // another thread is using the pool: run serially, never deadlock
      fn(ctx, 0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = Job{fn, ctx, n, chunks};
      next_.store(0, std::memory_order_relaxed);
      pending_ = chunks;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mu_);
    // Wait for the chunks and for every worker to leave work(): job_ is rewritten by the next call.
    done_.wait(lock, [this] { return pending_ == 0 && active_ == 0; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Job {
    RangeFn fn = nullptr;
    void* ctx = nullptr;
    std::int64_t n = 0;
    std::int64_t chunks = 0;
  };

  // Claims chunks of the current job until none are left.
  void work() {
    bool was_inside = t_inside_pool;
    t_inside_pool = true;
    for (;;) {
      std::int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= job_.chunks) break;
      std::int64_t begin = job_.n * c / job_.chunks;
      std::int64_t end = job_.n * (c + 1) / job_.chunks;
      std::exception_ptr err;
      try {
        job_.fn(job_.ctx, begin, end);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_.notify_all();
    }
    t_inside_pool = was_inside;
  }

  void worker() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        ++active_;
      }
      work();
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_.notify_all();
    }
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  Job job_;
  std::atomic<std::int64_t> next_{0};
  std::int64_t pending_ = 0;
  int active_ = 0;  // workers inside work()
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p(default_thread_count());
  return p;
}

}  // namespace

int thread_count() { return pool().size(); }

void parallel_for_raw(std::int64_t n, std::int64_t grain, RangeFn fn, void* ctx) { pool().run(n, grain, fn, ctx); }

}  // namespace trine::cpu
