// Element-wise over any strides (rank <= 8): y = act(a op b) with numpy broadcasting as stride 0
// (add ... div, minimum, maximum, and bias_act), or y = act(a) (OP_copy) for strided unary ops and the
// contiguous copy of a strided view. Built a second time as binary_b16 (TRINE_B16): a, b and y f16 or
// bf16 (TYPE 1 or 2), read and written as 32-bit words of two elements, each value widened exactly
// and the result rounded once as cast rounds; each invocation then writes ELEMS whole words of y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;
// The operation and activation are specialization constants, so each pipeline holds only its own
// code (llvmpipe evaluates every case of a switch on a push constant).
layout(constant_id = 2) const uint OP = OP_copy;  // OP_add ... OP_div, OP_minimum, OP_maximum, or OP_copy: a alone
layout(constant_id = 3) const uint ACT = OP_copy;  // activate()'s code

#ifdef TRINE_B16
layout(constant_id = 4) const uint TYPE = 1u;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(set = 0, binding = 2) buffer Y { uint y[]; };  // read too: the last word of an odd count
float load_a(uint i) { return widen16(a[i >> 1], i & 1u, TYPE); }
float load_b(uint i) { return widen16(b[i >> 1], i & 1u, TYPE); }
#else
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
float load_a(uint i) { return a[i]; }
float load_b(uint i) { return b[i]; }
#endif
layout(push_constant) uniform Push {
  uint n;
  uint rank;
  uint pad0;
  uint pad1;
  float alpha;
  float beta;
  uint a_off;
  uint b_off;
  uint dims[8];
  uint a_str[8];
  uint b_str[8];
} p;

// Element i of the output.
float value(uint i) {
  uint rem = i, ai = p.a_off, bi = p.b_off;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint c = rem % p.dims[d];
    rem /= p.dims[d];
    ai += c * p.a_str[d];
    bi += c * p.b_str[d];
  }
  float va = load_a(ai);
  float v;
  switch (OP) {
    case OP_add: v = va + load_b(bi); break;
    case OP_sub: v = va - load_b(bi); break;
    case OP_mul: v = va * load_b(bi); break;
    case OP_div: v = va / load_b(bi); break;
    // NaN from either side (GLSL's min and max may return either operand); otherwise the first
    // operand unless the second is strictly beyond it, as std::min and std::max choose
    case OP_minimum: {
      float vb = load_b(bi);
      v = isnan(va) || isnan(vb) ? va + vb : (vb < va ? vb : va);
      break;
    }
    case OP_maximum: {
      float vb = load_b(bi);
      v = isnan(va) || isnan(vb) ? va + vb : (va < vb ? vb : va);
      break;
    }
    default: v = va; break;  // OP_copy
  }
  return activate(ACT, v, p.alpha, p.beta);
}

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
#ifdef TRINE_B16
    uint w = base + k * gl_WorkGroupSize.x;  // the word of y this step writes
    uint i = w * 2u;
    if (i >= p.n) return;
    uint lo = round16(value(i), TYPE);
    if (i + 1u < p.n) {
      y[w] = lo | (round16(value(i + 1u), TYPE) << 16);
    } else {
      y[w] = (y[w] & 0xFFFF0000u) | lo;
    }
#else
    uint i = base + k * gl_WorkGroupSize.x;
    if (i >= p.n) return;
    y[i] = value(i);
#endif
  }
}
