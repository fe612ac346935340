// rope over contiguous [rows, D] (row r has position table row r % L): each invocation rotates one
// pair by the angle whose cos and sin the host computed in double (tab[l][i] = (cos, sin)), so long
// positions lose nothing to f32 argument reduction. Pair i is (x[step * i], x[step * i + partner]):
// (x[2i], x[2i+1]) interleaved, (x[i], x[i + D/2]) in halves.
// AT = 1: the position is pos_buf[p_off], read here when the dispatch runs (a batch replays the
// recording at each step's position), row r at pos_buf[p_off] + offset + r % L, and tab[i] holds
// pair i's frequency as hi + lo. The angle is formed as a float-float (Dekker's product, so it
// keeps about 44 bits) and reduced by pi/2 in three parts, each n C_k exact or rounded at a far
// lower bit; its sine and cosine are Taylor series on [-pi/4, pi/4] (as the cuda kernel's).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint AT = 0;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer T { vec2 tab[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
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

// cos and sin of position pos times frequency fh + fl.
vec2 cos_sin_at(float pos, float fh, float fl) {
  float a, e;
  two_prod(pos, fh, a, e);
  precise float lo = e + pos * fl;  // a + lo: the angle, to about 2^-44 of it
  float n = roundEven(a * 0.636619772367581343);
  // a - n pi/2: n C1 exactly as p1 + e1; a - p1 is exact (Sterbenz: a and p1 within a factor of 2,
  // or n = 0); C2 and C3 are pi/2's next bits, their products rounded far below r's ulp.
  float p1, e1;
  two_prod(n, 1.5707963705062866, p1, e1);
  precise float r0 = a - p1;
  precise float r = (((r0 - e1) + lo) - n * -4.371138828673793e-8) - n * -1.7151245100058819e-15;
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
  // the quadrant n mod 4, exactly (n / 4 and its floor are exact, and so is the small difference)
  precise float q4 = n - 4.0 * floor(n * 0.25);
  uint q = uint(q4);
  float s0 = (q & 1u) != 0u ? cp : sp, c0 = (q & 1u) != 0u ? sp : cp;
  return vec2(((q + 1u) & 2u) != 0u ? -c0 : c0, (q & 2u) != 0u ? -s0 : s0);
}

void main() {
  uint idx = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (idx >= p.pairs) return;
  uint row = idx / p.half_d, i = idx % p.half_d;
  vec2 cs;
  if (AT == 1u) {
    // position + offset + l in 32 bits, exact as a float below 2^24; where the sum overflows, the
    // sum of its two parts as floats (within an ulp of the position, so of the angle)
    int base = pos_buf[p.p_off], rest = p.offset + int(row % p.L);
    int sum = base + rest;
    bool overflow = ((base ^ sum) & (rest ^ sum)) < 0;
    precise float pos = overflow ? float(base) + float(rest) : float(sum);
    vec2 f = tab[i];
    cs = cos_sin_at(pos, f.x, f.y);
  } else {
    cs = tab[(row % p.L) * p.half_d + i];
  }
  uint at = row * p.half_d * 2u + p.step * i, at1 = at + p.partner;
  float x0 = x[p.x_off + at], x1 = x[p.x_off + at1];
  y[at] = x0 * cs.x - x1 * cs.y;
  y[at1] = x0 * cs.y + x1 * cs.x;
}
