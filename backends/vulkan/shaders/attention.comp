// attention = softmax(q k^T * scale) v with an online softmax, so the score matrix never exists.
// One workgroup per (query row, block of WG value columns); invocation t owns column block * WG + t.
// The keys go by in tiles of WG: invocation t scores key j0 + t into shared memory, then every
// invocation rescales its running sum and accumulator by the tile's new max and adds the tile's
// WG weighted values of its column. Each score is computed once per column block (one block up to
// Dv = WG), not once per output element: an earlier version gave every output element a workgroup
// and repeated all of its row's dot products Dv times (5.4 s for an 8 x 128 x 64 causal attention
// on lavapipe). Every loop is short: lavapipe caps a shader's loop iterations near 65535 and
// silently stops past them (the tile loop runs Lk / WG times).
// VALID = 1 (attention's valid input): the keys that count are n = valid[valid_off], read here, and
// the loops run to n, never past it; an n outside [valid_min, Lk] stores nothing and workgroup 0's
// invocation 0 leaves it in err[1] and 0 in err[0] (0xFFFFFFFF both, as the host set them, when n
// is good: Recorder::report_words). Lk stays the rows of k and v in memory, their stride.
// MASK = 1 (attention's mask input): mask[mask_off + (b / heads) * mask_outer + (b % heads) *
// mask_head + i * Lk + j] is added to the scaled score of query i and key j (strides 0 broadcast);
// its low part carried as the product's is. A row whose every key is -inf has weights 0 and l 0:
// NaN, as softmax gives.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint VALID = 0;
layout(constant_id = 2) const uint MASK = 0;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) readonly buffer K { float k[]; };
layout(set = 0, binding = 2) readonly buffer V { float v[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) readonly buffer N { int valid[]; };  // VALID = 0: any buffer, unread
layout(set = 0, binding = 5) buffer E { uint err[]; };            // VALID = 0: any buffer, untouched
layout(set = 0, binding = 6) readonly buffer M { float mask[]; };  // MASK = 0: any buffer, unread
layout(push_constant) uniform Push {
  uint batch, Lq, Lk, D, Dv, causal;
  float scale;
  uint q_off, k_off, v_off;
  uint heads, group;  // q's heads; q head h reads kv head h / group (grouped-query attention)
  uint window;        // causal sliding window (0: none, or the host's window < Lk)
  uint valid_off, valid_min;
  uint mask_off, mask_outer, mask_head;  // MASK: where b's mask rows start, as b / heads and b % heads
} p;

shared float sp[WG];     // the tile's scores, then their weights exp(s - m)
shared float sp_lo[WG];  // each score's low part: q.k * scale = sp + sp_lo exactly

void main() {
  uint blocks = (p.Dv + WG - 1u) / WG;
  uint g = linear_group();
  if (g >= p.batch * p.Lq * blocks) return;  // uniform per workgroup
  uint row = g / blocks, t = gl_LocalInvocationID.x;
  uint c = (g % blocks) * WG + t;  // this invocation's value column (past Dv: helps score, writes nothing)
  uint b = row / p.Lq, i = row % p.Lq;
  uint kvb = (b / p.heads) * (p.heads / p.group) + (b % p.heads) / p.group;
  uint lk = p.Lk;  // the keys that count
  if (VALID != 0u) {
    int n = valid[p.valid_off];  // the same for the whole workgroup: its return is uniform
    if (n < int(p.valid_min) || uint(n) > p.Lk) {
      if (g == 0u && t == 0u) {
        err[0] = 0u;
        err[1] = uint(n);
      }
      return;
    }
    lk = uint(n);
  }
  // causal: query i sees keys j <= i + (lk - Lq) (the op table asks Lq <= Lk, the kernel Lq <= n);
  // with a window, the last `window` of them
  uint keys = p.causal != 0u ? min(lk, i + (lk - p.Lq) + 1u) : lk;
  uint first = p.window != 0u && keys > p.window ? keys - p.window : 0u;
  uint qb = p.q_off + row * p.D;
  float m = -1.0 / 0.0, l = 0.0, acc = 0.0;
  for (uint j0 = first; j0 < keys; j0 += WG) {
    uint n = min(WG, keys - j0);
    if (t < n) {
      uint kb = p.k_off + (kvb * p.Lk + j0 + t) * p.D;
      float s = 0.0;
      for (uint d = 0u; d < p.D; ++d) s += q[qb + d] * k[kb + d];
      // The product's rounding, rounded into the weight, would cost it |s - m| ulps (58 measured with
      // scale 0.7 on lavapipe): it is carried into the exponential. Past 2^100 (or inf, NaN) the
      // split of two_prod would overflow: no low part there.
      float hi, lo;
      two_prod(s, p.scale, hi, lo);
      lo = abs(hi) < 1.0e30 ? lo : 0.0;
      if (MASK != 0u) {
        float mk = mask[p.mask_off + (b / p.heads) * p.mask_outer + (b % p.heads) * p.mask_head + i * p.Lk + j0 + t];
        float hm, e;
        two_sum(hi, mk, hm, e);
        lo = abs(hm) < 1.0e30 ? lo + e : 0.0;
        hi = hm;
      }
      sp[t] = hi;
      sp_lo[t] = lo;
    }
    barrier();
    float mt = sp[0];
    for (uint u = 1u; u < n; ++u) mt = max(mt, sp[u]);
    float m_new = max(m, mt);
    // m is -inf before the first tile (corr 0: l and acc are 0 then anyway)
    float corr = isinf(m) && m < 0.0 ? 0.0 : exp_diff(m, m_new);
    barrier();  // every invocation has read the scores before they turn into weights
    // m_new -inf (every score so far -inf, as a mask can make them): weights 0, not exp(-inf + inf)
    if (t < n) sp[t] = isinf(m_new) && m_new < 0.0 ? 0.0 : exp_diff(sp[t], m_new, sp_lo[t]);
    barrier();
    float lt = 0.0, at = 0.0;
    uint vb = p.v_off + (kvb * p.Lk + j0) * p.Dv + c;
    for (uint u = 0u; u < n; ++u) {
      lt += sp[u];
      if (c < p.Dv) at += sp[u] * v[vb + u * p.Dv];
    }
    l = l * corr + lt;
    acc = acc * corr + at;
    m = m_new;
    barrier();  // the weights are read before the next tile's scores overwrite them
  }
  if (c < p.Dv) y[row * p.Dv + c] = acc / l;
}
