// cast (and copy of 16-bit tensors) between f32, f16 and bf16 over any input strides, bit-exact:
// round to nearest even, overflow to inf, NaN stays NaN, f16 subnormals kept. All in integer
// arithmetic, so no denormal flushing of the device can change a result. Each invocation writes
// two outputs, one whole 32-bit word of a 16-bit output.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint n;
  uint rank;
  uint in_type;   // 0 f32, 1 f16, 2 bf16
  uint out_type;
  uint x_off;
  uint dims[8];
  uint str[8];
} p;

uint f32_bits_to_f16(uint b) {
  uint s = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return s | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);
  if (a >= 0x477FF000u) return s | 0x7C00u;  // rounds past 65504
  if (a < 0x38800000u) {                      // f16 subnormal (or zero): units of 2^-24
    float f = uintBitsToFloat(a) * 16777216.0;
    return s | uint(roundEven(f));
  }
  uint r = a - 0x38000000u;
  r += 0xFFFu + ((r >> 13) & 1u);
  return s | (r >> 13);
}

uint f32_bits_to_bf16(uint b) {
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return ((b >> 16) | 0x40u) & 0xFFFFu;
  return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
}

// Element i of the output, as f32 bits (through the strides).
uint load_bits(uint i) {
  uint rem = i, at = p.x_off;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += (rem % p.dims[d]) * p.str[d];
    rem /= p.dims[d];
  }
  if (p.in_type == 0u) return x[at];
  uint w = x[at >> 1];
  uint h = (at & 1u) != 0u ? (w >> 16) : (w & 0xFFFFu);
  return p.in_type == 1u ? f16_to_f32_bits(h) : (h << 16);
}

uint store_bits(uint f32bits) {
  if (p.out_type == 1u) return f32_bits_to_f16(f32bits);
  if (p.out_type == 2u) return f32_bits_to_bf16(f32bits);
  return f32bits;
}

void main() {
  uint pair = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  uint i = pair * 2u;
  if (i >= p.n) return;
  bool two = i + 1u < p.n;
  uint v0 = store_bits(load_bits(i));
  uint v1 = two ? store_bits(load_bits(i + 1u)) : 0u;
  if (p.out_type == 0u) {
    y[i] = v0;
    if (two) y[i + 1u] = v1;
  } else if (two) {
    y[pair] = v0 | (v1 << 16);
  } else {
    y[pair] = (y[pair] & 0xFFFF0000u) | v0;  // the last element of an odd count: keep the rest of the word
  }
}
