// softmax and log_softmax as softmax.comp computes them (max, sum of exponentials, row), one
// invocation per row instead of one workgroup: no shared memory and no barriers. For many rows on
// software devices (lavapipe), where a barrier splits the shader into coroutines and the
// workgroup reductions cost more than the row itself (ops.cpp: rows_per_invocation). TYPE 1 or 2:
// x and y f16 or bf16, as softmax.comp reads and writes them (a row's shared halves by atomics).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint TYPE = 0u;  // 0 f32, 1 f16, 2 bf16: x and y

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

float result(uint at, float m, float s, float ls) {
  float v = load_x(at);
  return p.log_form != 0u ? (v - m) - ls : exp_diff(v, m) / s;
}

void main() {
  uint o = linear_group() * 64u + gl_LocalInvocationID.x;
  if (o >= p.outer * p.inner) return;
  uint row = (o / p.inner) * p.n * p.inner + (o % p.inner);
  uint xr = p.x_off + row;
  float m = -1.0 / 0.0;
  for (uint k = 0u; k < p.n; ++k) m = nan_max(m, load_x(xr + k * p.inner));
  // as softmax.comp: log_softmax's sum less the entries equal to the max, for ln(1 + t)
  float s = 0.0, s_lo = 0.0, c = 0.0;
  for (uint k = 0u; k < p.n; ++k) {
    float v = load_x(xr + k * p.inner), d = v - m;
    bool lead = p.log_form != 0u && d == 0.0;
    float e;
    two_sum(s, (p.log_form != 0u ? exp_f32(d) : exp_diff(v, m)) - (lead ? 1.0 : 0.0), s, e);
    s_lo += e;
    c += lead ? 1.0 : 0.0;
  }
  s += s_lo;
  float ls = p.log_form != 0u ? log1p_f32((c - 1.0) + s) : 0.0;
  if (TYPE == 0u) {
    for (uint k = 0u; k < p.n; ++k) y[row + k * p.inner] = floatBitsToUint(result(xr + k * p.inner, m, s, ls));
  } else if (p.inner == 1u) {
    // the row's words, the halves at either end that a neighbouring row shares by atomics
    uint end = row + p.n;
    for (uint w = row >> 1; p.n > 0u && w <= ((end - 1u) >> 1); ++w) {
      uint e = w * 2u;
      bool has0 = e >= row, has1 = e + 1u < end;
      uint lo = has0 ? round16(result(xr + (e - row), m, s, ls), TYPE) : 0u;
      uint hi = has1 ? round16(result(xr + (e + 1u - row), m, s, ls), TYPE) : 0u;
      if (has0 && has1) y[w] = lo | (hi << 16);
      else if (has0) store_half(e, lo);
      else store_half(e + 1u, hi);
    }
  } else {
    for (uint k = 0u; k < p.n; ++k) store_half(row + k * p.inner, round16(result(xr + k * p.inner, m, s, ls), TYPE));
  }
}
