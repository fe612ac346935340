// Batched matmul over any strides (so transposes and views need no copy): 32x32 output tiles, each
// of the 16x16 invocations computing 2x2 of them from 32x16 slices of A and B staged in shared memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
const uint TM = 32u, TN = 32u, TK = 16u;

layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint M, N, K, batch;
  uint a_off, b_off;
  uint a_rs, a_cs, b_rs, b_cs;  // A[m][k] = a[a_off + m * a_rs + k * a_cs], likewise B[k][n]
  uint bdims[3];
  uint a_bs[3];
  uint b_bs[3];
} p;

shared float As[TK][TM + 1u];  // +1: no bank conflicts on GPUs that have banks
shared float Bs[TK][TN + 1u];

void main() {
  uint g = linear_group();
  uint tiles_n = (p.N + TN - 1u) / TN, tiles_m = (p.M + TM - 1u) / TM;
  uint per_batch = tiles_n * tiles_m;
  uint bi = g / per_batch;
  if (bi >= p.batch) return;  // uniform per workgroup
  uint t = g % per_batch;
  uint m0 = (t / tiles_n) * TM, n0 = (t % tiles_n) * TN;
  uint rem = bi, a_base = p.a_off, b_base = p.b_off;
  for (int d = 2; d >= 0; --d) {
    uint c = rem % p.bdims[d];
    rem /= p.bdims[d];
    a_base += c * p.a_bs[d];
    b_base += c * p.b_bs[d];
  }
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y, lid = ly * 16u + lx;
  float c00 = 0.0, c01 = 0.0, c10 = 0.0, c11 = 0.0;
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    for (uint i = lid; i < TM * TK; i += 256u) {
      uint m = i / TK, k = i % TK, gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < p.M && gk < p.K) ? a[a_base + gm * p.a_rs + gk * p.a_cs] : 0.0;
    }
    for (uint i = lid; i < TK * TN; i += 256u) {
      uint k = i / TN, n = i % TN, gk = k0 + k, gn = n0 + n;
      Bs[k][n] = (gk < p.K && gn < p.N) ? b[b_base + gk * p.b_rs + gn * p.b_cs] : 0.0;
    }
    barrier();
    for (uint k = 0u; k < TK; ++k) {
      float a0 = As[k][ly], a1 = As[k][ly + 16u];
      float b0 = Bs[k][lx], b1 = Bs[k][lx + 16u];
      c00 += a0 * b0;
      c01 += a0 * b1;
      c10 += a1 * b0;
      c11 += a1 * b1;
    }
    barrier();
  }
  uint out_base = bi * p.M * p.N;
  uint r0 = m0 + ly, r1 = m0 + ly + 16u, q0 = n0 + lx, q1 = n0 + lx + 16u;
  if (r0 < p.M && q0 < p.N) y[out_base + r0 * p.N + q0] = c00;
  if (r0 < p.M && q1 < p.N) y[out_base + r0 * p.N + q1] = c01;
  if (r1 < p.M && q0 < p.N) y[out_base + r1 * p.N + q0] = c10;
  if (r1 < p.M && q1 < p.N) y[out_base + r1 * p.N + q1] = c11;
}
