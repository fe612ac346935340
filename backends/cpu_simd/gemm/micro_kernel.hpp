// The GEMM micro-kernel: an mr x nr tile of C held in xsimd registers, updated with one FMA per
// (row, vector) for every k of a packed A panel and a packed B panel.
#pragma once

#include <cstring>

#include "backends/cpu_simd/gemm/config.hpp"

namespace trine::cpu::TRINE_ISA_NS {

// The k loop: acc[i][v] = sum over k of a[k * mr + i] * b[k * nr + v * w ..].
// One panel stays in L1 over many calls and the other streams from L2 (which, depends on the
// order gemm_blocked runs; a B panel may also be up to twice L1): asking for A 16 steps and B 8
// steps ahead keeps the loads from stalling the FMAs. The standalone 8-row kernel on the Xeon:
// 0.86 -> 0.92 of the FMA peak with A in L2, 0.92 -> 0.97 with everything in L1.
template <int mr>
[[gnu::always_inline]] inline void micro_kernel_loop(i64 kc, const float* __restrict a, const float* __restrict b,
                                                     batch_f32 (&acc)[mr][GemmConfig::nv]) {
  constexpr int nv = GemmConfig::nv;
  constexpr i64 nr = GemmConfig::nr, w = vec_width;
  constexpr i64 a_ahead = 16 * mr, b_ahead = 8 * nr, line = 16;
#if defined(TRINE_ISA_AVX512)
  // Rows in pairs: one 8-byte broadcast puts rows i and i+1 of A in alternate lanes, and each B
  // vector is read twice from memory, its even elements duplicated (vmovsldup) and its odd ones
  // (vmovshdup). Their FMAs hold rows i and i+1 interleaved, untangled once after the loop. A
  // step then loads mr/2 + 2 * nv times instead of mr + nv (12 rows: 10 loads per 24 FMAs, not
  // 14), which is what the loop runs short of when another tenant of the core takes its load
  // ports: the standalone 12-row kernel, A in L2, read 0.87-0.90 of the FMA peak against
  // 0.74-0.87 on such a machine, and about 1% more when the machine is quiet.
  static_assert(mr % 2 == 0 && nv == 2);
  constexpr int pairs = mr / 2;
  __m512 lo[pairs][nv], hi[pairs][nv];
#pragma GCC unroll 8
  for (int p = 0; p < pairs; ++p) {
#pragma GCC unroll 2
    for (int v = 0; v < nv; ++v) lo[p][v] = hi[p][v] = _mm512_setzero_ps();
  }
  for (i64 k = 0; k < kc; ++k) {
    __builtin_prefetch(a + a_ahead, 0, 3);
#pragma GCC unroll 4
    for (i64 j = 0; j < nr; j += line) __builtin_prefetch(b + b_ahead + j, 0, 3);
    __m512 be[nv], bo[nv];
#pragma GCC unroll 2
    for (int v = 0; v < nv; ++v) {
      be[v] = _mm512_moveldup_ps(_mm512_load_ps(b + v * w));
      bo[v] = _mm512_movehdup_ps(_mm512_load_ps(b + v * w));
    }
#pragma GCC unroll 8
    for (int p = 0; p < pairs; ++p) {
      double two;
      std::memcpy(&two, a + 2 * p, sizeof two);
      const __m512 av = _mm512_castpd_ps(_mm512_set1_pd(two));
#pragma GCC unroll 2
      for (int v = 0; v < nv; ++v) {
        lo[p][v] = _mm512_fmadd_ps(av, be[v], lo[p][v]);
        hi[p][v] = _mm512_fmadd_ps(av, bo[v], hi[p][v]);
      }
    }
    a += mr;
    b += nr;
  }
  // lo lane 2j: row i x column 2j, lane 2j+1: row i+1 x column 2j; hi the same for column 2j+1.
#pragma GCC unroll 8
  for (int p = 0; p < pairs; ++p) {
#pragma GCC unroll 2
    for (int v = 0; v < nv; ++v) {
      acc[2 * p][v] = batch_f32(_mm512_mask_blend_ps(0xAAAA, lo[p][v], _mm512_moveldup_ps(hi[p][v])));
      acc[2 * p + 1][v] = batch_f32(_mm512_mask_blend_ps(0xAAAA, _mm512_movehdup_ps(lo[p][v]), hi[p][v]));
    }
  }
#else
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v] = batch_f32(0.0f);
  }
  // One k of the loop, at offset u from a and b.
  auto step = [&](i64 u) __attribute__((always_inline)) {
    __builtin_prefetch(a + u * mr + a_ahead, 0, 3);
#pragma GCC unroll 4
    for (i64 j = 0; j < nr; j += line) __builtin_prefetch(b + u * nr + b_ahead + j, 0, 3);
    batch_f32 bv[nv];
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) bv[v] = batch_f32::load_aligned(b + u * nr + v * w);
#pragma GCC unroll 16
    for (int i = 0; i < mr; ++i) {
      const batch_f32 av(a[u * mr + i]);
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) acc[i][v] = xsimd::fma(av, bv[v], acc[i][v]);
    }
  };
  // Two k a trip: half the loop's counter and pointer updates. Zen 3 (AVX2), one thread, builds
  // alternating in benches/compare, ratio to OpenBLAS in two rounds each: sgemm M=512 K=4096
  // N=11008 0.89, 0.90 -> 0.95, 0.93; M=32 K=N=4096 0.85, 0.86 -> 0.89, 0.91; n=2048 0.93, 0.94 ->
  // 0.94, 1.00; n=1024 by itself 29.9-33.5 ms -> 28.2-29.2 (four runs each). Four k a trip
  // measured as one.
  i64 k = 0;
  for (; k + 2 <= kc; k += 2) {
    step(0);
    step(1);
    a += 2 * mr;
    b += 2 * nr;
  }
  if (k < kc) step(0);
#endif
}

// c (row stride c_rs, unit column stride) = or += a_panel (kc x mr) * b_panel (kc x nr) on its
// top-left m x n corner, mr = GemmConfig::mr or mr_tall (or a tail tile's 3-5 rows, driver.hpp).
// Panels are 64-byte aligned and zero-padded, so the tile is always computed whole and only the
// write-back looks at m and n.
template <int mr>
void micro_kernel(i64 kc, const float* __restrict a, const float* __restrict b, float* c, i64 c_rs, i64 m, i64 n,
                  bool accumulate) {
  constexpr int nv = GemmConfig::nv;
  constexpr i64 nr = GemmConfig::nr, w = vec_width;
  // C tiles of a large product live in L3 or memory between the KC passes: request the tile now
  // so its misses overlap the k loop instead of stalling the write-back.
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
    __builtin_prefetch(c + i * c_rs, 1, 2);
    __builtin_prefetch(c + i * c_rs + nr - 1, 1, 2);
  }
  batch_f32 acc[mr][nv];
  micro_kernel_loop<mr>(kc, a, b, acc);

  if (m == mr && n == nr) {
#pragma GCC unroll 16
    for (int i = 0; i < mr; ++i) {
      float* row = c + i * c_rs;
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) {
        batch_f32 r = acc[i][v];
        if (accumulate) r += batch_f32::load_unaligned(row + v * w);
        r.store_unaligned(row + v * w);
      }
    }
    return;
  }
  alignas(64) float tile[mr * nr];
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v].store_aligned(tile + i * nr + v * w);
  }
  for (i64 i = 0; i < m; ++i) {
    float* row = c + i * c_rs;
    const float* t = tile + i * nr;
    if (accumulate) {
      for (i64 j = 0; j < n; ++j) row[j] += t[j];
    } else {
      for (i64 j = 0; j < n; ++j) row[j] = t[j];
    }
  }
}

}  // namespace trine::cpu::TRINE_ISA_NS
