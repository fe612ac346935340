// gemv y = A x with A f16 or bf16 (TYPE 1: f16, 2: bf16) read in place as 32-bit words of two
// elements; x f32 or the same kinds (XTYPE 0: f32, 1, 2), y f32 or 16-bit (YTYPE likewise). Each
// value is widened to f32 exactly and the products summed in f32 as reduce.comp's op 3 sums them;
// a 16-bit y is rounded once, as cast rounds (issue 32: a decode's weights stay 16-bit, not cast
// into an f32 temporary on every call). One workgroup per row of A, or per two rows when y is
// 16-bit (the two halves of one word of y, which starts at a word). A row may start at either half
// of a word (an odd K, an odd offset): the words that hold it are read, the halves outside skipped.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TYPE = 1u;
layout(constant_id = 2) const uint XTYPE = 0u;
layout(constant_id = 3) const uint YTYPE = 0u;
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer X { uint x[]; };   // f32 bits, or 16-bit pairs
layout(set = 0, binding = 2) buffer Y { uint y[]; };  // likewise (read: an odd count's last word)
layout(push_constant) uniform Push {
  uint rows;
  uint k;      // A's columns, x's length
  uint a_off;  // in elements
  uint x_off;  // in elements
  uint y_off;  // in elements (even when y is 16-bit)
} p;

float load_x(uint j) {
  uint at = p.x_off + j;
  return element_of(XTYPE, x[word_of(XTYPE, at)], at);
}

// Row `row` of A times x, summed over the workgroup (every invocation returns it).
float row_dot(uint row) {
  uint first = p.a_off + row * p.k, end = first + p.k;  // the row's elements
  float acc = 0.0;
  if (p.k > 0u) {
    for (uint w = (first >> 1) + gl_LocalInvocationID.x; w <= ((end - 1u) >> 1); w += WG) {
      uint word = a[w];
      uint e = w * 2u;
      if (e >= first) acc += widen16(word, 0u, TYPE) * load_x(e - first);
      if (e + 1u < end) acc += widen16(word, 1u, TYPE) * load_x(e + 1u - first);
    }
  }
  return wg_sum(acc);
}

void main() {
  uint g = linear_group();
  if (YTYPE == 0u) {
    if (g >= p.rows) return;  // uniform per workgroup: no barrier is skipped by some only
    float r = row_dot(g);
    if (gl_LocalInvocationID.x == 0u) y[p.y_off + g] = floatBitsToUint(r);
    return;
  }
  uint row = g * 2u;
  if (row >= p.rows) return;
  uint lo = round16(row_dot(row), YTYPE);
  bool pair = row + 1u < p.rows;
  uint hi = pair ? round16(row_dot(row + 1u), YTYPE) : 0u;
  // the last word of an odd count keeps its other half
  if (gl_LocalInvocationID.x == 0u) {
    uint w = (p.y_off >> 1) + g;
    y[w] = pair ? (lo | (hi << 16)) : ((y[w] & 0xFFFF0000u) | lo);
  }
}
