// reduce.comp's reductions (sum, max, sum of x * v[k], argmax) with one invocation per output instead of
// one workgroup: no shared memory and no barriers. For software devices (lavapipe), where a
// barrier splits the shader into coroutines and the workgroup tree costs more than the row, and
// where neighbouring invocations walking their own rows read memory a CPU caches well. Four
// accumulators over k mod 4 keep the sum's rounding error growing with n / 4, not n. XTYPE and
// YTYPE: x and y f16 or bf16 as reduce.comp reads and writes them (y's halves by atomics: the
// neighbouring output is another invocation's).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint OP = 0;  // 0 sum, 2 max, 3 sum of x * v[k], 4 argmax
layout(constant_id = 1) const uint XTYPE = 0u;  // 0 f32, 1 f16, 2 bf16
layout(constant_id = 2) const uint YTYPE = 0u;  // 0 32-bit (f32, argmax's i32), 1 f16, 2 bf16

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer V { float v[]; };
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
  uint chunks;     // 1
  uint chunk_len;  // n
  float scale;
} p;

float load_x(uint at) { return element_of(XTYPE, x[word_of(XTYPE, at)], at); }

float combine(float acc, float e, uint k) {
  if (OP == 2u) return nan_max(acc, e);
  if (OP == 3u) return acc + e * v[p.v_off + k];
  return acc + e;
}

void main() {
  uint o = linear_group() * 64u + gl_LocalInvocationID.x;
  if (o >= p.outer * p.inner) return;
  uint base = p.x_off + (o / p.inner) * p.n * p.inner + (o % p.inner);
  if (OP == 4u) {  // in order along the row: a later element wins only when strictly better
    float best = -1.0 / 0.0;
    uint at = 0xFFFFFFFFu;
    for (uint k = 0u; k < p.n; ++k) {
      float e = load_x(base + k * p.inner);
      if (arg_better(e, k, best, at)) {
        best = e;
        at = k;
      }
    }
    y[p.y_off + o] = at;
    return;
  }
  float id = OP == 2u ? -1.0 / 0.0 : 0.0;
  vec4 acc = vec4(id);
  uint n4 = p.n / 4u * 4u;
  for (uint k = 0u; k < n4; k += 4u) {
    acc.x = combine(acc.x, load_x(base + k * p.inner), k);
    acc.y = combine(acc.y, load_x(base + (k + 1u) * p.inner), k + 1u);
    acc.z = combine(acc.z, load_x(base + (k + 2u) * p.inner), k + 2u);
    acc.w = combine(acc.w, load_x(base + (k + 3u) * p.inner), k + 3u);
  }
  for (uint k = n4; k < p.n; ++k) acc.x = combine(acc.x, load_x(base + k * p.inner), k);
  float r = OP == 2u ? nan_max(nan_max(acc.x, acc.y), nan_max(acc.z, acc.w)) : (acc.x + acc.y) + (acc.z + acc.w);
  if (YTYPE == 0u) y[p.y_off + o] = floatBitsToUint(r * p.scale);
  else store_half(p.y_off + o, round16(r * p.scale, YTYPE));
}
