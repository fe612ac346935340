// gather: y[r, :] = table[indices[r], :] for a table [V, D] of 32- or 16-bit elements over any
// strides, indices i32 over any stride, y contiguous. An index outside [0, V) is never read through:
// its row of y is written with zeros and its position goes into err[0] by atomicMin, so err[0] ends
// as the lowest bad position (0xFFFFFFFF, as the host set it, when none: Recorder::report_words).
// MODE 1, one invocation dispatched after the gather, copies that position's index into err[1]:
// the host's error names both.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;
layout(constant_id = 2) const uint MODE = 0;  // 0 gather, 1 report the first bad position's index

layout(set = 0, binding = 0) readonly buffer T { uint t[]; };
layout(set = 0, binding = 1) readonly buffer I { int ind[]; };
layout(set = 0, binding = 2) buffer Y { uint y[]; };
layout(set = 0, binding = 3) buffer E { uint err[]; };
layout(push_constant) uniform Push {
  uint n;      // rows of y (indices)
  uint d;      // columns
  uint v;      // rows of the table
  uint t_off;  // the table's offset and strides, in elements
  uint t_rs;
  uint t_cs;
  uint i_off;  // the indices' offset and stride
  uint i_str;
  uint half_;  // 1: 16-bit elements, two to a word of y
} p;

// Row r's index, or -1 after reporting it when it is outside the table.
int row_index(uint r) {
  int at = ind[p.i_off + r * p.i_str];
  if (at < 0 || uint(at) >= p.v) {
    atomicMin(err[0], r);
    return -1;
  }
  return at;
}

// Element e of y (row-major) as bits, 0 in a bad row.
uint element(uint e) {
  uint r = e / p.d, c = e % p.d;
  int at = row_index(r);
  if (at < 0) return 0u;
  uint src = p.t_off + uint(at) * p.t_rs + c * p.t_cs;
  if (p.half_ == 0u) return t[src];
  uint w = t[src >> 1];
  return (src & 1u) != 0u ? (w >> 16) : (w & 0xFFFFu);
}

void main() {
  if (MODE == 1u) {
    if (err[0] != 0xFFFFFFFFu) err[1] = uint(ind[p.i_off + err[0] * p.i_str]);
    return;
  }
  uint total = p.n * p.d;
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    uint w = base + k * gl_WorkGroupSize.x;  // a word of y
    if (p.d == 0u) {  // no columns to copy; the indices are still checked
      if (w < p.n) row_index(w);
      continue;
    }
    if (p.half_ == 0u) {
      if (w < total) y[w] = element(w);
      continue;
    }
    uint e = 2u * w;
    if (e >= total) continue;
    uint lo = element(e);
    // the last element of an odd count: keep the rest of the word
    uint hi = e + 1u < total ? element(e + 1u) : y[w] >> 16;
    y[w] = lo | (hi << 16);
  }
}
