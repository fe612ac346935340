// y = x w^T with w quantized, for many rows of x (matmul_quant.comp's other case; the push
// constants and the layouts of x and y are its): 32 x 32 tiles of y (32 rows of x, 32 rows of w),
// each of the 8 x 8 invocations computing 4 x 4 of them, over K a unit of 32 weights at a time.
// Per step the workgroup stages x's 32 x 32 slice and the 32 rows' unit of weights, dequantized
// once (quant_blocks.glsl: each invocation half a unit of one row), in shared memory, as f32: a
// weight is dequantized once per 32 rows of x rather than once per row or four. The sums are f32,
// one product after another along K, as in matmul_quant.comp.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 8, local_size_y = 8) in;
const uint T = 32u;  // the tile's rows of x, rows of w, and weights along K per step (one unit)
layout(constant_id = 0) const uint FMT = 0u;

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

shared float Xs[T][T + 1u];  // [k][row of x]; +1: no bank conflicts on GPUs that have banks
shared float Ws[T][T + 1u];  // [k][row of w]

void main() {
  uint g = linear_group();
  uint tiles_n = (p.n + T - 1u) / T, tiles_m = (p.rows + T - 1u) / T;
  if (g >= tiles_n * tiles_m) return;  // uniform per workgroup
  uint m0 = (g / tiles_n) * T, n0 = (g % tiles_n) * T;
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y, lid = ly * 8u + lx;
  // This invocation's share of the staging: half a unit of row wn of w (none past N), and
  // elements of x's slice, lid apart.
  uint wn = lid % T, wh = lid / T;
  bool w_in = n0 + wn < p.n;
  uint w_base = p.w_off + (n0 + wn) * p.row_bytes;
  float c[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) c[i][j] = 0.0;
  for (uint u = 0u; u < p.k / T; ++u) {
    for (uint e = lid; e < T * T; e += 64u) {
      uint r = e / T, kk = e % T, row = m0 + r;
      Xs[kk][r] = row < p.rows ? x[p.x_off + (row / p.m) * p.x_batch + (row % p.m) * p.x_row + (u * T + kk) * p.x_col]
                               : 0.0;
    }
    float v[16];
    if (w_in) {
      dequant16(w_base, u, wh, v);
    } else {
      for (uint i = 0u; i < 16u; ++i) v[i] = 0.0;
    }
    for (uint i = 0u; i < 16u; ++i) Ws[16u * wh + i][wn] = v[i];
    barrier();
    for (uint kk = 0u; kk < T; ++kk) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = Xs[kk][ly + 8u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = Ws[kk][lx + 8u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) c[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (uint i = 0u; i < 4u; ++i) {
    uint r = m0 + ly + 8u * i;
    if (r >= p.rows) continue;
    for (uint j = 0u; j < 4u; ++j) {
      uint q = n0 + lx + 8u * j;
      if (q < p.n) y[p.y_off + r * p.n + q] = c[i][j];
    }
  }
}
