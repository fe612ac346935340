// Quantized weights on cuda_ptx (issue 29): y = x w^T with w [N, K] in q8_0, q4_0, q4_k, q5_k or
// q6_k blocks, for matmul(x, w) and gemv(w, x). One warp per weight row and up to R rows of x: each
// lane takes whole blocks of the row (a k-quant's 256 weights, q8_0's and q4_0's 32), a warp apart,
// dequantizes them in registers with tensor/quant.cpp's f32 formulas in its order (mul.rn and
// sub.rn: nothing fused into an fma) and multiplies them into the rows' f32 sums, which the warp
// adds at the end. Blocks of 34, 18 and 210 bytes start at any even byte, so the kernel reads the
// blocks as 16-bit halves (each loaded once per block or sub-block). The f32 weights are never
// written to memory.
// From 8 rows of x, matmul_quant_tiles: the shared-memory tiled GEMM (gemm_tile.hpp, 64 x 64 tiles,
// 4 x 4 per thread) with B = w^T dequantized element by element as it is staged, so a weight is
// dequantized once per 64 rows of x rather than once per row or four.
#include <map>
#include <vector>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"
#include "trine/quant.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int quant_threads = 256;
constexpr int quant_warps = quant_threads / 32;
constexpr std::uint32_t quant_rows = 4;  // rows of x per warp where there are that many

struct QuantConfig {
  std::string_view name;
  quant::Format format;
  std::uint32_t rows;  // R
};
constexpr QuantConfig quant_configs[] = {
    {"q8_0_r1", quant::Format::q8_0, 1}, {"q8_0_r4", quant::Format::q8_0, 4}, {"q4_0_r1", quant::Format::q4_0, 1},
    {"q4_0_r4", quant::Format::q4_0, 4}, {"q4_k_r1", quant::Format::q4_k, 1}, {"q4_k_r4", quant::Format::q4_k, 4},
    {"q5_k_r1", quant::Format::q5_k, 1}, {"q5_k_r4", quant::Format::q5_k, 4}, {"q6_k_r1", quant::Format::q6_k, 1},
    {"q6_k_r4", quant::Format::q6_k, 4},
};

// One block's weights, in increasing k, into the R rows' sums: `weight(w)` per weight.
// Each 16 bits of the block are loaded once (straight-line code: a register read twice is the same
// value).
class BlockReader {
 public:
  BlockReader(Kernel& k, Reg<U64> block) : k_(k), block_(block) {}
  // The 16 bits at byte `off` of the block (even), widened to u32.
  Reg<U32> half16(std::int64_t off) {
    auto it = halves_.find(off);
    if (it == halves_.end()) it = halves_.emplace(off, cvt<U32>(k_, ld(k_, Ptr<Global, U16>{block_, off}))).first;
    return it->second;
  }
  // Byte `off` of the block.
  Reg<U32> byte(std::int64_t off) {
    Reg<U32> h = half16(off & ~std::int64_t{1});
    return (off & 1) ? shr(k_, h, 8u) : and_(k_, h, V<U32>(0xFFu));
  }
  Reg<F32> f16(std::int64_t off) { return f16_to_f32(k_, bitcast<F16>(k_, ld(k_, Ptr<Global, U16>{block_, off}))); }

 private:
  Kernel& k_;
  Reg<U64> block_;
  std::map<std::int64_t, Reg<U32>> halves_;
};

Reg<F32> to_f32(Kernel& k, Reg<S32> v) { return cvt<F32>(k, v, Round::rn); }
Reg<F32> to_f32(Kernel& k, Reg<U32> v) { return cvt<F32>(k, v, Round::rn); }
// The byte b (0..255) as an int8.
Reg<S32> signed8(Kernel& k, Reg<U32> b) { return shr(k, bitcast<S32>(k, shl(k, b, 24u)), 24u); }

// The byte at block + off, off a run-time offset: from the aligned 16 bits that hold it.
Reg<U32> byte_at(Kernel& k, Reg<U64> block, Reg<U32> off) {
  Reg<U64> at = add(k, block, V<U64>(to_u64(k, and_(k, off, V<U32>(~1u)))));
  Reg<U32> h = cvt<U32>(k, ld(k, Ptr<Global, U16>{at, 0}));
  return and_(k, shr(k, h, V<U32>(shl(k, and_(k, off, V<U32>(1u)), 3u))), V<U32>(0xFFu));
}

// q4_k's and q5_k's scale and min of sub-block j (0..7, run time), from the 12 bytes at 4, as
// tensor/quant.cpp's scale_min: the low six bits of bytes j and j + 4 for j < 4; for j >= 4 a nibble
// of byte j + 4 with the top two bits of byte j - 4 (scale) or byte j (min) above it.
void scale_min(Kernel& k, Reg<U64> block, Reg<U32> j, Reg<F32>& sc, Reg<F32>& mn) {
  Reg<U32> s_j = byte_at(k, block, add(k, j, V<U32>(4u)));   // scales[j]
  Reg<U32> s_j4 = byte_at(k, block, add(k, j, V<U32>(8u)));  // scales[j + 4]
  Reg<U32> s_jm4 = byte_at(k, block, j);                     // scales[j - 4] (j >= 4)
  Reg<Pred> low = setp(k, Cmp::lt, j, V<U32>(4u));
  Reg<U32> sc_hi = or_(k, and_(k, s_j4, V<U32>(15u)), V<U32>(shl(k, shr(k, s_jm4, 6u), 4u)));
  Reg<U32> mn_hi = or_(k, shr(k, s_j4, 4u), V<U32>(shl(k, shr(k, s_j, 6u), 4u)));
  sc = to_f32(k, selp<U32>(k, and_(k, s_j, V<U32>(63u)), sc_hi, low));
  mn = to_f32(k, selp<U32>(k, and_(k, s_j4, V<U32>(63u)), mn_hi, low));
}

// Every weight of one block of `f`, in increasing k, through weight(value). q8_0 and the k-quants
// loop at run time over runs of 8 or 16 weights: unrolled whole, the kernels were 5-6k lines each
// (ptxas's time in CI grew with them) and ptxas spilled.
template <class Weight>
void dequantize_block(Kernel& k, quant::Format f, Reg<U64> block, Weight&& weight) {
  BlockReader r(k, block);
  switch (f) {
    case quant::Format::q8_0: {  // f16 d, 32 int8: q * d, in four run-time steps of 8 (unrolled, ptxas spilled)
      Reg<F32> d = r.f16(0);
      for_range<U32>(k, V<U32>(0u), V<U32>(4u), V<U32>(1u), [&](Reg<U32> c) {
        BlockReader eight(k, add(k, block, V<U64>(to_u64(k, add(k, shl(k, c, 3u), V<U32>(2u))))));
        for (int i = 0; i < 8; ++i) weight(mul(k, to_f32(k, signed8(k, eight.byte(i))), V<F32>(d)));
      });
      return;
    }
    case quant::Format::q4_0: {  // f16 d, 16 bytes: weight i the low nibble of byte i, i + 16 its high one
      Reg<F32> d = r.f16(0);
      std::vector<Reg<U32>> bytes;
      for (int i = 0; i < 16; ++i) bytes.push_back(r.byte(2 + i));
      for (int hi = 0; hi < 2; ++hi) {
        for (int i = 0; i < 16; ++i) {
          Reg<U32> q = hi ? shr(k, bytes[i], 4u) : and_(k, bytes[i], V<U32>(15u));
          weight(mul(k, d, V<F32>(to_f32(k, sub(k, bitcast<S32>(k, q), V<S32>(8))))));
        }
      }
      return;
    }
    case quant::Format::q4_k:
    case quant::Format::q5_k: {  // f16 d, dmin; 12 bytes of scales; (q5_k: 32 of high bits); 128 of nibbles
      const bool five = f == quant::Format::q5_k;
      Reg<F32> d = r.f16(0), dmin = r.f16(2);
      // 16 run-time steps of 16 weights, half a sub-block each
      for_range<U32>(k, V<U32>(0u), V<U32>(16u), V<U32>(1u), [&](Reg<U32> step) {
        Reg<U32> j = shr(k, step, 1u), part = shl(k, and_(k, step, V<U32>(1u)), 4u);  // sub-block, its 16 bytes
        Reg<F32> sc, mn;
        scale_min(k, block, j, sc, mn);
        Reg<F32> a = mul(k, d, V<F32>(sc)), c = mul(k, dmin, V<F32>(mn));
        // sub-blocks 2g and 2g + 1: the low and high nibbles of the 32 bytes at qs + 32 g
        Reg<U32> at = add(k, add(k, shl(k, shr(k, j, 1u), 5u), V<U32>(part)), V<U32>(five ? 48u : 16u));
        BlockReader nibbles(k, add(k, block, V<U64>(to_u64(k, at))));
        BlockReader fifth(k, add(k, block, V<U64>(to_u64(k, add(k, part, V<U32>(16u))))));
        Reg<U32> shift = shl(k, and_(k, j, V<U32>(1u)), 2u);
        for (int i = 0; i < 16; ++i) {
          Reg<U32> q = and_(k, shr(k, nibbles.byte(i), V<U32>(shift)), V<U32>(15u));
          if (five) q = or_(k, q, V<U32>(shl(k, and_(k, shr(k, fifth.byte(i), V<U32>(j)), V<U32>(1u)), 4u)));
          weight(sub(k, mul(k, a, V<F32>(to_f32(k, q))), V<F32>(c)));
        }
      });
      return;
    }
    case quant::Format::q6_k: {  // 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d
      Reg<F32> d = r.f16(208);
      // 32 run-time steps of 8 weights (of 16, ptxas spilled on sm_75), each under the scale of its 16
      // (the int8 at 192 + step / 2). Sub-block j = step / 4 (32 weights): half h = j / 4, quarter
      // q = j % 4; its low nibbles in the 32 bytes at 64 h + 32 (q % 2) (shifted by 4 (q / 2)), its
      // high pairs in those at 128 + 32 h (by 2 q).
      for_range<U32>(k, V<U32>(0u), V<U32>(32u), V<U32>(1u), [&](Reg<U32> step) {
        Reg<U32> j = shr(k, step, 2u), part = shl(k, and_(k, step, V<U32>(3u)), 3u);
        Reg<U32> h = shr(k, j, 2u), q4 = and_(k, j, V<U32>(3u));
        Reg<U32> lo_at = add(k, add(k, shl(k, h, 6u), V<U32>(shl(k, and_(k, q4, V<U32>(1u)), 5u))), V<U32>(part));
        Reg<U32> hi_at = add(k, add(k, shl(k, h, 5u), V<U32>(128u)), V<U32>(part));
        Reg<U32> lo_shift = shl(k, shr(k, q4, 1u), 2u), hi_shift = shl(k, q4, 1u);
        Reg<U32> scale = byte_at(k, block, add(k, shr(k, step, 1u), V<U32>(192u)));
        Reg<F32> ds = mul(k, d, V<F32>(to_f32(k, signed8(k, scale))));
        BlockReader low(k, add(k, block, V<U64>(to_u64(k, lo_at))));
        BlockReader high(k, add(k, block, V<U64>(to_u64(k, hi_at))));
        for (int i = 0; i < 8; ++i) {
          Reg<U32> lo = and_(k, shr(k, low.byte(i), V<U32>(lo_shift)), V<U32>(15u));
          Reg<U32> hi = and_(k, shr(k, high.byte(i), V<U32>(hi_shift)), V<U32>(3u));
          Reg<S32> q = sub(k, bitcast<S32>(k, or_(k, lo, V<U32>(shl(k, hi, 4u)))), V<S32>(32));
          weight(mul(k, ds, V<F32>(to_f32(k, q))));
        }
      });
      return;
    }
  }
}

// Weight i (run time, below the block's count) of the block at `block`, as dequantize_block gives it.
Reg<F32> dequantize_element(Kernel& k, quant::Format f, Reg<U64> block, Reg<U32> i) {
  BlockReader r(k, block);
  switch (f) {
    case quant::Format::q8_0:  // f16 d, 32 int8
      return mul(k, to_f32(k, signed8(k, byte_at(k, block, add(k, i, V<U32>(2u))))), V<F32>(r.f16(0)));
    case quant::Format::q4_0: {  // f16 d; weight i the low nibble of byte i % 16, from 16 on the high one
      Reg<U32> b = byte_at(k, block, add(k, and_(k, i, V<U32>(15u)), V<U32>(2u)));
      Reg<U32> q = and_(k, shr(k, b, V<U32>(shr(k, and_(k, i, V<U32>(16u)), 2u))), V<U32>(15u));
      return mul(k, r.f16(0), V<F32>(to_f32(k, sub(k, bitcast<S32>(k, q), V<S32>(8)))));
    }
    case quant::Format::q4_k:
    case quant::Format::q5_k: {  // sub-block j = i / 32, weight l = i % 32 of it
      const bool five = f == quant::Format::q5_k;
      Reg<U32> j = shr(k, i, 5u), l = and_(k, i, V<U32>(31u));
      Reg<F32> sc, mn;
      scale_min(k, block, j, sc, mn);
      Reg<F32> a = mul(k, r.f16(0), V<F32>(sc)), c = mul(k, r.f16(2), V<F32>(mn));
      Reg<U32> at = add(k, add(k, shl(k, shr(k, j, 1u), 5u), V<U32>(l)), V<U32>(five ? 48u : 16u));
      Reg<U32> q = and_(k, shr(k, byte_at(k, block, at), V<U32>(shl(k, and_(k, j, V<U32>(1u)), 2u))), V<U32>(15u));
      if (five) {
        Reg<U32> h = byte_at(k, block, add(k, l, V<U32>(16u)));
        q = or_(k, q, V<U32>(shl(k, and_(k, shr(k, h, V<U32>(j)), V<U32>(1u)), 4u)));
      }
      return sub(k, mul(k, a, V<F32>(to_f32(k, q))), V<F32>(c));
    }
    case quant::Format::q6_k: {  // as dequantize_block: sub-block j = i / 32, half j / 4, quarter j % 4
      Reg<U32> j = shr(k, i, 5u), l = and_(k, i, V<U32>(31u));
      Reg<U32> h = shr(k, j, 2u), q4 = and_(k, j, V<U32>(3u));
      Reg<U32> lo_at = add(k, add(k, shl(k, h, 6u), V<U32>(shl(k, and_(k, q4, V<U32>(1u)), 5u))), V<U32>(l));
      Reg<U32> hi_at = add(k, add(k, shl(k, h, 5u), V<U32>(128u)), V<U32>(l));
      Reg<U32> lo = and_(k, shr(k, byte_at(k, block, lo_at), V<U32>(shl(k, shr(k, q4, 1u), 2u))), V<U32>(15u));
      Reg<U32> hi = and_(k, shr(k, byte_at(k, block, hi_at), V<U32>(shl(k, q4, 1u))), V<U32>(3u));
      Reg<S32> q = sub(k, bitcast<S32>(k, or_(k, lo, V<U32>(shl(k, hi, 4u)))), V<S32>(32));
      Reg<U32> scale = byte_at(k, block, add(k, shr(k, i, 4u), V<U32>(192u)));  // one int8 per 16 weights
      Reg<F32> ds = mul(k, r.f16(208), V<F32>(to_f32(k, signed8(k, scale))));
      return mul(k, ds, V<F32>(to_f32(k, q)));
    }
  }
  return mov<F32>(k, 0.0f);
}

constexpr TileShape tiles_shape{64, 64, 16, 4, 4};
constexpr std::uint32_t tiles_from = 8;  // rows of x from which matmul_quant_tiles runs the call

struct TilesConfig {
  std::string_view name;
  quant::Format format;
};
constexpr TilesConfig tiles_configs[] = {{"q8_0", quant::Format::q8_0},
                                         {"q4_0", quant::Format::q4_0},
                                         {"q4_k", quant::Format::q4_k},
                                         {"q5_k", quant::Format::q5_k},
                                         {"q6_k", quant::Format::q6_k}};

std::string generate_tiles(std::size_t config, Target target) {
  const TilesConfig& cfg = config_at(tiles_configs, config, "matmul_quant_tiles");
  const quant::FormatInfo fi = quant::info(cfg.format);
  Kernel k(kernel_name("matmul_quant_tiles", cfg.name), target);
  k.set_max_threads(tiles_shape.threads());
  Reg<U64> w_base = global_ptr<U16>(k, param<U64>(k, "w")).base;
  Reg<U64> x_base = global_ptr<F32>(k, param<U64>(k, "x")).base;
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U32> n = param<U32>(k, "n");
  Reg<U32> kdim = param<U32>(k, "k");
  Reg<U32> rows = param<U32>(k, "rows");
  Reg<U32> m = param<U32>(k, "m");
  Reg<U64> row_bytes = param<U64>(k, "row_bytes");
  Reg<U64> x_batch = param<U64>(k, "x_batch");
  Reg<U64> x_row = param<U64>(k, "x_row");
  Reg<U64> x_col = param<U64>(k, "x_col");
  Reg<U32> m0 = mul(k, special(k, Special::ctaid_y), V<U32>(std::uint32_t(tiles_shape.bm)));
  Reg<U32> n0 = mul(k, special(k, Special::ctaid_x), V<U32>(std::uint32_t(tiles_shape.bn)));
  Reg<U32> last_n = sub(k, n, V<U32>(1u)), last_k = sub(k, kdim, V<U32>(1u));
  const auto be = static_cast<std::uint32_t>(fi.block_elems);
  gemm_tiled(
      k, tiles_shape, rows, n, kdim, m0, n0,
      [&](Reg<U32> row, Reg<U32> col, Reg<Pred> inside) {  // x[row][col]
        Reg<U64> elem = add(k, mul(k, to_u64(k, div(k, row, V<U32>(m))), V<U64>(x_batch)),
                            V<U64>(mul(k, to_u64(k, rem(k, row, V<U32>(m))), V<U64>(x_row))));
        return load_f32_if(k, Elem::f32, x_base, add(k, elem, V<U64>(mul(k, to_u64(k, col), V<U64>(x_col)))), inside);
      },
      [&](Reg<U32> kk, Reg<U32> col, Reg<Pred> inside) {  // B[kk][col] = w[col][kk], 0 outside
        // the indices clamped into w, so every load is inside it whatever `inside` says
        Reg<U32> wn = min(k, col, V<U32>(last_n)), wk = min(k, kk, V<U32>(last_k));
        Reg<U64> block =
            add(k, add(k, w_base, V<U64>(mul(k, to_u64(k, wn), V<U64>(row_bytes)))),
                V<U64>(mul_wide(k, div(k, wk, V<U32>(be)), V<U32>(static_cast<std::uint32_t>(fi.block_bytes)))));
        Reg<F32> v = dequantize_element(k, cfg.format, block, and_(k, wk, V<U32>(be - 1)));
        return selp<F32>(k, v, mov<F32>(k, 0.0f), inside);
      },
      [&](Reg<U32> row, Reg<U32> col, Reg<F32> v) {
        st(k, element(k, y, add(k, mul_wide(k, row, V<U32>(n)), V<U64>(to_u64(k, col)))), V<F32>(v));
      });
  return module_text(k);
}

Launch tiles_geometry(std::size_t, std::span<const std::int64_t> sizes) {  // sizes = {n, rows}
  Launch l;
  l.block = {std::uint32_t(tiles_shape.threads()), 1, 1};
  l.grid = {blocks_for(size_at(sizes, 0), tiles_shape.bn, max_grid_x), blocks_for(size_at(sizes, 1), tiles_shape.bm),
            1};
  return l;
}

std::string generate_quant(std::size_t config, Target target) {
  const QuantConfig& cfg = config_at(quant_configs, config, "matmul_quant");
  const quant::FormatInfo fi = quant::info(cfg.format);
  Kernel k(kernel_name("matmul_quant", cfg.name), target);
  k.set_max_threads(quant_threads);
  Reg<U64> w_base = global_ptr<U16>(k, param<U64>(k, "w")).base;
  Reg<U64> x_base = global_ptr<F32>(k, param<U64>(k, "x")).base;
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  Reg<U32> blocks = param<U32>(k, "blocks");  // per row of w
  Reg<U32> rows = param<U32>(k, "rows");
  Reg<U32> m = param<U32>(k, "m");
  Reg<U64> row_bytes = param<U64>(k, "row_bytes");
  Reg<U64> x_batch = param<U64>(k, "x_batch");
  Reg<U64> x_row = param<U64>(k, "x_row");
  Reg<U64> x_col = param<U64>(k, "x_col");
  Reg<U64> items = param<U64>(k, "items");  // n * ceil(rows / R)

  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U64> first =
      add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(quant_warps)), V<U64>(to_u64(k, shr(k, tid, 5u))));
  Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(quant_warps));
  Reg<U64> col_bytes = shl(k, x_col, 2u);
  Reg<U64> block_x = mul(k, col_bytes, V<U64>(static_cast<std::uint64_t>(fi.block_elems)));  // x bytes per block
  const std::uint32_t R = cfg.rows;
  for_range<U64>(k, first, items, stride, [&](Reg<U64> item) {
    Reg<U64> nrow = rem(k, item, V<U64>(n));
    Reg<U32> row0 = mul(k, cvt<U32>(k, div(k, item, V<U64>(n))), V<U32>(R));
    Reg<U32> last = sub(k, rows, V<U32>(1u));
    std::vector<Reg<U64>> xa;  // each row's first element of x, as an address
    std::vector<Reg<F32>> acc;
    for (std::uint32_t r = 0; r < R; ++r) {
      Reg<U32> row = min(k, add(k, row0, V<U32>(r)), V<U32>(last));  // past the end: the last row again, not stored
      Reg<U64> elem = add(k, mul(k, to_u64(k, div(k, row, V<U32>(m))), V<U64>(x_batch)),
                          V<U64>(mul(k, to_u64(k, rem(k, row, V<U32>(m))), V<U64>(x_row))));
      xa.push_back(add(k, x_base, V<U64>(shl(k, elem, 2u))));
      acc.push_back(mov<F32>(k, 0.0f));
    }
    Reg<U64> w_row = add(k, w_base, V<U64>(mul(k, nrow, V<U64>(row_bytes))));
    for_range<U32>(k, lane, blocks, 32u, [&](Reg<U32> b) {
      Reg<U64> b64 = to_u64(k, b);
      Reg<U64> block = add(k, w_row, V<U64>(mul(k, b64, V<U64>(static_cast<std::uint64_t>(fi.block_bytes)))));
      std::vector<Reg<U64>> xp;
      for (std::uint32_t r = 0; r < R; ++r) xp.push_back(add(k, xa[r], V<U64>(mul(k, b64, V<U64>(block_x)))));
      dequantize_block(k, cfg.format, block, [&](Reg<F32> wv) {
        for (std::uint32_t r = 0; r < R; ++r) {  // xp: carried through the k-quants' sub-block loop
          fma_to(k, acc[r], wv, V<F32>(ld(k, Ptr<Global, F32>{xp[r], 0})));
          assign(k, xp[r], V<U64>(add(k, xp[r], V<U64>(col_bytes))));
        }
      });
    });
    for (std::uint32_t r = 0; r < R; ++r) {
      Reg<F32> total = warp_sum(k, acc[r]);
      Reg<U32> row = add(k, row0, V<U32>(r));
      Reg<Pred> store = setp(k, Cmp::lt, row, V<U32>(rows));
      Reg<Pred> lane0 = setp(k, Cmp::eq, lane, V<U32>(0u));
      Kernel::Guard g(k, and_(k, store, V<Pred>(lane0)), false);
      st(k, element(k, y, add(k, mul(k, to_u64(k, row), V<U64>(n)), V<U64>(nrow))), V<F32>(total));
    }
  });
  return module_text(k);
}

Launch quant_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {quant_threads, 1, 1};
  l.grid = {blocks_for(size_at(sizes, 0), quant_warps, max_grid_x), 1, 1};
  return l;
}

}  // namespace

const Generator& matmul_quant_generator() {
  static const Generator g{
      "matmul_quant",
      {OpKind::matmul, OpKind::gemv},
      config_names(quant_configs),
      generate_quant,
      "w: the blocks of row 0 of w (<format>_r<R>), x: f32*, y: f32* [rows, n] contiguous, n: u64 rows of w, "
      "blocks: u32 per row of w, rows: u32 rows of x, m: u32 rows per batch, row_bytes: u64, x_batch, x_row, "
      "x_col: u64 element strides (row i of x starts at (i / m) x_batch + (i % m) x_row), items: u64 n * ceil(rows / "
      "R)",
      "sizes = {items}; block 256; one warp per item (a row of w against R rows of x), grid ceil(items / 8)",
      quant_geometry};
  return g;
}

const Generator& matmul_quant_tiles_generator() {
  static const Generator g{
      "matmul_quant_tiles",
      {OpKind::matmul},
      config_names(tiles_configs),
      generate_tiles,
      "w: the blocks of row 0 of w (config: the format), x: f32*, y: f32* [rows, n] contiguous, n, k, rows, m: u32 "
      "(w's rows, its columns, x's rows, rows per batch), row_bytes: u64, x_batch, x_row, x_col: u64 element strides "
      "(row i of x starts at (i / m) x_batch + (i % m) x_row)",
      "sizes = {n, rows}; block 256 (64x64x16 tile, 4x4 per thread); grid (ceil(n/64), ceil(rows/64)); rows <= "
      "65535 * 64",
      tiles_geometry};
  return g;
}

std::optional<Steps> plan_quantized(const OpCall& c, bool gathered) {
  const bool gemv = c.op == OpKind::gemv;
  const Tensor& w = c.inputs[gemv ? 0 : 1];
  const Tensor& x = c.inputs[gemv ? 1 : 0];
  const bool trans_a = !gemv && std::get<MatmulParams>(c.params).trans_a;
  // x and y f32 (16-bit ones run between casts), y contiguous; w's rows whole blocks, contiguous.
  if (x.dtype() != DType::f32 || c.output.dtype() != DType::f32 || !w.is_contiguous()) return std::nullopt;
  if (!gathered && !x.is_contiguous()) return std::nullopt;
  const i64 n = w.dim(0), kk = w.dim(1);
  const i64 rows = gemv ? 1 : (kk ? x.numel() / kk : 0);
  const i64 m = gemv ? 1 : (trans_a ? x.dim(-1) : x.dim(-2));
  Steps steps;
  if (c.output.numel() == 0) return steps;
  if (kk == 0) {
    steps.zero_output = true;
    return steps;
  }
  if (rows > UINT32_MAX || kk / dtype_block_elems(w.dtype()) > UINT32_MAX) return std::nullopt;
  const quant::Format f = quant::format_of(w.dtype());
  if (rows >= tiles_from && rows <= i64{max_grid_yz} * tiles_shape.bm && n <= UINT32_MAX && kk <= UINT32_MAX) {
    const std::size_t config =
        config_index(tiles_configs, "matmul_quant_tiles", [&](const TilesConfig& t) { return t.format == f; });
    Plan& pl = steps.add(matmul_quant_tiles_generator(), config, {n, rows});
    pl.args.add_ptr(w);
    pl.args.add_ptr(x);
    pl.args.add_ptr(c.output);
    pl.args.add(static_cast<std::uint32_t>(n));
    pl.args.add(static_cast<std::uint32_t>(kk));
    pl.args.add(static_cast<std::uint32_t>(rows));
    pl.args.add(static_cast<std::uint32_t>(m));
    pl.args.add(static_cast<std::uint64_t>(dtype_bytes(w.dtype(), kk)));
    pl.args.add(static_cast<std::uint64_t>(m * kk));
    pl.args.add(static_cast<std::uint64_t>(trans_a ? 1 : kk));
    pl.args.add(static_cast<std::uint64_t>(trans_a ? m : 1));
    return steps;
  }
  const std::uint32_t r = rows >= quant_rows ? quant_rows : 1;
  const std::size_t config =
      *find_config(quant_configs, [&](const QuantConfig& q) { return q.format == f && q.rows == r; });
  const i64 items = n * ((rows + r - 1) / r);
  Plan& pl = steps.add(matmul_quant_generator(), config, {items});
  pl.args.add_ptr(w);
  pl.args.add_ptr(x);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n));
  pl.args.add(static_cast<std::uint32_t>(kk / dtype_block_elems(w.dtype())));
  pl.args.add(static_cast<std::uint32_t>(rows));
  pl.args.add(static_cast<std::uint32_t>(m));
  pl.args.add(static_cast<std::uint64_t>(dtype_bytes(w.dtype(), kk)));
  // x contiguous: [..., M, K] rows K apart; transposed ([..., K, M]) a row is a column, M apart
  pl.args.add(static_cast<std::uint64_t>(m * kk));
  pl.args.add(static_cast<std::uint64_t>(trans_a ? 1 : kk));
  pl.args.add(static_cast<std::uint64_t>(trans_a ? m : 1));
  pl.args.add(static_cast<std::uint64_t>(items));
  return steps;
}

}  // namespace trine::cuda::kernels
