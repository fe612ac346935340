// where(cond, a, b) over any strides, numpy broadcasting of all three as stride 0: y = a where cond
// is nonzero, else b. Up to 6 dims: the host merges the dims it can and runs the rest as several
// dispatches (kernels/binary.cpp), as 8 dims with three strides each would not fit the push
// constants. Every value moves as bits: cond (f32 or i32) is nonzero under c_mask (0x7FFFFFFF for
// f32, so -0 is zero and NaN is not; every bit for i32), and a and b are copied untouched.
// TYPE 1: a, b and y f16 or bf16, their 16-bit halves moved untouched, each invocation writing
// whole words of y, the second element one innermost step on from the first where it can (one walk
// of the dims for the pair: the divisions are most of the cost on lavapipe); the dispatch's first or
// last word, which the one before or after shares, keeps that dispatch's half (dispatches on one
// output run one after the other). CTYPE 1: cond f16 or bf16, nonzero under 0x7FFF (-0 is zero, NaN
// is not).
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

// Where element i of this dispatch's output reads cond, a and b, and its place along the innermost
// dim (rank 0: one element, at the offsets).
void walk(uint i, out uint ci, out uint ai, out uint bi, out uint inner) {
  uint rem = i;
  ci = p.c_off;
  ai = p.a_off;
  bi = p.b_off;
  inner = 0u;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint q = rem % p.dims[d];
    rem /= p.dims[d];
    if (d == int(p.rank) - 1) inner = q;
    ci += q * p.c_str[d];
    ai += q * p.a_str[d];
    bi += q * p.b_str[d];
  }
}

bool nonzero(uint ci) {
  return CTYPE == 0u ? (c[ci] & p.c_mask) != 0u : ((c[ci >> 1] >> ((ci & 1u) * 16u)) & 0x7FFFu) != 0u;
}
uint half_of(uint word, uint at) { return (word >> ((at & 1u) * 16u)) & 0xFFFFu; }
// The 16-bit bits of a or b at ai or bi, by the cond at ci.
uint pick16(uint ci, uint ai, uint bi) { return nonzero(ci) ? half_of(a[ai >> 1], ai) : half_of(b[bi >> 1], bi); }

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    if (TYPE == 0u) {
      uint i = base + k * gl_WorkGroupSize.x;
      if (i >= p.n) return;
      uint ci, ai, bi, q;
      walk(i, ci, ai, bi, q);
      y[p.y_off + i] = nonzero(ci) ? a[ai] : b[bi];
      continue;
    }
    // word w of y holds elements 2w and 2w + 1, those of them in [y_off, y_off + n) this dispatch's
    uint w = (p.y_off >> 1) + base + k * gl_WorkGroupSize.x, e = w * 2u;
    uint end = p.y_off + p.n;
    if (e >= end) return;
    if (e < p.y_off || e + 1u >= end) {  // the dispatch's first or last word: one element of it
      bool first = e < p.y_off;
      uint ci, ai, bi, q;
      walk(first ? 0u : e - p.y_off, ci, ai, bi, q);
      uint h = pick16(ci, ai, bi), old = y[w];
      y[w] = first ? (old & 0xFFFFu) | (h << 16) : (old & 0xFFFF0000u) | h;
      continue;
    }
    // both: the second one innermost step on from the first, unless the first ends its row
    uint i = e - p.y_off, ci, ai, bi, q;
    walk(i, ci, ai, bi, q);
    uint lo = pick16(ci, ai, bi);
    if (p.rank > 0u && q + 1u < p.dims[p.rank - 1u]) {
      ci += p.c_str[p.rank - 1u];
      ai += p.a_str[p.rank - 1u];
      bi += p.b_str[p.rank - 1u];
    } else {
      walk(i + 1u, ci, ai, bi, q);
    }
    y[w] = lo | (pick16(ci, ai, bi) << 16);
  }
}
