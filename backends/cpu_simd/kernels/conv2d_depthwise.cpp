// Depthwise conv2d (groups == C, K a multiple of C): a direct kernel, one output plane at a time.
// The input plane is first copied into a zero-padded buffer, split into `stride_w` column phases,
// so every tap of every output row is one contiguous run: y[p, q..] += w[r, s] * phase[row][q..],
// vectorized along q with no bounds checks. The im2col + GEMM path would multiply a 1 x R*S filter
// by a R*S x P*Q matrix per channel, most of its time spent packing.
#include "backends/cpu_simd/isa.hpp"

#include <vector>

#include "backends/cpu_simd/kernels/lanes.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

// The padded plane, phase by phase: phase f, row i, column t holds padded column t * sw + f of
// padded row i, i.e. input (i - pad_h, t * sw + f - pad_w), or 0 outside the input. The layout
// is the same for every plane of a call, so the zeros are written once per buffer and each plane
// only overwrites the input's own cells.
struct PhasePlane {
  i64 rows = 0, cols = 0;  // per phase; cols is a multiple of the vector width plus slack
  std::vector<float, xsimd::aligned_allocator<float, 64>> data;

  float* row(i64 phase, i64 i) { return data.data() + (phase * rows + i) * cols; }
  const float* row(i64 phase, i64 i) const { return data.data() + (phase * rows + i) * cols; }
};

// Input row `src` (W floats) into padded row i of every phase.
void fill_row(const Conv2dArgs& a, const float* src, i64 i, PhasePlane& pp) {
  const i64 sw = a.stride_w, pw = a.pad_w;
  if (sw == 1) {
    std::copy_n(src, std::min(a.W, pp.cols - pw), pp.row(0, i) + pw);
    return;
  }
  if (sw == 2) {
    // Padded column c + pw: phase (c + pw) % 2, index (c + pw) / 2. Even input columns 2j go to
    // phase pw % 2 at j + pw / 2, odd ones 2j + 1 to the other phase at j + (pw + 1) / 2.
    float* de = pp.row(pw % 2, i) + pw / 2;
    float* dodd = pp.row((pw + 1) % 2, i) + (pw + 1) / 2;
    const i64 limit = std::min(a.W, 2 * (pp.cols - (pw + 1) / 2));
    i64 c = 0;
    for (; c + 2 * w <= limit; c += 2 * w) deinterleave(src + c, de + c / 2, dodd + c / 2);
    for (; c < limit; ++c) ((c % 2 == 0) ? de : dodd)[c / 2] = src[c];
    return;
  }
  for (i64 c = 0; c < a.W; ++c) {
    const i64 t = (c + pw) / sw;
    if (t < pp.cols) pp.row((c + pw) % sw, i)[t] = src[c];
  }
}

void fill_phases(const Conv2dArgs& a, const float* x, PhasePlane& pp) {
  const i64 h0 = std::max<i64>(0, -a.pad_h), h1 = std::min(a.H, pp.rows - a.pad_h);
  for (i64 h = h0; h < h1; ++h) fill_row(a, x + h * a.W, h + a.pad_h, pp);
}

// Where tap (r, s) starts, relative to the start of the output row's first padded row in phase 0:
// taps[r * S + s] = offset of phase (s*dil_w) % stride_w, row r*dil_h, column (s*dil_w) / stride_w.
// Computed once per call: a division by the runtime stride for every tap of every output row cost
// more than the arithmetic of the row.
std::vector<i64> tap_offsets(const Conv2dArgs& a, const PhasePlane& pp) {
  std::vector<i64> t(static_cast<std::size_t>(a.R * a.S));
  for (i64 r = 0; r < a.R; ++r) {
    for (i64 s = 0; s < a.S; ++s) {
      const i64 col = s * a.dil_w;
      t[r * a.S + s] = ((col % a.stride_w) * pp.rows + r * a.dil_h) * pp.cols + col / a.stride_w;
    }
  }
  return t;
}

// Output rows p .. p + ROWS - 1 of one plane: y[q] = bias + sum over taps, NB vectors of q at a
// time; `row` is output row p's first padded row (phase 0) plus q0, and each next output row starts
// `row_step` floats further (stride_h padded rows), as its y row does `y_step` floats further. Two
// rows at a time give each tap 2 NB independent FMAs: one row's NB chains of R*S dependent FMAs
// (36 cycles for 3x3) left the core waiting on FMA latency.
template <int ROWS, int NB>
void row_block(i64 taps, const i64* offsets, const float* row, i64 row_step, const float* wk, float bias, i64 left,
               float* y, i64 y_step) {
  batch_f32 acc[ROWS][NB];
#pragma GCC unroll 2
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) acc[i][b] = batch_f32(bias);
  for (i64 t = 0; t < taps; ++t) {
    const float* src = row + offsets[t];
    const batch_f32 wv(wk[t]);
#pragma GCC unroll 2
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
        acc[i][b] = xsimd::fma(wv, batch_f32::load_unaligned(src + i * row_step + b * w), acc[i][b]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      if ((b + 1) * w <= left) {
        acc[i][b].store_unaligned(y + i * y_step + b * w);
      } else if (b * w < left) {
        store_partial(y + i * y_step + b * w, left - b * w, acc[i][b]);
      }
    }
}

// Rows [p, p + ROWS) of the output plane, across the row.
template <int ROWS>
void rows(const Conv2dArgs& a, const PhasePlane& pp, const float* wk, float bias, float* y, const i64* off, i64 p) {
  const i64 taps = a.R * a.S, row_step = a.stride_h * pp.cols;
  float* yr = y + p * a.Q;
  const float* row = pp.row(0, p * a.stride_h);
  i64 q0 = 0;
  for (; q0 + 4 * w <= a.Q; q0 += 4 * w)
    row_block<ROWS, 4>(taps, off, row + q0, row_step, wk, bias, a.Q - q0, yr + q0, a.Q);
  const i64 rest = a.Q - q0;
  if (rest > 2 * w) {
    row_block<ROWS, 4>(taps, off, row + q0, row_step, wk, bias, rest, yr + q0, a.Q);
  } else if (rest > w) {
    row_block<ROWS, 2>(taps, off, row + q0, row_step, wk, bias, rest, yr + q0, a.Q);
  } else if (rest > 0) {
    row_block<ROWS, 1>(taps, off, row + q0, row_step, wk, bias, rest, yr + q0, a.Q);
  }
}

void plane(const Conv2dArgs& a, const float* x, const float* wk, float bias, float* y, PhasePlane& pp,
           const std::vector<i64>& offsets) {
  fill_phases(a, x, pp);
  i64 p = 0;
  for (; p + 2 <= a.P; p += 2) rows<2>(a, pp, wk, bias, y, offsets.data(), p);
  if (p < a.P) rows<1>(a, pp, wk, bias, y, offsets.data(), p);
}

}  // namespace

bool conv2d_is_depthwise(const Conv2dArgs& a) { return a.groups == a.C && a.groups > 1 && a.K % a.C == 0; }

void conv2d_depthwise(const Conv2dArgs& a) {
  const i64 mult = a.K / a.C, planes = a.N * a.K;
  // Padded rows and columns the taps reach. A row's last vector block starts before Q and holds
  // at most 4 vectors, of which the lanes from Q + 2 * vec_width on are never read (plane() picks
  // the block size so), so columns up to Q + 2 * vec_width past the taps' reach are enough.
  const i64 rows = (a.P - 1) * a.stride_h + (a.R - 1) * a.dil_h + 1;
  const i64 reach = (a.S - 1) * a.dil_w / a.stride_w + 1;
  const i64 cols = round_up(a.Q + 2 * w + reach, w);
  const i64 work = a.P * a.Q * a.R * a.S;
  parallel_for(planes, grain_for(work, grain_cheap), [&](i64 b, i64 e) {
    PhasePlane pp;
    pp.rows = rows;
    pp.cols = cols;
    pp.data.assign(static_cast<std::size_t>(a.stride_w * rows * cols), 0.0f);
    const std::vector<i64> offsets = tap_offsets(a, pp);
    for (i64 t = b; t < e; ++t) {
      const i64 n = t / a.K, k = t % a.K, c = k / mult;
      plane(a, a.x + (n * a.C + c) * a.H * a.W, a.w + k * a.R * a.S, a.bias ? a.bias[k] : 0.0f,
            a.y + (n * a.K + k) * a.P * a.Q, pp, offsets);
    }
  });
}

}  // namespace trine::cpu::TRINE_ISA_NS
