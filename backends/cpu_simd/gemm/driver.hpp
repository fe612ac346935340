// The BLIS loops around the micro-kernel (NC, KC, MC, NR, MR) over caller-supplied packing
// functions, and the split of C into one rectangle per thread. Shared by matmul.cpp and conv2d.cpp.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu_simd/gemm/config.hpp"
#include "backends/cpu_simd/gemm/micro_kernel.hpp"
#include "backends/cpu_simd/gemm/pack.hpp"

namespace trine::cpu::TRINE_ISA_NS {

inline i64 gemm_ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }
inline i64 gemm_round_up(i64 a, i64 b) { return gemm_ceil_div(a, b) * b; }

// Splits `total` into the fewest blocks of at most `cap` and evens them out (in units of `unit`),
// so that K = 200 under a cap of 192 becomes 104 + 96 rather than 192 + 8.
inline i64 gemm_even_block(i64 total, i64 cap, i64 unit) {
  const i64 blocks = gemm_ceil_div(total, cap);
  return std::min(cap, gemm_round_up(gemm_ceil_div(total, blocks), unit));
}

// The row-panel height a packing function is asked for: pack_a(GemmRows<mr>{}, ...) packs
// panels of mr rows (GemmConfig::mr or mr_tall), as pack_a_strided<mr> does.
template <int mr>
using GemmRows = std::integral_constant<int, mr>;

// The packed blocks of an m x n product with more rows than one A block in L2 (gemm_blocked):
// their sizes by config.hpp's order for its width, and which of the two is packed once a kc pass
// while the other is packed again for each of its blocks (whichever costs fewer elements).
struct GemmBlocks {
  bool a_resident;
  i64 mc, nc;  // rows of an A block, columns of a B block
  i64 m_blocks, n_blocks;
  bool rows_outer;  // A blocks outside B blocks: A packed once, B once per A block
};

template <int mr>
GemmBlocks gemm_blocks(i64 m, i64 n, const GemmConfig& cfg) {
  GemmBlocks b;
  b.a_resident = n >= GemmConfig::a_resident_min_cols;
  b.mc = gemm_even_block(m, b.a_resident ? cfg.mc_l3 : cfg.mc, mr);
  b.nc = gemm_even_block(n, b.a_resident ? cfg.nc_l2 : cfg.nc, GemmConfig::nr);
  b.m_blocks = gemm_ceil_div(m, b.mc);
  b.n_blocks = gemm_ceil_div(n, b.nc);
  b.rows_outer = b.m_blocks * n <= b.n_blocks * m;
  return b;
}

// C[m0:m1, n0:n1] = A[m0:m1, :K] * B[:K, n0:n1] on the calling thread with mr-row tiles, K > 0.
// pack_a(GemmRows<mr>{}, i0, m, k0, kc, dst) and pack_b(k0, kc, j0, n, dst) fill panels as
// pack_*_strided do.
template <int mr = GemmConfig::mr, class PackA, class PackB>
void gemm_blocked(i64 m0, i64 m1, i64 n0, i64 n1, i64 K, const PackA& pack_a, const PackB& pack_b, float* c, i64 c_rs,
                  bool b_matrix = false) {
  constexpr i64 nr = GemmConfig::nr;
  const GemmConfig& cfg = gemm_config();
  TRINE_ASSERT(K > 0 && m0 <= m1 && n0 <= n1, "[gemm] empty or inverted block reached the blocked loops");
  const i64 kc_blk = gemm_even_block(K, cfg.kc, 8);
  GemmScratch& s = gemm_scratch();

  // All of this block's rows in one packed A block (a convolution's output channels, a thin
  // product): each B micro-panel then serves only this block, so B is packed just before its
  // micro-kernels, a panel at a time into a buffer that stays in cache, instead of into a block that
  // is written out, read back and evicted again. With few rows that traffic is a large share of the
  // call (conv2d 1x1, 64 output channels: packing B was 15% of the time). A matmul's B (b_matrix)
  // is packed cfg.nc_few columns at a time instead: see config.hpp.
  if (m1 - m0 <= cfg.mc) {
    const i64 m = m1 - m0;
    // A last row tile of 1-3 rows computes a whole 6-row tile (its panel is zero-padded): sgemm
    // M=32 ran 36 rows for 32. With 6-row tiles (AVX2, SSE4.2) such a tail and the full tile before
    // it run as two tiles of 3-5 rows instead (8 rows: 4 + 4), packed as panels of their own height.
    const i64 rem = m % mr;
    const bool split_tail = mr == 6 && m > mr && rem >= 1 && rem <= 3;
    const i64 m_main = split_tail ? m - mr - rem : m;  // rows in mr-row tiles
    const i64 chunk = b_matrix ? cfg.nc_few : nr;
    float* ap = s.a_.get(gemm_round_up(m, mr) * kc_blk);
    float* bp = s.b_.get(chunk * kc_blk);
    // The two tail tiles' heights, at compile time: f(GemmRows<first>, GemmRows<second>).
    auto with_tail = [&](auto&& f) {
      if constexpr (mr == 6) {
        switch (rem) {
          case 1: return f(GemmRows<4>{}, GemmRows<3>{});
          case 2: return f(GemmRows<4>{}, GemmRows<4>{});
          default: return f(GemmRows<5>{}, GemmRows<4>{});
        }
      }
    };
    for (i64 pc = 0; pc < K; pc += kc_blk) {
      const i64 kc = std::min(kc_blk, K - pc);
      if (m_main > 0) pack_a(GemmRows<mr>{}, m0, m_main, pc, kc, ap);
      if (split_tail) {
        with_tail([&](auto r1, auto r2) {
          pack_a(r1, m0 + m_main, r1(), pc, kc, ap + m_main * kc);
          pack_a(r2, m0 + m_main + r1(), r2(), pc, kc, ap + (m_main + r1()) * kc);
        });
      }
      for (i64 jc = n0; jc < n1; jc += chunk) {
        const i64 nch = std::min(chunk, n1 - jc);
        pack_b(pc, kc, jc, nch, bp);
        for (i64 jr = 0; jr < nch; jr += nr) {
          const i64 n = std::min(nr, nch - jr);
          for (i64 ir = 0; ir < m_main; ir += mr) {
            micro_kernel<mr>(kc, ap + ir * kc, bp + jr * kc, c + (m0 + ir) * c_rs + jc + jr, c_rs,
                             std::min<i64>(mr, m_main - ir), n, pc > 0);
          }
          if (split_tail) {
            with_tail([&](auto r1, auto r2) {
              constexpr int h1 = decltype(r1)::value, h2 = decltype(r2)::value;
              micro_kernel<h1>(kc, ap + m_main * kc, bp + jr * kc, c + (m0 + m_main) * c_rs + jc + jr, c_rs, h1, n,
                               pc > 0);
              micro_kernel<h2>(kc, ap + (m_main + h1) * kc, bp + jr * kc, c + (m0 + m_main + h1) * c_rs + jc + jr, c_rs,
                               h2, n, pc > 0);
            });
          }
        }
      }
    }
    return;
  }

  // Otherwise packed A and B blocks, one in L2 and one in L3, as config.hpp's two orders say.
  const GemmBlocks blk = gemm_blocks<mr>(m1 - m0, n1 - n0, cfg);
  const i64 mc_blk = blk.mc, nc_blk = blk.nc;
  const i64 outer = blk.rows_outer ? blk.m_blocks : blk.n_blocks;
  const i64 inner = blk.rows_outer ? blk.n_blocks : blk.m_blocks;
  float* ap = s.a_.get(mc_blk * kc_blk);
  float* bp = s.b_.get(nc_blk * kc_blk);
  for (i64 pc = 0; pc < K; pc += kc_blk) {
    const i64 kc = std::min(kc_blk, K - pc);
    i64 a_packed = -1, b_packed = -1;  // the blocks ap and bp hold in this kc pass
    for (i64 o = 0; o < outer; ++o) {
      for (i64 i = 0; i < inner; ++i) {
        const i64 ib = blk.rows_outer ? o : i, jb = blk.rows_outer ? i : o;
        const i64 ic = m0 + ib * mc_blk, mc = std::min(mc_blk, m1 - ic);
        const i64 jc = n0 + jb * nc_blk, nc = std::min(nc_blk, n1 - jc);
        if (ib != a_packed) {
          pack_a(GemmRows<mr>{}, ic, mc, pc, kc, ap);
          a_packed = ib;
        }
        if (jb != b_packed) {
          pack_b(pc, kc, jc, nc, bp);
          b_packed = jb;
        }
        auto tile = [&](i64 ir, i64 jr) {
          micro_kernel<mr>(kc, ap + ir * kc, bp + jr * kc, c + (ic + ir) * c_rs + jc + jr, c_rs,
                           std::min<i64>(mr, mc - ir), std::min(nr, nc - jr), pc > 0);
        };
        if (blk.a_resident) {
          for (i64 ir = 0; ir < mc; ir += mr) {
            for (i64 jr = 0; jr < nc; jr += nr) tile(ir, jr);
          }
        } else {
          for (i64 jr = 0; jr < nc; jr += nr) {
            for (i64 ir = 0; ir < mc; ir += mr) tile(ir, jr);
          }
        }
      }
    }
  }
}

// Elements gemm_blocked packs for an m x n x K product.
template <int mr>
i64 gemm_packed(i64 m, i64 n, i64 K, const GemmConfig& cfg) {
  if (m <= cfg.mc) return (m + n) * K;
  const GemmBlocks b = gemm_blocks<mr>(m, n, cfg);
  return (b.rows_outer ? m + n * b.m_blocks : n + m * b.n_blocks) * K;
}

// Below this many multiply-adds per thread, waking the pool costs more than it saves.
inline constexpr i64 gemm_min_work_per_thread = i64{1} << 20;

// From this many multiply-adds up, a product may take the taller tile (gemm_tall_rows).
inline constexpr i64 gemm_tall_min_work = i64{1} << 27;

// Whether a product takes GemmConfig::mr_tall-row tiles. The taller tile pays where the B panel
// streams from L2, on large products; it pads M up to a multiple of 12 rather than 8, which
// costs more than it saves on small M (a convolution's 64 output channels: 72 rows instead of 64).
inline bool gemm_tall_rows(i64 M, i64 N, i64 K) {
  constexpr i64 mr = GemmConfig::mr, tall = GemmConfig::mr_tall;
  if constexpr (tall == mr) {
    return false;
  } else {
    const i64 pad = gemm_round_up(M, tall) - gemm_round_up(M, mr);
    return M * N * K >= gemm_tall_min_work && pad * 64 <= M;
  }
}

// gemm_run with mr-row tiles.
template <int mr, class PackA, class PackB>
void gemm_run_rows(i64 M, i64 N, i64 K, const PackA& pack_a, const PackB& pack_b, float* c, i64 c_rs, int max_threads,
                   bool b_matrix = false) {
  constexpr i64 nr = GemmConfig::nr;
  const i64 max_slots = std::clamp<i64>(M * N * K / gemm_min_work_per_thread, 1,
                                        std::min<i64>(max_threads, gemm_ceil_div(M, mr) * gemm_ceil_div(N, nr)));
  // Grid tm x tn with the cheapest largest rectangle, counting its multiply-adds and its packing:
  // splitting M makes every thread pack all of B (costly when B is an im2col), splitting N makes
  // every thread pack all of A. Packing one element is taken to cost about one cycle, the time of
  // 2 * vec_width multiply-adds. Ties split M. A thread count with no grid that keeps every thread
  // busy falls back to fewer threads.
  const GemmConfig& cfg = gemm_config();
  i64 tm = 1, tn = 1, mp = M, np = N;
  for (i64 slots = max_slots; slots > 1 && tm * tn == 1; --slots) {
    i64 best_cost = -1;
    for (i64 t = slots; t >= 1; --t) {
      if (slots % t) continue;
      const i64 u = slots / t;
      const i64 mpart = gemm_round_up(gemm_ceil_div(M, t), mr), npart = gemm_round_up(gemm_ceil_div(N, u), nr);
      if ((t - 1) * mpart >= M || (u - 1) * npart >= N) continue;
      const i64 packed = gemm_packed<mr>(mpart, npart, K, cfg);
      const i64 cost = mpart * npart * K + 2 * vec_width * packed;
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        tm = t, tn = u, mp = mpart, np = npart;
      }
    }
  }
  const i64 slots = tm * tn;
  if (slots == 1) {
    gemm_blocked<mr>(0, M, 0, N, K, pack_a, pack_b, c, c_rs, b_matrix);
    return;
  }
  parallel_for(slots, 1, [&](i64 begin, i64 end) {
    for (i64 s = begin; s < end; ++s) {
      const i64 m0 = (s / tn) * mp, n0 = (s % tn) * np;
      gemm_blocked<mr>(m0, std::min(M, m0 + mp), n0, std::min(N, n0 + np), K, pack_a, pack_b, c, c_rs, b_matrix);
    }
  });
}

// C (M x N, row stride c_rs) = A * B, split over up to max_threads rectangles of C. Each thread
// packs its own blocks, so there is no barrier and a pool that runs the slots serially (a nested
// call, or another thread holding it) is still correct. pack_a must take GemmRows of both heights.
template <class PackA, class PackB>
void gemm_run(i64 M, i64 N, i64 K, const PackA& pack_a, const PackB& pack_b, float* c, i64 c_rs, int max_threads,
              bool b_matrix = false) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (i64 i = 0; i < M; ++i) std::memset(c + i * c_rs, 0, static_cast<std::size_t>(N) * sizeof(float));
    return;
  }
  if (gemm_tall_rows(M, N, K)) {
    gemm_run_rows<GemmConfig::mr_tall>(M, N, K, pack_a, pack_b, c, c_rs, max_threads, b_matrix);
  } else {
    gemm_run_rows<GemmConfig::mr>(M, N, K, pack_a, pack_b, c, c_rs, max_threads, b_matrix);
  }
}

}  // namespace trine::cpu::TRINE_ISA_NS
