// Rotary position embedding over [outer, L, D]: pair i of row l turns by (offset + l) * base^(-2i/D).
#include "backends/cpu_simd/isa.hpp"

#include <cmath>
#include <vector>

#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// Rows of one position handled per item: they share one cos/sin row.
constexpr i64 rows_per_item = 16;

struct PairSwap {  // lane i takes lane i ^ 1: (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)
  static constexpr std::uint32_t get(std::uint32_t i, std::uint32_t) { return i ^ 1u; }
};

using AlignedFloats = std::vector<float, xsimd::aligned_allocator<float, 64>>;

// cos and signed sin for one position, each duplicated over its pair: cs = (c0, c0, c1, c1, ...),
// sn = (-s0, s0, -s1, s1, ...), so y = x * cs + swap_pairs(x) * sn.
void build_row(double pos, const std::vector<double>& inv_freq, AlignedFloats& cs, AlignedFloats& sn) {
  // The angle is formed and reduced mod 2 pi in double: at position 1e5 a float angle would
  // already be off by ~4e-3 rad. Only the reduced angle goes through float sincos.
  constexpr double two_pi = 6.283185307179586476925;
  const i64 half = static_cast<i64>(inv_freq.size());
  for (i64 i = 0; i < half; ++i) {
    double ang = pos * inv_freq[static_cast<size_t>(i)];
    ang -= two_pi * std::nearbyint(ang / two_pi);
    cs[static_cast<size_t>(2 * i)] = cs[static_cast<size_t>(2 * i + 1)] = static_cast<float>(ang);
  }
  alignas(64) float sign[vec_width];
  for (i64 i = 0; i < vec_width; ++i) sign[i] = i % 2 == 0 ? -1.0f : 1.0f;
  const batch_f32 vsign = batch_f32::load_aligned(sign);
  for (size_t c = 0; c < cs.size(); c += vec_width) {
    const auto sc = xsimd::sincos(batch_f32::load_aligned(cs.data() + c));
    (sc.first * vsign).store_aligned(sn.data() + c);
    sc.second.store_aligned(cs.data() + c);
  }
}

void rotate_row(const float* x, float* y, i64 D, const float* cs, const float* sn) {
  constexpr auto swap_mask = xsimd::make_batch_constant<xsimd::batch<std::uint32_t, Arch>, PairSwap>();
  auto one = [&](const batch_f32& v, i64 c) {
    return xsimd::fma(v, batch_f32::load_aligned(cs + c),
                      xsimd::swizzle(v, swap_mask) * batch_f32::load_aligned(sn + c));
  };
  i64 c = 0;
  for (; c + vec_width <= D; c += vec_width) one(batch_f32::load_unaligned(x + c), c).store_unaligned(y + c);
  // D and vec_width are even, so the tail holds whole pairs.
  if (c < D) store_partial(y + c, D - c, one(load_partial(x + c, D - c), c));
}

void rope(const float* x, float* y, i64 outer, i64 L, i64 D, float base, i64 offset) {
  if (outer <= 0 || L <= 0 || D <= 0) return;
  TRINE_ASSERT(D % 2 == 0, "[rope] the op table let an odd head dimension through");  // rotate_row reads pairs
  std::vector<double> inv_freq(static_cast<size_t>(D / 2));
  for (i64 i = 0; i < D / 2; ++i)
    inv_freq[static_cast<size_t>(i)] =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
  const i64 blocks = (outer + rows_per_item - 1) / rows_per_item;
  const i64 dp = (D + vec_width - 1) / vec_width * vec_width;
  parallel_for(L * blocks, grain_for(D * std::min(outer, rows_per_item), grain_cheap), [&](i64 b, i64 e) {
    AlignedFloats cs(static_cast<size_t>(dp), 0.0f), sn(static_cast<size_t>(dp), 0.0f);
    i64 row_l = -1;
    for (i64 it = b; it < e; ++it) {
      const i64 l = it / blocks, o0 = (it % blocks) * rows_per_item;
      if (l != row_l) {  // items run position-major, so a chunk rebuilds the table once per position
        build_row(static_cast<double>(offset + l), inv_freq, cs, sn);
        row_l = l;
      }
      for (i64 o = o0; o < std::min(outer, o0 + rows_per_item); ++o)
        rotate_row(x + (o * L + l) * D, y + (o * L + l) * D, D, cs.data(), sn.data());
    }
  });
}

}  // namespace

void register_rope(KernelTable& t) { t.rope = rope; }

}  // namespace trine::cpu::TRINE_ISA_NS
