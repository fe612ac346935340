// layernorm and rmsnorm over the last axis of contiguous rows, one workgroup per row; the mean is
// taken first and the variance around it (two passes: no cancellation for rows far from zero).
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
layout(set = 0, binding = 1) readonly buffer G { float g[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
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
} p;

void main() {
  uint r = linear_group();
  if (r >= p.rows) return;
  uint base = p.x_off + r * p.n;
  float mean = 0.0;
  if (p.rms == 0u) {
    float s = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) s += x[base + k];
    mean = wg_sum(s) / float(p.n);
  }
  float q = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
    float d = x[base + k] - mean;
    q += d * d;
  }
  float inv = 1.0 / sqrt(wg_sum(q) / float(p.n) + p.eps);
  for (uint k = gl_LocalInvocationID.x; k < p.n; k += WG) {
    float v = (x[base + k] - mean) * inv;
    if (p.has_gamma != 0u) v *= g[p.g_off + k];
    if (p.has_beta != 0u) v += b[p.b_off + k];
    y[r * p.n + k] = v;
  }
}
