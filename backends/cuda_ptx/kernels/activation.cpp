// Activations in f32: exp-based forms written to keep relative accuracy near zero (expm1, tanh
// polynomial) and the limits at +-inf (silu(-inf) = 0, gelu(-inf) = 0).
#include "backends/cuda_ptx/kernels/activation.hpp"

#include "backends/cuda_ptx/kernels/math.hpp"

#include <array>

namespace trine::cuda::kernels {
namespace {

// exp(x) - 1 without the cancellation near 0 (elu's negative branch).
Reg<F32> expm1_f32(Kernel& k, Reg<F32> x) {
  // Taylor to x^8 for |x| < 0.5 (next term < 1e-8 relative there).
  Reg<F32> p =
      horner<F32, 8>(k, x, {1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040, 1.0f / 40320});
  Reg<F32> small = mul(k, x, V<F32>(p));
  Reg<F32> large = sub(k, exp_f32(k, x), V<F32>(1.0f));
  Reg<Pred> is_small = setp(k, Cmp::lt, abs(k, x), V<F32>(0.5f));
  return selp<F32>(k, small, large, is_small);
}

Reg<F32> sigmoid_f32(Kernel& k, Reg<F32> x) {
  Reg<F32> e = exp_f32(k, neg(k, x));  // +inf at x = -inf: 1/inf = 0
  return rcp_rn(k, add(k, e, V<F32>(1.0f)));
}

// x * s where s is a sigmoid-like factor that reaches 0 at x = -inf (where x*s would be NaN).
Reg<F32> times_gate(Kernel& k, Reg<F32> x, Reg<F32> s) {
  Reg<F32> y = mul(k, x, V<F32>(s));
  Reg<Pred> gate_zero = setp(k, Cmp::eq, s, V<F32>(0.0f));
  return selp<F32>(k, 0.0f, y, gate_zero);
}

Reg<F32> tanh_f32(Kernel& k, Reg<F32> x) {
  // Small |x|: odd Taylor series (|x| < 0.25, error < 1e-8 relative). Otherwise
  // (1 - e)/(1 + e) with e = exp(-2|x|), sign restored.
  Reg<F32> x2 = mul(k, x, V<F32>(x));
  Reg<F32> p = horner<F32, 5>(k, x2, {1.0f, -1.0f / 3, 2.0f / 15, -17.0f / 315, 62.0f / 2835});
  Reg<F32> small = mul(k, x, V<F32>(p));
  Reg<F32> ax = abs(k, x);
  Reg<F32> e = exp_f32(k, mul(k, ax, V<F32>(-2.0f)));
  Reg<F32> t = div(k, sub(k, mov<F32>(k, 1.0f), V<F32>(e)), V<F32>(add(k, e, V<F32>(1.0f))));
  Reg<Pred> negative = setp(k, Cmp::lt, x, V<F32>(0.0f));
  Reg<F32> large = selp<F32>(k, neg(k, t), t, negative);
  Reg<Pred> is_small = setp(k, Cmp::lt, ax, V<F32>(0.25f));
  return selp<F32>(k, small, large, is_small);
}

Reg<F32> gelu_erf(Kernel& k, Reg<F32> x) {
  // 1 + erf(z), z = x/sqrt(2): erfc(|z|) for z < 0 (no cancellation), 2 - erfc(z) otherwise.
  // erfc(w) = t exp(-w^2 + P(t)), t = 1/(1 + w/2): a Chebyshev fit with relative error below
  // 1.2e-7 for every w >= 0, so gelu keeps its relative accuracy far into the negative tail.
  Reg<F32> z = mul(k, x, V<F32>(0.70710678118654752f));
  Reg<F32> w = abs(k, z);
  Reg<F32> t = rcp_rn(k, fma(k, w, V<F32>(0.5f), V<F32>(1.0f)));
  Reg<F32> p = horner<F32, 10>(k, t,
                               {-1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f, -0.18628806f, 0.27886807f,
                                -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f});
  Reg<F32> exponent = sub(k, p, V<F32>(mul(k, w, V<F32>(w))));
  Reg<F32> erfc = mul(k, t, V<F32>(exp_f32(k, exponent)));
  Reg<Pred> negative = setp(k, Cmp::lt, z, V<F32>(0.0f));
  Reg<F32> one_plus = selp<F32>(k, erfc, sub(k, mov<F32>(k, 2.0f), V<F32>(erfc)), negative);
  return times_gate(k, x, mul(k, one_plus, V<F32>(0.5f)));
}

Reg<F32> gelu_tanh_f32(Kernel& k, Reg<F32> x) {
  // x/2 (1 + tanh(u)) = x sigmoid(2u): no cancellation for negative x.
  Reg<F32> x3 = mul(k, mul(k, x, V<F32>(x)), V<F32>(x));
  Reg<F32> u = mul(k, fma(k, x3, V<F32>(0.044715f), V<F32>(x)), V<F32>(0.79788456080286536f));
  return times_gate(k, x, sigmoid_f32(k, add(k, u, V<F32>(u))));
}

}  // namespace

Reg<F32> activation(Kernel& k, Activation act, Reg<F32> x, Reg<F32> alpha, Reg<F32> beta) {
  switch (act) {
    case Activation::identity: return x;
    case Activation::relu: {
      // x < 0 is false for NaN, so NaN passes through (max.f32 would drop it).
      Reg<Pred> negative = setp(k, Cmp::lt, x, V<F32>(0.0f));
      return selp<F32>(k, 0.0f, x, negative);
    }
    case Activation::leaky_relu: {
      Reg<Pred> negative = setp(k, Cmp::lt, x, V<F32>(0.0f));
      return selp<F32>(k, mul(k, x, V<F32>(alpha)), x, negative);
    }
    case Activation::elu: {
      Reg<Pred> negative = setp(k, Cmp::lt, x, V<F32>(0.0f));
      return selp<F32>(k, mul(k, expm1_f32(k, x), V<F32>(alpha)), x, negative);
    }
    case Activation::sigmoid: return sigmoid_f32(k, x);
    case Activation::tanh: return tanh_f32(k, x);
    case Activation::silu: return times_gate(k, x, sigmoid_f32(k, x));
    case Activation::gelu: return gelu_erf(k, x);
    case Activation::gelu_tanh: return gelu_tanh_f32(k, x);
    case Activation::clip: {
      // Comparisons are false for NaN, so NaN passes through both steps.
      Reg<F32> lo = selp<F32>(k, alpha, x, setp(k, Cmp::lt, x, V<F32>(alpha)));
      return selp<F32>(k, beta, lo, setp(k, Cmp::gt, lo, V<F32>(beta)));
    }
    // math.cpp: each within the op table's 2 eps by construction, error budgets there
    case Activation::exp: return exp_accurate(k, x);
    case Activation::log: return log_accurate(k, x);
    case Activation::sqrt: return sqrt_rn(k, x);  // correctly rounded
    case Activation::rsqrt: return rsqrt_accurate(k, x);
    case Activation::abs: return abs(k, x);
    case Activation::neg: return neg(k, x);
    case Activation::pow: return pow_accurate(k, x, alpha);  // alpha: the exponent
  }
  return x;
}

}  // namespace trine::cuda::kernels
