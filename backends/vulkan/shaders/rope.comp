// rope over contiguous [rows, D] (row r has position table row r % L): each invocation rotates one
// pair by the angle whose cos and sin the host computed in double (tab[l][i] = (cos, sin)), so long
// positions lose nothing to f32 argument reduction. Pair i is (x[step * i], x[step * i + partner]):
// (x[2i], x[2i+1]) interleaved, (x[i], x[i + D/2]) in halves.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer T { vec2 tab[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint pairs;  // rows * D / 2
  uint half_d;
  uint L;
  uint x_off;
  uint step;     // 2 interleaved, 1 halves
  uint partner;  // 1 interleaved, D/2 halves
} p;

void main() {
  uint idx = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (idx >= p.pairs) return;
  uint row = idx / p.half_d, i = idx % p.half_d;
  vec2 cs = tab[(row % p.L) * p.half_d + i];
  uint at = row * p.half_d * 2u + p.step * i, at1 = at + p.partner;
  float x0 = x[p.x_off + at], x1 = x[p.x_off + at1];
  y[at] = x0 * cs.x - x1 * cs.y;
  y[at1] = x0 * cs.y + x1 * cs.x;
}
