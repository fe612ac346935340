// cast (and strided copy of 16-bit and i32 tensors) between f32, f16, bf16 and i32 over any input
// strides, bit-exact: round to nearest even, overflow to inf, NaN stays NaN, f16 subnormals kept;
// to i32 toward zero, saturating, NaN to 0; from i32 rounded to f32 first (to f16 and bf16 through
// it, as the op defines). All in integer arithmetic, so no denormal flushing of the device can
// change a result. A copy of 32-bit words (f32 to f32) moves them untouched. Each invocation writes
// two outputs, one whole 32-bit word of a 16-bit output.
//
// With SCATTER, the strides are the output's instead (a write into a view, trine::copy_into): a
// contiguous input of the output's dtype goes element by element to the view, from y_off; a 16-bit
// element by two atomics on its word (clear its half, then set it), so that the other half, which
// another invocation or nobody writes, is kept whatever order they run in.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// The dtypes (0 f32, 1 f16, 2 bf16, 3 i32) are specialization constants: each pipeline holds one
// conversion's code (llvmpipe runs every branch on a push constant for every element).
layout(constant_id = 1) const uint IN_TYPE = 0;
layout(constant_id = 2) const uint OUT_TYPE = 0;
layout(constant_id = 3) const uint SCATTER = 0;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint n;
  uint rank;
  uint x_off;
  uint dims[8];
  uint str[8];
  uint y_off;
} p;

// An i32 (its bits) as the nearest f32, ties to even.
uint i32_to_f32_bits(uint b) {
  if (b == 0u) return 0u;
  uint s = b & 0x80000000u;
  uint a = s != 0u ? ~b + 1u : b;  // |x| (2^31 for INT_MIN, still right as unsigned)
  int msb = findMSB(a);
  uint m = a << uint(23 - min(msb, 23));  // with its leading bit at bit 23 when it fits
  if (msb > 23) {
    uint sh = uint(msb - 23), rest = a & ((1u << sh) - 1u), half_ = 1u << (sh - 1u);
    m = a >> sh;
    if (rest > half_ || (rest == half_ && (m & 1u) != 0u)) m += 1u;  // 2^24 carries into the exponent
  }
  return s | ((uint(msb + 127) << 23) + (m - 0x800000u));
}

// An f32 (its bits) as an i32: toward zero, saturating at the i32 range, NaN to 0.
uint f32_bits_to_i32(uint b) {
  uint a = b & 0x7FFFFFFFu;
  bool neg = (b >> 31) != 0u;
  if (a > 0x7F800000u || a < 0x3F800000u) return 0u;       // NaN, |x| < 1
  if (a >= 0x4F000000u) return neg ? 0x80000000u : 0x7FFFFFFFu;  // |x| >= 2^31, inf
  uint e = (a >> 23) - 127u;                                // 0 .. 30
  uint m = (a & 0x7FFFFFu) | 0x800000u;
  uint v = e >= 23u ? m << (e - 23u) : m >> (23u - e);
  return neg ? ~v + 1u : v;
}

// The element offset of element i of the strided side, from `base`.
uint strided_at(uint i, uint base) {
  uint rem = i, at = base;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += (rem % p.dims[d]) * p.str[d];
    rem /= p.dims[d];
  }
  return at;
}

// Element i of the output, as f32 bits (through the strides).
uint load_bits(uint i) {
  uint at = strided_at(i, p.x_off);
  if (IN_TYPE == 0u) return x[at];
  if (IN_TYPE == 3u) return i32_to_f32_bits(x[at]);
  uint w = x[at >> 1];
  uint h = (at & 1u) != 0u ? (w >> 16) : (w & 0xFFFFu);
  return IN_TYPE == 1u ? f16_to_f32_bits(h) : (h << 16);
}

uint store_bits(uint f32bits) {
  if (OUT_TYPE == 1u) return f32_bits_to_f16(f32bits);
  if (OUT_TYPE == 2u) return f32_bits_to_bf16(f32bits);
  if (OUT_TYPE == 3u) return f32_bits_to_i32(f32bits);
  return f32bits;
}

// Element j of the contiguous input to its place in the view (IN_TYPE == OUT_TYPE).
void scatter_one(uint j) {
  uint at = strided_at(j, p.y_off);
  uint s = p.x_off + j;
  if (OUT_TYPE == 0u || OUT_TYPE == 3u) {
    y[at] = x[s];
    return;
  }
  uint h = (s & 1u) != 0u ? (x[s >> 1] >> 16) : (x[s >> 1] & 0xFFFFu);
  uint shift = (at & 1u) * 16u;
  atomicAnd(y[at >> 1], ~(0xFFFFu << shift));
  atomicOr(y[at >> 1], h << shift);
}

void main() {
  uint pair = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  uint i = pair * 2u;
  if (i >= p.n) return;
  if (SCATTER != 0u) {
    scatter_one(i);
    if (i + 1u < p.n) scatter_one(i + 1u);
    return;
  }
  bool two = i + 1u < p.n;
  uint v0 = store_bits(load_bits(i));
  uint v1 = two ? store_bits(load_bits(i + 1u)) : 0u;
  if (OUT_TYPE == 0u || OUT_TYPE == 3u) {  // 32-bit elements
    y[i] = v0;
    if (two) y[i + 1u] = v1;
  } else if (two) {
    y[pair] = v0 | (v1 << 16);
  } else {
    y[pair] = (y[pair] & 0xFFFF0000u) | v0;  // the last element of an odd count: keep the rest of the word
  }
}
