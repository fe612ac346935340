// rope over contiguous [rows, D] (row r has position table row r % L): each invocation rotates one
// pair by the angle whose cos and sin the host computed in double (tab[l][i] = (cos, sin)), so long
// positions lose nothing to f32 argument reduction. Pair i is (x[step * i], x[step * i + partner]):
// (x[2i], x[2i+1]) interleaved, (x[i], x[i + D/2]) in halves.
// AT = 1: the position is pos_buf[p_off], read here when the dispatch runs (a batch replays the
// recording at each step's position), row r at pos_buf[p_off] + offset + r % L, and tab[i] holds
// pair i's frequency as hi + lo (the host's double to 48 bits). The angle is formed as a
// float-float and reduced by pi/2 (cos_sin_at); its sine and cosine are Taylor series on
// [-pi/4, pi/4] (as the cuda kernel's). Within 2^-40 or so of the angle below 2^24 radians, about
// 1e-5 radians at 2^32 (the frequency's 48 bits and the first reduction's residue).
// TYPE 1 or 2: x and y f16 or bf16, read and written as 32-bit words of two elements (x from any
// element), each value widened exactly and each result rounded once as cast rounds. Every
// invocation writes whole words of y, so none shares a word with another: interleaved, a pair is a
// word; in halves, two pairs (i, i + 1) and their words in both halves when D/2 is even, else one
// word, each of its elements from its own pair.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint AT = 0;
layout(constant_id = 2) const uint TYPE = 0u;  // 0 f32, 1 f16, 2 bf16: x and y
// 16-bit: 0 interleaved, 1 halves with D/2 even, 2 halves with D/2 odd (a constant: llvmpipe runs
// every side of a branch on a push constant)
layout(constant_id = 3) const uint FORM = 0u;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer T { vec2 tab[]; };
layout(set = 0, binding = 2) writeonly buffer Y { uint y[]; };
layout(set = 0, binding = 3) readonly buffer P { int pos_buf[]; };  // AT = 0: the table again, unread
layout(push_constant) uniform Push {
  uint pairs;  // rows * D / 2
  uint half_d;
  uint L;
  uint x_off;
  uint step;     // 2 interleaved, 1 halves
  uint partner;  // 1 interleaved, D/2 halves
  uint p_off;    // AT: the position's element
  int offset;    // AT: position_offset
} p;

// cos and sin of the angle (h + lo) (fh + fl): the position as two exact floats (h a multiple of
// 2^16), the frequency as hi + lo. The product is kept as a float-float a + e (Dekker's products,
// Knuth's sum), then reduced by pi/2 in two stages: n1 from a alone (past 2^24 a float n1 is a
// multiple of its ulp, which leaves up to a few hundred radians), n2 from what that leaves; each
// n C1 split exactly (two_prod) so a - p1 is exact (Sterbenz), C2 and C3 pi/2's next bits.
vec2 cos_sin_at(float h, float lo, float fh, float fl) {
  float a1, e1, a2, e2, a, e3;
  two_prod(h, fh, a1, e1);
  two_prod(lo, fh, a2, e2);
  two_sum(a1, a2, a, e3);
  precise float e = ((e1 + e2) + e3) + (h * fl + lo * fl);
  const float C1 = 1.5707963705062866, C2 = -4.371138828673793e-8, C3 = -1.7151245100058819e-15;
  float n1 = roundEven(a * 0.636619772367581343);
  float p1, q1;
  two_prod(n1, C1, p1, q1);
  precise float t = a - p1;
  precise float r1 = (((t - q1) + e) - n1 * C2) - n1 * C3;
  float n2 = roundEven(r1 * 0.636619772367581343);
  float p2, q2;
  two_prod(n2, C1, p2, q2);
  precise float u = r1 - p2;
  precise float r = (u - q2) - n2 * C2;
  float z = r * r;
  float sp = fma(z, 2.7557319224e-6, -1.9841269841e-4);
  sp = fma(z, sp, 8.3333333333e-3);
  sp = fma(z, sp, -1.6666666667e-1);
  sp = fma(r * z, sp, r);
  float cp = fma(z, -2.7557319224e-7, 2.4801587302e-5);
  cp = fma(z, cp, -1.3888888889e-3);
  cp = fma(z, cp, 4.1666666667e-2);
  cp = fma(z, cp, -0.5);
  cp = fma(z, cp, 1.0);
  // the quadrant (n1 + n2) mod 4, exactly (n1 / 4 and its floor are exact, and so is what is left)
  precise float q4 = n1 - 4.0 * floor(n1 * 0.25);
  uint q = uint(int(q4) + (int(n2) & 3)) & 3u;
  float s0 = (q & 1u) != 0u ? cp : sp, c0 = (q & 1u) != 0u ? sp : cp;
  return vec2(((q + 1u) & 2u) != 0u ? -c0 : c0, (q & 2u) != 0u ? -s0 : s0);
}

float load_x(uint at) { return element_of(TYPE, x[word_of(TYPE, at)], at); }

// Pair i of row `row` rotated: its two results (the first element's, the partner's).
vec2 rotate_pair(uint row, uint i) {
  vec2 cs;
  if (AT == 1u) {
    // position + offset + l, any int32 position (offset + l fits 32 bits: the host checks), as the
    // exact sum of two floats: the parts above bit 16 (multiples of 2^16, at most 2^32) and below
    int base = pos_buf[p.p_off], rest = p.offset + int(row % p.L);
    float h = float(base & ~0xFFFF) + float(rest & ~0xFFFF), lo = float(base & 0xFFFF) + float(rest & 0xFFFF);
    vec2 f = tab[i];
    cs = cos_sin_at(h, lo, f.x, f.y);
  } else {
    cs = tab[(row % p.L) * p.half_d + i];
  }
  uint at = row * p.half_d * 2u + p.step * i;
  float x0 = load_x(p.x_off + at), x1 = load_x(p.x_off + at + p.partner);
  return vec2(x0 * cs.x - x1 * cs.y, x0 * cs.y + x1 * cs.x);
}

// Element j of row `row` of y (16-bit, in halves with D/2 odd): its member of its pair.
uint element16(uint row, uint j) {
  bool second = j >= p.half_d;
  vec2 r = rotate_pair(row, second ? j - p.half_d : j);
  return round16(second ? r.y : r.x, TYPE);
}

void main() {
  uint idx = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (TYPE == 0u) {
    if (idx >= p.pairs) return;
    uint row = idx / p.half_d, i = idx % p.half_d;
    vec2 r = rotate_pair(row, i);
    uint at = row * p.half_d * 2u + p.step * i;
    y[at] = floatBitsToUint(r.x);
    y[at + p.partner] = floatBitsToUint(r.y);
  } else if (FORM == 0u) {  // interleaved: pair idx is word idx
    if (idx >= p.pairs) return;
    vec2 r = rotate_pair(idx / p.half_d, idx % p.half_d);
    y[idx] = round16(r.x, TYPE) | (round16(r.y, TYPE) << 16);
  } else if (FORM == 1u) {  // halves, D/2 even: pairs i and i + 1, a word in each half
    if (idx >= p.pairs / 2u) return;
    uint hw = p.half_d / 2u, row = idx / hw, i = (idx % hw) * 2u;
    vec2 r0 = rotate_pair(row, i), r1 = rotate_pair(row, i + 1u);
    uint w = (row * p.half_d * 2u + i) >> 1;
    y[w] = round16(r0.x, TYPE) | (round16(r1.x, TYPE) << 16);
    y[w + hw] = round16(r0.y, TYPE) | (round16(r1.y, TYPE) << 16);
  } else {  // halves, D/2 odd: word idx, its two elements (of one row: D is even) from their pairs
    if (idx >= p.pairs) return;
    uint d = p.half_d * 2u, row = (idx * 2u) / d, j = (idx * 2u) % d;
    y[idx] = element16(row, j) | (element16(row, j + 1u) << 16);
  }
}
