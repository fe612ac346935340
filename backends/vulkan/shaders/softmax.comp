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
  float s = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) s += exp_nonpos(x[p.x_off + row + k * p.inner] - m);
  s = wg_sum(s);
  if (p.log_form != 0u) {
    float ls = log_f32(s);
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) y[row + k * p.inner] = (x[p.x_off + row + k * p.inner] - m) - ls;
  } else {
    float inv = 1.0 / s;
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) y[row + k * p.inner] = exp_nonpos(x[p.x_off + row + k * p.inner] - m) * inv;
  }
}
