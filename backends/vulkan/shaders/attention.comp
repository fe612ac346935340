// attention = softmax(q k^T * scale) v with an online softmax: one workgroup per output element
// (query row, value column); each invocation streams over every WG-th key keeping its running max,
// sum and accumulator, and the workgroup merges the partial states in shared memory, so the score
// matrix never exists. Splitting the keys also keeps each invocation's loop short: lavapipe caps a
// shader's loop iterations near 65535 and silently stops past them. Tiling keys through shared
// memory (FlashAttention-style) is the next step.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) readonly buffer K { float k[]; };
layout(set = 0, binding = 2) readonly buffer V { float v[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint batch, Lq, Lk, D, Dv, causal;
  float scale;
  uint q_off, k_off, v_off;
} p;

shared float sm[WG];
shared float sl[WG];
shared float sa[WG];

// exp(a - m) for a partial state's max a, 0 for an empty state (a = -inf, where a - m is NaN).
float rescale(float a, float m) { return isinf(a) && a < 0.0 ? 0.0 : exp(a - m); }

void main() {
  uint o = linear_group();
  if (o >= p.batch * p.Lq * p.Dv) return;  // uniform per workgroup
  uint dv = o % p.Dv, row = o / p.Dv;
  uint b = row / p.Lq, i = row % p.Lq;
  // causal: query i sees keys j <= i + (Lk - Lq)
  uint keys = p.causal != 0u ? min(p.Lk, i + (p.Lk - p.Lq) + 1u) : p.Lk;
  uint qb = p.q_off + row * p.D;
  float m = -1.0 / 0.0, l = 0.0, acc = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < keys; j += WG) {
    uint kb = p.k_off + (b * p.Lk + j) * p.D;
    float s = 0.0;
    for (uint d = 0u; d < p.D; ++d) s += q[qb + d] * k[kb + d];
    s *= p.scale;
    float m_new = max(m, s);
    float corr = rescale(m, m_new);
    float e = exp(s - m_new);
    l = l * corr + e;
    acc = acc * corr + e * v[p.v_off + (b * p.Lk + j) * p.Dv + dv];
    m = m_new;
  }
  uint t = gl_LocalInvocationID.x;
  sm[t] = m;
  sl[t] = l;
  sa[t] = acc;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      float m1 = sm[t], m2 = sm[t + s];
      float mm = max(m1, m2);
      float f1 = rescale(m1, mm), f2 = rescale(m2, mm);
      sl[t] = sl[t] * f1 + sl[t + s] * f2;
      sa[t] = sa[t] * f1 + sa[t + s] * f2;
      sm[t] = mm;
    }
    barrier();
  }
  if (t == 0u) y[o] = sa[0] / sl[0];
}
