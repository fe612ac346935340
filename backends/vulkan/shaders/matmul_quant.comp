// y = x w^T with w quantized (issue 29): w [N, K] in GGUF's blocks (FMT 0 q8_0, 1 q4_0, 2 q4_k,
// 3 q5_k, 4 q6_k), read in place as 32-bit words and dequantized in registers, never written out
// as f32; x f32 rows (ROWS of them, each at (r / m) * x_batch + (r % m) * x_row, its k-th element
// x_col further on); y f32 [ROWS, N] contiguous. Both gemv (one row) and matmul run here.
// Workgroup g takes weight row n = g % N against up to R rows of x, chunk g / N: each invocation
// dequantizes 32-weight units of the row (a q8_0 or q4_0 block, or one sub-block of a k-quant's
// 256), a workgroup's width apart, and multiplies them into the R rows' sums, which the workgroup
// adds at the end. The weights are dequantized with the f32 arithmetic of tensor/quant.cpp's
// dequantize_block, in its order; the products are summed in f32 (the error bound of a K-long dot).
// Blocks of 34, 18 and 210 bytes leave the blocks of a row at any byte: a block's words are read
// whole, and a value straddling two words is put together from both (never a word past the block
// but the one its last byte is in).
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

// The byte at b, the 16 bits at b (b, b + 1) and the 32 bits at b (b .. b + 3) of w's data.
uint ld8(uint b) { return (w[b >> 2u] >> ((b & 3u) * 8u)) & 0xFFu; }
uint ld32(uint b) {
  uint i = b >> 2u, s = (b & 3u) * 8u;
  uint lo = w[i];
  return s == 0u ? lo : (lo >> s) | (w[i + 1u] << (32u - s));
}
uint ld16(uint b) { return (b & 3u) == 3u ? ld8(b) | (ld8(b + 1u) << 8u) : (w[b >> 2u] >> ((b & 3u) * 8u)) & 0xFFFFu; }
float half_at(uint b) { return uintBitsToFloat(f16_to_f32_bits(ld16(b))); }
int s8(uint word, uint t) { return bitfieldExtract(int(word), int(t * 8u), 8); }

// The units (32 weights) of one block, and its bytes.
const uint UNITS = FMT >= 2u ? 8u : 1u;
const uint BLOCK = FMT == 0u ? 34u : FMT == 1u ? 18u : FMT == 2u ? 144u : FMT == 3u ? 176u : 210u;

float acc[R];
uint xb[R];  // each row's first element of x

void fma_row(uint l, float wv) {
  for (uint r = 0u; r < R; ++r) acc[r] += wv * x[xb[r] + l * p.x_col];
}

// q4_k's and q5_k's 6-bit scale and min of sub-block j, from the 12 bytes at s.
void scale_min(uint s, uint j, out float sc, out float mn) {
  if (j < 4u) {
    sc = float(ld8(s + j) & 63u);
    mn = float(ld8(s + j + 4u) & 63u);
  } else {
    uint b = ld8(s + j + 4u);
    sc = float((b & 15u) | ((ld8(s + j - 4u) >> 6u) << 4u));
    mn = float((b >> 4u) | ((ld8(s + j) >> 6u) << 4u));
  }
}

// Unit u of the row whose blocks start at byte `base`, into acc (its first element is x's u * 32).
void unit(uint base, uint u) {
  uint blk = base + (u / UNITS) * BLOCK, j = u % UNITS;
  uint k0 = u * 32u;
  if (FMT == 0u) {  // q8_0: f16 d, 32 int8
    float d = half_at(blk);
    for (uint i = 0u; i < 8u; ++i) {
      uint q = ld32(blk + 2u + 4u * i);
      for (uint t = 0u; t < 4u; ++t) fma_row(k0 + 4u * i + t, float(s8(q, t)) * d);
    }
  } else if (FMT == 1u) {  // q4_0: f16 d, 16 bytes of two nibbles (weights i and i + 16)
    float d = half_at(blk);
    for (uint i = 0u; i < 4u; ++i) {
      uint q = ld32(blk + 2u + 4u * i);
      for (uint t = 0u; t < 4u; ++t) {
        uint b = (q >> (8u * t)) & 0xFFu;
        fma_row(k0 + 4u * i + t, d * float(int(b & 15u) - 8));
        fma_row(k0 + 4u * i + t + 16u, d * float(int(b >> 4u) - 8));
      }
    }
  } else if (FMT == 2u || FMT == 3u) {  // q4_k, q5_k: f16 d, dmin; 12 bytes of scales; (q5_k: 32 of qh); 128 of qs
    float d = half_at(blk), dmin = half_at(blk + 2u);
    float sc, mn;
    scale_min(blk + 4u, j, sc, mn);
    float a = d * sc, c = dmin * mn;
    uint qs = blk + (FMT == 3u ? 48u : 16u) + 32u * (j / 2u), shift = 4u * (j % 2u);
    for (uint i = 0u; i < 8u; ++i) {
      uint q = ld32(qs + 4u * i);
      uint h = FMT == 3u ? ld32(blk + 16u + 4u * i) : 0u;
      for (uint t = 0u; t < 4u; ++t) {
        uint v = (q >> (8u * t + shift)) & 15u;
        if (FMT == 3u) v |= ((h >> (8u * t + j)) & 1u) << 4u;
        precise float wv = a * float(v) - c;  // rounded twice, as on the host: not one fma
        fma_row(k0 + 4u * i + t, wv);
      }
    }
  } else {  // q6_k: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d
    float d = half_at(blk + 208u);
    uint half_ = j / 4u, qq = j % 4u;
    uint ql = blk + 64u * half_ + 32u * (qq & 1u), qh = blk + 128u + 32u * half_;
    uint lo_shift = 4u * (qq >> 1u), hi_shift = 2u * qq;
    float ds0 = d * float(s8(ld8(blk + 192u + 2u * j), 0u));
    float ds1 = d * float(s8(ld8(blk + 193u + 2u * j), 0u));
    for (uint i = 0u; i < 8u; ++i) {
      uint lw = ld32(ql + 4u * i), hw = ld32(qh + 4u * i);
      float ds = i < 4u ? ds0 : ds1;  // one scale per 16 weights
      for (uint t = 0u; t < 4u; ++t) {
        uint lo = (lw >> (8u * t + lo_shift)) & 15u, hi = (hw >> (8u * t + hi_shift)) & 3u;
        fma_row(k0 + 4u * i + t, ds * float(int(lo | (hi << 4u)) - 32));
      }
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
