// layernorm and rmsnorm over the last axis of contiguous rows, one workgroup per row; the mean is
// taken first and the variance around it (two passes: no cancellation for rows far from zero).
// Rows whose squares leave the f32 range (|x| above ~1.8e19, a sum of squares above FLT_MAX, or
// squares that underflow) are redone on the row scaled by a power of two, as the cpu kernels do
// (backends/cpu_simd/kernels/norm.cpp), so the result is right wherever it is representable. That
// is decided on the workgroup's sums, the same in every invocation, so the barriers of the redo's
// reductions stay in uniform control flow; the common row runs the same three passes as ever.
// TYPE 1 or 2 (f16, bf16): x, gamma, beta and y all of that dtype, read and written as 32-bit words
// of two elements (x, gamma and beta from any element), each value widened exactly, the statistics
// in f32 as for f32, and each result rounded once as cast rounds; a row's whole words are stored as
// such, the halves it shares with the next or last row (an odd n) by atomics (store16.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef TRINE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TYPE = 0u;  // 0 f32, 1 f16, 2 bf16: x, gamma, beta and y
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer G { uint g[]; };
layout(set = 0, binding = 2) readonly buffer B { uint b[]; };
layout(set = 0, binding = 3) buffer Y { uint y[]; };  // atomics on 16-bit halves
#include "store16.glsl"
layout(push_constant) uniform Push {
  uint rows;
  uint n;
  uint x_off;
  uint g_off;
  uint b_off;
  uint has_gamma;
  uint has_beta;
  uint rms;
  float eps;
  float eps_m;  // eps = eps_m 2^eps_e, eps_m in [1, 2): exact even for a subnormal eps
  int eps_e;
  float sqrt_eps;
} p;

bool finite(float v) { return !isnan(v) && !isinf(v); }

float load_x(uint at) { return element_of(TYPE, x[word_of(TYPE, at)], at); }

// Element k of the row at `base`: (x pre - shift) inv * gamma + beta; pre is 1 (folded away) or the
// redo's power of two, which makes x pre exact.
float result(uint base, uint k, float pre, float shift, float inv) {
  float v = (load_x(base + k) * pre - shift) * inv;
  uint gi = p.g_off + k, bi = p.b_off + k;
  if (p.has_gamma != 0u) v *= element_of(TYPE, g[word_of(TYPE, gi)], gi);
  if (p.has_beta != 0u) v += element_of(TYPE, b[word_of(TYPE, bi)], bi);
  return v;
}

// Row r of y.
void write_row(uint base, uint r, float pre, float shift, float inv) {
  uint first = r * p.n;
  if (TYPE == 0u) {
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) y[first + k] = floatBitsToUint(result(base, k, pre, shift, inv));
    return;
  }
  // the row's words, the halves at either end that a neighbouring row shares by atomics
  uint end = first + p.n;
  for (uint w = (first >> 1) + gl_LocalInvocationID.x; p.n > 0u && w <= ((end - 1u) >> 1); w += WG) {
    uint e = w * 2u;
    bool has0 = e >= first, has1 = e + 1u < end;
    uint lo = has0 ? round16(result(base, e - first, pre, shift, inv), TYPE) : 0u;
    uint hi = has1 ? round16(result(base, e + 1u - first, pre, shift, inv), TYPE) : 0u;
    if (has0 && has1) y[w] = lo | (hi << 16);
    else if (has0) store_half(e, lo);
    else store_half(e + 1u, hi);
  }
}

void main() {
  uint r = linear_group();
  if (r >= p.rows) return;
  uint base = p.x_off + r * p.n;
  float nf = float(p.n);
  float mean = 0.0;
  if (p.rms == 0u) {
    float s = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) s += load_x(base + k);
    mean = wg_sum(s) / nf;
  }
  float q = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
    float d = load_x(base + k) - mean;
    q += d * d;
  }
  float var = wg_sum(q) / nf;  // rmsnorm: the mean square
  if (!(finite(mean) && finite(var) && var >= 7.8886090522101181e-31)) {  // 2^-100
    // Overflowed or underflowed (or a constant row, or inf / NaN input). The row's largest |x|, and
    // (layernorm) the sum of x 2^-64, for a mean that overflowed: the terms it loses are under 2^-62,
    // nothing beside a sum past FLT_MAX.
    float m = 0.0, s_lo = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
      float v = load_x(base + k);
      m = nan_max(m, abs(v));
      s_lo += v * 5.4210108624275222e-20;
    }
    m = wg_max(m);
    float total_lo = p.rms == 0u ? wg_sum(s_lo) : 0.0;
    if (finite(m) && m > 0.0) {  // else (zeros, inf, NaN) the plain result is the right one
      // s = 2^-e with m s in [0.5, 1): squares and their sums far from both ends of the range
      uint mant;
      int e;
      split_f32(floatBitsToUint(m), mant, e);
      int ks = clamp(-(e + 1), -126, 127);
      float s = pow2i(ks);
      float smean = p.rms != 0u ? 0.0 : finite(mean) ? mean * s : total_lo / nf * (s * 1.8446744073709552e19);
      float sq = 0.0;
      for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
        float d = load_x(base + k) * s - smean;
        sq += d * d;
      }
      float svar = wg_sum(sq) / nf;
      // (x s - mean s) / sqrt(var s^2 + eps s^2), eps s^2 = eps_m 2^(eps_e + 2 ks): past the f32 range
      // only where it dwarfs var s^2 <= 1 (a tiny row), then sqrt(eps) s alone; below it only where
      // var s^2 dwarfs it or both are 0 (a constant row, whose every x s - mean s is 0: 0 out).
      int e2k = p.eps_e + 2 * ks;
      float inv;
      if (e2k > 127) {
        inv = 1.0 / (p.sqrt_eps * s);
      } else {
        float d = svar + ldexp_f32(p.eps_m, max(e2k, -252));
        inv = d > 0.0 ? 1.0 / sqrt_f32(d) : 0.0;
      }
      write_row(base, r, s, smean, inv);
      return;  // uniform: every invocation took this branch
    }
  }
  write_row(base, r, 1.0, mean, 1.0 / sqrt(var + p.eps));
}
