// Reductions over the middle axis of a contiguous [outer, n, inner] view, one workgroup per output
// and chunk of the axis: sum, max, and the sum of products with a vector indexed along the axis
// (dot, gemv), times `scale` (1/n for mean), and argmax, which carries each candidate's index
// (arg_better's order). Long axes are cut into chunks, reduced again by a second dispatch, so no
// invocation loops past the driver's budget (see DeviceCaps::loop_budget); argmax's chunks leave
// a value and an index each (the indices after all the values), which the second dispatch reduces
// as pairs. XTYPE 1 or 2: x f16 or bf16, read as 32-bit words of two elements (from any element),
// each value widened exactly and reduced in f32; YTYPE 1 or 2: y f16 or bf16, the result (times
// scale) rounded once as cast rounds and stored into its half of a word by atomics (store16.glsl:
// the neighbouring output is another workgroup's). Partial results and argmax's indices are 32-bit.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef TRINE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
// 0 sum, 2 max, 3 sum of x * v[k], 4 argmax, 5 argmax of pairs (x the values, v their indices at
// the same places from v_off): one pipeline each
layout(constant_id = 1) const uint OP = 0;
layout(constant_id = 2) const uint XTYPE = 0u;  // 0 f32, 1 f16, 2 bf16
layout(constant_id = 3) const uint YTYPE = 0u;  // 0 32-bit (f32, argmax's i32), 1 f16, 2 bf16
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer V { uint v[]; };  // floats or indices, as bits
layout(set = 0, binding = 2) buffer Y { uint y[]; };  // floats or indices (argmax), as bits; or 16-bit halves
#include "store16.glsl"
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

float load_x(uint at) { return element_of(XTYPE, x[word_of(XTYPE, at)], at); }

void main() {
  uint g = linear_group();
  uint o = g / p.chunks, c = g % p.chunks;
  if (o >= p.outer * p.inner) return;  // uniform per workgroup: no barrier is skipped by some only
  uint base = p.x_off + (o / p.inner) * p.n * p.inner + (o % p.inner);
  uint end = min(p.n, (c + 1u) * p.chunk_len);
  if (OP == 4u || OP == 5u) {
    float best = -1.0 / 0.0;
    uint at = 0xFFFFFFFFu;  // loses to any element, -inf included
    for (uint k = c * p.chunk_len + gl_LocalInvocationID.x; k < end; k += WG) {
      uint xi = base + k * p.inner;
      float e = load_x(xi);
      uint i = OP == 5u ? v[p.v_off + xi - p.x_off] : k;
      if (arg_better(e, i, best, at)) {
        best = e;
        at = i;
      }
    }
    wg_argmax(best, at);
    if (gl_LocalInvocationID.x == 0u) {
      if (OP == 4u && p.chunks > 1u) {  // a chunk's pair, for the second dispatch
        y[p.y_off + g] = floatBitsToUint(best);
        y[p.y_off + p.outer * p.inner * p.chunks + g] = at;
      } else {
        y[p.y_off + g] = at;
      }
    }
    return;
  }
  float acc = OP == 2u ? -1.0 / 0.0 : 0.0;
  for (uint k = c * p.chunk_len + gl_LocalInvocationID.x; k < end; k += WG) {
    float e = load_x(base + k * p.inner);
    if (OP == 2u) acc = nan_max(acc, e);
    else if (OP == 3u) acc += e * uintBitsToFloat(v[p.v_off + k]);
    else acc += e;
  }
  float r = OP == 2u ? wg_max(acc) : wg_sum(acc);
  if (gl_LocalInvocationID.x == 0u) {
    if (YTYPE == 0u) y[p.y_off + g] = floatBitsToUint(r * p.scale);
    else store_half(p.y_off + g, round16(r * p.scale, YTYPE));
  }
}
