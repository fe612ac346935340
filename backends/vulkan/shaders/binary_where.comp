// where(cond, a, b) over any strides, numpy broadcasting of all three as stride 0: y = a where cond
// is nonzero, else b. Up to 6 dims: the host merges the dims it can and runs the rest as several
// dispatches (kernels/binary.cpp), as 8 dims with three strides each would not fit the push
// constants. Every value moves as bits: cond (f32 or i32) is nonzero under c_mask (0x7FFFFFFF for
// f32, so -0 is zero and NaN is not; every bit for i32), and a and b are copied untouched.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;

layout(set = 0, binding = 0) readonly buffer C { uint c[]; };
layout(set = 0, binding = 1) readonly buffer A { uint a[]; };
layout(set = 0, binding = 2) readonly buffer B { uint b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { uint y[]; };
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

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i >= p.n) return;
    uint rem = i, ci = p.c_off, ai = p.a_off, bi = p.b_off;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      uint q = rem % p.dims[d];
      rem /= p.dims[d];
      ci += q * p.c_str[d];
      ai += q * p.a_str[d];
      bi += q * p.b_str[d];
    }
    y[p.y_off + i] = (c[ci] & p.c_mask) != 0u ? a[ai] : b[bi];
  }
}
