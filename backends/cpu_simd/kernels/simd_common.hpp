// Helpers shared by the per-ISA kernel files (tails, sums, NaN-aware max, grains); per-ISA files only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

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

// ---- e^x with its argument reduced in extended precision (issue 31) ----
//
// Units: u = 2^-24, half an ulp of [1, 2). A relative error of |x| u in the argument of e^ is |x| u
// in the result: rounding x log2(e) to f32 before reducing it (as this file once did) cost 60 ulps at
// x = -75. Here the reduction is Cody-Waite's, x - k ln2 / S (S = exp_scale) with ln2 / S split in
// two, so r carries no rounding of x's size; a caller whose argument is a sum of two floats passes
// the low part too.

// a b + c, a b - c and c - a b rounded once where there is FMA. xsimd 8.1 has no AVX-512 fma: its
// generic a * b + c is fused only where GCC contracts it, and a * b - p with p = a * b became p - p = 0
// (the product shared), so the AVX-512 forms are the intrinsics. SSE4.2 rounds twice.
[[gnu::always_inline]] inline batch_f32 fmadd(const batch_f32& a, const batch_f32& b, const batch_f32& c) {
#if defined(TRINE_ISA_AVX512)
  return _mm512_fmadd_ps(a, b, c);
#else
  return xsimd::fma(a, b, c);
#endif
}
[[gnu::always_inline]] inline batch_f32 fmsub(const batch_f32& a, const batch_f32& b, const batch_f32& c) {
#if defined(TRINE_ISA_AVX512)
  return _mm512_fmsub_ps(a, b, c);
#else
  return xsimd::fms(a, b, c);
#endif
}
[[gnu::always_inline]] inline batch_f32 fnmadd(const batch_f32& a, const batch_f32& b, const batch_f32& c) {
#if defined(TRINE_ISA_AVX512)
  return _mm512_fnmadd_ps(a, b, c);
#else
  return xsimd::fnma(a, b, c);
#endif
}

// a b = p + e exactly (a, b finite, |a b| far from overflow and underflow): one FMA where there is
// one; SSE4.2 has none, and splits a and b into halves of 12 bits (Veltkamp) whose four products are
// exact (Dekker). The split multiplies by 2^12 + 1, which overflows past 2^115: a factor of 2^100 or
// more is scaled by 2^-64 first and its error term back after, both exact (an attention score of
// 1.7e38 had made its low part NaN there, and its row NaN).
[[gnu::always_inline]] inline void two_prod(const batch_f32& a, const batch_f32& b, batch_f32& p, batch_f32& e) {
  p = a * b;
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
  e = fmsub(a, b, p);
#else
  const batch_f32 limit(0x1p100f), down(0x1p-64f), up(0x1p64f);
  const auto a_big = xsimd::abs(a) >= limit, b_big = xsimd::abs(b) >= limit;
  const batch_f32 as = xsimd::select(a_big, a * down, a), bs = xsimd::select(b_big, b * down, b);
  const batch_f32 ps = as * bs;
  const batch_f32 split(4097.0f);  // 2^12 + 1
  const batch_f32 ca = as * split, cb = bs * split;
  const batch_f32 ah = ca - (ca - as), bh = cb - (cb - bs);
  const batch_f32 al = as - ah, bl = bs - bh;
  e = (((ah * bh - ps) + ah * bl) + al * bh) + al * bl;
  e = xsimd::select(a_big, e * up, e);
  e = xsimd::select(b_big, e * up, e);
#endif
}

// a + b = s + e exactly, for any order of magnitudes (Knuth's TwoSum: six additions, no branch).
[[gnu::always_inline]] inline void two_sum(const batch_f32& a, const batch_f32& b, batch_f32& s, batch_f32& e) {
  s = a + b;
  const batch_f32 bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
// e^x = 2^(k/8) e^r, k = round(8 x log2 e), r = x - k ln2/8 in [-0.0434, 0.0434]: 2^(k/8) from a
// table of the eight 2^(j/8) through a lane permute with k >> 3 added to the exponent bits, e^r =
// 1 + r (1 + r (b2 + r b3)), the fit of scripts/fit-gelu.py's 2^(r/8) rescaled to base e (1.42u of
// e^r, checked over its whole range). Three FMAs for e^r where the eighth-less form needs six, for
// the permute. With FMA, r = x - k ln2/8 is rounded once from the exact difference, which is under
// 0.05: 2^-29 absolute whatever |x| is.
inline constexpr float exp_scale = 8.0f;
inline constexpr float exp_b[] = {0.166686207f, 0.500065148f, 1.0f};
#else
// SSE4.2 has no lane permute and no FMA: e^x = 2^k e^r, k = round(x log2 e), r = x - k ln2 in
// [-0.347, 0.347] with ln2 = 0x1.63p-1 (10 bits, so k times it is exact for |k| < 2^14, and x less
// it exact by Sterbenz's lemma) plus the rest; e^r = 1 + r P(r) with P of degree 5, the fit of
// scripts/fit-gelu.py's 2^r rescaled to base e (1.61u unfused).
inline constexpr float exp_scale = 1.0f;
inline constexpr float exp_b[] = {0.00139464461f, 0.00837512966f, 0.0416662619f, 0.166664153f, 0.5f, 1.0f};
#endif

// The reduction's pieces, for callers that form r from parts of their own (gelu): k = round(x S /
// ln2) as the float kf and in the low bits of t; ln2 / S = exp_ln2_hi + exp_ln2_lo.
inline constexpr long double exp_ln2 = 0.693147180559945309417232121458L;
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
inline constexpr float exp_ln2_hi = static_cast<float>(exp_ln2 / 8);
#else
inline constexpr float exp_ln2_hi = 0x1.63p-1f;
#endif
inline constexpr float exp_ln2_lo = static_cast<float>(exp_ln2 / exp_scale - exp_ln2_hi);
[[gnu::always_inline]] inline void exp_k(const batch_f32& x, batch_f32& t, batch_f32& kf) {
  const batch_f32 magic(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer k, kept in t's low bits
  t = fmadd(x, batch_f32(static_cast<float>(exp_scale / exp_ln2)), magic);
  kf = t - magic;
}

// q = e^r and pw = 2^(k / S + Bias) from exp_k's t: see exp_parts.
template <int Bias = 0>
[[gnu::always_inline]] inline void exp_q_pw(const batch_f32& r, const batch_f32& t, batch_f32& q, batch_f32& pw) {
  constexpr int degree = static_cast<int>(std::size(exp_b));
  batch_f32 p(exp_b[0]);
#pragma GCC unroll 8
  for (int j = 1; j < degree; ++j) p = fmadd(p, r, batch_f32(exp_b[j]));
  q = fmadd(p, r, batch_f32(1.0f));
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
  // Entry j holds the bits of 2^(j/8) 2^Bias less j << 20: adding t's bits shifted left by 20, which
  // is k << 20 = ((k >> 3) << 23) + (j << 20) with j = k & 7, leaves 2^(j/8) 2^Bias with k >> 3 added
  // to its exponent.
  constexpr int b = Bias << 23;
#if defined(TRINE_ISA_AVX512)
  const __m512i tab = _mm512_setr_epi32(
      0x3f800000 + b, 0x3f7b95c2 + b, 0x3f7837f0 + b, 0x3f75fed7 + b, 0x3f7504f3 + b, 0x3f75672a + b, 0x3f7744fd + b,
      0x3f7ac0c7 + b, 0x3f800000 + b, 0x3f7b95c2 + b, 0x3f7837f0 + b, 0x3f75fed7 + b, 0x3f7504f3 + b, 0x3f75672a + b,
      0x3f7744fd + b, 0x3f7ac0c7 + b);
  const __m512i ti = _mm512_castps_si512(t);
  pw = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_permutexvar_epi32(ti, tab), _mm512_slli_epi32(ti, 20)));
#else
  const __m256i tab = _mm256_setr_epi32(0x3f800000 + b, 0x3f7b95c2 + b, 0x3f7837f0 + b, 0x3f75fed7 + b,
                                        0x3f7504f3 + b, 0x3f75672a + b, 0x3f7744fd + b, 0x3f7ac0c7 + b);
  const __m256i ti = _mm256_castps_si256(t);
  pw = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_permutevar8x32_epi32(tab, ti), _mm256_slli_epi32(ti, 20)));
#endif
#else
  using batch_i32 = xsimd::batch<std::int32_t, Arch>;
  pw = xsimd::bitwise_cast<batch_f32>((xsimd::bitwise_cast<batch_i32>(t) + batch_i32(127 + Bias)) << 23);
#endif
}

// e^(x + x_lo) as the product q pw 2^-Bias, q = e^r within 1.42u (SSE4.2: 1.61u) in [0.958, 1.044]
// ([0.707, 1.414]), pw a power of two (times an entry of the table of eighths, rounded to f32:
// 0.5u) that stays normal while k / S + Bias is in [-126, 127]: callers keep x in [exp_lo - Bias
// ln2, 88 - Bias ln2]. Bias lets a caller whose e^x is subnormal but whose result is not (silu(-91)
// = -91 e^-91) scale by 2^-Bias last. |x_lo| <= ulp(x) or so; r adds it with one rounding. A NaN x
// makes q NaN, and so q pw, whatever pw holds. 10 vector operations (AVX2 and AVX-512), 11 with x_lo.
inline constexpr float exp_lo = -87.34f;  // e^x is under 2^-126 below it, and k >= -1008 (-126) above
template <int Bias = 0>
[[gnu::always_inline]] inline void exp_parts(const batch_f32& x, const batch_f32* x_lo, batch_f32& q, batch_f32& pw) {
  batch_f32 t, kf;
  exp_k(x, t, kf);
  batch_f32 r = fnmadd(kf, batch_f32(exp_ln2_hi), x);
  r = fnmadd(kf, batch_f32(exp_ln2_lo), r);
  if (x_lo) r += *x_lo;
  exp_q_pw<Bias>(r, t, q, pw);
}

// e^x for x <= 88, normal results exact to 1.42u + 1u (q pw's product) and the table's 0.5u;
// below exp_lo, where e^x < 2^-126 may flush, x is clamped there (-inf gives about 1.2e-38). NaN
// stays NaN (maxps returns its 2nd operand on NaN).
[[gnu::always_inline]] inline batch_f32 exp_bounded(const batch_f32& x) {
  batch_f32 q, pw;
  exp_parts(xsimd::max(batch_f32(exp_lo), x), nullptr, q, pw);
  return q * pw;
}

// e^(v - m) for v <= m (softmax's terms), v - m carried exactly as a sum of two floats: its rounding
// would cost |v - m| u, 44 ulps at e^-87. Terms under 2^-126 (v - m < exp_lo, -inf among them)
// are 0, as docs/ops.md lets kernels flush them; a NaN v or m, or v = m = +-inf, gives NaN.
// v_lo: a low part of v (attention's scaled scores are v + v_lo), added to the difference's. Its
// default is -0, which GCC drops (x + -0 is x for every x; x + +0 is not, for x = -0): one addition
// fewer a term for softmax, whose exp pass ran 5-8% faster for it (Zen 3, alternating in one process).
[[gnu::always_inline]] inline batch_f32 exp_diff(const batch_f32& v, const batch_f32& m,
                                                 const batch_f32& v_lo = batch_f32(-0.0f)) {
  batch_f32 d, d_lo, q, pw;
  two_sum(v, -m, d, d_lo);
  d_lo += v_lo;
  const batch_f32 lo(exp_lo);
  exp_parts(xsimd::max(lo, d), &d_lo, q, pw);
  return zero_where(d < lo, q * pw);
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
// Eight floats rounded to bf16 as f32_to_bf16 does (to nearest even; NaN kept quiet with its top
// payload bits), in integer arithmetic: the avx2 kernels' narrowing and the convert kernel's.
inline __m128i bf16_from_f32x8(const __m256& v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  // packus works within 128-bit lanes: [r0-3 r0-3 | r4-7 r4-7]; qwords 0 and 2 are r0..r7
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}
#endif

// ---- 16-bit storage: vec_width f16 or bf16 values as one batch_f32, and back ----
//
// Widening is exact. Narrowing rounds to nearest even, overflows to inf and keeps NaN quiet with
// its top payload bits, exactly as trine's f32_to_f16 / f32_to_bf16 (and so cast) do: vcvtps2ph for
// f16 (F16C on the avx2 and avx512 builds; the sse4_2 build converts f16 one lane at a time, in
// scalar code), integer arithmetic for bf16. The kernels that read and write 16-bit tensors in their
// own loops (the activations and scale, docs/ops.md's Dtypes) load and store through these.
using half_bits = std::uint16_t;

#if defined(TRINE_ISA_AVX512)
template <DType D>
inline batch_f32 load_wide(const half_bits* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (D == DType::f16) return _mm512_cvtph_ps(h);
  else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
template <DType D>
inline __m256i narrow(const batch_f32& v) {
  if constexpr (D == DType::f16) {
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan =
        _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i r = _mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
  }
}
template <DType D>
inline void store_narrow(half_bits* p, const batch_f32& v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow<D>(v));
}
template <DType D>
inline void store_narrow_stream(half_bits* p, const batch_f32& v) {  // p 32-byte aligned
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), narrow<D>(v));
}
#elif defined(TRINE_ISA_AVX2)
template <DType D>
inline batch_f32 load_wide(const half_bits* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (D == DType::f16) return _mm256_cvtph_ps(h);
  else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
template <DType D>
inline __m128i narrow(const batch_f32& v) {
  if constexpr (D == DType::f16) return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  else return bf16_from_f32x8(v);
}
template <DType D>
inline void store_narrow(half_bits* p, const batch_f32& v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow<D>(v));
}
template <DType D>
inline void store_narrow_stream(half_bits* p, const batch_f32& v) {  // p 16-byte aligned
  _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow<D>(v));
}
#else
template <DType D>
inline batch_f32 load_wide(const half_bits* p) {
  if constexpr (D == DType::f16) {
    alignas(16) float t[4];
    for (int i = 0; i < 4; ++i) t[i] = f16_to_f32(p[i]);
    return _mm_load_ps(t);
  } else {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16));
  }
}
template <DType D>
inline void store_narrow(half_bits* p, const batch_f32& v) {
  alignas(16) float t[4];
  _mm_store_ps(t, v);
  for (int i = 0; i < 4; ++i) p[i] = D == DType::f16 ? f32_to_f16(t[i]) : f32_to_bf16(t[i]);
}
template <DType D>
inline void store_narrow_stream(half_bits* p, const batch_f32& v) {
  store_narrow<D>(p, v);
}
#endif
// The first r lanes (0 <= r <= vec_width) through a stack copy: tails only.
template <DType D>
inline batch_f32 load_wide_partial(const half_bits* p, i64 r) {
  alignas(64) half_bits buf[vec_width] = {};
  for (i64 i = 0; i < r; ++i) buf[i] = p[i];
  return load_wide<D>(buf);
}
template <DType D>
inline void store_narrow_partial(half_bits* p, i64 r, const batch_f32& v) {
  alignas(64) half_bits buf[vec_width];
  store_narrow<D>(buf, v);
  for (i64 i = 0; i < r; ++i) p[i] = buf[i];
}

// The element type a tensor of dtype D (f32, f16 or bf16) is stored as; one element, and a vector or
// the first r lanes of one, loaded as f32.
template <DType D>
using elem_t = std::conditional_t<D == DType::f32, float, half_bits>;
template <DType D>
[[gnu::always_inline]] inline float scalar_f32(elem_t<D> v) {
  if constexpr (D == DType::f32) return v;
  else if constexpr (D == DType::f16) return f16_to_f32(v);
  else return bf16_to_f32(v);
}
template <DType D>
[[gnu::always_inline]] inline batch_f32 load_as(const elem_t<D>* p) {
  if constexpr (D == DType::f32) return batch_f32::load_unaligned(p);
  else return load_wide<D>(p);
}
// (the lanes past r hold `fill`)
template <DType D>
[[gnu::always_inline]] inline batch_f32 load_partial_as(const elem_t<D>* p, i64 r, float fill = 0.0f) {
  if constexpr (D == DType::f32) {
    return load_partial(p, r, fill);
  } else {
    const batch_f32 v = load_wide_partial<D>(p, r);
    if (fill == 0.0f) return v;
    alignas(64) float t[vec_width];
    v.store_aligned(t);
    for (i64 l = r; l < vec_width; ++l) t[l] = fill;
    return batch_f32::load_aligned(t);
  }
}

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
//
// store_run_blocks_as<U, Out> is the same for an output stored as Out (f32, or f16 / bf16 through
// store_narrow: the kernels still compute f32 vectors, each rounded once as it is stored).
template <int U, DType Out, class Block, class Part, bool Deferred = false>
inline void store_run_blocks_as(void* out_ptr, i64 n, bool stream, Block&& block, Part&& part,
                                std::bool_constant<Deferred> = {}) {
  static_assert(Out == DType::f32 || Out == DType::f16 || Out == DType::bf16);
  using T = std::conditional_t<Out == DType::f32, float, half_bits>;
  T* y = static_cast<T*>(out_ptr);
  auto put_partial = [](T* p, i64 r, const batch_f32& v) __attribute__((always_inline)) {
    if constexpr (Out == DType::f32) store_partial(p, r, v);
    else store_narrow_partial<Out>(p, r, v);
  };
  constexpr i64 span = U * vec_width;
  i64 i = 0;
  const bool nt = stream && n >= stream_min_run;
  if (nt) {
    // f32: whole vectors aligned to their size; 16-bit: the narrowed vector's (half of it)
    constexpr auto align = static_cast<std::uintptr_t>(vec_width * sizeof(T));
    i = std::min<i64>(n, static_cast<i64>((align - reinterpret_cast<std::uintptr_t>(y) % align) % align / sizeof(T)));
    if (i > 0) put_partial(y, i, part(i64{0}, i));
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
    blocks([](T* p, const batch_f32& v) __attribute__((always_inline)) {
      if constexpr (Out == DType::f32) store_stream(p, v);
      else store_narrow_stream<Out>(p, v);
    });
  } else {
    blocks([](T* p, const batch_f32& v) __attribute__((always_inline)) {
      if constexpr (Out == DType::f32) v.store_unaligned(p);
      else store_narrow<Out>(p, v);
    });
  }
  for (; i < n; i += vec_width) {
    const i64 r = std::min(vec_width, n - i);
    put_partial(y + i, r, part(i, r));
  }
  if (nt) _mm_sfence();
}

template <int U, class Block, class Part, bool Deferred = false>
inline void store_run_blocks(float* y, i64 n, bool stream, Block&& block, Part&& part,
                             std::bool_constant<Deferred> deferred = {}) {
  store_run_blocks_as<U, DType::f32>(y, n, stream, std::forward<Block>(block), std::forward<Part>(part), deferred);
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
template <DType D = DType::f32, class F>
float sum_mapped(const elem_t<D>* p, i64 n, F&& f) {
  constexpr i64 block = 256 * vec_width;
  batch_f32 total(0.0f);
  i64 i = 0;
  while (i + 4 * vec_width <= n) {
    batch_f32 a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    const i64 end = std::min(n, i + block);
    for (; i + 4 * vec_width <= end; i += 4 * vec_width) {
      a0 += f(load_as<D>(p + i));
      a1 += f(load_as<D>(p + i + vec_width));
      a2 += f(load_as<D>(p + i + 2 * vec_width));
      a3 += f(load_as<D>(p + i + 3 * vec_width));
    }
    total += (a0 + a1) + (a2 + a3);
  }
  batch_f32 rest(0.0f);
  for (; i + vec_width <= n; i += vec_width) rest += f(load_as<D>(p + i));
  if (i < n) rest += f(load_partial_as<D>(p + i, n - i));
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
