// Direct conv2d for stride 1 (any R x S, dilation and groups): no im2col matrix at all. The input
// plane is copied once with its padding into rows of Wp = Q + (S-1)*dil_w columns; computed in that
// row pitch, output pixel j' = p * Wp + q reads input element j' + r*dil_h*Wp + s*dil_w of every
// channel, so each tap is one contiguous vector run across whole output rows. A block of kb output
// channels x nv vectors of pixels stays in registers while the channels and taps stream by: kb
// broadcasts + nv loads per kb*nv FMAs, as in the GEMM micro-kernel, without packing the im2col operand.
// The (S-1)*dil_w columns past Q in each row are computed and dropped.
#include "backends/cpu_simd/isa.hpp"

#include <vector>

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

using AlignedFloats = std::vector<float, xsimd::aligned_allocator<float, 64>>;

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

struct Geometry {
  i64 Cg = 0, Kg = 0, Hp = 0, Wp = 0, taps = 0;
  i64 span = 0;  // pixels computed per output plane in the padded pitch, rounded to a block
  i64 plane = 0; // floats per padded input channel, with slack for the last block's reads
};

Geometry geometry(const Conv2dArgs& a) {
  Geometry g;
  g.Cg = a.C / a.groups;
  g.Kg = a.K / a.groups;
  g.Hp = a.P + (a.R - 1) * a.dil_h;
  g.Wp = a.Q + (a.S - 1) * a.dil_w;
  g.taps = a.R * a.S;
  g.span = round_up(a.P * g.Wp, nv * w);
  // The last block reads up to span - 1 + (R-1)*dil_h*Wp + (S-1)*dil_w.
  g.plane = round_up(std::max(g.Hp * g.Wp, g.span + (a.R - 1) * a.dil_h * g.Wp + (a.S - 1) * a.dil_w), w);
  return g;
}

// Channels [c0, c0 + Cg) of image n, padded: xp[c][i * Wp + j] = x(c, i - pad_h, j - pad_w) or 0.
void pad_input(const Conv2dArgs& a, const Geometry& g, const float* x, float* xp) {
  for (i64 c = 0; c < g.Cg; ++c) {
    float* dst = xp + c * g.plane;
    std::fill_n(dst, g.plane, 0.0f);
    const float* src = x + c * a.H * a.W;
    for (i64 i = 0; i < g.Hp; ++i) {
      const i64 h = i - a.pad_h;
      if (h < 0 || h >= a.H) continue;
      const i64 lo = std::max<i64>(0, a.pad_w), from = std::max<i64>(0, -a.pad_w);
      const i64 n = std::min(a.W - from, g.Wp - lo);
      if (n > 0) std::copy_n(src + h * a.W + from, n, dst + i * g.Wp + lo);
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

// out[i][j0 .. j0 + nv*w) (pitch g.span) for the kb channels of wp over all input channels.
void block(const Conv2dArgs& a, const Geometry& g, const float* xp, const float* wp, i64 j0, float* out) {
  batch_f32 acc[kb][nv];
#pragma GCC unroll 16
  for (int i = 0; i < kb; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v] = batch_f32(0.0f);
  const float* wt = wp;
  for (i64 c = 0; c < g.Cg; ++c) {
    const float* xc = xp + c * g.plane + j0;
    for (i64 r = 0; r < a.R; ++r) {
      const float* xr = xc + r * a.dil_h * g.Wp;
      for (i64 s = 0; s < a.S; ++s) {
        const float* src = xr + s * a.dil_w;
        batch_f32 xv[nv];
#pragma GCC unroll 4
        for (int v = 0; v < nv; ++v) xv[v] = batch_f32::load_unaligned(src + v * w);
#pragma GCC unroll 16
        for (int i = 0; i < kb; ++i) {
          const batch_f32 wv(wt[i]);
#pragma GCC unroll 4
          for (int v = 0; v < nv; ++v) acc[i][v] = xsimd::fma(wv, xv[v], acc[i][v]);
        }
        wt += kb;
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < kb; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v].store_aligned(out + i * g.span + j0 + v * w);
}

}  // namespace

bool conv2d_direct_fits(const Conv2dArgs& a) {
  if (!(a.stride_h == 1 && a.stride_w == 1 && a.R * a.S > 1 && a.K / a.groups >= kb / 2 && a.Q >= w)) return false;
  // Each thread holds one image-group's padded input: past 32 MB per thread the implicit GEMM, which
  // packs panels of a few KB, is the better use of memory (and of the caches).
  const Geometry g = geometry(a);
  return g.Cg * g.plane * static_cast<i64>(sizeof(float)) <= (i64{32} << 20);
}

void conv2d_direct(const Conv2dArgs& a) {
  const Geometry g = geometry(a);
  const i64 kblocks = (g.Kg + kb - 1) / kb, jblocks = g.span / (nv * w);
  const i64 pq = a.P * a.Q;
  // One task: one image and group's padded input (built by whichever thread first needs it would
  // need a lock; instead each task pads its own image-group, and tasks are (image, group, block of
  // output channels), so an image-group is padded once per channel block).
  parallel_for(a.N * a.groups * kblocks, 1, [&](i64 t0, i64 t1) {
    AlignedFloats xp(static_cast<std::size_t>(g.Cg * g.plane)), wp(static_cast<std::size_t>(g.Cg * g.taps * kb));
    AlignedFloats out(static_cast<std::size_t>(kb * g.span));
    i64 padded = -1;  // image-group now in xp
    for (i64 t = t0; t < t1; ++t) {
      const i64 ng = t / kblocks, k0 = (t % kblocks) * kb;
      const i64 n = ng / a.groups, grp = ng % a.groups;
      if (padded != ng) {
        pad_input(a, g, a.x + (n * a.C + grp * g.Cg) * a.H * a.W, xp.data());
        padded = ng;
      }
      pack_weights(g, a.w + grp * g.Kg * g.Cg * g.taps, k0, wp.data());
      for (i64 jb = 0; jb < jblocks; ++jb) block(a, g, xp.data(), wp.data(), jb * nv * w, out.data());
      for (i64 i = 0; i < std::min(kb, g.Kg - k0); ++i) {
        const i64 k = grp * g.Kg + k0 + i;
        float* y = a.y + (n * a.K + k) * pq;
        const float* o = out.data() + i * g.span;
        const batch_f32 bias(a.bias ? a.bias[k] : 0.0f);
        for (i64 p = 0; p < a.P; ++p) {
          i64 q = 0;
          for (; q + w <= a.Q; q += w) (batch_f32::load_unaligned(o + p * g.Wp + q) + bias).store_unaligned(y + p * a.Q + q);
          for (; q < a.Q; ++q) y[p * a.Q + q] = o[p * g.Wp + q] + (a.bias ? a.bias[k] : 0.0f);
        }
      }
    }
  });
}

}  // namespace trine::cpu::TRINE_ISA_NS
