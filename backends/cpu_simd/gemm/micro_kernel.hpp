// The GEMM micro-kernel: an mr x nr tile of C held in xsimd registers, updated with one FMA per
// (row, vector) for every k of a packed A panel and a packed B panel.
#pragma once

#include "backends/cpu_simd/gemm/config.hpp"

namespace trine::cpu::TRINE_ISA_NS {

// c (row stride c_rs, unit column stride) = or += a_panel (kc x mr) * b_panel (kc x nr) on its
// top-left m x n corner, mr = GemmConfig::mr or mr_tall. Panels are 64-byte aligned and
// zero-padded, so the tile is always computed whole and only the write-back looks at m and n.
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
#pragma GCC unroll 16
  for (int i = 0; i < mr; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v] = batch_f32(0.0f);
  }

  // The A panel streams from L2, and so does the part of the B panel L1 does not hold (config.hpp
  // lets it be twice L1): asking for A 16 steps and B 8 steps ahead keeps the loads from stalling
  // the FMAs. The standalone 8-row kernel on the Xeon: 0.86 -> 0.92 of the FMA peak with A in L2,
  // 0.92 -> 0.97 with everything in L1.
  constexpr i64 a_ahead = 16 * mr, b_ahead = 8 * nr, line = 16;
  for (i64 k = 0; k < kc; ++k) {
    __builtin_prefetch(a + a_ahead, 0, 3);
#pragma GCC unroll 4
    for (i64 j = 0; j < nr; j += line) __builtin_prefetch(b + b_ahead + j, 0, 3);
    batch_f32 bv[nv];
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) bv[v] = batch_f32::load_aligned(b + v * w);
#pragma GCC unroll 16
    for (int i = 0; i < mr; ++i) {
      const batch_f32 av(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) acc[i][v] = xsimd::fma(av, bv[v], acc[i][v]);
    }
    a += mr;
    b += nr;
  }

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
