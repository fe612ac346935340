// concat, one dispatch per input: the input (32- or 16-bit elements, any strides) into its slab of
// the output, which the host views as [outer, row]: the input's row o (slab elements, row-major)
// goes to y[o * row + at ...]. 32-bit elements: ELEMS per invocation. 16-bit: an invocation per word
// of y that a row of the slab touches; a half that belongs to a neighbouring input's slab is kept
// as it is. No two invocations of a dispatch write one word: two rows of one input are at least an
// element apart (the host merges the rows of an input that fills the whole output into one), and
// the inputs' dispatches are ordered by the barriers between them.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint n;      // the input's elements
  uint rank;
  uint x_off;
  uint half_;  // 1: 16-bit elements
  uint slab;   // elements of one row of the input's slab
  uint row;    // elements of one row of the output
  uint at;     // where the slab starts in a row of the output
  uint pad;
  uint dims[8];
  uint str[8];
} p;

// Element i of the input (row-major) as bits.
uint load(uint i) {
  uint rem = i, src = p.x_off;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    src += (rem % p.dims[d]) * p.str[d];
    rem /= p.dims[d];
  }
  if (p.half_ == 0u) return x[src];
  uint w = x[src >> 1];
  return (src & 1u) != 0u ? (w >> 16) : (w & 0xFFFFu);
}

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  uint words_per_row = p.slab / 2u + 1u;  // the most words a row of 16-bit elements touches
  for (uint k = 0u; k < ELEMS; ++k) {
    uint j = base + k * gl_WorkGroupSize.x;
    if (p.half_ == 0u) {
      if (j >= p.n) return;
      y[(j / p.slab) * p.row + p.at + j % p.slab] = load(j);
      continue;
    }
    uint o = j / words_per_row;
    if (o >= p.n / p.slab) return;
    uint s = o * p.row + p.at;  // the row's first element in y
    uint w = s / 2u + j % words_per_row;
    uint lo = 2u * w, hi = lo + 1u;
    bool has_lo = lo >= s && lo < s + p.slab, has_hi = hi >= s && hi < s + p.slab;
    if (!has_lo && !has_hi) continue;
    uint keep = has_lo && has_hi ? 0u : y[w];
    uint vlo = has_lo ? load(o * p.slab + lo - s) : keep & 0xFFFFu;
    uint vhi = has_hi ? load(o * p.slab + hi - s) : keep >> 16;
    y[w] = vlo | (vhi << 16);
  }
}
