// Helpers shared by the per-ISA kernel files (tails, sums, NaN-aware max, grains); per-ISA files only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/cpu_simd/isa.hpp"

namespace trine::cpu::TRINE_ISA_NS {

inline constexpr float f32_inf = std::numeric_limits<float>::infinity();
inline constexpr float f32_nan = std::numeric_limits<float>::quiet_NaN();

// Fewest elements one parallel_for chunk should cover: waking a pool worker costs a few
// microseconds, about what 32K floats of a memory-bound op or 4K transcendental ones take.
inline constexpr i64 grain_cheap = i64{1} << 15;
inline constexpr i64 grain_costly = i64{1} << 12;

// Chunk length (in items) for parallel_for when each item costs `work` elements.
inline i64 grain_for(i64 work_per_item, i64 grain_elems) {
  return std::max<i64>(1, grain_elems / std::max<i64>(1, work_per_item));
}

// 2^w for w in [-125, 126] (NaN gives NaN; outside the range, garbage: callers keep w in it), in 11
// vector operations, 6 of them FMAs, where xsimd::exp takes about 30 for the whole range and its
// special cases: w = n + r, n rounded by adding 1.5 * 2^23, r = w - n exact with |r| <= 1/2, 2^r =
// 1 + r P(r) with P a degree-5 least-squares fit (scripts/fit-gelu.py: 1.28 half-ulps in f32), then
// n added to the exponent bits, which stay normal and finite for -125 <= n <= 126. With NanSafe, n reaches the
// exponent through a conversion, so a NaN's payload cannot move the exponent of the NaN the result
// then is; without it (for a w that is never NaN) through t's low bits, one operation fewer.
template <bool NanSafe>
[[gnu::always_inline]] inline batch_f32 pow2_bounded(const batch_f32& w) {
  using batch_i32 = xsimd::batch<std::int32_t, Arch>;
  constexpr float c[] = {0.000154673646f, 0.00134004327f, 0.00961803552f, 0.0555032715f, 0.240226507f, 0.693147182f};
  const batch_f32 magic(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer, kept in t's low bits
  const batch_f32 t = w + magic;
  const batch_f32 n = t - magic;
  const batch_f32 r = w - n;
  batch_f32 p(c[0]);
#pragma GCC unroll 8
  for (int j = 1; j < 6; ++j) p = xsimd::fma(p, r, batch_f32(c[j]));
  const batch_f32 e = xsimd::fma(p, r, batch_f32(1.0f));
  const batch_i32 shift = (NanSafe ? xsimd::to_int(n) : xsimd::bitwise_cast<batch_i32>(t)) << 23;
  return xsimd::bitwise_cast<batch_f32>(xsimd::bitwise_cast<batch_i32>(e) + shift);
}

#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
// 2^(v/8) as the product q pw, for v in [-1000, 1008] (outside it, garbage: callers keep v in it):
// k = round(v), r = v - k exact with |r| <= 1/2, pw = 2^(k/8) from a table of the eight 2^(j/8)
// through a lane permute with k >> 3 added to the exponent bits, q = 2^(r/8) = 1 + r Q(r) with Q of
// degree 2 (scripts/fit-gelu.py: q pw within 2.61 half-ulps, pow2_bounded 1.28). Three FMAs where
// pow2_bounded takes six, for the permute and, to join the parts, a multiply the caller may fold
// into its own (gelu multiplies s by q). A NaN v makes q NaN, so q pw is NaN whatever pw holds.
// SSE4.2 has no lane permute.
inline constexpr bool has_pow2_eighths = true;
[[gnu::always_inline]] inline void pow2_eighths_parts(const batch_f32& v, batch_f32& q, batch_f32& pw) {
  const batch_f32 magic(12582912.0f);  // 1.5 * 2^23: adding it rounds v to an integer k, kept in t's low bits
  const batch_f32 t = v + magic;
  const batch_f32 r = v - (t - magic);
  q = xsimd::fma(
      xsimd::fma(xsimd::fma(batch_f32(0.000108419175f), r, batch_f32(0.00375402835f)), r, batch_f32(0.0866433978f)), r,
      batch_f32(1.0f));
  // Entry j holds the bits of 2^(j/8) less j << 20: adding t's bits shifted left by 20, which is k << 20
  // = ((k >> 3) << 23) + (j << 20) with j = k & 7, leaves 2^(j/8) with k >> 3 added to its exponent.
#if defined(TRINE_ISA_AVX512)
  const __m512i tab =
      _mm512_setr_epi32(0x3f800000, 0x3f7b95c2, 0x3f7837f0, 0x3f75fed7, 0x3f7504f3, 0x3f75672a, 0x3f7744fd, 0x3f7ac0c7,
                        0x3f800000, 0x3f7b95c2, 0x3f7837f0, 0x3f75fed7, 0x3f7504f3, 0x3f75672a, 0x3f7744fd, 0x3f7ac0c7);
  const __m512i ti = _mm512_castps_si512(t);
  pw = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_permutexvar_epi32(ti, tab), _mm512_slli_epi32(ti, 20)));
#else
  const __m256i tab =
      _mm256_setr_epi32(0x3f800000, 0x3f7b95c2, 0x3f7837f0, 0x3f75fed7, 0x3f7504f3, 0x3f75672a, 0x3f7744fd, 0x3f7ac0c7);
  const __m256i ti = _mm256_castps_si256(t);
  pw = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_permutevar8x32_epi32(tab, ti), _mm256_slli_epi32(ti, 20)));
#endif
}
[[gnu::always_inline]] inline batch_f32 pow2_eighths(const batch_f32& v) {
  batch_f32 q, pw;
  pow2_eighths_parts(v, q, pw);
  return q * pw;
}
#else
inline constexpr bool has_pow2_eighths = false;
#endif

// 2^(w / pow2_scale) for w in [pow2_lo, pow2_hi] (the exponent's [-125, 126], scaled), NaN kept:
// pow2_eighths where there is a lane permute (scale 8), else pow2_bounded (scale 1). Callers fold
// pow2_scale into the multiply that forms w, which stays exact since the scale is a power of two.
inline constexpr float pow2_scale = has_pow2_eighths ? 8.0f : 1.0f;
inline constexpr float pow2_lo = -125.0f * pow2_scale, pow2_hi = 126.0f * pow2_scale;
[[gnu::always_inline]] inline batch_f32 pow2_scaled(const batch_f32& w) {
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
  return pow2_eighths(w);
#else
  return pow2_bounded<true>(w);
#endif
}

// e^(k v) for k v <= 87 (above, garbage: callers keep it there), through pow2_scaled with the exponent
// clamped below where it is valid: k v under -86.6, -inf included, gives 2^-125 rather than 0. NaN
// stays NaN. k is folded with pow2_scale and log2(e) into one multiply.
[[gnu::always_inline]] inline batch_f32 exp_clamped(const batch_f32& v, float k) {
  return pow2_scaled(xsimd::max(batch_f32(pow2_lo), v * batch_f32(k * pow2_scale * 1.44269504f)));
}

// v where m is false and +0 where it is true. On AVX2 and SSE4.2 one andnot: xsimd::select(m, 0, v)
// is a blendv, which GCC turns into a sign test and an and, one operation more in the exp-heavy
// loops (gelu, sigmoid, softmax) that are short of vector ports on one core. AVX-512's select is
// already one masked move.
[[gnu::always_inline]] inline batch_f32 zero_where(const xsimd::batch_bool<float, Arch>& m, const batch_f32& v) {
#if defined(TRINE_ISA_AVX512)
  return xsimd::select(m, batch_f32(0.0f), v);
#elif defined(TRINE_ISA_AVX2)
  return _mm256_andnot_ps(m, v);
#else
  return _mm_andnot_ps(m, v);
#endif
}

// The first r lanes of p (0 <= r <= vec_width), the other lanes `fill`; and the store of the first
// r lanes. Tails run the same vector code as the body. AVX-512 and AVX2 use masked loads, AVX-512
// masked stores and AVX2 stores of 4, 2 and 1 lanes (no lane past r is read or written, so a tail at
// the end of an allocation is safe); SSE4.2 goes through a stack copy. (The stack copy's std::copy_n became a memmove
// call per tail: 13% of the depthwise kernel, whose 28-wide rows each end in one.)
#if defined(TRINE_ISA_AVX512)
inline __mmask16 lane_mask(i64 r) { return r >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << r) - 1); }
inline batch_f32 load_partial(const float* p, i64 r, float fill = 0.0f) {
  return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), lane_mask(r), p);
}
inline void store_partial(float* p, i64 r, const batch_f32& v) { _mm512_mask_storeu_ps(p, lane_mask(r), v); }
#elif defined(TRINE_ISA_AVX2)
inline __m256i lane_mask(i64 r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<i64>(r, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline batch_f32 load_partial(const float* p, i64 r, float fill = 0.0f) {
  const __m256i m = lane_mask(r);
  return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
// The store goes 4, 2 and 1 lanes at a time rather than through vmaskmovps, which Zen 2 and 3 run as
// microcode (depthwise conv2d, whose 28-wide rows each end in a partial vector, spent a quarter of
// its kernel time in that one store).
inline void store_partial(float* p, i64 r, const batch_f32& v) {
  __m128 part = _mm256_castps256_ps128(v);
  if (r >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  if (r >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(v, 1);
    p += 4;
    r -= 4;
  }
  if (r >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    part = _mm_movehl_ps(part, part);
    p += 2;
    r -= 2;
  }
  if (r >= 1) _mm_store_ss(p, part);
}
#else
inline batch_f32 load_partial(const float* p, i64 r, float fill = 0.0f) {
  alignas(64) float buf[vec_width];
  for (i64 i = 0; i < vec_width; ++i) buf[i] = i < r ? p[i] : fill;
  return batch_f32::load_aligned(buf);
}
inline void store_partial(float* p, i64 r, const batch_f32& v) {
  alignas(64) float buf[vec_width];
  v.store_aligned(buf);
  for (i64 i = 0; i < r; ++i) p[i] = buf[i];
}
#endif

#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
// v[i] = row i of an 8x8 block of floats; afterwards v[j] = column j. AVX2 shuffles, which the
// AVX-512 build has too (convert's cast and transpose, GEMM's A packing).
inline void transpose8x8(__m256* v) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

// Outputs of at least cpu::stream_store_bytes() bytes are written with non-temporal stores: an
// output that large cannot stay in the last-level cache for the next op anyway, and a normal store
// first reads every line it writes (for an op that reads one array and writes one, a third more
// memory traffic).
using cpu::stream_store_bytes;

// A non-temporal store of a whole vector to p, aligned to the vector's size.
inline void store_stream(float* p, const batch_f32& v) {
#if defined(TRINE_ISA_AVX512)
  _mm512_stream_ps(p, v);
#elif defined(TRINE_ISA_AVX2)
  _mm256_stream_ps(p, v);
#else
  _mm_stream_ps(p, v);
#endif
}

// Runs shorter than this are stored normally even when streaming: their partial lines at both
// ends would mix normal and non-temporal stores to one line, and each run pays a fence.
inline constexpr i64 stream_min_run = 1024;

// y[i, i + U * vec_width) = the U vectors block(i, out) writes to out, for each whole block of
// [0, n), and the first r <= vec_width lanes of part(i, r) for the rest (U > 1: for kernels whose
// one vector is a long dependency chain, computed U at once so their latencies overlap). With
// `stream` (and n >= stream_min_run), whole vectors at vector-aligned addresses are stored
// non-temporally (the unaligned head goes through part()), and the stores are fenced before the
// return, so the thread that waits for this chunk sees them.
//
// With Deferred, block(i, out, store_prev) is given store_prev(k), which stores the previous block's
// k-th vector (still in out until block() overwrites it; nothing for the first block), for a block
// that computes in passes to call during its first: its stores then spread over the whole block,
// instead of leaving in a burst of U that the core's write-combining buffers cannot take at once.
template <int U, class Block, class Part, bool Deferred = false>
inline void store_run_blocks(float* y, i64 n, bool stream, Block&& block, Part&& part,
                             std::bool_constant<Deferred> = {}) {
  constexpr i64 span = U * vec_width;
  i64 i = 0;
  const bool nt = stream && n >= stream_min_run;
  if (nt) {
    constexpr auto align = static_cast<std::uintptr_t>(vec_width * 4);
    i = std::min<i64>(n, static_cast<i64>((align - reinterpret_cast<std::uintptr_t>(y) % align) % align) / 4);
    if (i > 0) store_partial(y, i, part(i64{0}, i));
  }
  batch_f32 out[U];
  auto blocks = [&](auto store) __attribute__((always_inline)) {
    if constexpr (Deferred) {
      if (i + span > n) return;
      block(i, out, [](int) {});
      for (i += span; i + span <= n; i += span) {
        const i64 prev = i - span;
        block(
            i, out, [&](int k) __attribute__((always_inline)) { store(y + prev + k * vec_width, out[k]); });
      }
#pragma GCC unroll 4
      for (int k = 0; k < U; ++k) store(y + i - span + k * vec_width, out[k]);
    } else {
      for (; i + span <= n; i += span) {
        block(i, out);
#pragma GCC unroll 4
        for (int k = 0; k < U; ++k) store(y + i + k * vec_width, out[k]);
      }
    }
  };
  if (nt) {  // two loops: relu's vector is too little work to share with a branch
    blocks([](float* p, const batch_f32& v) __attribute__((always_inline)) { store_stream(p, v); });
  } else {
    blocks([](float* p, const batch_f32& v) __attribute__((always_inline)) { v.store_unaligned(p); });
  }
  for (; i < n; i += vec_width) {
    const i64 r = std::min(vec_width, n - i);
    store_partial(y + i, r, part(i, r));
  }
  if (nt) _mm_sfence();
}

// The same, a vector at a time: full(i) returns y[i, i + vec_width).
template <class Full, class Part>
inline void store_run(float* y, i64 n, bool stream, Full&& full, Part&& part) {
  store_run_blocks<1>(
      y, n, stream, [&](i64 i, batch_f32(&out)[1]) __attribute__((always_inline)) { out[0] = full(i); }, part);
}

inline float hsum(const batch_f32& v) { return xsimd::hadd(v); }

// Lane i of the result = hsum(rows[i]), for vec_width rows. xsimd 8.1's AVX-512 haddp returns the
// sums in lane order 0,1,4,5,2,3,6,7, 8,9,12,13,10,11,14,15 (a self-inverse order), so the order is
// probed once and undone; an order other than these two falls back to one hsum per row.
namespace detail {
struct HaddpOrder {
  static constexpr std::uint32_t get(std::uint32_t i, std::uint32_t) {
    const std::uint32_t k = i % 8;
    return i - k + (k == 2 || k == 3 ? k + 2 : (k == 4 || k == 5) ? k - 2 : k);
  }
};
inline int haddp_order() {  // 0: lane order, 1: xsimd 8.1's AVX-512 order, 2: unknown
  batch_f32 rows[vec_width];
  for (i64 i = 0; i < vec_width; ++i) rows[i] = batch_f32(static_cast<float>(i));
  alignas(64) float out[vec_width];
  xsimd::haddp(rows).store_aligned(out);
  bool same = true, known = vec_width == 16;
  for (i64 i = 0; i < vec_width; ++i) {
    same = same && out[i] == static_cast<float>(i * vec_width);
    known = known && out[i] == static_cast<float>(HaddpOrder::get(static_cast<std::uint32_t>(i), 0) * vec_width);
  }
  return same ? 0 : known ? 1 : 2;
}
}  // namespace detail

inline batch_f32 hsum_rows(const batch_f32* rows) {
  static const int order = detail::haddp_order();
  if (order == 0) return xsimd::haddp(rows);
  if constexpr (vec_width == 16) {
    if (order == 1)
      return xsimd::swizzle(xsimd::haddp(rows),
                            xsimd::make_batch_constant<xsimd::batch<std::uint32_t, Arch>, detail::HaddpOrder>());
  }
  alignas(64) float out[vec_width];
  for (i64 i = 0; i < vec_width; ++i) out[i] = hsum(rows[i]);
  return batch_f32::load_aligned(out);
}

// Lane-wise max that keeps NaN in either operand (maxps alone returns its 2nd operand on NaN).
inline batch_f32 max_nan(const batch_f32& a, const batch_f32& b) {
  return xsimd::select(xsimd::isnan(a) || xsimd::isnan(b), a + b, xsimd::max(a, b));
}

// Horizontal max; NaN if any lane is NaN.
inline float hmax_nan(const batch_f32& v) {
  alignas(64) float buf[vec_width];
  v.store_aligned(buf);
  float m = buf[0];
  for (i64 i = 1; i < vec_width; ++i) m = (std::isnan(m) || m >= buf[i]) ? m : buf[i];
  return m;
}

// Sum of f(x[i]) over [0, n) with four accumulators, flushed into a total every block so the
// rounding error grows with the block count, not with n. The tail is padded with 0: f(0) must be 0.
template <class F>
float sum_mapped(const float* p, i64 n, F&& f) {
  constexpr i64 block = 256 * vec_width;
  batch_f32 total(0.0f);
  i64 i = 0;
  while (i + 4 * vec_width <= n) {
    batch_f32 a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    const i64 end = std::min(n, i + block);
    for (; i + 4 * vec_width <= end; i += 4 * vec_width) {
      a0 += f(batch_f32::load_unaligned(p + i));
      a1 += f(batch_f32::load_unaligned(p + i + vec_width));
      a2 += f(batch_f32::load_unaligned(p + i + 2 * vec_width));
      a3 += f(batch_f32::load_unaligned(p + i + 3 * vec_width));
    }
    total += (a0 + a1) + (a2 + a3);
  }
  batch_f32 rest(0.0f);
  for (; i + vec_width <= n; i += vec_width) rest += f(batch_f32::load_unaligned(p + i));
  if (i < n) rest += f(load_partial(p + i, n - i));
  return hsum(total + rest);
}

// A column segment long enough to amortise a parallel_for item, short enough that one long row
// still spreads over the pool.
inline constexpr i64 segment_len = i64{1} << 16;

// Splits rows x cols into (row, column segment) items and calls fn(first_item, last_item, segs,
// seg) per chunk; a segment spans `seg` columns.
template <class F>
inline void for_row_segments(i64 rows, i64 cols, i64 grain_elems, F&& fn) {
  const i64 seg = std::max<i64>(1, std::min(cols, segment_len));
  const i64 segs = (cols + seg - 1) / seg;
  parallel_for(rows * segs, grain_for(seg, grain_elems), [&](i64 b, i64 e) { fn(b, e, segs, seg); });
}

}  // namespace trine::cpu::TRINE_ISA_NS
