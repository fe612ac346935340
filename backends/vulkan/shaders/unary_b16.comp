// The activations and scale of unary.comp on f16 or bf16 tensors, x and y of one dtype (TYPE 1:
// f16, 2: bf16), read and written as 32-bit words of two elements: each value widened to f32
// exactly, computed as unary.comp computes it, and rounded once as cast rounds. Each invocation
// writes ELEMS whole words of y, a workgroup's stride apart; x may start at any element (a view's
// offset), y starts at a word. The last word of an odd count keeps its other half.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;
layout(constant_id = 2) const uint ACT = OP_copy;  // activate()'s code
layout(constant_id = 3) const uint TYPE = 1u;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint n;      // elements to write
  uint x_off;  // in elements
  uint y_off;  // in words
  float alpha;
  float beta;
} p;

float load_x(uint i) {
  uint at = p.x_off + i;
  return widen16(x[at >> 1], at & 1u, TYPE);
}

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    uint w = base + k * gl_WorkGroupSize.x;  // the word of y this step writes
    uint i = w * 2u;
    if (i >= p.n) break;
    // an even offset reads the pair as one word; an odd one, from two
    uint wx = (p.x_off & 1u) == 0u ? x[(p.x_off >> 1) + w] : 0u;
    float x0 = (p.x_off & 1u) == 0u ? widen16(wx, 0u, TYPE) : load_x(i);
    uint lo = round16(activate(ACT, x0, p.alpha, p.beta), TYPE);
    if (i + 1u < p.n) {
      float x1 = (p.x_off & 1u) == 0u ? widen16(wx, 1u, TYPE) : load_x(i + 1u);
      uint hi = round16(activate(ACT, x1, p.alpha, p.beta), TYPE);
      y[p.y_off + w] = lo | (hi << 16);
    } else {
      y[p.y_off + w] = (y[p.y_off + w] & 0xFFFF0000u) | lo;
    }
  }
}
