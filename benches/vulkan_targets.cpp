// The Vulkan backend's targets (issue 7) on one Vulkan device, data resident on the device: the
// element-wise throughput on 16M floats, matmul 1024^3, softmax 4096x4096, a 64-op chain on 4K
// floats as one batch against 64 sync calls, and a sync call on 16 floats against an empty
// submission waited for. The measurements are interleaved round by round (the machine's speed
// drifts) and each line quotes the median over rounds, with the spread.
//
//   cmake --build build/rel --target vulkan_targets
//   taskset -c 0 build/rel/benches/vulkan_targets [--rounds N] [--device vulkan:0]
//
// (taskset pins the process and lavapipe's threads to one core: unpinned, the submit and wait
// figures are dominated by wake-ups between threads; see the issue note.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "trine/debug.hpp"
#include "trine/trine.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

// Seconds per call of f: as many calls as fit in ~target seconds (at least one), after one warm-up.
double per_call(const std::function<void()>& f, double target) {
  f();
  int n = 0;
  const auto start = clock_type::now();
  double elapsed = 0;
  do {
    f();
    ++n;
    elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  } while (elapsed < target);
  return elapsed / n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Line {
  std::string what;
  std::function<double()> measure;  // one round: the figure (rate or ratio)
  std::string unit;
  double target;
  bool higher_is_better;
  std::string anchor;  // what the issue quotes for other libraries on this machine kind
  std::vector<double> rounds;
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  std::string device_name = "vulkan:0";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device_name = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--device vulkan:N]\n", argv[0]);
      return 2;
    }
  }
  try {
    const trine::Device dev = trine::Device::parse(device_name);
    std::printf("device: %s\n", device_name.c_str());
    for (const auto& d : trine::devices())
      if (d.device == dev) std::printf("  %s (%s)\n", d.name.c_str(), d.driver.c_str());

    const std::int64_t big = 1 << 24;
    const trine::Tensor x16m = trine::Tensor::random({big}, 1, -1, 1, trine::DType::f32, dev);
    const trine::Tensor a = trine::Tensor::random({1024, 1024}, 2, -1, 1, trine::DType::f32, dev);
    const trine::Tensor b = trine::Tensor::random({1024, 1024}, 3, -1, 1, trine::DType::f32, dev);
    const trine::Tensor s = trine::Tensor::random({4096, 4096}, 4, -4, 4, trine::DType::f32, dev);
    const trine::Tensor x16 = trine::Tensor::random({16}, 5, -1, 1, trine::DType::f32, dev);
    const std::int64_t chain_n = 4096;
    std::vector<float> chain_host(static_cast<std::size_t>(chain_n), 0.25f);
    trine::Batch batch(dev);
    {
      trine::Tensor t = batch.upload(chain_host, {chain_n});
      for (int i = 0; i < 64; ++i) t = trine::scale(t, 0.5f, 0.25f);
      (void)batch.read(t);
    }
    // A sync call returns once its work has finished: nothing more to wait for.
    auto sync_done = [](const trine::Tensor& t) { (void)t; };

    std::vector<Line> lines;
    lines.push_back({"relu, 16M floats (GB/s, read + write)",
                     [&] {
                       const double t = per_call([&] { sync_done(trine::relu(x16m)); }, 0.3);
                       return 2.0 * 4 * static_cast<double>(big) / t / 1e9;
                     },
                     "GB/s",
                     12.0,
                     true,
                     "Kompute-style vec4x4 ~12, a scalar shader ~5",
                     {}});
    lines.push_back({"scale, 16M floats (GB/s, read + write)",
                     [&] {
                       const double t = per_call([&] { sync_done(trine::scale(x16m, 0.5f, 0.25f)); }, 0.3);
                       return 2.0 * 4 * static_cast<double>(big) / t / 1e9;
                     },
                     "GB/s",
                     12.0,
                     true,
                     "as relu",
                     {}});
    lines.push_back({"matmul 1024^3 f32 (GFLOP/s)",
                     [&] {
                       const double t = per_call([&] { sync_done(trine::matmul(a, b)); }, 0.5);
                       return 2.0 * 1024.0 * 1024.0 * 1024.0 / t / 1e9;
                     },
                     "GFLOP/s",
                     16.0,
                     true,
                     "ggml-vulkan 10.8",
                     {}});
    lines.push_back({"softmax 4096x4096 (GB/s, read + write)",
                     [&] {
                       const double t = per_call([&] { sync_done(trine::softmax(s)); }, 0.5);
                       return 2.0 * 4 * 4096.0 * 4096.0 / t / 1e9;
                     },
                     "GB/s",
                     2.7,
                     true,
                     "ggml-vulkan 0.9",
                     {}});
    lines.push_back({"64 scale ops on 4K floats: 64 sync calls / one batch",
                     [&] {
                       const double calls = per_call(
                           [&] {
                             trine::Tensor t = trine::Tensor::from(chain_host, {chain_n}, trine::DType::f32, dev);
                             for (int i = 0; i < 64; ++i) t = trine::scale(t, 0.5f, 0.25f);
                             (void)t.to_vector();
                           },
                           0.2);
                       const double one = per_call([&] { batch.run(); }, 0.2);
                       return calls / one;
                     },
                     "x",
                     3.0,
                     true,
                     "",
                     {}});
    lines.push_back({"sync relu on 16 floats / empty submission waited for",
                     [&] {
                       const double call = per_call([&] { sync_done(trine::relu(x16)); }, 0.1);
                       const double bare = per_call([&] { trine::debug::bare_submit(dev); }, 0.1);
                       return call / bare;
                     },
                     "x",
                     1.2,
                     false,
                     "one bare submit + fence wait ~12 us pinned",
                     {}});

    for (int r = 0; r < rounds; ++r) {
      std::fprintf(stderr, "round %d of %d\n", r + 1, rounds);
      for (auto& l : lines) l.rounds.push_back(l.measure());
    }

    std::printf("\n%-55s %10s %16s %8s  %s\n", "line", "median", "min..max", "target", "anchor (issue 7)");
    for (const auto& l : lines) {
      const double med = median(l.rounds);
      const double lo = *std::min_element(l.rounds.begin(), l.rounds.end());
      const double hi = *std::max_element(l.rounds.begin(), l.rounds.end());
      const bool met = l.higher_is_better ? med >= l.target : med <= l.target;
      char range[64];
      std::snprintf(range, sizeof range, "%.2f..%.2f", lo, hi);
      std::printf("%-55s %7.2f %-2s %16s %s%5.1f %s  %s\n", l.what.c_str(), med, l.unit == "x" ? "x" : "", range,
                  l.higher_is_better ? ">=" : "<=", l.target, met ? "met " : "MISS", l.anchor.c_str());
    }
    std::printf("(%d interleaved rounds; rates per second of the call, sync, data resident on the device)\n", rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vulkan_targets: %s\n", e.what());
    return 1;
  }
  return 0;
}
