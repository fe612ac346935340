// Rotary position embedding over [outer, L, D]: pair i of row l turns by (offset + l) * base^(-2i/D);
// the pair is (x[2i], x[2i+1]) (interleaved) or (x[i], x[i + D/2]) (halves).
#include "backends/cpu_simd/isa.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// An item is a block of positions (their cos/sin rows built once, at most table_floats floats
// together) for up to rows_per_item of the outer rows: each outer row's positions of the block are
// one contiguous run of x. Position-major items over single rows (which they were) read 512-byte
// pieces 16 KiB apart for [4096, 32, 128], and ran at about half a copy's speed on the Xeon.
constexpr i64 rows_per_item = 16;
constexpr i64 table_floats = 8192;

struct PairSwap {  // lane i takes lane i ^ 1: (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)
  static constexpr std::uint32_t get(std::uint32_t i, std::uint32_t) { return i ^ 1u; }
};

using AlignedFloats = std::vector<float, xsimd::aligned_allocator<float, 64>>;

// cos and sin for one position. Interleaved: each duplicated over its pair, the sine signed:
// cs = (c0, c0, c1, c1, ...), sn = (-s0, s0, -s1, s1, ...), so y = x * cs + swap_pairs(x) * sn.
// Halves: cs = (c0, c1, ...), sn = (s0, s1, ...), one per pair. cs and sn hold dp floats.
void build_row(double pos, const std::vector<double>& inv_freq, bool halves, float* cs, float* sn, i64 dp) {
  // The angle is formed and reduced mod 2 pi in double: at position 1e5 a float angle would
  // already be off by ~4e-3 rad. Only the reduced angle goes through float sincos.
  constexpr double two_pi = 6.283185307179586476925;
  const i64 half = static_cast<i64>(inv_freq.size());
  for (i64 i = 0; i < half; ++i) {
    double ang = pos * inv_freq[static_cast<size_t>(i)];
    ang -= two_pi * std::nearbyint(ang / two_pi);
    if (halves)
      cs[i] = static_cast<float>(ang);
    else
      cs[2 * i] = cs[2 * i + 1] = static_cast<float>(ang);
  }
  alignas(64) float sign[vec_width];
  for (i64 i = 0; i < vec_width; ++i) sign[i] = i % 2 == 0 && !halves ? -1.0f : 1.0f;
  const batch_f32 vsign = batch_f32::load_aligned(sign);
  const i64 n = halves ? (half + vec_width - 1) / vec_width * vec_width : dp;  // halves uses the first half
  for (i64 c = 0; c < n; c += vec_width) {
    const auto sc = xsimd::sincos(batch_f32::load_aligned(cs + c));
    (sc.first * vsign).store_aligned(sn + c);
    sc.second.store_aligned(cs + c);
  }
}

// One vector of a row of y, stored as DT (f16 / bf16 rounded once).
template <bool Stream, DType DT>
void store_row_part(elem_t<DT>* y, const batch_f32& r) {
  if constexpr (DT == DType::f32) {
    if constexpr (Stream)
      store_stream(y, r);  // the caller checked that y's rows are whole aligned vectors
    else
      r.store_unaligned(y);
  } else if constexpr (Stream) {
    store_narrow_stream<DT>(y, r);
  } else {
    store_narrow<DT>(y, r);
  }
}

// x and y stored as DT (f16 / bf16 widened as loaded, rounded once as stored).
template <bool Stream, DType DT = DType::f32>
void rotate_row(const elem_t<DT>* x, elem_t<DT>* y, i64 D, const float* cs, const float* sn) {
  constexpr auto swap_mask = xsimd::make_batch_constant<xsimd::batch<std::uint32_t, Arch>, PairSwap>();
  auto one = [&](const batch_f32& v, i64 c) {
    return xsimd::fma(v, batch_f32::load_aligned(cs + c),
                      xsimd::swizzle(v, swap_mask) * batch_f32::load_aligned(sn + c));
  };
  i64 c = 0;
  for (; c + vec_width <= D; c += vec_width) {
    store_row_part<Stream, DT>(y + c, one(load_as<DT>(x + c), c));
  }
  // D and vec_width are even, so the tail holds whole pairs.
  if (c < D) {
    const batch_f32 r = one(load_partial_as<DT>(x + c, D - c), c);
    if constexpr (DT == DType::f32)
      store_partial(y + c, D - c, r);
    else
      store_narrow_partial<DT>(y + c, D - c, r);
  }
}

// The halves form: vectors of x[i..] and x[i + D/2 ..] turned by the same (cs, sn) lanes, no swizzle.
template <bool Stream, DType DT = DType::f32>
void rotate_row_halves(const elem_t<DT>* x, elem_t<DT>* y, i64 half, const float* cs, const float* sn) {
  auto both = [&](const batch_f32& a, const batch_f32& b, i64 c, batch_f32& ya, batch_f32& yb) {
    const batch_f32 co = batch_f32::load_aligned(cs + c), si = batch_f32::load_aligned(sn + c);
    ya = xsimd::fma(a, co, -(b * si));
    yb = xsimd::fma(b, co, a * si);
  };
  i64 c = 0;
  batch_f32 ya, yb;
  for (; c + vec_width <= half; c += vec_width) {
    both(load_as<DT>(x + c), load_as<DT>(x + half + c), c, ya, yb);
    store_row_part<Stream, DT>(y + c, ya);
    store_row_part<Stream, DT>(y + half + c, yb);
  }
  if (c < half) {
    both(load_partial_as<DT>(x + c, half - c), load_partial_as<DT>(x + half + c, half - c), c, ya, yb);
    if constexpr (DT == DType::f32) {
      store_partial(y + c, half - c, ya);
      store_partial(y + half + c, half - c, yb);
    } else {
      store_narrow_partial<DT>(y + c, half - c, ya);
      store_narrow_partial<DT>(y + half + c, half - c, yb);
    }
  }
}

template <DType DT = DType::f32>
void rope(const elem_t<DT>* x, elem_t<DT>* y, i64 outer, i64 L, i64 D, float base, i64 offset, bool halves) {
  if (outer <= 0 || L <= 0 || D <= 0) return;
  TRINE_ASSERT(D % 2 == 0, "[rope] the op table let an odd head dimension through");  // rotate_row reads pairs
  std::vector<double> inv_freq(static_cast<size_t>(D / 2));
  for (i64 i = 0; i < D / 2; ++i)
    inv_freq[static_cast<size_t>(i)] =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
  const i64 dp = (D + vec_width - 1) / vec_width * vec_width;
  const i64 lb = std::clamp<i64>(table_floats / dp, 1, L);  // positions per item
  const i64 lblocks = (L + lb - 1) / lb, oblocks = (outer + rows_per_item - 1) / rows_per_item;
  // Non-temporal stores (see store_run) where y is large and every row is whole aligned vectors.
  const bool stream = outer * L * D * static_cast<i64>(sizeof(elem_t<DT>)) >= stream_store_bytes() &&
                      (halves ? D / 2 : D) % vec_width == 0 &&
                      reinterpret_cast<std::uintptr_t>(y) % (vec_width * sizeof(elem_t<DT>)) == 0;
  parallel_for(lblocks * oblocks, grain_for(lb * D * std::min(outer, rows_per_item), grain_cheap), [&](i64 b, i64 e) {
    AlignedFloats cs(static_cast<size_t>(lb * dp), 0.0f), sn(cs.size(), 0.0f);
    i64 built = -1;
    for (i64 it = b; it < e; ++it) {
      const i64 blk = it / oblocks, o0 = (it % oblocks) * rows_per_item;
      const i64 l0 = blk * lb, l1 = std::min(L, l0 + lb);
      if (blk != built) {  // items run block-major, so a chunk builds each block's table once
        for (i64 l = l0; l < l1; ++l)
          build_row(static_cast<double>(offset + l), inv_freq, halves, cs.data() + (l - l0) * dp,
                    sn.data() + (l - l0) * dp, dp);
        built = blk;
      }
      auto rows = [&](auto stream) {
        for (i64 o = o0; o < std::min(outer, o0 + rows_per_item); ++o)
          for (i64 l = l0; l < l1; ++l) {
            const float *c = cs.data() + (l - l0) * dp, *s = sn.data() + (l - l0) * dp;
            if (halves)
              rotate_row_halves<decltype(stream)::value, DT>(x + (o * L + l) * D, y + (o * L + l) * D, D / 2, c, s);
            else
              rotate_row<decltype(stream)::value, DT>(x + (o * L + l) * D, y + (o * L + l) * D, D, c, s);
          }
      };
      stream ? rows(std::true_type{}) : rows(std::false_type{});
    }
    if (stream) _mm_sfence();
  });
}

void run_rope(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& p = std::get<RopeParams>(call.params);
  const Tensor& x = call.inputs[0];
  const i64 d = x.dim(-1), l = x.dim(-2);
  const i64 outer = call.output.numel() / (l * d);
  Tensor keep;
  const std::uint8_t* xs = contiguous_bytes(k, x, keep);
  std::uint8_t* ys = base_ptr(call.output);
  const bool halves = p.pairs == RopePairs::halves;
  // The position input (an i32 of one element in host memory), read now that the call runs: a batch
  // replays this call with whatever its earlier entries or upload left there.
  const i64 offset = p.position_offset +
                     (call.inputs.size() > 1 ? *reinterpret_cast<const std::int32_t*>(base_ptr(call.inputs[1])) : 0);
  // x: the result has its dtype, and 16-bit rows are rotated as stored
  switch (x.dtype()) {
    case DType::f16:
      return rope<DType::f16>(reinterpret_cast<const half_bits*>(xs), reinterpret_cast<half_bits*>(ys), outer, l, d,
                              p.base, offset, halves);
    case DType::bf16:
      return rope<DType::bf16>(reinterpret_cast<const half_bits*>(xs), reinterpret_cast<half_bits*>(ys), outer, l, d,
                               p.base, offset, halves);
    default:
      return rope(reinterpret_cast<const float*>(xs), reinterpret_cast<float*>(ys), outer, l, d, p.base, offset,
                  halves);
  }
}

}  // namespace

void register_rope(KernelTable& t) { t.ops.add(OpKind::rope, run_rope); }

}  // namespace trine::cpu::TRINE_ISA_NS
