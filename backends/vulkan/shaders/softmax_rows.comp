// softmax and log_softmax as softmax.comp computes them (max, sum of exponentials, row), one
// invocation per row instead of one workgroup: no shared memory and no barriers. For many rows on
// software devices (lavapipe), where a barrier splits the shader into coroutines and the
// workgroup reductions cost more than the row itself (ops.cpp: rows_per_invocation).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

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
  uint o = linear_group() * 64u + gl_LocalInvocationID.x;
  if (o >= p.outer * p.inner) return;
  uint row = (o / p.inner) * p.n * p.inner + (o % p.inner);
  uint xr = p.x_off + row;
  float m = -1.0 / 0.0;
  for (uint k = 0u; k < p.n; ++k) m = nan_max(m, x[xr + k * p.inner]);
  // as softmax.comp: log_softmax's sum less the entries equal to the max, for ln(1 + t)
  float s = 0.0, s_lo = 0.0, c = 0.0;
  for (uint k = 0u; k < p.n; ++k) {
    float v = x[xr + k * p.inner], d = v - m;
    bool lead = p.log_form != 0u && d == 0.0;
    float e;
    two_sum(s, (p.log_form != 0u ? exp_f32(d) : exp_diff(v, m)) - (lead ? 1.0 : 0.0), s, e);
    s_lo += e;
    c += lead ? 1.0 : 0.0;
  }
  s += s_lo;
  if (p.log_form != 0u) {
    float ls = log1p_f32((c - 1.0) + s);
    for (uint k = 0u; k < p.n; ++k) y[row + k * p.inner] = (x[xr + k * p.inner] - m) - ls;
  } else {
    for (uint k = 0u; k < p.n; ++k) y[row + k * p.inner] = exp_diff(x[xr + k * p.inner], m) / s;
  }
}
