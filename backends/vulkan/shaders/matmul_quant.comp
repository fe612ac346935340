// y = x w^T with w quantized (issue 29): w [N, K] in GGUF's blocks (FMT 0 q8_0, 1 q4_0, 2 q4_k,
// 3 q5_k, 4 q6_k), read in place as 32-bit words and dequantized in registers, never written out
// as f32; x f32 rows (ROWS of them, each at (r / m) * x_batch + (r % m) * x_row, its k-th element
// x_col further on); y f32 [ROWS, N] contiguous. Both gemv (one row) and matmul run here.
// Workgroup g takes weight row n = g % N against up to R rows of x, chunk g / N: each invocation
// dequantizes 32-weight units of the row (a q8_0 or q4_0 block, or one sub-block of a k-quant's
// 256), a workgroup's width apart, and multiplies them into the R rows' sums, which the workgroup
// adds at the end. The weights are dequantized by quant_blocks.glsl (the f32 arithmetic of
// tensor/quant.cpp's dequantize_block, in its order); the products are summed in f32 (the error
// bound of a K-long dot). Many rows of x take matmul_quant_tiles.comp instead.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FMT = 0u;
layout(constant_id = 2) const uint R = 1u;  // rows of x per workgroup: 1 or 4
#include "workgroup_reduce.glsl"

layout(set = 0, binding = 0) readonly buffer W { uint w[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n;          // w's rows, y's columns
  uint k;          // w's columns (a multiple of the block), x's row length
  uint rows;       // x's rows (every batch's M)
  uint m;          // rows per batch
  uint w_off;      // bytes to w's first block
  uint row_bytes;  // bytes of one row of w
  uint x_off, x_batch, x_row, x_col;  // in elements
  uint y_off;      // in elements
} p;

#include "quant_blocks.glsl"

float acc[R];
uint xb[R];  // each row's first element of x

// Unit u of the row whose blocks start at byte `base`, into acc (its first element is x's u * 32).
void unit(uint base, uint u) {
  for (uint h = 0u; h < 2u; ++h) {
    float v[16];
    dequant16(base, u, h, v);
    for (uint i = 0u; i < 16u; ++i) {
      uint l = u * 32u + 16u * h + i;
      for (uint r = 0u; r < R; ++r) acc[r] += v[i] * x[xb[r] + l * p.x_col];
    }
  }
}

void main() {
  uint g = linear_group();
  uint chunks = (p.rows + R - 1u) / R;
  if (g >= p.n * chunks) return;  // uniform per workgroup: no barrier is skipped by some only
  uint nrow = g % p.n, row0 = (g / p.n) * R;
  for (uint r = 0u; r < R; ++r) {
    acc[r] = 0.0;
    uint row = min(row0 + r, p.rows - 1u);  // rows past the end repeat the last, never written
    xb[r] = p.x_off + (row / p.m) * p.x_batch + (row % p.m) * p.x_row;
  }
  uint base = p.w_off + nrow * p.row_bytes;
  for (uint u = gl_LocalInvocationID.x; u < p.k / 32u; u += WG) unit(base, u);
  for (uint r = 0u; r < R; ++r) {
    float s = wg_sum(acc[r]);
    if (gl_LocalInvocationID.x == 0u && row0 + r < p.rows) y[p.y_off + (row0 + r) * p.n + nrow] = s;
  }
}
