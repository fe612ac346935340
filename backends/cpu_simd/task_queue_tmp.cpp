// TEMPORARY (replaced by the pool's own executor when the pool branch merges).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "backends/cpu_simd/thread_pool.hpp"

namespace trine::cpu {
namespace {
struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> q;
  int running = 0;
  bool stop = false;
  std::thread t;
  Queue() {
    t = std::thread([this] {
      for (;;) {
        std::function<void()> f;
        {
          std::unique_lock<std::mutex> l(mu);
          cv.wait(l, [&] { return stop || !q.empty(); });
          if (q.empty()) return;
          f = std::move(q.front());
          q.pop_front();
          running = 1;
        }
        f();
        std::lock_guard<std::mutex> l(mu);
        running = 0;
      }
    });
  }
  ~Queue() {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    t.join();
  }
};
Queue& queue() {
  static Queue q;
  return q;
}
}  // namespace
void post(std::function<void()> task) {
  auto& q = queue();
  {
    std::lock_guard<std::mutex> l(q.mu);
    q.q.push_back(std::move(task));
  }
  q.cv.notify_one();
}
bool queue_idle() {
  auto& q = queue();
  std::lock_guard<std::mutex> l(q.mu);
  return q.q.empty() && q.running == 0;
}
}  // namespace trine::cpu
