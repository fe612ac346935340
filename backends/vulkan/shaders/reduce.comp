// Reductions over the middle axis of a contiguous [outer, n, inner] view, one workgroup per output
// and chunk of the axis: sum, max, and the sum of products with a vector indexed along the axis
// (dot, gemv), times `scale` (1/n for mean). Long axes are cut into chunks, reduced again by a
// second dispatch, so no invocation loops past the driver's budget (see DeviceCaps::loop_budget).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef TRINE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0;  // 0 sum, 2 max, 3 sum of x * v[k]: one pipeline each
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer V { float v[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint outer;
  uint n;
  uint inner;
  uint x_off;
  uint v_off;
  uint pad;
  uint y_off;
  uint chunks;     // per output
  uint chunk_len;  // elements of the axis per chunk
  float scale;
} p;

void main() {
  uint g = linear_group();
  uint o = g / p.chunks, c = g % p.chunks;
  if (o >= p.outer * p.inner) return;  // uniform per workgroup: no barrier is skipped by some only
  uint base = p.x_off + (o / p.inner) * p.n * p.inner + (o % p.inner);
  float acc = OP == 2u ? -1.0 / 0.0 : 0.0;
  uint end = min(p.n, (c + 1u) * p.chunk_len);
  for (uint k = c * p.chunk_len + gl_LocalInvocationID.x; k < end; k += WG) {
    float e = x[base + k * p.inner];
    if (OP == 2u) acc = nan_max(acc, e);
    else if (OP == 3u) acc += e * v[p.v_off + k];
    else acc += e;
  }
  float r = OP == 2u ? wg_max(acc) : wg_sum(acc);
  if (gl_LocalInvocationID.x == 0u) y[p.y_off + g] = r * p.scale;
}
