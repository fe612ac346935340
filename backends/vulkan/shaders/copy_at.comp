// A write at a position read on the device (trine::copy_into with a position tensor): the
// contiguous x (of y's dtype) into the view of y that starts pos * pos_stride elements past y_off,
// through the view's dims and strides, pos = pos_buf[p_off] read here. A pos outside [0, pos_max]
// writes nothing: invocation 0 leaves it in err[1] and 0 in err[0] (0xFFFFFFFF both, as the host
// set them, when the position is good: Recorder::report_words). One element per invocation; a
// 16-bit element by two atomics on its word (clear its half, then set it), so that the other half
// is kept whatever order the invocations run in.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HALF = 0;  // 1: 16-bit elements, two to a word

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };
layout(set = 0, binding = 2) readonly buffer P { int pos_buf[]; };
layout(set = 0, binding = 3) buffer E { uint err[]; };
layout(push_constant) uniform Push {
  uint n;
  uint rank;
  uint x_off;
  uint y_off;
  uint p_off;
  uint pos_stride;
  uint pos_max;
  uint dims[8];
  uint str[8];
} p;

void main() {
  uint i = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  int pos = pos_buf[p.p_off];
  if (pos < 0 || uint(pos) > p.pos_max) {
    if (i == 0u) {
      err[0] = 0u;
      err[1] = uint(pos);
    }
    return;
  }
  if (i >= p.n) return;
  uint rem = i, at = p.y_off + uint(pos) * p.pos_stride;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += (rem % p.dims[d]) * p.str[d];
    rem /= p.dims[d];
  }
  uint s = p.x_off + i;
  if (HALF == 0u) {
    y[at] = x[s];
    return;
  }
  uint h = (s & 1u) != 0u ? (x[s >> 1] >> 16) : (x[s >> 1] & 0xFFFFu);
  uint shift = (at & 1u) * 16u;
  atomicAnd(y[at >> 1], ~(0xFFFFu << shift));
  atomicOr(y[at >> 1], h << shift);
}
