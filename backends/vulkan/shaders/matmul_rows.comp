// f32 matmul where A's rows and B's rows are contiguous (unit column stride) and B's rows are whole
// vec4s: no shared memory and no barriers. A workgroup of 64 invocations computes RM rows by
// 64 x CN vec4 columns: every invocation the same RM rows (A's loads are the same address in every
// lane) and CN vec4 columns of its own, 64 apart (adjacent lanes read adjacent vec4s of B).
// lavapipe runs invocations 8 to a SIMD vector but loads and stores memory lane by lane, and a
// barrier splits the shader into coroutines, so work per load is what counts: RM x CN x 4 FMAs per
// RM + CN loads here, against 16 per 8 in matmul.comp. Measured on lavapipe (Zen 5, 2 cores),
// 1024^3: matmul.comp 1.7 GFLOP/s; RM 16 x CN 2, 8 x 4 and 24 x 2 all 14-16; 32 x 1 9.7; 16 x 4 and
// 8 x 8 worse (spills).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint RM = 16;
layout(constant_id = 1) const uint CN = 1;  // vec4 columns per invocation, 64 apart

#ifdef TRINE_B16
// matmul_rows_b16: B f16 or bf16, four columns in two words (b_off, b_rs and its batch strides still
// multiples of 4), A f32, f16 or bf16; each value widened to f32 exactly on load, as matmul.comp
// converts them. A decode's x @ W with 16-bit weights reads them in place, rows at a time.
layout(constant_id = 2) const uint A_TYPE = 0;  // 0 f32, 1 f16, 2 bf16
layout(constant_id = 3) const uint B_TYPE = 1;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uvec2 b2[]; };
float load_a(uint idx) { return element_of(A_TYPE, a[word_of(A_TYPE, idx)], idx); }
vec4 load_b4(uint i) {
  uvec2 w = b2[i];
  return vec4(widen16(w.x, 0u, B_TYPE), widen16(w.x, 1u, B_TYPE), widen16(w.y, 0u, B_TYPE), widen16(w.y, 1u, B_TYPE));
}
#else
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { vec4 b4[]; };
float load_a(uint idx) { return a[idx]; }
vec4 load_b4(uint i) { return b4[i]; }
#endif
layout(set = 0, binding = 2) writeonly buffer Y { vec4 y4[]; };
layout(push_constant) uniform Push {
  uint M, N, K, batch;
  uint a_off, b_off;  // b_off, b_rs and b's batch strides are multiples of 4
  uint a_rs, a_cs, b_rs, b_cs;  // a_cs == b_cs == 1
  uint bdims[6];  // the output's batch dims, outermost first (1 where unused: kernels/matmul.cpp)
  uint a_bs[6];
  uint b_bs[6];
} p;

void main() {
  uint g = linear_group();
  uint cols4 = p.N / 4u;
  uint tiles_n = (cols4 + 64u * CN - 1u) / (64u * CN), tiles_m = (p.M + RM - 1u) / RM;
  uint per_batch = tiles_n * tiles_m;
  uint bi = g / per_batch;
  if (bi >= p.batch) return;  // uniform per workgroup
  uint t = g % per_batch;
  uint m0 = (t / tiles_n) * RM;
  uint c4 = (t % tiles_n) * 64u * CN + gl_LocalInvocationID.x;
  uint rem = bi, a_base = p.a_off, b_base = p.b_off;
  for (int d = 5; d >= 0; --d) {
    uint c = rem % p.bdims[d];
    rem /= p.bdims[d];
    a_base += c * p.a_bs[d];
    b_base += c * p.b_bs[d];
  }
  // Clamped, so every load is in bounds without a branch; the stores below are guarded.
  uint brs4 = p.b_rs / 4u;
  uint bcol[CN];
  for (uint j = 0u; j < CN; ++j) bcol[j] = b_base / 4u + min(c4 + 64u * j, cols4 - 1u);
  uint arow[RM];
  vec4 acc[RM][CN];
  for (uint i = 0u; i < RM; ++i) {
    arow[i] = a_base + min(m0 + i, p.M - 1u) * p.a_rs;
    for (uint j = 0u; j < CN; ++j) acc[i][j] = vec4(0.0);
  }
  for (uint k = 0u; k < p.K; ++k) {
    vec4 bv[CN];
    for (uint j = 0u; j < CN; ++j) bv[j] = load_b4(bcol[j] + k * brs4);
    for (uint i = 0u; i < RM; ++i) {
      float av = load_a(arow[i] + k);
      for (uint j = 0u; j < CN; ++j) acc[i][j] += av * bv[j];
    }
  }
  uint out4 = bi * p.M * cols4;
  for (uint j = 0u; j < CN; ++j) {
    uint c = c4 + 64u * j;
    if (c >= cols4) break;
    for (uint i = 0u; i < RM; ++i)
      if (m0 + i < p.M) y4[out4 + (m0 + i) * cols4 + c] = acc[i][j];
  }
}
