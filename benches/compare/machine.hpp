// benches/compare: what the machine itself reaches, the yardsticks of the table: the f32 FMA peak
// (many independent accumulators, widest ISA the CPU has) and a STREAM copy, both on the run's
// thread count.
#pragma once

#include <immintrin.h>

#include <thread>
#include <vector>

#include "harness.hpp"

namespace compare {

// FMAs on 24 independent registers: more than latency x ports on any current core.
__attribute__((target("avx512f"))) inline double fma_peak_avx512(long iters) {
  __m512 a[24];
  for (int i = 0; i < 24; ++i) a[i] = _mm512_set1_ps(1.0f + static_cast<float>(i) * 1e-7f);
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  const double t0 = now();
  for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  const double t = now() - t0;
  alignas(64) float out[16];
  volatile float sink = 0;
  for (int i = 0; i < 24; ++i) {
    _mm512_store_ps(out, a[i]);
    sink = sink + out[0];
  }
  return static_cast<double>(iters) * 24 * 32 / t;
}

__attribute__((target("avx2,fma"))) inline double fma_peak_avx2(long iters) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + static_cast<float>(i) * 1e-7f);
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  const double t0 = now();
  for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  const double t = now() - t0;
  alignas(32) float out[8];
  volatile float sink = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_store_ps(out, a[i]);
    sink = sink + out[0];
  }
  return static_cast<double>(iters) * 12 * 16 / t;
}

// Runs f(thread index) on `threads` threads at once (the caller is one of them).
template <class F>
void on_threads(int threads, const F& f) {
  std::vector<std::thread> ts;
  for (int i = 1; i < threads; ++i) ts.emplace_back([&f, i] { f(i); });
  f(0);
  for (auto& t : ts) t.join();
}

// Iterations of one fma_peak_* call: 50-100 ms on one core at full size.
inline long fma_peak_iters(bool quick) { return quick ? 2'000'000 : 10'000'000; }

// FMA flops one fma_peak_* call of `iters` iterations does on one thread.
inline double fma_peak_flops(long iters) {
  return static_cast<double>(iters) * (__builtin_cpu_supports("avx512f") ? 24 * 32 : 12 * 16);
}

// The FMA loop on `threads` threads at once, `iters` iterations each, as a contender of a timed
// round: the peak measured in the same round as what it is the yardstick of.
inline void fma_peak_run(int threads, long iters) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  on_threads(threads, [&](int) { (void)(avx512 ? fma_peak_avx512(iters) : fma_peak_avx2(iters)); });
}

// GFLOP/s of all threads together, best of 5.
inline double fma_peak_gflops(int threads, bool quick) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const long iters = fma_peak_iters(quick);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<double> per(static_cast<std::size_t>(threads));
    on_threads(threads, [&](int i) { per[static_cast<std::size_t>(i)] = avx512 ? fma_peak_avx512(iters) : fma_peak_avx2(iters); });
    double sum = 0;
    for (double p : per) sum += p;
    best = std::max(best, sum / 1e9);
  }
  return best;
}

// STREAM copy b = a over n floats, each thread its own contiguous part, arrays reused and first
// touched by the thread that copies them. GB/s counting a read and a write per element, median.
class StreamCopy {
 public:
  StreamCopy(std::size_t n, int threads) : n_(n), threads_(threads), a_(aligned_floats(n)), b_(aligned_floats(n)) {
    on_threads(threads_, [&](int t) {
      for (std::size_t i = lo(t); i < hi(t); ++i) a_[i] = 1.0f, b_[i] = 0.0f;
    });
  }
  void run() {
    on_threads(threads_, [&](int t) {
      float* __restrict b = b_.get();
      const float* __restrict a = a_.get();
      for (std::size_t i = lo(t); i < hi(t); ++i) b[i] = a[i];
    });
  }
  double bytes() const { return 2.0 * 4.0 * static_cast<double>(n_); }

 private:
  std::size_t lo(int t) const { return n_ * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads_); }
  std::size_t hi(int t) const { return n_ * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads_); }
  std::size_t n_;
  int threads_;
  Buffer a_, b_;
};

}  // namespace compare
