// Element-wise ops of one input: the activations, scale, and bias + activation.
#include "backends/cpu_simd/isa.hpp"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"
#include "backends/gelu_erf_fit.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// How far ahead (floats) the costly activations prefetch their input. Their arithmetic (an exp,
// an erfc: 8-30 cycles a vector) kept the hardware prefetcher from running far enough ahead, so
// memory stalls added to the compute instead of overlapping it. Measured on a Xeon (16M floats,
// one thread, against a STREAM copy): sigmoid 0.77 -> 1.02-1.06, gelu 0.43 -> 0.72-0.74; 256,
// 1024 and 2048 floats ahead measured the same.
constexpr i64 prefetch_ahead = 512;

constexpr bool act_costly(Activation a) {
  return !(a == Activation::identity || a == Activation::relu || a == Activation::leaky_relu || a == Activation::clip ||
           a == Activation::sqrt || a == Activation::rsqrt || a == Activation::abs || a == Activation::neg);
}

// gelu for U vectors: gelu(x) = x Phi(x) = max(x, 0) - F(a), a = |x|, F(a) = a erfc(a / sqrt 2) / 2,
// for either sign (for x < 0 it is -F(a), where 1 + erf(x / sqrt 2) would cancel: 1e-3 relative at
// -4). F(a) = s e^(G(s) - a^2 / 2) with s = a / (K + a) in [0, 1), K = 2 sqrt 2: G(s) =
// ln((K + a) erfc(a / sqrt 2) / 2) + a^2 / 2 is smooth with G(0) = ln(2) / 2, a polynomial below.
//
// The exponent reaches -86 while F is normal, so it is not rounded to f32 (that cost |exponent| u,
// 42 ulps near x = -13): a^2 = h + l exactly (two_prod), and e^(p - h/2 - l/2) is reduced as
// Cody-Waite's r = ((-h/2 - k ln2/S) + p) - k ln2_lo/S - l/2 with k from p - h/2 rounded (exp_k):
// the first difference is rounded once from its exact value, under 1 in size (2^-25 absolute),
// the rest are under 0.05.
//
// Two passes over the U vectors: the first takes x to s and the reduced exponent (r, t), the second
// takes e^r 2^(k/S) to the result. In one pass a vector was a chain of about 100 cycles (a division,
// 8 FMAs, the exp) that the out-of-order window overlapped only 2-3 deep: 25-30 cycles a vector on
// Zen 3 against ~10 of arithmetic. Each pass is half the chain, and a block of gelu_block vectors
// gives the core many independent ones (with 4096 floats in L1 on Zen 3: 5.2 ns a vector, against
// 7.3 for the best interleave of one pass, and 7.4-10 for the old natural-base form).
//
// What holds it at ~20 cycles a vector on Zen 3 (AVX2) is not its multiply work, about 27 FMA-port
// slots (23 FMAs and multiplies, the division and the permute at ~2 each: ~13.5 cycles). On Zen 3 the
// FMAs, multiplies, blendv, the permute and the division share two ports, the additions, min, max and
// compares the other two, the logic and integer operations neither (each kind timed beside 10
// independent FMAs, then beside 10 additions). Tried on 2026-11-29, this loop copied into a
// standalone program over 4096 floats in L1, old and new alternating 40 times, ratios of medians:
// -a/2 by integer operations and l added rather than FMA'd (two FMA-port slots fewer, the same
// results) 1.00-1.07; the division replaced by a multiply (timing only) 0.99-1.03; one pass over
// groups of 4 vectors with the constants loaded once a group 0.94-1.02, and with the polynomial split
// into even and odd powers too (a chain half as long) 0.88-0.93, but 4.1 ulps where Horner's order
// keeps 3.99. The VM exposes no performance counters to say more.
//
// |x| is capped at 13.15: past it F(a) < 2^-126, so x >= 13.15 gives x and x <= -13.15 gives 0 (which
// the measure lets flush), which also takes -inf to 0 rather than to inf - inf. At the cap k / S is
// above -125.8, so 2^(k/S) stays normal. A NaN x takes the cap (minps returns its 2nd operand on
// NaN), so the exponent is never NaN, and comes out through max(0, x), which returns x; with AVX-512
// one vrangeps takes x to min(|x|, cap) and keeps a NaN, which then makes q, and so the result, NaN.
// Signed zeros are kept. xsimd::erfc, which takes both of its branches' rationals and an exp, ran at
// 0.35 of a copy.
//
// AVX-512 runs on two vector ports, where AVX2 on Zen 3 had four, so the operation count is the
// time there: vrangeps for abs and min, and a zero-masked FMA for the x < -cap select.
//
// load(k) returns the k-th input vector. It is called once in each pass, so x is read again from L1
// rather than kept in a block-long array. prefetch(k) is called at the first pass's step k.
constexpr float gelu_cap = trine::detail::gelu_erf_cap;
template <int U, class Load, class Prefetch>
[[gnu::always_inline]] inline void gelu_erf(Load&& load, batch_f32 (&y)[U], Prefetch&& prefetch) {
  // G's fit (backends/gelu_erf_fit.hpp, shared with cuda): 0.04u from G, 1.8u with its f32
  // evaluation. The degree-8 fit before it, weighted for the older measure, was 70u off near a = 10.
  const auto& g = trine::detail::gelu_erf_g;
  batch_f32 s[U], r[U], t[U];
  // The first pass's chain (a division, 11 FMAs of Horner, the reduction: about 70 cycles) is run
  // for G vectors side by side, step by step: the out-of-order window, whose scheduler holds a few
  // dozen waiting operations, then finds G independent ones at each step instead of the next
  // vector's start 30 operations later. Same operations, same results. Zen 3 (AVX2), one thread,
  // 64K floats in L2, alternating: 8.6-9.9 ns a vector one at a time, 6.9-7.7 with G = 4, 6.1-7.2
  // with G = 8; 16M floats, old and new builds alternating, medians of three runs each: one thread
  // 23.8-26.1 ms -> 14.0-18.4, two 12.0-15.1 -> 9.0-9.4. AVX-512 keeps one at a time until it is
  // measured on a machine that has it.
#if defined(TRINE_ISA_AVX512)
  constexpr int G = 1;
#else
  constexpr int G = U % 8 == 0 ? 8 : U % 4 == 0 ? 4 : 1;
#endif
  for (int k0 = 0; k0 < U; k0 += G) {
    batch_f32 a[G], p[G], h[G], l[G], kf[G];
#pragma GCC unroll 8
    for (int i = 0; i < G; ++i) {
      prefetch(k0 + i);
#if defined(TRINE_ISA_AVX512)
      a[i] = _mm512_range_ps(load(k0 + i), batch_f32(gelu_cap), 0xa);  // the smaller magnitude, sign cleared
#else
      a[i] = xsimd::min(xsimd::abs(load(k0 + i)), batch_f32(gelu_cap));
#endif
      s[k0 + i] = a[i] / (batch_f32(trine::detail::gelu_erf_k) + a[i]);
      p[i] = batch_f32(g[0]);
    }
#pragma GCC unroll 12
    for (int j = 1; j < 12; ++j) {
#pragma GCC unroll 8
      for (int i = 0; i < G; ++i) p[i] = fmadd(p[i], s[k0 + i], batch_f32(g[j]));
    }
#pragma GCC unroll 8
    for (int i = 0; i < G; ++i) {
      two_prod(a[i], a[i], h[i], l[i]);
      h[i] = h[i] * batch_f32(-0.5f);
      exp_k(h[i] + p[i], t[k0 + i], kf[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < G; ++i) {
      batch_f32 rk = fnmadd(kf[i], batch_f32(exp_ln2_hi), h[i]) + p[i];
      rk = fnmadd(kf[i], batch_f32(exp_ln2_lo), rk);
      r[k0 + i] = fmadd(l[i], batch_f32(-0.5f), rk);
    }
  }
  for (int k = 0; k < U; ++k) {
    const batch_f32 x = load(k);
    batch_f32 q, pw;
    exp_q_pw(r[k], t[k], q, pw);
#if defined(TRINE_ISA_AVX512)
    y[k] = _mm512_maskz_fnmadd_ps(_mm512_cmp_ps_mask(x, batch_f32(-gelu_cap), _CMP_NLT_UQ), s[k] * q, pw,
                                  xsimd::max(batch_f32(0.0f), x));
#else
    y[k] = zero_where(x < batch_f32(-gelu_cap), xsimd::fnma(s[k] * q, pw, xsimd::max(batch_f32(0.0f), x)));
#endif
  }
}

// Vectors per block of gelu's two passes: enough independent chains to fill the out-of-order
// window, few enough that the block's x, s, r and t stay in L1. Rows shorter than a block (bias_act's)
// go gelu_short_block vectors a step: a vector at a time, they took twice as long.
constexpr int gelu_block = 64;
constexpr int gelu_short_block = 4;

// num / (1 + e^-(v + v_lo)) for sigmoid (num = 1), silu (num = x) and gelu_tanh (num = x; v + v_lo
// its argument, a sum of two floats), through T = e^-|v| 2^64 (exp_parts with Bias 64), t = T 2^-64:
// - v >= 0: num / (1 + t);
// - v < 0: num e^v / (1 + e^v) = (num_neg T / (1 + t)) 2^-64, scaled last, so e^v may be subnormal
//   where the result is not (silu(-91.2) = -2.3e-38 = -91.2 e^-91.2).
// |v| is clamped at 120 (e^-120 2^64 is still normal; past it the result is 0 or num in f32), and
// num_neg is num clamped where the result is 0 anyway, so that -inf gives 0 rather than -inf 0. A
// NaN v stays NaN through the clamp (maxps returns its 2nd operand on NaN) and fails v < 0.
// Error: T within 1.42u + 1.5u (q, the table's rounding, their product), 1 + t (1u more, and T's error
// scaled by t / (1 + t) <= 1/2), the division (1u): about 5u for v >= 0, 6.4u for v < 0 (num_neg T
// rounds once more; 3.2 ulps).
[[gnu::always_inline]] inline batch_f32 logistic(const batch_f32& v, const batch_f32* v_lo, const batch_f32& num,
                                                 const batch_f32& num_neg) {
  const auto neg = v < batch_f32(0.0f);
  const batch_f32 na = xsimd::max(batch_f32(-120.0f), xsimd::bitwise_or(v, batch_f32(-0.0f)));  // -|v|
  batch_f32 q, pw;
  if (v_lo) {
    const batch_f32 lo = xsimd::select(neg, *v_lo, -*v_lo);  // -|v + v_lo| = -|v| -+ v_lo
    exp_parts<64>(na, &lo, q, pw);
  } else {
    exp_parts<64>(na, nullptr, q, pw);
  }
  const batch_f32 big = q * pw;
  const batch_f32 n = xsimd::select(neg, num_neg * big, num);
  return n / fmadd(big, batch_f32(0x1p-64f), batch_f32(1.0f)) *
         xsimd::select(neg, batch_f32(0x1p-64f), batch_f32(1.0f));
}

// gelu_tanh = x sigmoid(v), v = 2 sqrt(2/pi) (x + 0.044715 x^3) = x (c1 + c2 x^2) ((1 + tanh(u)) / 2
// == 1 / (1 + e^-2u): no cancellation for x << 0). v reaches -90 where the result is still normal,
// so rounding it to f32 would cost |v| u (44 ulps at x = -10): v is formed as a sum of two floats,
// c1 and c2 split in two, x^2 exact (two_prod), c1 + c2 x^2 by two_sum, the product by two_prod:
// within about 2^-44 relative. x is clamped to [-12, 12] for v (beyond, the result is 0 or x; a NaN
// stays NaN: maxps and minps return their 2nd operand on NaN).
[[gnu::always_inline]] inline batch_f32 gelu_tanh_f32(const batch_f32& x) {
  constexpr long double c1 = 1.5957691216057307117597842L;  // 2 sqrt(2 / pi)
  constexpr long double c2 = c1 * 0.044715L;
  constexpr float c1_hi = static_cast<float>(c1), c1_lo = static_cast<float>(c1 - c1_hi);
  constexpr float c2_hi = static_cast<float>(c2), c2_lo = static_cast<float>(c2 - c2_hi);
  const batch_f32 xc = xsimd::min(batch_f32(12.0f), xsimd::max(batch_f32(-12.0f), x));
  batch_f32 x2, x2_lo, u, u_lo, w, w_lo, v, v_lo;
  two_prod(xc, xc, x2, x2_lo);
  two_prod(x2, batch_f32(c2_hi), u, u_lo);  // c2 x^2 = u + u_lo
  u_lo = fmadd(x2_lo, batch_f32(c2_hi), fmadd(x2, batch_f32(c2_lo), u_lo));
  two_sum(batch_f32(c1_hi), u, w, w_lo);  // c1 + c2 x^2 = w + w_lo
  w_lo += u_lo + batch_f32(c1_lo);
  two_prod(xc, w, v, v_lo);
  v_lo = fmadd(xc, w_lo, v_lo);
  return logistic(v, &v_lo, x, xc);
}

// tanh(x) = sign(x) t(a), a = |x|: below a = 0.625, t = a + a z P(z) with z = a^2 and P of degree 4;
// from there up, t = (1 - e) / (1 + e), e = e^-2a <= 0.29 (1 - e cancels nothing), e from
// exp_bounded, which takes +-inf to +-1. scripts/fit-tanh.py fits P. A NaN fails a < 0.625 and goes
// through e, which keeps it. The sign is x's bit, so -0 stays -0. xsimd::tanh, which evaluates both
// of its branches with a full exp, ran at 7.2 GB/s on 16M floats on one Zen 3 core, against 26 for
// relu.
[[gnu::always_inline]] inline batch_f32 tanh_fast(const batch_f32& x) {
  const batch_f32 a = xsimd::abs(x);
  const batch_f32 z = a * a;
  batch_f32 p(-0.006104948f);
  p = xsimd::fma(p, z, batch_f32(0.0210036412f));
  p = xsimd::fma(p, z, batch_f32(-0.0538524985f));
  p = xsimd::fma(p, z, batch_f32(0.133327827f));
  p = xsimd::fma(p, z, batch_f32(-0.333333284f));
  const batch_f32 small = xsimd::fma(a * z, p, a);
  const batch_f32 e = exp_bounded(a * batch_f32(-2.0f));
  const batch_f32 large = (batch_f32(1.0f) - e) / (batch_f32(1.0f) + e);
  const batch_f32 t = xsimd::select(a < batch_f32(0.625f), small, large);
  return xsimd::bitwise_or(t, xsimd::bitwise_and(x, batch_f32(-0.0f)));
}

// e^x - 1 for x < 0 (elu's negative side; other x give garbage, which elu does not select). Above
// -1/2, Taylor's series to x^8 (its remainder under |x|^9 / 9! < 6e-9 |x|), which keeps the relative
// accuracy that e^x - 1 loses near 0; from -1/2 down, e^x from exp_bounded (so -inf gives -1)
// minus 1, where e^x <= 0.61 cancels nothing. xsimd::expm1
// ran at 10 GB/s on 16M floats on one Zen 3 core, against 26 for relu; on the Xeon 9.3 against
// 17.8.
[[gnu::always_inline]] inline batch_f32 expm1_neg(const batch_f32& x) {
  constexpr float c[] = {1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f};
  batch_f32 p(c[0]);
#pragma GCC unroll 8
  for (int j = 1; j < 7; ++j) p = xsimd::fma(p, x, batch_f32(c[j]));
  const batch_f32 small = xsimd::fma(x * x, p, x);
  const batch_f32 e = exp_bounded(x);
  return xsimd::select(x > batch_f32(-0.5f), small, e - batch_f32(1.0f));
}

// f(x) evaluated in f64 lanes and rounded once to f32: exp's and pow's results, whose f32
// evaluations lose |x| 2^-24 relative in the argument reduction (x log2 e rounded, y log x
// rounded), come out within half an ulp and a hair of the exact function, subnormal results and
// the last finite octave (xsimd's f32 exp gives inf from 88.38 on) included.
template <class F>
[[gnu::always_inline]] inline batch_f32 via_f64(const batch_f32& x, F&& f) {
  using batch_f64 = xsimd::batch<double, Arch>;
  alignas(64) float buf[vec_width];
  x.store_aligned(buf);
  for (i64 h = 0; h < vec_width; h += static_cast<i64>(batch_f64::size)) {
    f(batch_f64::load_unaligned(buf + h)).store_unaligned(buf + h);
  }
  return batch_f32::load_aligned(buf);
}

// x^p for the scalar p, C's pow rules: p = 0 or x = 1 give 1 (NaN or not); a negative x takes
// integer p only (else NaN), the sign following an odd p; +-inf and +-0 go through log and exp as
// their limits do; x = -1 with p = +-inf is 1.
[[gnu::always_inline]] inline batch_f32 pow_scalar(const batch_f32& x, float p) {
  using batch_f64 = xsimd::batch<double, Arch>;
  const double pd = p;
  const bool p_inf = std::isinf(pd), p_int = p_inf || (std::isfinite(pd) && std::nearbyint(pd) == pd);
  const bool p_odd = !p_inf && p_int && std::fmod(std::fabs(pd), 2.0) == 1.0;
  if (pd == 0.0) return batch_f32(1.0f);
  return via_f64(x, [&](const batch_f64& v) {
    batch_f64 r = xsimd::exp(batch_f64(pd) * xsimd::log(xsimd::abs(v)));
    if (p_odd) r = xsimd::copysign(r, v);
    if (!p_int) r = xsimd::select(v < batch_f64(0.0), batch_f64(std::numeric_limits<double>::quiet_NaN()), r);
    if (p_inf) r = xsimd::select(v == batch_f64(-1.0), batch_f64(1.0), r);
    return xsimd::select(v == batch_f64(1.0), batch_f64(1.0), r);
  });
}

// The activation primitives that ops.def's formulas (TRINE_ACT) call, a batch at a time. below and
// above select on `v < c` and `v > c`, which are false for NaN, so NaN passes through (maxps would
// return the 2nd operand and drop it). logistic's select and gelu's on x < -gelu_cap fix the -inf
// limits, where the plain formulas give -inf * 0 = NaN.
template <class C, class A, class B>
[[gnu::always_inline]] inline batch_f32 below(const batch_f32& v, const C& c, const A& a, const B& b) {
  return xsimd::select(v < batch_f32(c), batch_f32(a), batch_f32(b));
}
template <class C, class A, class B>
[[gnu::always_inline]] inline batch_f32 above(const batch_f32& v, const C& c, const A& a, const B& b) {
  return xsimd::select(v > batch_f32(c), batch_f32(a), batch_f32(b));
}
[[gnu::always_inline]] inline batch_f32 sigmoid_f32(const batch_f32& x) {
  return logistic(x, nullptr, batch_f32(1.0f), batch_f32(1.0f));
}
[[gnu::always_inline]] inline batch_f32 tanh_f32(const batch_f32& x) { return tanh_fast(x); }
[[gnu::always_inline]] inline batch_f32 silu_f32(const batch_f32& x) {
  return logistic(x, nullptr, x, xsimd::max(x, batch_f32(-120.0f)));
}
[[gnu::always_inline]] inline batch_f32 gelu_erf(const batch_f32& x) {
  batch_f32 y[1];
  gelu_erf<1>([&](int) { return x; }, y, [](int) {});
  return y[0];
}
[[gnu::always_inline]] inline batch_f32 exp_f32(const batch_f32& x) {
  return via_f64(x, [](const auto& v) { return xsimd::exp(v); });
}
// within an ulp, relative to log x also near 1 (x - 1 is exact there)
[[gnu::always_inline]] inline batch_f32 log_f32(const batch_f32& x) { return xsimd::log(x); }
[[gnu::always_inline]] inline batch_f32 sqrt_f32(const batch_f32& x) { return xsimd::sqrt(x); }
[[gnu::always_inline]] inline batch_f32 rsqrt_f32(const batch_f32& x) { return batch_f32(1.0f) / xsimd::sqrt(x); }
[[gnu::always_inline]] inline batch_f32 abs_f32(const batch_f32& x) { return xsimd::abs(x); }
[[gnu::always_inline]] inline batch_f32 neg_f32(const batch_f32& x) { return -x; }
[[gnu::always_inline]] inline batch_f32 pow_f32(const batch_f32& x, float p) { return pow_scalar(x, p); }

// Each activation is its formula in ops.def (TRINE_ACT), evaluated by the primitives above; an
// activation whose formula calls a primitive missing here fails to compile, naming it.
template <Activation A>
[[gnu::always_inline]] inline batch_f32 act(const batch_f32& x, [[maybe_unused]] float alpha,
                                            [[maybe_unused]] float beta) {
  if constexpr (A == Activation::identity) return x;
  // clang-format off
#define TRINE_ACT(name, flops, formula) else if constexpr (A == Activation::name) return formula;
#include "trine/ops.def"
  // clang-format on
}

// Calls body with std::integral_constant<Activation, act>, so each loop is compiled per activation.
// clang-format off
template <class Body>
void with_act(Activation a, Body&& body) {
  switch (a) {
    case Activation::identity: return body(std::integral_constant<Activation, Activation::identity>{});
#define TRINE_ACT(name, flops, formula) case Activation::name: return body(std::integral_constant<Activation, Activation::name>{});
#include "trine/ops.def"
  }
}
// clang-format on

// y[i] = act(x[i] + bias[i]) (bias may be null) over [0, n); `stream`: see store_run. gelu is computed
// U = gelu_block vectors a step (see gelu_erf), and what whole blocks leave gelu_short_block vectors a
// step; the others a vector at a time. x and y are stored as D (f16 / bf16: widened as loaded,
// rounded once as stored; the bias, when there is one, is f32).
template <Activation A, bool HasBias, int U = A == Activation::gelu ? gelu_block : 1, DType D = DType::f32>
void act_span(const elem_t<D>* x, const float* bias, elem_t<D>* y, i64 n, float alpha, float beta,
              bool stream = false) {
  if constexpr (A == Activation::gelu && U == gelu_block) {
    const i64 whole = n / (U * vec_width) * (U * vec_width);
    if (whole < n)
      act_span<A, HasBias, gelu_short_block, D>(x + whole, HasBias ? bias + whole : nullptr, y + whole, n - whole,
                                                alpha, beta, stream);
    n = whole;
  }
  auto part = [&](i64 i, i64 r) {
    batch_f32 v = load_partial_as<D>(x + i, r);
    if constexpr (HasBias) v += load_partial(bias + i, r);
    return act<A>(v, alpha, beta);
  };
  // store_prev: see store_run_blocks (gelu's whole blocks call it in their first pass).
  auto body = [&](i64 i, batch_f32(&v)[U], auto&& store_prev)
      __attribute__((always_inline)) {  // else GCC may call it per step
    auto load = [&](int k) __attribute__((always_inline)) {
      const i64 at = i + k * vec_width;
      batch_f32 xv = load_as<D>(x + at);
      if constexpr (HasBias) xv += batch_f32::load_unaligned(bias + at);
      return xv;
    };
    if constexpr (A == Activation::gelu) {
      // The block after next, a cache line per step of the first pass (the arithmetic keeps the
      // hardware prefetcher behind). On the Xeon (AVX-512, one thread, 16M floats, interleaved)
      // this took gelu from 6.5-7.6 to 4.6-6.0 ns per 8 floats, 2 threads 3.9-4.1 to 3.1-3.4, and
      // with AVX2 there 6.8-7.1 to 5.5-6.4: the next block's lines asked for all at once at the
      // top of a block, which is how it was, filled the line-fill buffers and stalled the
      // arithmetic behind them. One block ahead instead of two: 4.9-6.3.
      gelu_erf<U>(
          load, v, [&](int k) __attribute__((always_inline)) {
            if ((k * vec_width) % 16 == 0) __builtin_prefetch(x + i + (2 * U + k) * vec_width);
            store_prev(k);
          });
    } else {
      if constexpr (act_costly(A)) __builtin_prefetch(x + i + prefetch_ahead);
      v[0] = act<A>(load(0), alpha, beta);
    }
  };
  if constexpr (A == Activation::gelu && U == gelu_block) {
    store_run_blocks_as<U, D>(y, n, stream, body, part, std::true_type{});
  } else {
    store_run_blocks_as<U, D>(
        y, n, stream, [&](i64 i, batch_f32(&v)[U]) __attribute__((always_inline)) { body(i, v, [](int) {}); }, part);
  }
}

template <DType D = DType::f32>
void unary(Activation a, float alpha, float beta, const elem_t<D>* x, elem_t<D>* y, i64 n) {
  const bool stream = n * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  with_act(a, [&](auto tag) {
    constexpr Activation A = decltype(tag)::value;
    parallel_for(n, act_costly(A) ? grain_costly : grain_cheap, [&](i64 b, i64 e) {
      act_span<A, false, A == Activation::gelu ? gelu_block : 1, D>(x + b, nullptr, y + b, e - b, alpha, beta, stream);
    });
  });
}

template <DType D = DType::f32>
void scale(float alpha, float beta, const elem_t<D>* x, elem_t<D>* y, i64 n) {
  const bool stream = n * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  parallel_for(n, grain_cheap, [&](i64 b, i64 e) {
    const batch_f32 va(alpha), vb(beta);
    const elem_t<D>* xb = x + b;
    store_run_blocks_as<1, D>(
        y + b, e - b, stream,
        [&](i64 i, batch_f32(&out)[1]) __attribute__((always_inline)) {
          out[0] = xsimd::fma(va, load_as<D>(xb + i), vb);
        },
        [&](i64 i, i64 r) { return xsimd::fma(va, load_partial_as<D>(xb + i, r), vb); });
  });
}

template <DType D = DType::f32>
void bias_act(Activation a, float alpha, float beta, const elem_t<D>* x, const float* bias, elem_t<D>* y, i64 rows,
              i64 cols) {
  if (rows <= 0 || cols <= 0) return;
  const bool stream = rows * cols * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  with_act(a, [&](auto tag) {
    constexpr Activation A = decltype(tag)::value;
    for_row_segments(rows, cols, act_costly(A) ? grain_costly : grain_cheap, [&](i64 b, i64 e, i64 segs, i64 seg) {
      for (i64 it = b; it < e; ++it) {
        const i64 r = segs == 1 ? it : it / segs;
        const i64 c0 = (it - r * segs) * seg, c1 = std::min(cols, c0 + seg);
        act_span<A, true, A == Activation::gelu ? gelu_block : 1, D>(x + r * cols + c0, bias + c0, y + r * cols + c0,
                                                                     c1 - c0, alpha, beta, stream);
      }
    });
  });
}

// ---- the calls ----

// The activations and scale read and write f16 and bf16 in their own loops (x and y share the
// dtype: one input), and so does bias_act when x and its result share one (its bias, one row,
// widened to f32 first); bias_act with mixed dtypes (an f32 result) runs staged (execute.hpp),
// pieces of rows.
template <class F>
void with_storage(const trine::detail::OpCall& call, F&& f) {
  switch (call.output.dtype()) {
    case DType::f16: return f(std::integral_constant<DType, DType::f16>{});
    case DType::bf16: return f(std::integral_constant<DType, DType::bf16>{});
    default: return f(std::integral_constant<DType, DType::f32>{});
  }
}

template <Activation A>
void run_act(const KernelTable& k, const trine::detail::OpCall& call) {
  const i64 n = call.output.numel();
  if (n == 0) return;
  const auto& p = std::get<ActParams>(call.params);
  Tensor keep;
  const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
  with_storage(call, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    unary<D>(A, p.alpha, p.beta, reinterpret_cast<const elem_t<D>*>(x),
             reinterpret_cast<elem_t<D>*>(base_ptr(call.output)), n);
  });
}

void run_scale(const KernelTable& k, const trine::detail::OpCall& call) {
  const i64 n = call.output.numel();
  if (n == 0) return;
  const auto& p = std::get<ScaleParams>(call.params);
  Tensor keep;
  const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
  with_storage(call, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    scale<D>(p.alpha, p.beta, reinterpret_cast<const elem_t<D>*>(x), reinterpret_cast<elem_t<D>*>(base_ptr(call.output)),
             n);
  });
}

void run_bias_act(const KernelTable& k, const trine::detail::OpCall& call) {
  const i64 n = call.output.numel();
  if (n == 0) return;
  const auto& p = std::get<BiasActParams>(call.params);
  const i64 cols = call.inputs[0].dim(-1);
  const DType xd = call.inputs[0].dtype(), yd = call.output.dtype();
  if (xd == yd && xd != DType::f32) {
    Tensor keep;
    const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
    std::vector<float> bias(static_cast<std::size_t>(cols));
    strided_convert(k, call.inputs[1], reinterpret_cast<std::uint8_t*>(bias.data()), DType::f32);
    with_storage(call, [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      bias_act<D>(p.act, p.alpha, p.beta, reinterpret_cast<const elem_t<D>*>(x), bias.data(),
                  reinterpret_cast<elem_t<D>*>(base_ptr(call.output)), n / cols, cols);
    });
    return;
  }
  run_staged(k, call, n / cols, {cols, 0}, cols, act_costly(p.act) ? grain_costly : grain_cheap,
             [&](const float* const* in, float* out, i64 rows) {
               bias_act(p.act, p.alpha, p.beta, in[0], in[1], out, rows, cols);
             });
}

}  // namespace

void register_unary(KernelTable& t) {
  // every activation of ops.def: act<A> above is its kernel
#define TRINE_ACT(name, flops, formula) t.ops.add(OpKind::name, run_act<Activation::name>);
#include "trine/ops.def"
  t.ops.add(OpKind::scale, run_scale);
  t.ops.add(OpKind::bias_act, run_bias_act);
}

}  // namespace trine::cpu::TRINE_ISA_NS
