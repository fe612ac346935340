// where(cond, a, b) over any strides, numpy broadcasting of all three as stride 0: y = a where cond
// is nonzero, else b. Up to 6 dims: the host merges the dims it can and runs the rest as several
// dispatches (kernels/binary.cpp), as 8 dims with three strides each would not fit the push
// constants. Every value moves as bits: cond (f32 or i32) is nonzero under c_mask (0x7FFFFFFF for
// f32, so -0 is zero and NaN is not; every bit for i32), and a and b are copied untouched.
// TYPE 1: a, b and y f16 or bf16, their 16-bit halves moved untouched, each invocation writing
// whole words of y (the dispatch's first or last word, which the one before or after shares, keeps
// that dispatch's half: dispatches on one output run one after the other). CTYPE 1: cond f16 or
// bf16, nonzero under 0x7FFF (-0 is zero, NaN is not).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;
layout(constant_id = 2) const uint TYPE = 0u;   // 0: a, b and y 32-bit; 1: 16-bit
layout(constant_id = 3) const uint CTYPE = 0u;  // 0: cond 32-bit (under c_mask); 1: 16-bit

layout(set = 0, binding = 0) readonly buffer C { uint c[]; };
layout(set = 0, binding = 1) readonly buffer A { uint a[]; };
layout(set = 0, binding = 2) readonly buffer B { uint b[]; };
layout(set = 0, binding = 3) buffer Y { uint y[]; };  // 16-bit: read too, for the halves kept
layout(push_constant) uniform Push {
  uint n;
  uint rank;
  uint c_mask;
  uint c_off;
  uint a_off;
  uint b_off;
  uint y_off;
  uint dims[6];
  uint c_str[6];
  uint a_str[6];
  uint b_str[6];
} p;

// Element i of this dispatch's output, as bits (32, or 16 in the low half).
uint pick(uint i) {
  uint rem = i, ci = p.c_off, ai = p.a_off, bi = p.b_off;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint q = rem % p.dims[d];
    rem /= p.dims[d];
    ci += q * p.c_str[d];
    ai += q * p.a_str[d];
    bi += q * p.b_str[d];
  }
  bool nonzero = CTYPE == 0u ? (c[ci] & p.c_mask) != 0u : ((c[ci >> 1] >> ((ci & 1u) * 16u)) & 0x7FFFu) != 0u;
  if (TYPE == 0u) return nonzero ? a[ai] : b[bi];
  return nonzero ? (a[ai >> 1] >> ((ai & 1u) * 16u)) & 0xFFFFu : (b[bi >> 1] >> ((bi & 1u) * 16u)) & 0xFFFFu;
}

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    if (TYPE == 0u) {
      uint i = base + k * gl_WorkGroupSize.x;
      if (i >= p.n) return;
      y[p.y_off + i] = pick(i);
    } else {
      // word w of y holds elements 2w and 2w + 1, those of them in [y_off, y_off + n) this dispatch's
      uint w = (p.y_off >> 1) + base + k * gl_WorkGroupSize.x, e = w * 2u;
      uint end = p.y_off + p.n;
      if (e >= end) return;
      bool has0 = e >= p.y_off, has1 = e + 1u < end;
      uint lo = has0 ? pick(e - p.y_off) : y[w] & 0xFFFFu;
      uint hi = has1 ? pick(e + 1u - p.y_off) : y[w] >> 16;
      y[w] = lo | (hi << 16);
    }
  }
}
