// Direct conv2d (no im2col matrix at all) for stride_w 1 or 2, any stride_h, R x S, dilation and
// groups. The input of an image-group is copied once, zero-padded, into a layout where each tap is
// one contiguous vector run of output pixels:
// - stride 1 (both ways): rows of Wp = Q + (S-1)*dil_w columns. Computed in that row pitch, output
//   pixel j' = p * Wp + q reads input element j' + r*dil_h*Wp + s*dil_w of every channel, so a run
//   crosses whole output rows; the (S-1)*dil_w columns past Q in each row are computed and dropped.
// - stride_w 2: each padded row split into its even and odd columns (two phases), so the output
//   row's pixels q, q+1, ... read phase (s*dil_w) % 2 at q + (s*dil_w) / 2, ... contiguously; the
//   output is computed a row at a time (any stride_h), in blocks of up to nv vectors.
// A block of kb output channels x nv vectors of pixels stays in registers while the channels and
// taps stream by: kb broadcasts + nv loads per kb*nv FMAs, as in the GEMM micro-kernel, without
// packing the im2col operand.
//
// conv2d_direct_channels, further down, turns the block around: output channels are the vector
// lanes and pixels the broadcasts, at any stride and dilation. For column strides of 2 and more,
// where a group has a register block's worth of output channels, it is the faster of the two
// (docs/design.md); this kernel keeps stride 1 and the groups with fewer channels.
#include "backends/cpu_simd/isa.hpp"

#include <algorithm>
#include <vector>

#include "backends/cpu_simd/gemm/pack.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;
// Accumulators kb x nv, plus nv pixel vectors and one broadcast, fill the register file: 24 + 4 of
// AVX-512's 32 zmm, 12 + 4 of the 16 ymm/xmm otherwise. Measured on a Xeon (3x3 C=K=64 56x56, one
// thread): AVX-512 8x3 179 GFLOP/s against 145 for 8x2, 147 for 9x3, 149 for 6x4; AVX2 4x3 94
// against 89 for 6x2 and 84 for 8x2 (which spills).
constexpr i64 kb = w == 16 ? 8 : 4;  // output channels per register block
constexpr i64 nv = 3;                // vectors of pixels per register block

// Past this many bytes of padded input per image-group the implicit GEMM, which packs panels of a
// few KB, is the better use of memory and caches.
constexpr i64 max_padded_bytes = i64{32} << 20;

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

struct Geometry {
  bool phases = false;  // stride_w 2: even and odd columns split
  i64 Cg = 0, Kg = 0, taps = 0;
  i64 Hp = 0;     // padded rows held
  i64 Wp = 0;     // padded columns of a row (stride 1), or of one phase of a row (stride 2)
  i64 span = 0;   // stride 1: pixels computed per output plane; stride 2: per output row
  i64 plane = 0;  // floats per padded input channel (both phases), with slack for over-reads
};

Geometry geometry(const Conv2dArgs& a) {
  Geometry g;
  g.phases = a.stride_w == 2;
  g.Cg = a.C / a.groups;
  g.Kg = a.K / a.groups;
  g.taps = a.R * a.S;
  g.Hp = (a.P - 1) * a.stride_h + (a.R - 1) * a.dil_h + 1;
  if (!g.phases) {
    g.Wp = a.Q + (a.S - 1) * a.dil_w;
    g.span = round_up(a.P * g.Wp, nv * w);
    // The last block reads up to span - 1 + (R-1)*dil_h*Wp + (S-1)*dil_w.
    g.plane = round_up(std::max(g.Hp * g.Wp, g.span + (a.R - 1) * a.dil_h * g.Wp + (a.S - 1) * a.dil_w), w);
  } else {
    // Output q, tap s read phase (s*dil_w) % 2 at q + (s*dil_w) / 2; a row's blocks read up to
    // span - 1 + ((S-1)*dil_w) / 2.
    g.span = round_up(a.Q, w);
    g.Wp = g.span + (a.S - 1) * a.dil_w / 2;
    g.plane = round_up(2 * g.Hp * g.Wp, w);
  }
  return g;
}

// Channel c of the image-group at x, padded into dst (g.plane floats):
// stride 1: dst[i * Wp + j] = x(c, i - pad_h, j - pad_w), or 0 outside the input;
// stride 2: dst[(phase * Hp + i) * Wp + u] = x(c, i - pad_h, 2u + phase - pad_w), or 0.
// Channel c at x into Hp rows of pitch Wp at dst (plane floats, zeroed first): dst[i * Wp + j] = x(c,
// i - pad_h, j - pad_w), or 0 outside the input.
void pad_plain(const Conv2dArgs& a, i64 Hp, i64 Wp, i64 plane, const float* x, float* dst) {
  std::fill_n(dst, plane, 0.0f);
  const i64 lo = std::max<i64>(0, a.pad_w), from = std::max<i64>(0, -a.pad_w);
  const i64 n = std::min(a.W - from, Wp - lo);
  if (n <= 0) return;
  for (i64 i = 0; i < Hp; ++i) {
    const i64 h = i - a.pad_h;
    if (h >= 0 && h < a.H) std::copy_n(x + h * a.W + from, n, dst + i * Wp + lo);
  }
}

void pad_channel(const Conv2dArgs& a, const Geometry& g, const float* x, float* dst) {
  if (!g.phases) return pad_plain(a, g.Hp, g.Wp, g.plane, x, dst);
  std::fill_n(dst, g.plane, 0.0f);
  for (i64 i = 0; i < g.Hp; ++i) {
    const i64 h = i - a.pad_h;
    if (h < 0 || h >= a.H) continue;
    const float* src = x + h * a.W;
    for (int ph = 0; ph < 2; ++ph) {
      float* row = dst + (ph * g.Hp + i) * g.Wp;
      // Column u of this phase is input column 2u + ph - pad_w.
      const i64 u0 = std::max<i64>(0, (a.pad_w - ph + 1) / 2);
      for (i64 u = u0; u < g.Wp; ++u) {
        const i64 col = 2 * u + ph - a.pad_w;
        if (col >= a.W) break;
        row[u] = src[col];
      }
    }
  }
}

// Weights of output channels [k0, k0 + kb) of the group, tap-major with the kb channels innermost:
// wp[(c * taps + t) * kb + i], zero for channels past Kg.
void pack_weights(const Geometry& g, const float* wg, i64 k0, float* wp) {
  for (i64 c = 0; c < g.Cg; ++c) {
    for (i64 t = 0; t < g.taps; ++t) {
      for (i64 i = 0; i < kb; ++i) {
        wp[(c * g.taps + t) * kb + i] = k0 + i < g.Kg ? wg[((k0 + i) * g.Cg + c) * g.taps + t] : 0.0f;
      }
    }
  }
}

// The register block both direct kernels share: kb output channels x NV vectors of pixels.
template <int NV>
using Block = batch_f32[kb][NV];

template <int NV>
[[gnu::always_inline]] inline void zero_block(Block<NV>& acc) {
#pragma GCC unroll 16
  for (int i = 0; i < kb; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = batch_f32(0.0f);
}

// One tap: acc[i][v] += wt[i] * src[v * w .. v * w + w) for the kb channels.
template <int NV>
[[gnu::always_inline]] inline void tap_fma(const float* src, const float* wt, Block<NV>& acc) {
  batch_f32 xv[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) xv[v] = batch_f32::load_unaligned(src + v * w);
#pragma GCC unroll 16
  for (int i = 0; i < kb; ++i) {
    const batch_f32 wv(wt[i]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = xsimd::fma(wv, xv[v], acc[i][v]);
  }
}

// out[i * pitch + v * w ..] = acc[i][v] (out 64-byte aligned, pitch a multiple of the vector).
template <int NV>
[[gnu::always_inline]] inline void store_block(const Block<NV>& acc, float* out, i64 pitch) {
#pragma GCC unroll 16
  for (int i = 0; i < kb; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v].store_aligned(out + i * pitch + v * w);
}

// Stride 1: out[i * g.span + j0 + v * w] for i < kb, v < nv, the kb channels of wp over all input
// channels for the pixels j0 .. j0 + nv*w of the padded plane.
template <int FixedS>
void block_plane(const Conv2dArgs& a, const Geometry& g, const float* xp, const float* wp, i64 j0, float* out) {
  const i64 S = FixedS > 0 ? FixedS : a.S;
  batch_f32 acc[kb][nv];
  zero_block<nv>(acc);
  const float* wt = wp;
  for (i64 c = 0; c < g.Cg; ++c) {
    const float* xc = xp + c * g.plane + j0;
    for (i64 r = 0; r < a.R; ++r) {
      const float* xr = xc + r * a.dil_h * g.Wp;
#pragma GCC unroll 4
      for (i64 s = 0; s < S; ++s) {
        tap_fma<nv>(xr + s * a.dil_w, wt, acc);
        wt += kb;
      }
    }
  }
  store_block<nv>(acc, out + j0, g.span);
}

// Stride 2: out[i * pitch + v * w] for i < kb, v < NV, the same over the phase layout: the pixels at
// offset `at` of every channel's padded input, tap (r, s) at at + r * row_step + col_off[s].
// (The stride-1 path keeps its own function: this form, given its column offsets, ran the 3x3
// C=K=64 56x56 case at 162-166 GFLOP/s against block_plane's 180, with the same inner loop.)
template <int NV>
void block_row(const Geometry& g, i64 R, i64 S, const float* xp, i64 at, i64 row_step, const i64* col_off,
               const float* wp, float* out, i64 pitch) {
  batch_f32 acc[kb][NV];
  zero_block<NV>(acc);
  const float* wt = wp;
  for (i64 c = 0; c < g.Cg; ++c) {
    const float* xc = xp + c * g.plane + at;
    for (i64 r = 0; r < R; ++r) {
      const float* xr = xc + r * row_step;
      for (i64 s = 0; s < S; ++s) {
        tap_fma<NV>(xr + col_off[s], wt, acc);
        wt += kb;
      }
    }
  }
  store_block<NV>(acc, out, pitch);
}

// y[k][p][q] = out[k][p * out_pitch + q] + bias[k] for the valid channels of the block.
void write_out(const Conv2dArgs& a, const float* out, i64 out_pitch, i64 out_stride, i64 p0, i64 rows, i64 k_first,
               i64 count, float* y) {
  const i64 pq = a.P * a.Q;
  for (i64 i = 0; i < count; ++i) {
    const i64 k = k_first + i;
    const float b = a.bias ? a.bias[k] : 0.0f;
    const batch_f32 bias(b);
    for (i64 p = p0; p < p0 + rows; ++p) {
      const float* o = out + i * out_stride + (p - p0) * out_pitch;
      float* yr = y + k * pq + p * a.Q;
      i64 q = 0;
      for (; q + w <= a.Q; q += w) (batch_f32::load_unaligned(o + q) + bias).store_unaligned(yr + q);
      for (; q < a.Q; ++q) yr[q] = o[q] + b;
    }
  }
}

struct DirectScratch {
  AlignedBuffer padded, weights, out;  // each thread's own
};

DirectScratch& direct_scratch() {
  thread_local DirectScratch s;
  return s;
}

// ---- Output channels as the vector lanes (conv2d_direct_channels) ----
// A block of mr output pixels x nr output channels in registers, the GEMM micro-kernel's shape: per
// tap, nv aligned vector loads of packed weights and mr broadcasts of input pixels, at any column
// stride and dilation (a broadcast reads one float wherever it is). Nothing is split across cache
// lines and no column phases are needed. The tile comes out pixel-major and is transposed into the
// NCHW output a row at a time.
constexpr int oc_mr = GemmConfig::mr;
constexpr int oc_nv = GemmConfig::nv;
constexpr i64 oc_nr = GemmConfig::nr;

struct ChannelGeometry {
  i64 Cg = 0, Kg = 0, taps = 0;  // taps = Cg * R * S
  i64 Hp = 0, Wp = 0;            // padded rows and columns
  i64 plane = 0;                 // floats per padded channel, with slack for a last tile's over-read
  i64 qspan = 0;                 // Q rounded up to whole tiles of oc_mr pixels
};

ChannelGeometry channel_geometry(const Conv2dArgs& a) {
  ChannelGeometry g;
  g.Cg = a.C / a.groups;
  g.Kg = a.K / a.groups;
  g.taps = g.Cg * a.R * a.S;
  g.Hp = (a.P - 1) * a.stride_h + (a.R - 1) * a.dil_h + 1;
  g.Wp = (a.Q - 1) * a.stride_w + (a.S - 1) * a.dil_w + 1;
  g.qspan = round_up(a.Q, oc_mr);
  // The last row's last tile reads up to (qspan - 1) * stride_w + (S - 1) * dil_w past its start.
  g.plane = round_up(g.Hp * g.Wp + (g.qspan - a.Q) * a.stride_w, w);
  return g;
}

// Weights of output channels [k0, k0 + oc_nr) of the group, tap-major: wp[t * oc_nr + i] with t = (c,
// r, s), zero for channels past Kg.
void pack_channel_weights(const ChannelGeometry& g, const float* wg, i64 k0, float* wp) {
  for (i64 t = 0; t < g.taps; ++t)
    for (i64 i = 0; i < oc_nr; ++i) wp[t * oc_nr + i] = k0 + i < g.Kg ? wg[(k0 + i) * g.taps + t] : 0.0f;
}

// y[i * pq + q] = rk[q * oc_nr + i] + bias[i] (bias may be null) for i < count, q < Q: a row of tiles
// back to NCHW. AVX2 and AVX-512 transpose 8 x 8 blocks in registers; the rest goes element by
// element (a scalar transpose was a fifth of the 7x7 stride-2 stem's time).
void transpose_out(const float* rk, i64 Q, i64 count, const float* bias, float* y, i64 pq) {
  i64 i0 = 0;
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
  for (; i0 + 8 <= count; i0 += 8) {
    __m256 b[8];
    for (int j = 0; j < 8; ++j) b[j] = _mm256_set1_ps(bias ? bias[i0 + j] : 0.0f);
    i64 q = 0;
    for (; q + 8 <= Q; q += 8) {
      __m256 v[8];
      for (int j = 0; j < 8; ++j) v[j] = _mm256_load_ps(rk + (q + j) * oc_nr + i0);
      transpose8x8(v);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(y + (i0 + j) * pq + q, _mm256_add_ps(v[j], b[j]));
    }
    for (i64 j = 0; j < 8; ++j)
      for (i64 qq = q; qq < Q; ++qq) y[(i0 + j) * pq + qq] = rk[qq * oc_nr + i0 + j] + (bias ? bias[i0 + j] : 0.0f);
  }
#endif
  for (i64 i = i0; i < count; ++i) {
    const float b = bias ? bias[i] : 0.0f;
    for (i64 q = 0; q < Q; ++q) y[i * pq + q] = rk[q * oc_nr + i] + b;
  }
}

// tile[i * oc_nr + v * w ..] = sum over taps of x[off[t] + i * SW] * wp[t][v * w ..], i < oc_mr.
// SW > 0 is the column stride fixed at compile time; 0 reads it from sw.
template <int SW>
void channel_tile(const float* x, i64 sw, const i64* off, i64 taps, const float* wp, float* tile) {
  const i64 step = SW > 0 ? SW : sw;
  batch_f32 acc[oc_mr][oc_nv];
#pragma GCC unroll 16
  for (int i = 0; i < oc_mr; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < oc_nv; ++v) acc[i][v] = batch_f32(0.0f);
  for (i64 t = 0; t < taps; ++t) {
    const float* xt = x + off[t];
    batch_f32 wv[oc_nv];
#pragma GCC unroll 4
    for (int v = 0; v < oc_nv; ++v) wv[v] = batch_f32::load_aligned(wp + v * w);
#pragma GCC unroll 16
    for (int i = 0; i < oc_mr; ++i) {
      const batch_f32 xv(xt[i * step]);
#pragma GCC unroll 4
      for (int v = 0; v < oc_nv; ++v) acc[i][v] = xsimd::fma(xv, wv[v], acc[i][v]);
    }
    wp += oc_nr;
  }
#pragma GCC unroll 16
  for (int i = 0; i < oc_mr; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < oc_nv; ++v) acc[i][v].store_aligned(tile + i * oc_nr + v * w);
}

// One output row of an image-group: xrow is its first padded input row, wg the group's packed weights
// ([channel block][tap][oc_nr]), y its channel 0's output row, bias the group's (or null). The row is
// computed a chunk of pixels at a time, every channel block of a set of set_blocks over the chunk,
// so the chunk's input stays in L1 while the set's weights, at most 256 KB, stay in L2; then each
// block's tiles (in row, qspan x oc_nr floats a block) are transposed into y.
void channel_row(const Conv2dArgs& a, const ChannelGeometry& g, const float* xp, const float* wg, const i64* off,
                 i64 set_blocks, float* row, float* y, const float* bias, i64 xrow) {
  constexpr i64 chunk = 8 * oc_mr;
  const i64 kblocks = (g.Kg + oc_nr - 1) / oc_nr, pq = a.P * a.Q;
  for (i64 set0 = 0; set0 < kblocks; set0 += set_blocks) {
    for (i64 c0 = 0; c0 < a.Q; c0 += chunk) {
      for (i64 kbk = set0; kbk < std::min(kblocks, set0 + set_blocks); ++kbk) {
        float* rk = row + kbk * g.qspan * oc_nr;
        // This row's output lines for the block, requested while the taps run: transpose_out writes
        // them after the row, and waiting for them there was most of its time.
        const float* yk = y + kbk * oc_nr * pq;
        const i64 count = std::min(oc_nr, g.Kg - kbk * oc_nr);
        for (i64 q0 = c0; q0 < std::min(a.Q, c0 + chunk); q0 += oc_mr) {
          for (i64 i = 0; i < count; ++i) __builtin_prefetch(yk + i * pq + q0, 1, 3);
          const float* xq = xp + xrow + q0 * a.stride_w;
          if (a.stride_w == 2) {
            channel_tile<2>(xq, 2, off, g.taps, wg + kbk * g.taps * oc_nr, rk + q0 * oc_nr);
          } else {
            channel_tile<0>(xq, a.stride_w, off, g.taps, wg + kbk * g.taps * oc_nr, rk + q0 * oc_nr);
          }
        }
      }
    }
  }
  for (i64 kbk = 0; kbk < kblocks; ++kbk) {
    const i64 k0 = kbk * oc_nr;
    transpose_out(row + kbk * g.qspan * oc_nr, a.Q, std::min(oc_nr, g.Kg - k0), bias ? bias + k0 : nullptr, y + k0 * pq,
                  pq);
  }
}

}  // namespace

bool conv2d_direct_fits(const Conv2dArgs& a) {
  if (!((a.stride_w == 1 || a.stride_w == 2) && a.R * a.S > 1 && a.K / a.groups >= kb / 2 && a.Q >= w)) return false;
  if (a.stride_w == 1 && a.stride_h != 1) return false;  // rare; the row pitch trick needs stride 1
  const Geometry g = geometry(a);
  return g.Cg * g.plane * static_cast<i64>(sizeof(float)) <= max_padded_bytes;
}

void conv2d_direct(const Conv2dArgs& a) {
  const Geometry g = geometry(a);
  const i64 kblocks = (g.Kg + kb - 1) / kb;
  // Where tap column s starts: s * dil_w along the row, or in the phase of s * dil_w.
  std::vector<i64> col_off(static_cast<std::size_t>(a.S));
  for (i64 s_ = 0; s_ < a.S; ++s_) {
    const i64 col = s_ * a.dil_w;
    col_off[s_] = g.phases ? (col & 1) * g.Hp * g.Wp + col / 2 : col;
  }
  const i64 row_step = a.dil_h * g.Wp;
  // Tasks are (image-group, block of output channels), consecutive tasks sharing an image-group,
  // and each thread pads an image-group into its own buffer when its tasks reach it: the padded
  // input is then hot in that core's L2 for all its channel blocks. (Padding every image-group
  // once up front, shared by the threads, measured 7% slower at N=1 and 15% at N=8: the blocks
  // then read a padded input the other images had pushed out of L2.)
  parallel_for(a.N * a.groups * kblocks, 1, [&](i64 t0, i64 t1) {
    DirectScratch& s = direct_scratch();
    float* xp = s.padded.get(g.Cg * g.plane);
    float* wp = s.weights.get(g.Cg * g.taps * kb);
    float* out = s.out.get(kb * g.span);
    i64 padded = -1;  // image-group now in xp
    for (i64 t = t0; t < t1; ++t) {
      const i64 ng = t / kblocks, k0 = (t % kblocks) * kb;
      const i64 n = ng / a.groups, grp = ng % a.groups;
      if (padded != ng) {
        const float* x = a.x + (n * a.C + grp * g.Cg) * a.H * a.W;
        for (i64 c = 0; c < g.Cg; ++c) pad_channel(a, g, x + c * a.H * a.W, xp + c * g.plane);
        padded = ng;
      }
      pack_weights(g, a.w + grp * g.Kg * g.Cg * g.taps, k0, wp);
      const i64 count = std::min(kb, g.Kg - k0);
      float* y = a.y + n * a.K * a.P * a.Q;
      if (!g.phases) {
        for (i64 j0 = 0; j0 < g.span; j0 += nv * w) {
          if (a.S == 3) {
            block_plane<3>(a, g, xp, wp, j0, out);
          } else {
            block_plane<0>(a, g, xp, wp, j0, out);
          }
        }
        write_out(a, out, g.Wp, g.span, 0, a.P, grp * g.Kg + k0, count, y);
        continue;
      }
      // Stride 2: a row of output at a time; blocks of nv vectors, then one of the 1 or 2 left.
      for (i64 p = 0; p < a.P; ++p) {
        const i64 row0 = p * a.stride_h * g.Wp;
        const i64* co = col_off.data();
        i64 q0 = 0;
        for (; q0 + nv * w <= g.span; q0 += nv * w)
          block_row<nv>(g, a.R, a.S, xp, row0 + q0, row_step, co, wp, out + q0, g.span);
        if (g.span - q0 == 2 * w) block_row<2>(g, a.R, a.S, xp, row0 + q0, row_step, co, wp, out + q0, g.span);
        if (g.span - q0 == w) block_row<1>(g, a.R, a.S, xp, row0 + q0, row_step, co, wp, out + q0, g.span);
        write_out(a, out, 0, g.span, p, 1, grp * g.Kg + k0, count, y);
      }
    }
  });
}

bool conv2d_direct_channels_fits(const Conv2dArgs& a) {
  // Stride 1 stays with conv2d_direct, whose runs cross whole output rows: on Zen 3 this kernel won
  // four stride-1 shapes of five by 10-25% but lost C = K = 512 at 14 x 14 by 12% (a tile there
  // reads 512 x 3 rows spread over planes that no longer fit L2), and the stride-1 kernel is what
  // the Winograd rule was measured against.
  if (!(a.stride_w >= 2 && a.R * a.S > 1 && a.K / a.groups >= oc_nr && a.Q >= oc_mr)) return false;
  const ChannelGeometry g = channel_geometry(a);
  return g.Cg * g.plane * static_cast<i64>(sizeof(float)) <= max_padded_bytes;
}

void conv2d_direct_channels(const Conv2dArgs& a) {
  const ChannelGeometry g = channel_geometry(a);
  const i64 kblocks = (g.Kg + oc_nr - 1) / oc_nr;
  // off[t] for tap t = (c, r, s): where it reads, relative to the output pixel's corner.
  std::vector<i64> off(static_cast<std::size_t>(g.taps));
  for (i64 c = 0; c < g.Cg; ++c)
    for (i64 r = 0; r < a.R; ++r)
      for (i64 s = 0; s < a.S; ++s) off[(c * a.R + r) * a.S + s] = c * g.plane + r * a.dil_h * g.Wp + s * a.dil_w;
  // Every group's weights packed once, before the threads start: [group][channel block][tap][oc_nr].
  const i64 wblock = g.taps * oc_nr;
  float* wp = direct_scratch().weights.get(a.groups * kblocks * wblock);
  for (i64 grp = 0; grp < a.groups; ++grp)
    for (i64 kbk = 0; kbk < kblocks; ++kbk)
      pack_channel_weights(g, a.w + grp * g.Kg * g.taps, kbk * oc_nr, wp + (grp * kblocks + kbk) * wblock);
  // Channel blocks whose weights together stay in L2 (channel_row).
  const i64 set_blocks = std::clamp<i64>((i64{256} << 10) / (wblock * 4), 1, kblocks);
  // Tasks are (image-group, block of up to 8 output rows), at least 4 a thread where the rows allow.
  // Each thread pads an image-group into its own buffer when its tasks reach it, as conv2d_direct
  // does.
  const i64 rows_per_task =
      std::clamp<i64>((a.N * a.groups * a.P + 4 * thread_count() - 1) / (4 * thread_count()), 1, std::min<i64>(a.P, 8));
  const i64 row_tasks = (a.P + rows_per_task - 1) / rows_per_task;
  parallel_for(a.N * a.groups * row_tasks, 1, [&](i64 t0, i64 t1) {
    DirectScratch& s = direct_scratch();
    float* xp = s.padded.get(g.Cg * g.plane);
    float* row = s.out.get(kblocks * g.qspan * oc_nr);
    i64 padded = -1;
    for (i64 t = t0; t < t1; ++t) {
      const i64 ng = t / row_tasks, p0 = (t % row_tasks) * rows_per_task, p1 = std::min(a.P, p0 + rows_per_task);
      const i64 n = ng / a.groups, grp = ng % a.groups;
      if (padded != ng) {
        const float* x = a.x + (n * a.C + grp * g.Cg) * a.H * a.W;
        for (i64 c = 0; c < g.Cg; ++c) pad_plain(a, g.Hp, g.Wp, g.plane, x + c * a.H * a.W, xp + c * g.plane);
        padded = ng;
      }
      for (i64 p = p0; p < p1; ++p)
        channel_row(a, g, xp, wp + grp * kblocks * wblock, off.data(), set_blocks, row,
                    a.y + ((n * a.K + grp * g.Kg) * a.P + p) * a.Q, a.bias ? a.bias + grp * g.Kg : nullptr,
                    p * a.stride_h * g.Wp);
    }
  });
}

}  // namespace trine::cpu::TRINE_ISA_NS
