// GGUF's quantized blocks read in place (matmul_quant.comp, matmul_quant_tiles.comp): the includer
// declares `readonly buffer W { uint w[]; }` (the blocks as 32-bit words) and the spec constant FMT
// (0 q8_0, 1 q4_0, 2 q4_k, 3 q5_k, 4 q6_k). A unit is 32 weights (a q8_0 or q4_0 block, or one
// sub-block of a k-quant's 256); dequant16 gives half of one, with the f32 arithmetic of
// tensor/quant.cpp's dequantize_block, in its order. Blocks of 34, 18 and 210 bytes leave the
// blocks of a row at any byte: a value straddling two words is put together from both (never a
// word past the block but the one its last byte is in).

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

// Weights 16 h .. 16 h + 15 (h 0 or 1) of unit u of the row whose blocks start at byte `base`.
void dequant16(uint base, uint u, uint h, out float v[16]) {
  uint blk = base + (u / UNITS) * BLOCK, j = u % UNITS;
  if (FMT == 0u) {  // q8_0: f16 d, 32 int8
    float d = half_at(blk);
    for (uint i = 0u; i < 4u; ++i) {
      uint q = ld32(blk + 2u + 16u * h + 4u * i);
      for (uint t = 0u; t < 4u; ++t) v[4u * i + t] = float(s8(q, t)) * d;
    }
  } else if (FMT == 1u) {  // q4_0: f16 d, 16 bytes of two nibbles (low: weights 0-15, high: 16-31)
    float d = half_at(blk);
    for (uint i = 0u; i < 4u; ++i) {
      uint q = ld32(blk + 2u + 4u * i);
      for (uint t = 0u; t < 4u; ++t) v[4u * i + t] = d * float(int((q >> (8u * t + 4u * h)) & 15u) - 8);
    }
  } else if (FMT == 2u || FMT == 3u) {  // q4_k, q5_k: f16 d, dmin; 12 bytes of scales; (q5_k: 32 of qh); 128 of qs
    float d = half_at(blk), dmin = half_at(blk + 2u);
    float sc, mn;
    scale_min(blk + 4u, j, sc, mn);
    float a = d * sc, c = dmin * mn;
    uint qs = blk + (FMT == 3u ? 48u : 16u) + 32u * (j / 2u) + 16u * h, shift = 4u * (j % 2u);
    for (uint i = 0u; i < 4u; ++i) {
      uint q = ld32(qs + 4u * i);
      uint hb = FMT == 3u ? ld32(blk + 16u + 16u * h + 4u * i) : 0u;
      for (uint t = 0u; t < 4u; ++t) {
        uint x = (q >> (8u * t + shift)) & 15u;
        if (FMT == 3u) x |= ((hb >> (8u * t + j)) & 1u) << 4u;
        precise float wv = a * float(x) - c;  // rounded twice, as on the host: not one fma
        v[4u * i + t] = wv;
      }
    }
  } else {  // q6_k: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales (one per 16), f16 d
    float d = half_at(blk + 208u);
    uint half_ = j / 4u, qq = j % 4u;
    uint ql = blk + 64u * half_ + 32u * (qq & 1u) + 16u * h, qh = blk + 128u + 32u * half_ + 16u * h;
    uint lo_shift = 4u * (qq >> 1u), hi_shift = 2u * qq;
    float ds = d * float(s8(ld8(blk + 192u + 2u * j + h), 0u));
    for (uint i = 0u; i < 4u; ++i) {
      uint lw = ld32(ql + 4u * i), hw = ld32(qh + 4u * i);
      for (uint t = 0u; t < 4u; ++t) {
        uint lo = (lw >> (8u * t + lo_shift)) & 15u, hi = (hw >> (8u * t + hi_shift)) & 3u;
        v[4u * i + t] = ds * float(int(lo | (hi << 4u)) - 32);
      }
    }
  }
}
