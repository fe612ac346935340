// Activations in f32, each built from IEEE operations only (.rn arithmetic, FMA, exact conversions;
// no .approx instruction), so the PTX emulator computes the GPU's very bits and the budgets below
// hold on every target. Units: u = 2^-24 (half an ulp of [1, 2)); a budget is the relative error
// before the comparison's own rounding to f32 (half an ulp more), wherever the result is normal.
// Results below 2^-126 may flush; a normal result never does, even where an intermediate e^x is
// subnormal (silu(-91) = -91 e^-91). Forms that keep relative accuracy near zero (expm1, tanh's
// polynomial) and the limits at +-inf (silu(-inf) = 0, gelu(-inf) = 0) as before.
#include "backends/cuda_ptx/kernels/activation.hpp"

#include "backends/cuda_ptx/kernels/math.hpp"
#include "backends/gelu_erf_fit.hpp"

#include <array>
#include <optional>

namespace trine::cuda::kernels {
namespace {

// exp(x) - 1 without the cancellation near 0 (elu's negative branch):
// - |x| < 0.5: x (1 + x/2 + ... + x^7/8!): truncation 0.18u, the Horner sum about 1.5u, the
//   product 1u: 2.7u.
// - x <= -0.5: e^x - 1 with e^x in (0, 0.61] within 1.82u (exp_nonpositive), reaching the
//   difference scaled by e^x / (1 - e^x) <= 1.54 (2.8u); the subtraction is exact for e^x >= 1/2
//   (Sterbenz) and rounds once below: 3.8u. elu's alpha product: 1u more.
Reg<F32> expm1_f32(Kernel& k, Reg<F32> x) {
  Reg<F32> p =
      horner<F32, 8>(k, x, {1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040, 1.0f / 40320});
  Reg<F32> small = mul(k, x, V<F32>(p));
  Reg<F32> large = sub(k, exp_nonpositive(k, x), V<F32>(1.0f));
  Reg<Pred> is_small = setp(k, Cmp::lt, abs(k, x), V<F32>(0.5f));
  return selp<F32>(k, small, large, is_small);
}

// e^-|v + v_lo| for the logistic forms below: t = e^-|v| as m 2^e (exp_parts; m within 1.82u, 2.07u
// with the low part), `t` itself where it is at least 2^-126 (0 below 2^-127, where 1 + t = 1
// anyway), `scale` = 2^max(e, -127). |v| past 120 is clamped: e^-|v| is 0 in f32 there.
struct NegExp {
  Reg<Pred> negative;  // v < 0
  Reg<F32> a;          // -|v|, clamped at -120 (v itself where -120 <= v < 0)
  ExpParts p;
  Reg<F32> scale, t;
};
NegExp neg_exp(Kernel& k, Reg<F32> v, std::optional<Reg<F32>> v_lo = std::nullopt) {
  Reg<Pred> negative = setp(k, Cmp::lt, v, V<F32>(0.0f));
  Reg<F32> a = max(k, neg(k, abs(k, v)), V<F32>(-120.0f));
  std::optional<Reg<F32>> lo;
  if (v_lo) lo = selp<F32>(k, *v_lo, neg(k, *v_lo), negative);  // -|v + v_lo| = -|v| -+ v_lo
  ExpParts p = exp_parts(k, a, lo);
  Reg<F32> scale = pow2_f32(k, max(k, p.e, V<S32>(-127)));
  return {negative, a, p, scale, mul(k, p.m, V<F32>(scale))};
}

Reg<F32> keep_nan(Kernel& k, Reg<F32> x, Reg<F32> y) { return selp<F32>(k, x, y, setp(k, Cmp::nan, x, V<F32>(x))); }

// sigmoid(x) with t = e^-|x|: 1 / (1 + t) for x >= 0, t / (1 + t) = (m / (1 + t)) 2^e for x < 0.
// - x >= 0: t's 1.82u reaches 1 + t scaled by t / (1 + t) <= 1/2 (0.91u), the sum rounds (1u), the
//   quotient (1u): 2.91u.
// - x < 0: m (1.82u), 1 + t (1.91u), the quotient (1u); 2^e scales exactly while the result is
//   normal: 4.73u (2.4 ulp). Below 2^-126 (x < -87.3) it may flush.
Reg<F32> sigmoid_f32(Kernel& k, Reg<F32> x) {
  const NegExp n = neg_exp(k, x);
  Reg<F32> q = div(k, selp<F32>(k, n.p.m, 1.0f, n.negative), V<F32>(add(k, n.t, V<F32>(1.0f))));
  return keep_nan(k, x, selp<F32>(k, mul(k, q, V<F32>(n.scale)), q, n.negative));
}

// x sigmoid(v) for the gated forms (silu: v = x; gelu_tanh: v + v_lo = 2 sqrt(2/pi) (x + 0.044715
// x^3)), v of x's sign: x / (1 + t) for v >= 0, and (x m / (1 + t)) 2^e for v < 0, scaled in two
// exact steps at the end (scale_pow2): e^v may be subnormal where x e^v is not.
// - v >= 0: 2.91u (as sigmoid's; t's 2.07u with a low part: 3.04u).
// - v < 0: m (1.82u; 2.07u), x m (1u), 1 + t (1.91u; 2.04u), the quotient (1u): 5.73u (6.1u,
//   3.05 ulp). `x_neg` is x where v < 0, clamped where the result is 0 (so that -inf gives 0).
Reg<F32> gated(Kernel& k, Reg<F32> x, Reg<F32> x_neg, const NegExp& n) {
  Reg<F32> num = selp<F32>(k, mul(k, x_neg, V<F32>(n.p.m)), x, n.negative);
  Reg<F32> q = div(k, num, V<F32>(add(k, n.t, V<F32>(1.0f))));
  return selp<F32>(k, scale_pow2(k, q, n.p.e), q, n.negative);
}

Reg<F32> silu_f32(Kernel& k, Reg<F32> x) {
  const NegExp n = neg_exp(k, x);
  return keep_nan(k, x, gated(k, x, n.a, n));  // n.a: x clamped at -120, where silu is 0
}

// tanh: |x| < 0.25: the odd Taylor series to x^9 (truncation 0.14u, the sum and product 2.1u).
// Otherwise (1 - e) / (1 + e), e = e^-2|x| (2|x| exact) within 1.82u, which reaches the quotient
// scaled by 2e / (1 - e^2) <= 1.92 (3.5u at |x| = 0.25); 1 - e is exact for e >= 1/2 and
// rounds once below, where the scaling is at most 1.33 (2.4u + 1u); 1 + e and the quotient round
// once each: 5.5u (2.75 ulp) at most. Sign restored.
Reg<F32> tanh_f32(Kernel& k, Reg<F32> x) {
  Reg<F32> x2 = mul(k, x, V<F32>(x));
  Reg<F32> p = horner<F32, 5>(k, x2, {1.0f, -1.0f / 3, 2.0f / 15, -17.0f / 315, 62.0f / 2835});
  Reg<F32> small = mul(k, x, V<F32>(p));
  Reg<F32> ax = abs(k, x);
  Reg<F32> e = exp_nonpositive(k, mul(k, ax, V<F32>(-2.0f)));
  Reg<F32> t = div(k, sub(k, mov<F32>(k, 1.0f), V<F32>(e)), V<F32>(add(k, e, V<F32>(1.0f))));
  Reg<Pred> negative = setp(k, Cmp::lt, x, V<F32>(0.0f));
  Reg<F32> large = selp<F32>(k, neg(k, t), t, negative);
  Reg<Pred> is_small = setp(k, Cmp::lt, ax, V<F32>(0.25f));
  return keep_nan(k, x, selp<F32>(k, small, large, is_small));
}

// gelu = x Phi(x) = max(x, 0) - F(a), a = |x|, F(a) = a erfc(a / sqrt 2) / 2 = s e^(G(s) - a^2/2),
// s = a / (K + a), the cpu's form and G's fit (backends/gelu_erf_fit.hpp): for x < 0 it is -F(a),
// where 1 + erf would cancel, and G's error enters the exponent, where it is a relative error of F.
// - s: the sum and the quotient round once each (2u); F moves with s by at most about 1x that.
// - G(s): the fit's f32 Horner sum, 1.8u absolute (G's slope times s's error adds little).
// - e^(G - a^2/2): a^2 = h + l exactly (FMA), -h/2 and -l/2 exact, and G joins the reduced argument
//   unrounded (exp_parts_sum: 2.32u); rounded to f32, the exponent (up to 87) would cost its size
//   times u: 42 ulps at x = -13.
// - s m (1u), then one FMA: -(s m) 2^e + max(x, 0), exact scaling by 2^e (e >= -126 up to the cap)
//   and one rounding (1u); for x > 0 F's error reaches x - F scaled by F / (x - F) <= 1.
// About 8u (4 ulps) at worst by this count; a host simulation over every 37th f32 in [-100, 100]
// measured 2.99 ulps (docs/cuda_ptx.md). |x| is capped at 13.15, past which F < 2^-126: x < -13.15
// gives 0 (so -inf gives 0, not -inf + inf), +inf gives +inf; signed zeros kept, NaN kept.
Reg<F32> gelu_erf(Kernel& k, Reg<F32> x) {
  using trine::detail::gelu_erf_cap, trine::detail::gelu_erf_g;
  Reg<F32> a = min(k, abs(k, x), V<F32>(gelu_erf_cap));  // NaN: the cap (min.f32), selected back below
  Reg<F32> s = div(k, a, V<F32>(add(k, a, V<F32>(trine::detail::gelu_erf_k))));
  std::array<float, 12> g{};  // lowest power first, as horner takes them
  for (std::size_t j = 0; j < g.size(); ++j) g[j] = gelu_erf_g[g.size() - 1 - j];
  Reg<F32> p = horner<F32, 12>(k, s, g);
  const TwoF32 a2 = two_prod(k, a, a);
  const ExpParts e = exp_parts_sum(k, mul(k, a2.hi, V<F32>(-0.5f)), p, mul(k, a2.lo, V<F32>(-0.5f)));
  Reg<F32> f = mul(k, s, V<F32>(e.m));  // F = f 2^e
  Reg<F32> y = fma(k, neg(k, f), V<F32>(pow2_f32(k, e.e)), V<F32>(max(k, x, V<F32>(0.0f))));
  y = selp<F32>(k, 0.0f, y, setp(k, Cmp::lt, x, V<F32>(-gelu_erf_cap)));
  y = selp<F32>(k, x, y, setp(k, Cmp::eq, x, V<F32>(0.0f)));  // -0 - 0 would lose -0's sign
  return keep_nan(k, x, y);
}

// gelu_tanh = x sigmoid(v), v = 2 sqrt(2/pi) (x + 0.044715 x^3) = x (c1 + c2 x^2) (x/2 (1 + tanh)
// without the cancellation for negative x). v reaches -87 where the result is still normal, so
// rounding it to f32 would cost |v| u (44 ulp at x = -10): v is formed as a sum of two floats, the
// constants split in two (c1, c2 to 2^-48), x^2 exact by an FMA, the sum c1 + c2 x^2 by TwoSum, the
// product by an FMA: within 2^-44 relative, 2^-37 absolute, nothing in the result. Then gated():
// 3.04u for x >= 0, 6.1u (3.05 ulp) for x < 0. x is clamped to [-12, 12] for v (beyond, the result
// is 0 or x).
Reg<F32> gelu_tanh_f32(Kernel& k, Reg<F32> x) {
  constexpr double c1 = 1.5957691216057307117597842;  // 2 sqrt(2 / pi)
  constexpr double c2 = c1 * 0.044715;
  constexpr float c1_hi = static_cast<float>(c1), c1_lo = static_cast<float>(c1 - c1_hi);
  constexpr float c2_hi = static_cast<float>(c2), c2_lo = static_cast<float>(c2 - c2_hi);
  Reg<F32> xc = min(k, max(k, x, V<F32>(-12.0f)), V<F32>(12.0f));
  Reg<F32> x2 = mul(k, xc, V<F32>(xc));
  Reg<F32> x2_lo = fma(k, xc, V<F32>(xc), V<F32>(neg(k, x2)));
  Reg<F32> s = mul(k, x2, V<F32>(c2_hi));  // c2 x^2 = s + s_lo
  Reg<F32> s_lo = fma(k, x2, V<F32>(c2_hi), V<F32>(neg(k, s)));
  s_lo = fma(k, x2_lo, V<F32>(c2_hi), V<F32>(s_lo));
  s_lo = fma(k, x2, V<F32>(c2_lo), V<F32>(s_lo));
  Reg<F32> w = add(k, s, V<F32>(c1_hi));  // TwoSum: c1_hi + s = w + w_err
  Reg<F32> b = sub(k, w, V<F32>(s));
  Reg<F32> w_err = add(k, sub(k, s, V<F32>(sub(k, w, V<F32>(b)))), V<F32>(sub(k, mov<F32>(k, c1_hi), V<F32>(b))));
  Reg<F32> w_lo = add(k, w_err, V<F32>(add(k, s_lo, V<F32>(c1_lo))));
  Reg<F32> v = mul(k, xc, V<F32>(w));
  Reg<F32> v_lo = fma(k, xc, V<F32>(w), V<F32>(neg(k, v)));
  v_lo = fma(k, xc, V<F32>(w_lo), V<F32>(v_lo));
  const NegExp n = neg_exp(k, v, v_lo);
  return keep_nan(k, x, gated(k, x, xc, n));
}

// The activation primitives that ops.def's formulas (TRINE_ACT) call, emitting into one kernel: an
// f32 register with its kernel, float constants (immediates), products, and the functions above.
// below and above select on setp lt / gt, which is false for NaN, so NaN passes through (max.f32
// would drop it).
struct Val {
  Kernel* k;
  Reg<F32> r;
};
V<F32> operand(Val v) { return V<F32>(v.r); }
V<F32> operand(float c) { return V<F32>(c); }
// The arithmetic a formula may write (ops.def: `*` and `/` of values and float literals, as C++ and
// GLSL both take them); today's formulas use Val * Val only, so the other forms are unused.
Val operator*(Val a, Val b) { return {a.k, mul(*a.k, a.r, V<F32>(b.r))}; }
[[maybe_unused]] Val operator*(Val a, float b) { return {a.k, mul(*a.k, a.r, V<F32>(b))}; }
[[maybe_unused]] Val operator*(float a, Val b) { return b * a; }
[[maybe_unused]] Val operator/(Val a, Val b) { return {a.k, div(*a.k, a.r, V<F32>(b.r))}; }
[[maybe_unused]] Val operator/(Val a, float b) { return {a.k, div(*a.k, a.r, V<F32>(b))}; }
[[maybe_unused]] Val operator/(float a, Val b) { return {b.k, div(*b.k, mov<F32>(*b.k, a), V<F32>(b.r))}; }
template <class C, class A, class B>
Val below(Val v, C c, A a, B b) {
  Kernel& k = *v.k;
  return {&k, selp<F32>(k, operand(a), operand(b), setp(k, Cmp::lt, v.r, operand(c)))};
}
template <class C, class A, class B>
Val above(Val v, C c, A a, B b) {
  Kernel& k = *v.k;
  return {&k, selp<F32>(k, operand(a), operand(b), setp(k, Cmp::gt, v.r, operand(c)))};
}
Val expm1_neg(Val x) { return {x.k, expm1_f32(*x.k, x.r)}; }
Val sigmoid_f32(Val x) { return {x.k, sigmoid_f32(*x.k, x.r)}; }
Val tanh_f32(Val x) { return {x.k, tanh_f32(*x.k, x.r)}; }
Val silu_f32(Val x) { return {x.k, silu_f32(*x.k, x.r)}; }
Val gelu_erf(Val x) { return {x.k, gelu_erf(*x.k, x.r)}; }
Val gelu_tanh_f32(Val x) { return {x.k, gelu_tanh_f32(*x.k, x.r)}; }
// math.cpp: each within the op table's 2 eps by construction, error budgets there
Val exp_f32(Val x) { return {x.k, exp_accurate(*x.k, x.r)}; }
Val log_f32(Val x) { return {x.k, log_accurate(*x.k, x.r)}; }
Val sqrt_f32(Val x) { return {x.k, sqrt_rn(*x.k, x.r)}; }  // correctly rounded
Val rsqrt_f32(Val x) { return {x.k, rsqrt_accurate(*x.k, x.r)}; }
Val abs_f32(Val x) { return {x.k, abs(*x.k, x.r)}; }
Val neg_f32(Val x) { return {x.k, neg(*x.k, x.r)}; }
Val pow_f32(Val x, Val e) { return {x.k, pow_accurate(*x.k, x.r, e.r)}; }

}  // namespace

// Each activation is its formula in ops.def (TRINE_ACT), emitted through the primitives above; an
// activation whose formula calls a primitive missing here fails to compile, naming it.
Reg<F32> activation(Kernel& k, Activation act, Reg<F32> x_reg, Reg<F32> alpha_reg, Reg<F32> beta_reg) {
  [[maybe_unused]] const Val x{&k, x_reg}, alpha{&k, alpha_reg}, beta{&k, beta_reg};
  switch (act) {
    case Activation::identity: return x_reg;
    // clang-format off
#define TRINE_ACT(name, flops, formula) case Activation::name: return (formula).r;
#include "trine/ops.def"
    // clang-format on
  }
  return x_reg;
}

}  // namespace trine::cuda::kernels
