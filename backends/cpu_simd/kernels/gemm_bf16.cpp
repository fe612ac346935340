// bf16 x bf16 GEMM with the CPU's bf16 dot products (AVX512-BF16, vdpbf16ps): each instruction
// multiplies 16 pairs of bf16 (exact in f32) and adds them to 16 f32 sums, twice the multiply-adds
// of an f32 FMA. Operands are packed as they are, with no conversion: A panels of 12 rows and B
// panels of 32 columns, k in pairs (one 32-bit lane holds elements k and k+1), odd K padded with
// zero. The loops and thread split are the f32 GEMM's, over 16-bit panels.
//
// The instruction treats bf16 subnormal inputs as zero and flushes subnormal results (as oneDNN's
// bf16 kernels do on the same hardware); docs/ops.md states it. Only the avx512 build of this file
// holds the kernel, and it runs only where the CPU reports avx512_bf16.
#include "backends/cpu_simd/isa.hpp"

#include <immintrin.h>

#include <cstring>
#include <vector>

#include "backends/cpu_simd/gemm/driver.hpp"

namespace trine::cpu::TRINE_ISA_NS {

#if defined(TRINE_ISA_AVX512)
namespace {

constexpr i64 bmr = 12, bnr = 32;  // 12 x 2 zmm accumulators, 2 of B, 1 broadcast: 27 of 32

struct Bf16Blocks {
  i64 kc = 256, mc = 960, nc = 4096;  // kc in elements of k (even)
};

const Bf16Blocks& bf16_blocks() {
  static const Bf16Blocks b = [] {
    Bf16Blocks c;
    const i64 l1 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), 16 << 10, 128 << 10);
    const i64 l2 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20), 256 << 10, 4 << 20);
    // Deep: every KC pass reads and writes all of C, and a B panel of 2 x L1 still streams from L2
    // fast enough, each vector serving 12 rows (n=2048 on a 32 KiB L1: kc 256 / 512 / 1024 gave
    // 160-187 / 199 / 207 GFLOP/s).
    c.kc = std::clamp<i64>(2 * l1 / (bnr * 2) / 32 * 32, 64, 1024);
    c.mc = std::clamp<i64>(l2 / 2 / (c.kc * 2) / bmr * bmr, bmr * 8, 1920 / bmr * bmr);
    return c;
  }();
  return b;
}

struct Bf16Matrix {
  const std::uint16_t* base;
  i64 offset, rs, cs;
  std::uint16_t at(i64 i, i64 k) const { return base[offset + i * rs + k * cs]; }
};

// Rows [i0, i0 + m) x k [k0, k0 + kc) into panels of bmr rows: panel[(p * bmr + i) * 2 + e] =
// A(row i, k0 + 2p + e), zero past m and past kc.
void pack_a(const Bf16Matrix& a, i64 i0, i64 m, i64 k0, i64 kc, std::uint16_t* dst) {
  const i64 kp = (kc + 1) / 2;
  if (a.cs == 1) {  // rows contiguous in k: a pair is one 32-bit word of the row, copied whole
    const i64 full = kc / 2;
    for (i64 ir = 0; ir < m; ir += bmr) {
      std::uint16_t* panel = dst + ir * kp * 2;
      const i64 rows = std::min(bmr, m - ir);
      for (i64 i = 0; i < bmr; ++i) {
        if (i >= rows) {
          for (i64 p = 0; p < kp; ++p) panel[(p * bmr + i) * 2] = panel[(p * bmr + i) * 2 + 1] = 0;
          continue;
        }
        const std::uint16_t* row = a.base + a.offset + (i0 + ir + i) * a.rs + k0;
        for (i64 p = 0; p < full; ++p) std::memcpy(panel + (p * bmr + i) * 2, row + 2 * p, 4);
        if (full < kp) panel[(full * bmr + i) * 2] = row[2 * full], panel[(full * bmr + i) * 2 + 1] = 0;
      }
    }
    return;
  }
  for (i64 ir = 0; ir < m; ir += bmr) {
    std::uint16_t* panel = dst + ir * kp * 2;
    const i64 rows = std::min(bmr, m - ir);
    for (i64 p = 0; p < kp; ++p) {
      std::uint16_t* out = panel + p * bmr * 2;
      const bool second = 2 * p + 1 < kc;
      for (i64 i = 0; i < rows; ++i) {
        out[2 * i] = a.at(i0 + ir + i, k0 + 2 * p);
        out[2 * i + 1] = second ? a.at(i0 + ir + i, k0 + 2 * p + 1) : 0;
      }
      for (i64 i = rows; i < bmr; ++i) out[2 * i] = out[2 * i + 1] = 0;
    }
  }
}

// k [k0, k0 + kc) x columns [j0, j0 + n) into panels of bnr columns: panel[(p * bnr + j) * 2 + e]
// = B(k0 + 2p + e, column j), zero past n and past kc.
void pack_b(const Bf16Matrix& b, i64 k0, i64 kc, i64 j0, i64 n, std::uint16_t* dst) {
  const i64 kp = (kc + 1) / 2;
  if (b.cs == 1) {  // rows contiguous in n: interleave two rows 16 columns at a time
    for (i64 jr = 0; jr < n; jr += bnr) {
      std::uint16_t* panel = dst + jr * kp * 2;
      const i64 cols = std::min(bnr, n - jr);
      for (i64 p = 0; p < kp; ++p) {
        std::uint16_t* out = panel + p * bnr * 2;
        const std::uint16_t* r0 = b.base + b.offset + (k0 + 2 * p) * b.rs + j0 + jr;
        const std::uint16_t* r1 = 2 * p + 1 < kc ? r0 + b.rs : nullptr;
        if (cols == bnr) {
          for (i64 j = 0; j < bnr; j += 16) {
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + j)));
            const __m512i hi = r1 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + j)))
                                  : _mm512_setzero_si512();
            _mm512_storeu_si512(out + 2 * j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
          }
          continue;
        }
        for (i64 j = 0; j < bnr; ++j) {
          out[2 * j] = j < cols ? r0[j] : 0;
          out[2 * j + 1] = (j < cols && r1) ? r1[j] : 0;
        }
      }
    }
    return;
  }
  for (i64 jr = 0; jr < n; jr += bnr) {
    std::uint16_t* panel = dst + jr * kp * 2;
    const i64 cols = std::min(bnr, n - jr);
    for (i64 p = 0; p < kp; ++p) {
      std::uint16_t* out = panel + p * bnr * 2;
      const bool second = 2 * p + 1 < kc;
      for (i64 j = 0; j < cols; ++j) {
        out[2 * j] = b.at(k0 + 2 * p, j0 + jr + j);
        out[2 * j + 1] = second ? b.at(k0 + 2 * p + 1, j0 + jr + j) : 0;
      }
      for (i64 j = cols; j < bnr; ++j) out[2 * j] = out[2 * j + 1] = 0;
    }
  }
}

// c (m x n corner of a bmr x bnr tile) = or += a_panel . b_panel over kp pairs of k.
__attribute__((target("avx512f,avx512bf16"))) void micro_bf16(i64 kp, const std::uint16_t* a, const std::uint16_t* b,
                                                              float* c, i64 c_rs, i64 m, i64 n, bool accumulate) {
  // The C tile of a large product is in L3 or memory between KC passes: ask for it now, so its
  // misses overlap the k loop instead of stalling the write-back.
#pragma GCC unroll 12
  for (int i = 0; i < bmr; ++i) {
    __builtin_prefetch(c + i * c_rs, 1, 2);
    __builtin_prefetch(c + i * c_rs + 16, 1, 2);
  }
  __m512 acc[bmr][2];
#pragma GCC unroll 12
  for (int i = 0; i < bmr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (i64 p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 32);
#pragma GCC unroll 12
    for (int i = 0; i < bmr; ++i) {
      std::int32_t pair;
      std::memcpy(&pair, a + 2 * i, sizeof pair);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
    a += 2 * bmr;
    b += 2 * bnr;
  }
  if (m == bmr && n == bnr) {
#pragma GCC unroll 12
    for (int i = 0; i < bmr; ++i) {
      float* row = c + i * c_rs;
      __m512 r0 = acc[i][0], r1 = acc[i][1];
      if (accumulate) r0 = _mm512_add_ps(r0, _mm512_loadu_ps(row)), r1 = _mm512_add_ps(r1, _mm512_loadu_ps(row + 16));
      _mm512_storeu_ps(row, r0);
      _mm512_storeu_ps(row + 16, r1);
    }
    return;
  }
  alignas(64) float tile[bmr * bnr];
  for (int i = 0; i < bmr; ++i) _mm512_store_ps(tile + i * bnr, acc[i][0]), _mm512_store_ps(tile + i * bnr + 16, acc[i][1]);
  for (i64 i = 0; i < m; ++i) {
    float* row = c + i * c_rs;
    for (i64 j = 0; j < n; ++j) row[j] = accumulate ? row[j] + tile[i * bnr + j] : tile[i * bnr + j];
  }
}

struct Bf16Scratch {
  AlignedBuffer a, b;  // float-sized slots, two bf16 each
};

Bf16Scratch& bf16_scratch() {
  thread_local Bf16Scratch s;
  return s;
}

// C[m0:m1, n0:n1] on the calling thread: the BLIS loops, as gemm_blocked runs them for f32.
void blocked(const Bf16Matrix& a, const Bf16Matrix& b, i64 K, float* c, i64 c_rs, i64 m0, i64 m1, i64 n0, i64 n1) {
  const Bf16Blocks& blk = bf16_blocks();
  const i64 kc_blk = gemm_even_block(K, blk.kc, 32), mc_blk = gemm_even_block(m1 - m0, blk.mc, bmr);
  const i64 nc_blk = gemm_even_block(n1 - n0, blk.nc, bnr);
  Bf16Scratch& s = bf16_scratch();
  auto* ap = reinterpret_cast<std::uint16_t*>(s.a.get((mc_blk + bmr) * (kc_blk + 2) / 2));
  auto* bp = reinterpret_cast<std::uint16_t*>(s.b.get((nc_blk + bnr) * (kc_blk + 2) / 2));
  for (i64 jc = n0; jc < n1; jc += nc_blk) {
    const i64 nc = std::min(nc_blk, n1 - jc);
    for (i64 pc = 0; pc < K; pc += kc_blk) {
      const i64 kc = std::min(kc_blk, K - pc), kp = (kc + 1) / 2;
      pack_b(b, pc, kc, jc, nc, bp);
      for (i64 ic = m0; ic < m1; ic += mc_blk) {
        const i64 mc = std::min(mc_blk, m1 - ic);
        pack_a(a, ic, mc, pc, kc, ap);
        for (i64 jr = 0; jr < nc; jr += bnr) {
          for (i64 ir = 0; ir < mc; ir += bmr) {
            micro_bf16(kp, ap + ir * kp * 2, bp + jr * kp * 2, c + (ic + ir) * c_rs + jc + jr, c_rs,
                       std::min(bmr, mc - ir), std::min(bnr, nc - jr), pc > 0);
          }
        }
      }
    }
  }
}

// One product over up to `threads` rectangles of C: split N when it is the longer side, else M.
void product(const Bf16Matrix& a, const Bf16Matrix& b, i64 M, i64 N, i64 K, float* c, i64 c_rs, int threads) {
  if (K <= 0) {
    for (i64 i = 0; i < M; ++i) std::fill_n(c + i * c_rs, N, 0.0f);
    return;
  }
  const i64 slots = std::clamp<i64>(M * N * K / (2 * gemm_min_work_per_thread), 1, threads);
  if (slots == 1) {
    blocked(a, b, K, c, c_rs, 0, M, 0, N);
    return;
  }
  const bool split_n = N >= M;
  const i64 unit = split_n ? bnr : bmr, len = split_n ? N : M;
  const i64 part = gemm_round_up(gemm_ceil_div(len, slots), unit);
  parallel_for(gemm_ceil_div(len, part), 1, [&](i64 s0, i64 s1) {
    for (i64 s = s0; s < s1; ++s) {
      const i64 lo = s * part, hi = std::min(len, lo + part);
      if (split_n) {
        blocked(a, b, K, c, c_rs, 0, M, lo, hi);
      } else {
        blocked(a, b, K, c, c_rs, lo, hi, 0, N);
      }
    }
  });
}

}  // namespace

bool gemm_bf16_native() {
  static const bool ok = __builtin_cpu_supports("avx512bf16");
  return ok;
}

void gemm_bf16(const GemmArgs& g) {
  TRINE_ASSERT(gemm_bf16_native() && g.a_dtype == DType::bf16 && g.b_dtype == DType::bf16,
               "[gemm] the bf16 kernel was called without bf16 inputs or without avx512_bf16");
  auto matrix = [](const void* p, const i64* offsets, i64 b, i64 rs, i64 cs) {
    return Bf16Matrix{static_cast<const std::uint16_t*>(p), offsets ? offsets[b] : 0, rs, cs};
  };
  const int threads = thread_count();
  const bool over_batch = threads > 1 && g.batch >= threads;
  auto one = [&](i64 b, int t) {
    product(matrix(g.a, g.a_batch_offsets, b, g.a_rs, g.a_cs), matrix(g.b, g.b_batch_offsets, b, g.b_rs, g.b_cs), g.M,
            g.N, g.K, g.c + b * g.c_bs, g.c_rs, t);
  };
  if (over_batch) {
    parallel_for(g.batch, 1, [&](i64 b0, i64 b1) {
      for (i64 b = b0; b < b1; ++b) one(b, 1);
    });
  } else {
    for (i64 b = 0; b < g.batch; ++b) one(b, threads);
  }
}

#else

bool gemm_bf16_native() { return false; }

void gemm_bf16(const GemmArgs&) {
  TRINE_ASSERT(false, "[gemm] the bf16 kernel exists only in the avx512 build");
}

#endif

}  // namespace trine::cpu::TRINE_ISA_NS
