// Batched matmul over any strides (so transposes and views need no copy): 32x32 output tiles, each
// of the 8x8 invocations computing 4x4 of them from 32x16 slices of A and B staged in shared memory.
// Few invocations with much work each: lavapipe pays per invocation and per barrier. A and B may
// each be f32, f16 or bf16 (read as 32-bit words, converted exactly to f32 on load). The general
// case: row-contiguous f32 operands with N a multiple of 4 go to matmul_rows.comp, 5-9x faster on
// lavapipe.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 8, local_size_y = 8) in;
const uint TM = 32u, TN = 32u, TK = 16u;

layout(constant_id = 0) const uint A_TYPE = 0;  // 0 f32, 1 f16, 2 bf16
layout(constant_id = 1) const uint B_TYPE = 0;

layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint M, N, K, batch;
  uint a_off, b_off;
  uint a_rs, a_cs, b_rs, b_cs;  // A[m][k] = a[a_off + m * a_rs + k * a_cs], likewise B[k][n]
  uint bdims[6];  // the output's batch dims, outermost first (1 where unused: kernels/matmul.cpp)
  uint a_bs[6];
  uint b_bs[6];
} p;

float load_a(uint idx) { return element_of(A_TYPE, a[word_of(A_TYPE, idx)], idx); }
float load_b(uint idx) { return element_of(B_TYPE, b[word_of(B_TYPE, idx)], idx); }

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
  for (int d = 5; d >= 0; --d) {
    uint c = rem % p.bdims[d];
    rem /= p.bdims[d];
    a_base += c * p.a_bs[d];
    b_base += c * p.b_bs[d];
  }
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y, lid = ly * 8u + lx;
  float c[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) c[i][j] = 0.0;
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    for (uint i = lid; i < TM * TK; i += 64u) {
      uint m = i / TK, k = i % TK, gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < p.M && gk < p.K) ? load_a(a_base + gm * p.a_rs + gk * p.a_cs) : 0.0;
    }
    for (uint i = lid; i < TK * TN; i += 64u) {
      uint k = i / TN, n = i % TN, gk = k0 + k, gn = n0 + n;
      Bs[k][n] = (gk < p.K && gn < p.N) ? load_b(b_base + gk * p.b_rs + gn * p.b_cs) : 0.0;
    }
    barrier();
    for (uint k = 0u; k < TK; ++k) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = As[k][ly + 8u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = Bs[k][lx + 8u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) c[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  uint out_base = bi * p.M * p.N;
  for (uint i = 0u; i < 4u; ++i) {
    uint r = m0 + ly + 8u * i;
    if (r >= p.M) continue;
    for (uint j = 0u; j < 4u; ++j) {
      uint q = n0 + lx + 8u * j;
      if (q < p.N) y[out_base + r * p.N + q] = c[i][j];
    }
  }
}
