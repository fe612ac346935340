// The cpu thread pool: parallel_for coverage under back-to-back calls (the TSan suite runs these),
// thread-start failures, and the ordered submission queue (post / queue_idle).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "backends/cpu_simd/thread_pool.hpp"
#include "trine/trine.hpp"

using trine::cpu::ThreadPool;
using namespace std::chrono_literals;

namespace {

// Waits (bounded) until the pool reports its queue idle; false on timeout.
bool wait_idle(ThreadPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!pool.queue_idle()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// Blocks until every task posted before it has run.
void drain(ThreadPool& pool) {
  std::promise<void> p;
  auto f = p.get_future();
  pool.post([&p] { p.set_value(); });
  REQUIRE(f.wait_for(30s) == std::future_status::ready);
}

std::size_t distinct(const std::vector<std::thread::id>& ids) {
  return std::set<std::thread::id>(ids.begin(), ids.end()).size();
}

}  // namespace

TEST_CASE("parallel_for: 200,000 back-to-back calls of 2 and 16 chunks each cover [0, n) once", "[pool]") {
  // Back-to-back calls with alternating chunk counts are what let a late-waking worker meet the
  // next call's job; TSan watches every one of them in CI.
  ThreadPool pool(16);
  REQUIRE(pool.size() == 16);
  constexpr std::int64_t n = 64;
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int> chunks{0};
  int bad_calls = 0;
  for (int call = 0; call < 200000; ++call) {
    const std::int64_t grain = call % 2 == 0 ? n / 2 : n / 16;  // 2 chunks, then 16
    for (auto& h : hits) h.store(0, std::memory_order_relaxed);
    chunks.store(0, std::memory_order_relaxed);
    trine::cpu::parallel_for(pool, n, grain, [&](std::int64_t b, std::int64_t e) {
      chunks.fetch_add(1, std::memory_order_relaxed);
      for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    });
    bool ok = chunks.load() == (call % 2 == 0 ? 2 : 16);
    for (auto& h : hits) ok = ok && h.load(std::memory_order_relaxed) == 1;
    if (!ok) ++bad_calls;
  }
  CHECK(bad_calls == 0);
}

// Sets an environment variable for one scope (the pools below read it when they are built).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

TEST_CASE("parallel_for and post with spinning idle threads: back-to-back calls cover [0, n) once", "[pool]") {
  // Idle threads poll before they sleep (TRINE_POOL_SPIN_US; off when the pool has more threads
  // than cores, as the 16-thread test above does): here they spin, 4 threads forced on, so the
  // poll-then-sleep handover meets every call. TSan watches these in CI.
  ScopedEnv spin("TRINE_POOL_SPIN_US", "20");
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    constexpr std::int64_t n = 64;
    std::vector<std::atomic<int>> hits(n);
    int bad_calls = 0;
    for (int call = 0; call < 20000; ++call) {
      for (auto& h : hits) h.store(0, std::memory_order_relaxed);
      trine::cpu::parallel_for(pool, n, call % 3 == 0 ? n : 1, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
      });
      bool ok = true;
      for (auto& h : hits) ok = ok && h.load(std::memory_order_relaxed) == 1;
      if (!ok) ++bad_calls;
    }
    CHECK(bad_calls == 0);
    // The executor: tasks posted one at a time, each waited for, so it polls between them.
    std::atomic<int> ran{0};
    for (int i = 0; i < 2000; ++i) {
      std::promise<void> done;
      pool.post([&] {
        trine::cpu::parallel_for(pool, n, 1, [&](std::int64_t, std::int64_t) {});
        ran.fetch_add(1);
        done.set_value();
      });
      done.get_future().wait();
    }
    CHECK(ran.load() == 2000);
  }
}

TEST_CASE("thread pool: a malformed TRINE_POOL_SPIN_US is an invalid_argument naming it", "[pool]") {
  for (const char* bad : {"abc", "-1", "5000000", "10us"}) {
    ScopedEnv spin("TRINE_POOL_SPIN_US", bad);
    try {
      ThreadPool pool(2);
      FAIL("a pool started with TRINE_POOL_SPIN_US=" << bad);
    } catch (const trine::Error& e) {
      CHECK(e.code() == trine::ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("TRINE_POOL_SPIN_US") && Catch::Contains(bad));
    }
  }
  ScopedEnv off("TRINE_POOL_SPIN_US", "0");
  ThreadPool pool(2);
  std::atomic<int> sum{0};
  trine::cpu::parallel_for(pool, 100, 1, [&](std::int64_t b, std::int64_t e) { sum.fetch_add(static_cast<int>(e - b)); });
  CHECK(sum.load() == 100);
}

TEST_CASE("parallel_for: a chunk's exception is rethrown after every chunk finished", "[pool]") {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH(trine::cpu::parallel_for(pool, 4, 1,
                                             [&](std::int64_t b, std::int64_t) {
                                               ran.fetch_add(1);
                                               if (b == 2) throw std::runtime_error("chunk 2");
                                             }),
                    "chunk 2");
  CHECK(ran.load() == 4);
  // The pool is still usable.
  std::atomic<std::int64_t> sum{0};
  trine::cpu::parallel_for(pool, 1000, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) sum.fetch_add(i);
  });
  CHECK(sum.load() == 999 * 1000 / 2);
}

TEST_CASE("parallel_for: several user threads at once neither deadlock nor lose chunks", "[pool]") {
  ThreadPool pool(4);
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 6; ++t) {
    users.emplace_back([&, t] {
      for (int call = 0; call < 2000; ++call) {
        const std::int64_t n = 10 + (call + t) % 50;
        std::vector<int> hit(static_cast<std::size_t>(n));  // chunks are disjoint: plain ints
        trine::cpu::parallel_for(pool, n, 3, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) ++hit[static_cast<std::size_t>(i)];
        });
        for (int h : hit) failures += h != 1;
        if (call % 100 == 0) pool.post([] {});
      }
    });
  }
  for (auto& u : users) u.join();
  CHECK(failures.load() == 0);
  CHECK(wait_idle(pool));
}

TEST_CASE("thread pool: a thread that fails to start leaves a smaller pool, never a hang", "[pool]") {
  // Injects the failure pthread_create reports under RLIMIT_NPROC or RLIMIT_AS.
  auto fail_after = [](int allowed) {
    auto started = std::make_shared<std::atomic<int>>(0);
    return [started, allowed](std::function<void()> body) {
      if (started->fetch_add(1) >= allowed)
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
      return std::thread(std::move(body));
    };
  };
  SECTION("some workers start") {
    ThreadPool pool(256, fail_after(5));  // the executor and 4 workers
    CHECK(pool.size() == 5);
    std::vector<std::atomic<int>> hits(1000);
    trine::cpu::parallel_for(pool, 1000, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
    });
    int wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    CHECK(wrong == 0);
    drain(pool);
  }
  SECTION("only the executor starts") {
    ThreadPool pool(8, fail_after(1));
    CHECK(pool.size() == 1);
    int sum = 0;
    trine::cpu::parallel_for(pool, 10, 1, [&](std::int64_t b, std::int64_t e) { sum += static_cast<int>(e - b); });
    CHECK(sum == 10);
    drain(pool);
  }
  SECTION("no thread starts: a clear error") {
    try {
      ThreadPool pool(8, fail_after(0));
      FAIL("the pool started without threads");
    } catch (const trine::Error& e) {
      CHECK(e.code() == trine::ErrorCode::device_unavailable);
      CHECK(std::string(e.what()).rfind("[cpu] could not start", 0) == 0);
    }
  }
}

// Run by the test below in a child process with an address-space limit; hidden from plain runs.
TEST_CASE("thread pool child: the first op under an address-space limit", "[.][pool_child]") {
  std::vector<float> v(100000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  auto y = trine::relu(trine::Tensor::from(std::span<const float>(v), {100000})).to_vector();
  int wrong = 0;
  for (std::size_t i = 0; i < v.size(); ++i) wrong += y[i] != std::max(v[i], 0.0f);
  CHECK(wrong == 0);
  CHECK(trine::cpu::thread_count() >= 1);
  CHECK(trine::cpu::thread_count() < 256);
  std::printf("started %d of 256 threads\n", trine::cpu::thread_count());
}

TEST_CASE("thread pool: TRINE_NUM_THREADS=256 under an address-space limit runs instead of hanging", "[pool]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("skipped: sanitizer runtimes reserve more address space than the limit this test sets");
  return;
#else
  // The test binary itself, re-run with a 400 MB address space: each thread's stack reservation
  // is 8 MB, so far fewer than 256 threads can start.
  std::string exe(4096, '\0');
  const ssize_t len = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  REQUIRE(len > 0);
  exe.resize(static_cast<std::size_t>(len));
  std::vector<std::string> env_strings = {"TRINE_NUM_THREADS=256"};
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("TRINE_NUM_THREADS=", 0) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = exe, arg1 = "[pool_child]";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls until exec
    const rlimit lim{400ul << 20, 400ul << 20};
    setrlimit(RLIMIT_AS, &lim);
    execve(exe.c_str(), argv, envp.data());
    _exit(127);
  }
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 600 && !exited; ++i) {  // 60 s: a hang is the failure this test is about
    const pid_t r = waitpid(pid, &status, WNOHANG);
    REQUIRE(r >= 0);
    exited = r == pid;
    if (!exited) std::this_thread::sleep_for(100ms);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  INFO("the child hung (killed after 60 s) or failed; run it by hand: TRINE_NUM_THREADS=256 with ulimit -v 409600 "
       << exe << " \"[pool_child]\"");
  REQUIRE(exited);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

TEST_CASE("post: tasks run in the order they were posted, one at a time", "[pool]") {
  ThreadPool pool(4);
  std::vector<int> order;  // touched only by the executor until drained
  for (int i = 0; i < 1000; ++i) pool.post([&order, i] { order.push_back(i); });
  drain(pool);
  REQUIRE(order.size() == 1000);
  bool in_order = true;
  for (int i = 0; i < 1000; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
  CHECK(in_order);
  CHECK(wait_idle(pool));
}

TEST_CASE("post: 8 threads posting at once keep each thread's order", "[pool]") {
  ThreadPool pool(4);
  constexpr int threads = 8, per_thread = 2000;
  std::vector<std::pair<int, int>> seen;
  std::vector<std::thread> posters;
  for (int t = 0; t < threads; ++t) {
    posters.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) pool.post([&seen, t, i] { seen.emplace_back(t, i); });
    });
  }
  for (auto& p : posters) p.join();
  drain(pool);
  REQUIRE(seen.size() == static_cast<std::size_t>(threads * per_thread));
  std::vector<int> next(threads, 0);
  int out_of_order = 0;
  for (auto [t, i] : seen) out_of_order += i != next[static_cast<std::size_t>(t)]++;
  CHECK(out_of_order == 0);
}

TEST_CASE("post: a task that throws does not stop later tasks", "[pool]") {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  pool.post([] { throw std::runtime_error("task failed"); });
  pool.post([] { throw 42; });
  pool.post([&] { ran.fetch_add(1); });
  drain(pool);
  CHECK(ran.load() == 1);
}

TEST_CASE("post: a task posted by a task runs after it", "[pool]") {
  ThreadPool pool(2);
  std::vector<std::string> log;
  std::promise<void> done;
  pool.post([&] {
    pool.post([&] {
      log.push_back("inner");
      done.set_value();
    });
    std::this_thread::sleep_for(10ms);  // the inner task must still wait for this one
    log.push_back("outer");
  });
  REQUIRE(done.get_future().wait_for(30s) == std::future_status::ready);
  CHECK(log == std::vector<std::string>{"outer", "inner"});
}

TEST_CASE("post: queue_idle is false while a task is queued or running", "[pool]") {
  ThreadPool pool(2);
  CHECK(pool.queue_idle());
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  pool.post([gate] { gate.wait(); });
  pool.post([] {});
  CHECK_FALSE(pool.queue_idle());
  release.set_value();
  CHECK(wait_idle(pool));
}

TEST_CASE("post: a parallel_for inside a task uses the workers", "[pool]") {
  auto chunk_threads = [](auto&& post_fn, auto&& pfor) {
    std::mutex mu;
    std::vector<std::thread::id> ids;
    std::thread::id executor;
    std::promise<void> done;
    post_fn([&] {
      executor = std::this_thread::get_id();
      pfor([&](std::int64_t, std::int64_t) {
        // Long enough that the woken workers arrive before the executor could run every chunk.
        std::this_thread::sleep_for(20ms);
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(std::this_thread::get_id());
      });
      done.set_value();
    });
    REQUIRE(done.get_future().wait_for(30s) == std::future_status::ready);
    std::lock_guard<std::mutex> lock(mu);
    CHECK(std::find(ids.begin(), ids.end(), executor) != ids.end());  // the executor computes too
    return ids;
  };
  SECTION("a pool of 4") {
    ThreadPool pool(4);
    auto ids = chunk_threads([&](std::function<void()> f) { pool.post(std::move(f)); },
                             [&](auto&& chunk) { trine::cpu::parallel_for(pool, 4, 1, chunk); });
    CHECK(ids.size() == 4);
    CHECK(distinct(ids) > 1);
  }
  SECTION("the shared pool") {
    const int n = trine::cpu::thread_count();
    auto ids = chunk_threads([](std::function<void()> f) { trine::cpu::post(std::move(f)); },
                             [&](auto&& chunk) { trine::cpu::parallel_for(n, 1, chunk); });
    CHECK(ids.size() == static_cast<std::size_t>(n));
    if (n >= 2) CHECK(distinct(ids) > 1);
  }
}

TEST_CASE("post: destroying the pool runs what is queued and joins", "[pool]") {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(3);
    for (int i = 0; i < 100; ++i) {
      pool.post([&ran, &pool] {
        trine::cpu::parallel_for(pool, 6, 1, [](std::int64_t, std::int64_t) {});
        ran.fetch_add(1);
      });
    }
  }
  CHECK(ran.load() == 100);
}
