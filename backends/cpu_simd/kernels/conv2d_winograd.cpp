// Winograd conv2d F(m x m, 3 x 3), m = 2 or 4 (Lavin and Gray's transforms), for 3x3 kernels at
// stride 1 and dilation 1: per image-group, each input tile of (m+2)^2 pixels is transformed (V),
// each filter (U), and the (m+2)^2 products M = U V are batched GEMMs [Kg x Cg] x [Cg x tiles] on the
// GEMM driver; the output transform of M gives the m x m output tiles. Tiles along a row are the
// vector lanes of both transforms: the padded input is kept in m column phases (column m*u + r in
// phase r at u), so tile q's column b is phase b % m at q + b / m, contiguous over q.
#include "backends/cpu_simd/isa.hpp"

#include "backends/cpu_simd/gemm/driver.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

template <int M>
struct Transforms;

// F(2, 3): alpha = 4 points 0, 1, -1, inf.
template <>
struct Transforms<2> {
  static constexpr int alpha = 4;
  static constexpr float bt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr float g[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  static constexpr float at[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

// F(4, 3): alpha = 6 points 0, 1, -1, 2, -2, inf.
template <>
struct Transforms<4> {
  static constexpr int alpha = 6;
  static constexpr float bt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr float g[6][3] = {{1.0f / 4, 0, 0},
                                    {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                    {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                    {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                    {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                    {0, 0, 1}};
  static constexpr float at[4][6] = {
      {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

// sum_j coef[j] * x[j] over n terms. The coefficients are compile-time constants once inlined and
// unrolled, so the zero terms vanish and the +-1 terms are adds.
template <int N>
[[gnu::always_inline]] inline batch_f32 combine(const float* coef, const batch_f32* x) {
  batch_f32 acc(0.0f);
  bool first = true;
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j) {
    const float c = coef[j];
    if (c == 0.0f) continue;
    if (first) {
      acc = c == 1.0f ? x[j] : c == -1.0f ? -x[j] : batch_f32(c) * x[j];
      first = false;
    } else {
      acc = c == 1.0f ? acc + x[j] : c == -1.0f ? acc - x[j] : xsimd::fma(batch_f32(c), x[j], acc);
    }
  }
  return acc;
}

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

// The most bytes of transformed input plus products (both (m+2)^2 x channels x tiles) of one
// image-group, which a thread holds whole: C=K=64 at 56x56 takes 3.6 MB with F(4x4), C=K=256 at
// 112x112 58 MB. (With an image-group per thread, each thread holds its own.)
constexpr i64 max_transformed_bytes = i64{64} << 20;

struct Plan {
  int m = 4, alpha = 6;
  i64 Cg = 0, Kg = 0;
  i64 TP = 0, TQ = 0, T = 0;  // tile rows, tiles per row, tiles
  i64 Hp = 0;                 // padded rows of a channel
  i64 Up = 0;                 // floats per phase row (tile columns + 1, rounded up, plus slack)
  i64 plane = 0;              // floats per padded channel: Hp rows x m phases x Up
};

Plan make_plan(const Conv2dArgs& a, int m) {
  Plan p;
  p.m = m;
  p.alpha = m + 2;
  p.Cg = a.C / a.groups;
  p.Kg = a.K / a.groups;
  p.TP = (a.P + m - 1) / m;
  p.TQ = (a.Q + m - 1) / m;
  p.T = p.TP * p.TQ;
  p.Hp = p.TP * m + 2;
  p.Up = round_up(p.TQ, w) + w;  // vector loads at q + b / m read up to one vector past TQ
  p.plane = p.Hp * m * p.Up;
  return p;
}

#if defined(TRINE_ISA_AVX512)
// The column phases in registers (AVX-512 only; the other ISAs copy a float at a time, which was
// 11% of the 3x3 C=K=64 56x56 N=8 conv here, as was the output's scatter below).
// ph[r * up + j] = src[M*j + r] for j < 16, r < M: 16 tiles' columns from 16*M floats, of which
// the first `valid` are read and the rest taken as zeros.
template <int M>
[[gnu::always_inline]] inline void split_phases(const float* src, i64 valid, float* ph, i64 up) {
  __m512 v[M];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i)
    v[i] = _mm512_maskz_loadu_ps(lane_mask(std::clamp<i64>(valid - 16 * i, 0, 16)), src + 16 * i);
  const __m512i pick = _mm512_set_epi32(60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0);
  if constexpr (M == 2) {
    const __m512i even = _mm512_srli_epi32(pick, 1);  // 0, 2, ..., 30
    _mm512_storeu_ps(ph, _mm512_permutex2var_ps(v[0], even, v[1]));
    _mm512_storeu_ps(ph + up, _mm512_permutex2var_ps(v[0], _mm512_add_epi32(even, _mm512_set1_epi32(1)), v[1]));
  } else {
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      // Lanes 0..7 of each half hold columns r, r+4, ..., r+28 of its 32 floats (the index's
      // upper lanes wrap around to the same).
      const __m512i idx = _mm512_add_epi32(pick, _mm512_set1_epi32(r));
      const __m512 lo = _mm512_permutex2var_ps(v[0], idx, v[1]), hi = _mm512_permutex2var_ps(v[2], idx, v[3]);
      _mm512_storeu_ps(ph + r * up, _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0)));
    }
  }
}

// The inverse, for the output: dst[M*j + b] = s[b][j] for j < 16, b < M, the first `count` only.
template <int M>
[[gnu::always_inline]] inline void merge_phases(const float (*s)[w], float* dst, i64 count) {
  auto store = [&](int i, __m512 x) {
    _mm512_mask_storeu_ps(dst + 16 * i, lane_mask(std::clamp<i64>(count - 16 * i, 0, 16)), x);
  };
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
  const __m512 s0 = _mm512_load_ps(s[0]), s1 = _mm512_load_ps(s[1]);
  const __m512 a_lo = _mm512_permutex2var_ps(s0, lo, s1), a_hi = _mm512_permutex2var_ps(s0, hi, s1);
  if constexpr (M == 2) {
    store(0, a_lo);
    store(1, a_hi);
  } else {
    const __m512 s2 = _mm512_load_ps(s[2]), s3 = _mm512_load_ps(s[3]);
    const __m512 b_lo = _mm512_permutex2var_ps(s2, lo, s3), b_hi = _mm512_permutex2var_ps(s2, hi, s3);
    // Pairs (s0, s1)[j] and (s2, s3)[j] alternate: lanes 2j, 2j+1 of a_*, then of b_*.
    const __m512i first = _mm512_set_epi32(23, 22, 7, 6, 21, 20, 5, 4, 19, 18, 3, 2, 17, 16, 1, 0);
    const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
    store(0, _mm512_permutex2var_ps(a_lo, first, b_lo));
    store(1, _mm512_permutex2var_ps(a_lo, second, b_lo));
    store(2, _mm512_permutex2var_ps(a_hi, first, b_hi));
    store(3, _mm512_permutex2var_ps(a_hi, second, b_hi));
  }
}
#endif

// Channel x (H x W) into dst in phase layout: dst[(i * m + r) * Up + u] = x(i - pad_h, m*u + r - pad_w),
// zero outside the input.
void pad_phases(const Conv2dArgs& a, const Plan& p, const float* x, float* dst) {
  const i64 m = p.m;
  for (i64 i = 0; i < p.Hp; ++i) {
    float* row = dst + i * m * p.Up;
    const i64 h = i - a.pad_h;
    if (h < 0 || h >= a.H) {
      std::fill_n(row, m * p.Up, 0.0f);
      continue;
    }
    const float* src = x + h * a.W;
    // Tiles [va, vb) of every phase read columns from m*va - pad_w >= 0 on, zero past the row's
    // end: split in registers 16 at a time where the ISA can.
    const i64 va = (a.pad_w + m - 1) / m;
    i64 vb = va;
#if defined(TRINE_ISA_AVX512)
    // Blocks while they start inside the row; the last ends at most at TQ + 16 <= Up.
    for (; m * vb - a.pad_w < a.W; vb += 16) {
      const i64 col = m * vb - a.pad_w;
      if (m == 2) {
        split_phases<2>(src + col, a.W - col, row + vb, p.Up);
      } else {
        split_phases<4>(src + col, a.W - col, row + vb, p.Up);
      }
    }
#endif
    for (i64 r = 0; r < m; ++r) {
      // Phase r at u reads input column m*u + r - pad_w: inside the row for u in [u0, u1).
      float* ph = row + r * p.Up;
      const i64 first = a.pad_w - r, last = a.W - 1 + a.pad_w - r;  // m*u in [first, last]
      const i64 u0 = std::clamp<i64>(first > 0 ? (first + m - 1) / m : 0, 0, p.Up);
      const i64 u1 = std::clamp<i64>(last >= 0 ? last / m + 1 : 0, u0, p.Up);
      const i64 ua = std::clamp(va, u0, u1), ub = std::clamp(vb, ua, u1);  // done above
      const float* s = src + r - a.pad_w;
      std::fill(ph, ph + u0, 0.0f);
      for (i64 u = u0; u < ua; ++u) ph[u] = s[m * u];
      for (i64 u = ub; u < u1; ++u) ph[u] = s[m * u];
      // Past the row: zeros, but for [va, vb), which the split above wrote (zeros past the row).
      // A phase can end before va (a row narrower than the padding plus the phase): [u1, va) is
      // written here, or the scratch's last contents are read as input.
      std::fill(ph + u1, ph + std::max(u1, va), 0.0f);
      std::fill(ph + std::max(u1, vb), ph + p.Up, 0.0f);
    }
  }
}

// Input transform of one padded channel: v[xi * v_stride + t] for the alpha^2 points xi and tiles t.
template <int M>
void input_transform(const Plan& p, const float* xp, float* v, i64 v_stride) {
  using Tr = Transforms<M>;
  constexpr int A = Tr::alpha;
  for (i64 tp = 0; tp < p.TP; ++tp) {
    const float* rows = xp + tp * M * M * p.Up;  // padded row M * tp, phase 0
    for (i64 q0 = 0; q0 < p.TQ; q0 += w) {
      const i64 n = std::min(w, p.TQ - q0);
      // t[i][b] = sum_a bt[i][a] d[a][b], d[a][b] being tile column b of padded row M*tp + a.
      batch_f32 t[A][A];
#pragma GCC unroll 8
      for (int b = 0; b < A; ++b) {
        batch_f32 d[A];
        const float* col = rows + (b % M) * p.Up + q0 + b / M;
#pragma GCC unroll 8
        for (int r = 0; r < A; ++r) d[r] = batch_f32::load_unaligned(col + r * M * p.Up);
#pragma GCC unroll 8
        for (int i = 0; i < A; ++i) t[i][b] = combine<A>(Tr::bt[i], d);
      }
      float* out = v + tp * p.TQ + q0;
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < A; ++j) {
          const batch_f32 r = combine<A>(Tr::bt[j], t[i]);
          float* dst = out + (i * A + j) * v_stride;
          if (n == w) {
            r.store_unaligned(dst);
          } else {
            store_partial(dst, n, r);
          }
        }
      }
    }
  }
}

// Filter transform of output channel k of the group's filters wg [Kg, Cg, 3, 3]:
// u[(xi * Kg + k) * Cg + c] = (G g G^T)[xi], with the channels c as the vector lanes. The taps are
// first gathered channel-innermost into gt[9][Cg'] (Cg' = Cg rounded up to the vector); u is then
// written in runs of Cg (a float per 16 KB, as a scalar loop over (k, c) wrote it, stalled on 4K
// aliasing: 28% of the whole conv at C=K=64).
template <int M>
void filter_transform(const Plan& p, const float* wg, i64 k, float* gt, float* u) {
  using Tr = Transforms<M>;
  constexpr int A = Tr::alpha;
  const i64 cw = round_up(p.Cg, w);
  for (i64 c = 0; c < p.Cg; ++c)
    for (int t = 0; t < 9; ++t) gt[t * cw + c] = wg[(k * p.Cg + c) * 9 + t];
  for (i64 c0 = 0; c0 < p.Cg; c0 += w) {
    const i64 n = std::min(w, p.Cg - c0);
    batch_f32 g[3][3], t[A][3];
#pragma GCC unroll 9
    for (int r = 0; r < 9; ++r) g[r / 3][r % 3] = batch_f32::load_aligned(gt + r * cw + c0);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i)
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        const batch_f32 col[3] = {g[0][s], g[1][s], g[2][s]};
        t[i][s] = combine<3>(Tr::g[i], col);
      }
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) {
        float* dst = u + ((i * A + j) * p.Kg + k) * p.Cg + c0;
        const batch_f32 r = combine<3>(Tr::g[j], t[i]);
        if (n == w) {
          r.store_unaligned(dst);
        } else {
          store_partial(dst, n, r);
        }
      }
  }
}

// Output transform of one output channel: y (P x Q) from mk[xi * m_stride + t], plus bias.
template <int M>
void output_transform(const Conv2dArgs& a, const Plan& p, const float* mk, i64 m_stride, float bias, float* y) {
  using Tr = Transforms<M>;
  constexpr int A = Tr::alpha;
  alignas(64) float stage[M][M][w];
  for (i64 tp = 0; tp < p.TP; ++tp) {
    for (i64 q0 = 0; q0 < p.TQ; q0 += w) {
      const i64 n = std::min(w, p.TQ - q0);
      const float* in = mk + tp * p.TQ + q0;
      // s[a][j] = sum_i at[a][i] m[i][j], then out[a][b] = sum_j at[b][j] s[a][j].
      batch_f32 s[M][A];
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) {
        batch_f32 col[A];
#pragma GCC unroll 8
        for (int i = 0; i < A; ++i) col[i] = load_partial(in + (i * A + j) * m_stride, n);
#pragma GCC unroll 8
        for (int r = 0; r < M; ++r) s[r][j] = combine<A>(Tr::at[r], col);
      }
      const batch_f32 bv(bias);
#pragma GCC unroll 8
      for (int r = 0; r < M; ++r)
#pragma GCC unroll 8
        for (int b = 0; b < M; ++b) (combine<A>(Tr::at[b], s[r]) + bv).store_aligned(stage[r][b]);
      // Scatter the lanes (tiles) into the output rows, dropping the part of edge tiles past P, Q.
      for (int r = 0; r < M; ++r) {
        const i64 row = tp * M + r;
        if (row >= a.P) break;
        float* yr = y + row * a.Q;
#if defined(TRINE_ISA_AVX512)
        merge_phases<M>(stage[r], yr + q0 * M, a.Q - q0 * M);  // Q - q0*M <= n*M: lanes past n dropped
#else
        for (i64 l = 0; l < n; ++l) {
          const i64 col0 = (q0 + l) * M;
          const int nb = static_cast<int>(std::min<i64>(M, a.Q - col0));
          for (int b = 0; b < nb; ++b) yr[col0 + b] = stage[r][b][l];
        }
#endif
      }
    }
  }
}

struct WinogradScratch {
  AlignedBuffer v, m;  // one image-group's transformed input and products
};

AlignedBuffer& padded_scratch() {
  thread_local AlignedBuffer b;
  return b;
}

template <int M>
void winograd(const Conv2dArgs& a) {
  constexpr int A = M + 2;
  const Plan p = make_plan(a, M);
  const i64 hw = a.H * a.W, pq = a.P * a.Q, G = a.groups;
  // Every group's filters first: u[g * A^2 * Kg * Cg + ...].
  thread_local AlignedBuffer u_buffer;
  float* u = u_buffer.get(G * A * A * p.Kg * p.Cg);
  parallel_for(G * p.Kg, 1, [&](i64 k0, i64 k1) {
    float* gt = padded_scratch().get(9 * round_up(p.Cg, w));
    for (i64 gk = k0; gk < k1; ++gk) {
      const i64 g = gk / p.Kg;
      filter_transform<M>(p, a.w + g * p.Kg * p.Cg * 9, gk % p.Kg, gt, u + g * A * A * p.Kg * p.Cg);
    }
  });

  // One image-group on the calling thread's buffers; its parallel_for calls split the work over
  // the pool, or run serially when this is itself a chunk of the parallel_for below.
  auto run_one = [&](i64 n, i64 g) {
    thread_local WinogradScratch scratch;
    float* v = scratch.v.get(A * A * p.Cg * p.T);
    float* mm = scratch.m.get(A * A * p.Kg * p.T);  // the output transform's loads are masked at T
    const float* ug = u + g * A * A * p.Kg * p.Cg;
    const float* x = a.x + (n * a.C + g * p.Cg) * hw;
    parallel_for(p.Cg, 1, [&](i64 c0, i64 c1) {
      float* xp = padded_scratch().get(p.plane);
      for (i64 c = c0; c < c1; ++c) {
        pad_phases(a, p, x + c * hw, xp);
        input_transform<M>(p, xp, v + c * p.T, p.Cg * p.T);
      }
    });
    parallel_for(A * A, 1, [&](i64 x0, i64 x1) {
      for (i64 xi = x0; xi < x1; ++xi) {
        const StridedMatrix um{ug, DType::f32, xi * p.Kg * p.Cg, p.Cg, 1};
        const StridedMatrix vm{v, DType::f32, xi * p.Cg * p.T, p.T, 1};
        auto pack_a = [&um](auto mr, i64 i0, i64 rows, i64 k0, i64 kc, float* dst) {
          pack_a_typed<DType::f32, decltype(mr)::value>(um, i0, rows, k0, kc, dst);
        };
        auto pack_b = [&vm](i64 k0, i64 kc, i64 j0, i64 cols, float* dst) {
          pack_b_typed<DType::f32>(vm, k0, kc, j0, cols, dst);
        };
        gemm_blocked(0, p.Kg, 0, p.T, p.Cg, pack_a, pack_b, mm + xi * p.Kg * p.T, p.T);
      }
    });
    float* y = a.y + (n * a.K + g * p.Kg) * pq;
    parallel_for(p.Kg, 1, [&](i64 k0, i64 k1) {
      for (i64 k = k0; k < k1; ++k) {
        const float b = a.bias ? a.bias[g * p.Kg + k] : 0.0f;
        output_transform<M>(a, p, mm + k * p.T, p.Kg * p.T, b, y + k * pq);
      }
    });
  };

  // With an image-group per thread at least, each thread runs whole image-groups on its own
  // buffers: no barrier between the three steps, and each image's transforms stay in its core's
  // caches. (Splitting each step over the threads, image by image, made the 3x3 C=K=64 28x28 N=8
  // conv slower at 2 threads than the direct kernel: 2.84 ms against 2.54.)
  const i64 tasks = a.N * G;
  if (thread_count() > 1 && tasks >= thread_count()) {
    parallel_for(tasks, 1, [&](i64 t0, i64 t1) {
      for (i64 t = t0; t < t1; ++t) run_one(t / G, t % G);
    });
  } else {
    for (i64 t = 0; t < tasks; ++t) run_one(t / G, t % G);
  }
}

}  // namespace

int conv2d_winograd_tile(const Conv2dArgs& a) {
  const int forced = winograd_forced();
  if (!(a.R == 3 && a.S == 3 && a.stride_h == 1 && a.stride_w == 1 && a.dil_h == 1 && a.dil_w == 1)) return 0;
  if (a.P < 1 || a.Q < 1 || (a.groups > 1 && a.groups == a.C)) return 0;
  const i64 Cg = a.C / a.groups, Kg = a.K / a.groups, pq = a.P * a.Q;
  // The transformed input and products of one image-group are held whole: past this, the direct
  // kernel (which has its own limit) or the implicit GEMM, which work in cache-sized blocks.
  auto fits = [&](i64 m) {
    const Plan p = make_plan(a, static_cast<int>(m));
    return (m + 2) * (m + 2) * (Cg + Kg) * p.T * static_cast<i64>(sizeof(float)) <= max_transformed_bytes;
  };
  if (forced >= 0) return forced == 0 || fits(forced) ? forced : 0;
  // Measured against the direct kernel and the implicit GEMM (docs/design.md, "conv2d paths").
  if (Cg >= 32 && Kg >= 32 && pq >= 28 * 28 && fits(4)) return 4;
  if (Cg >= 16 && Kg >= 16 && pq >= 14 * 14 && pq < 28 * 28 && fits(2)) return 2;
  return 0;
}

void conv2d_winograd(const Conv2dArgs& a, int tile) {
  if (tile == 2) {
    winograd<2>(a);
  } else {
    TRINE_ASSERT(tile == 4, "[conv2d] Winograd tile must be 2 or 4");
    winograd<4>(a);
  }
}

}  // namespace trine::cpu::TRINE_ISA_NS
