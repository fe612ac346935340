// benches/compare: the side-by-side timing harness. Each line times trine and the other
// libraries round by round (one timed block of each per round, in turn), so a drift in the
// machine's speed hits every library alike, and reports the median of the per-round ratios.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

namespace compare {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Float buffers for every library alike, allocated as trine's cpu backend allocates its own:
// 64-byte aligned (OpenBLAS on 16-byte-aligned data lost a few percent in PERF-NOTES'
// measurements), and from 4 MiB up 2 MiB aligned and advised as transparent huge pages, so no
// library (nor the STREAM copy) streams over 4 KiB pages while trine does not.
struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;
inline Buffer aligned_floats(std::size_t n) {
  const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  constexpr std::size_t huge = std::size_t{2} << 20;
  if (bytes >= 2 * huge) {
    const std::size_t rounded = (bytes + huge - 1) / huge * huge;
    void* p = std::aligned_alloc(huge, rounded);
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
    return Buffer(static_cast<float*>(p));
  }
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

struct Stat {
  double median = 0, lo = 0, hi = 0;
};

inline Stat stat_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

struct Options {
  int rounds = 9;
  double block_seconds = 0.05;  // each library's timed block per round
  bool quick = false;
  std::string filter;  // run only lines whose name contains this
  int threads = 1;
};

// One library's way to run the line's work once.
struct Contender {
  std::string name;
  std::function<void()> run;
};

// Seconds per call of each contender, per round; contenders[0] is trine.
struct Timing {
  std::vector<std::vector<double>> seconds;  // [contender][round]

  Stat per_call(std::size_t c) const { return stat_of(seconds[c]); }
  // Their time / trine's time per round: > 1 means trine is faster.
  Stat ratio(std::size_t c) const {
    std::vector<double> r;
    for (std::size_t i = 0; i < seconds[c].size(); ++i) r.push_back(seconds[c][i] / seconds[0][i]);
    return stat_of(r);
  }
};

// Warm-up, then `rounds` rounds of one timed block per contender. Between blocks the thread
// sleeps 2 ms: longer than trine's pool spins (50 us) and, with OPENBLAS_THREAD_TIMEOUT and
// OMP_WAIT_POLICY=passive (which compare sets when they are missing), than any library's idle
// threads poll, so no library's spinning threads steal the next one's cores.
inline Timing time_round_robin(const Options& o, const std::vector<Contender>& cs) {
  std::vector<int> reps(cs.size(), 1);
  for (std::size_t c = 0; c < cs.size(); ++c) {
    cs[c].run();  // first touch, plans, caches
    const double t0 = now();
    cs[c].run();
    const double once = std::max(now() - t0, 1e-7);
    reps[c] = static_cast<int>(std::clamp(o.block_seconds / once, 1.0, 1e6));
  }
  Timing t;
  t.seconds.assign(cs.size(), {});
  for (int r = 0; r < o.rounds; ++r) {
    for (std::size_t c = 0; c < cs.size(); ++c) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const double t0 = now();
      for (int i = 0; i < reps[c]; ++i) cs[c].run();
      t.seconds[c].push_back((now() - t0) / reps[c]);
    }
  }
  return t;
}

// Fails the run (exit 1) when two libraries disagree: a fast wrong kernel must not look good.
inline void expect_close(const std::string& line, const std::string& other, const float* a, const float* b,
                         std::size_t n, double tolerance) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])) / std::max(scale, 1e-30));
  if (!(worst <= tolerance)) {
    std::fprintf(stderr, "compare: %s: trine and %s differ by %.3g of the largest value (allowed %.1g)\n", line.c_str(),
                 other.c_str(), worst, tolerance);
    std::exit(1);
  }
}

inline void progress(const Options& o, const std::string& line) {
  std::fprintf(stderr, "[compare] %d thread%s: %s\n", o.threads, o.threads == 1 ? "" : "s", line.c_str());
}

}  // namespace compare
