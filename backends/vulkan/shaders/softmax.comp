// softmax and log_softmax over the middle axis of a contiguous [outer, n, inner] view, one
// workgroup per row: the max first (so 1e30 is exact), then the sum of exponentials, then the row.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef TRINE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint outer;
  uint n;
  uint inner;
  uint x_off;
  uint log_form;
} p;

void main() {
  uint o = linear_group();
  if (o >= p.outer * p.inner) return;
  uint row = (o / p.inner) * p.n * p.inner + (o % p.inner);
  float m = -1.0 / 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) m = nan_max(m, x[p.x_off + row + k * p.inner]);
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
    float v = x[p.x_off + row + k * p.inner], d = v - m;
    bool lead = p.log_form != 0u && d == 0.0;
    float e;
    two_sum(s, (p.log_form != 0u ? exp_f32(d) : exp_diff(v, m)) - (lead ? 1.0 : 0.0), s, e);
    s_lo += e;
    c += lead ? 1.0 : 0.0;
  }
  s = wg_sum(s) + wg_sum(s_lo);
  if (p.log_form != 0u) {
    float ls = log1p_f32((wg_sum(c) - 1.0) + s);
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) y[row + k * p.inner] = (x[p.x_off + row + k * p.inner] - m) - ls;
  } else {
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) y[row + k * p.inner] = exp_diff(x[p.x_off + row + k * p.inner], m) / s;
  }
}
