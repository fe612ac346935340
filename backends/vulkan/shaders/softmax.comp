// softmax and log_softmax over the middle axis of a contiguous [outer, n, inner] view, one
// workgroup per row: the max first (so 1e30 is exact), then the sum of exponentials, then the row.
// TYPE 1 or 2 (f16, bf16): x and y of that dtype, read and written as 32-bit words of two elements
// (x from any element, a view's offset), each value widened exactly, the max and sums in f32 as
// for f32, and each result rounded once as cast rounds. A row's whole words are stored as such; the
// halves it shares with a neighbouring row (its first and last words, or every element when inner
// > 1) by atomics (store16.glsl), since another workgroup writes the other half.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef TRINE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TYPE = 0u;  // 0 f32, 1 f16, 2 bf16: x and y
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };  // atomics on 16-bit halves
#include "store16.glsl"
layout(push_constant) uniform Push {
  uint outer;
  uint n;
  uint inner;
  uint x_off;
  uint log_form;
} p;

float load_x(uint at) { return element_of(TYPE, x[word_of(TYPE, at)], at); }

// The result at x's element `at`, from the row's max m, its sum s and (log_softmax) ln of it, ls.
float result(uint at, float m, float s, float ls) {
  float v = load_x(at);
  return p.log_form != 0u ? (v - m) - ls : exp_diff(v, m) / s;
}

void main() {
  uint o = linear_group();
  if (o >= p.outer * p.inner) return;
  uint row = (o / p.inner) * p.n * p.inner + (o % p.inner);
  uint xr = p.x_off + row;
  float m = -1.0 / 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) m = nan_max(m, load_x(xr + k * p.inner));
  m = wg_max(m);
  // log_softmax sums the row less its leading ones: ln(c + t) = ln(1 + (c - 1 + t)) for the c
  // entries equal to the max (e^0 = 1, less 1 exactly 0) and the rest's t, so that ln(1 + t) keeps
  // its accuracy where t is tiny (log1p_f32). Its terms keep their subnormal values (exp_f32): t may
  // be normal (1.8e-35 for [0, -80, -87, -90]) with a part below 2^-126 (e^-90 = 8e-40 is 380 ulps
  // of it). inf - inf is NaN either way: a row with +inf stays NaN.
  // The sum as a pair (s + s_lo) by TwoSum, its lost low parts kept, and softmax's row divided by
  // it (one rounding, not the two of a reciprocal and a product): 4.42 -> 3.42 ulps on lavapipe
  // (tests/numerics_tests.cpp, [issue31]).
  float s = 0.0, s_lo = 0.0, c = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
    float v = load_x(xr + k * p.inner), d = v - m;
    bool lead = p.log_form != 0u && d == 0.0;
    float e;
    two_sum(s, (p.log_form != 0u ? exp_f32(d) : exp_diff(v, m)) - (lead ? 1.0 : 0.0), s, e);
    s_lo += e;
    c += lead ? 1.0 : 0.0;
  }
  s = wg_sum(s) + wg_sum(s_lo);
  float ls = 0.0;
  if (p.log_form != 0u) ls = log1p_f32((wg_sum(c) - 1.0) + s);
  if (TYPE == 0u) {
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG)
      y[row + k * p.inner] = floatBitsToUint(result(xr + k * p.inner, m, s, ls));
  } else if (p.inner == 1u) {
    // the row's words, the halves at either end that another row shares by atomics
    uint end = row + p.n;
    for (uint w = (row >> 1) + gl_LocalInvocationID.x; p.n > 0u && w <= ((end - 1u) >> 1); w += WG) {
      uint e = w * 2u;
      bool has0 = e >= row, has1 = e + 1u < end;
      uint lo = has0 ? round16(result(xr + (e - row), m, s, ls), TYPE) : 0u;
      uint hi = has1 ? round16(result(xr + (e + 1u - row), m, s, ls), TYPE) : 0u;
      if (has0 && has1) y[w] = lo | (hi << 16);
      else if (has0) store_half(e, lo);
      else store_half(e + 1u, hi);
    }
  } else {
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG)
      store_half(row + k * p.inner, round16(result(xr + k * p.inner, m, s, ls), TYPE));
  }
}
