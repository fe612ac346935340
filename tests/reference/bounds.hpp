// The error bound of every op, in one table shared by the conformance tests and the tour: what
// an f32 kernel can reach, in units of f32 epsilon, growing with the reduction length.
// The measure they bound is ref::compare's (bridge.hpp); docs/ops.md explains both.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <variant>

#include "trine/ops.hpp"

namespace trine::ref {

inline constexpr double f32_eps = FLT_EPSILON;  // 2^-23

// How a bound grows with n, the length of the longest reduction behind one output element
// (Array::terms). Relative to sum |terms| (the measure's scale), a blocked, pairwise or
// multi-accumulator f32 sum errs by a few eps whatever n is: the measured errors barely grow
// (docs/ops.md has the table). log2(2n) leaves room for reduction trees deeper by one level per
// doubling; sqrt(n) or n, the textbook bounds of a sequential sum, would let a dropped term or a
// 3e-5 bias through at the sizes the suite uses. A sequential f32 loop over a long row of
// positive terms (softmax, norms) errs by about eps * sqrt(n) and fails these bounds: such a
// kernel is less accurate than f32 allows, and should block its sum.
enum class Growth { none, log_n };
struct BoundRule {
  double units;  // multiples of f32_eps; 0 means the result must equal the reference rounded to f32
  Growth growth;
};

// The rule for one op, set about 2x above the largest error the cpu kernels made over seeds
// 1..90 on avx512 (2 threads), 1..40 on sse4_2, 1..30 on avx2 and with one thread (docs/ops.md
// has the table; the comments give the largest error seen, in units of the rule).
// bias_act depends on its activation: identity and the selects are one rounding (the add).
inline BoundRule bound_rule(OpKind op, const OpParams& params) {
  switch (op) {
    // one dot product per element, blocked and threaded (0.50 seen: matmul at K = 2)
    case OpKind::matmul:
    case OpKind::gemv:
    case OpKind::dot:
    case OpKind::conv2d: return {1, Growth::log_n};
    // one correctly rounded IEEE operation, or a select
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::clip:
    case OpKind::max:
    case OpKind::copy:
    case OpKind::cast:
    case OpKind::minimum:
    case OpKind::maximum:
    case OpKind::where:
    case OpKind::abs:
    case OpKind::neg:
    case OpKind::sqrt:  // correctly rounded in IEEE arithmetic (Vulkan's 3 eps: device_bound)
    case OpKind::argmax:
    case OpKind::gather:
    case OpKind::concat: return {0, Growth::none};
    // the exact function of the f32 input, relative to |f(x)|: within about an ulp of it (exp and
    // pow are evaluated in f64 and rounded once on the cpu), rsqrt's two roundings (1/sqrt)
    case OpKind::exp:
    case OpKind::log:
    case OpKind::pow:
    case OpKind::rsqrt: return {2, Growth::none};
    case OpKind::scale: return {2, Growth::none};  // alpha x + beta: two roundings without FMA (1.0 seen)
    case OpKind::bias_act: {
      const auto* p = std::get_if<BiasActParams>(&params);
      switch (p ? p->act : Activation::identity) {
        case Activation::identity:
        case Activation::relu:
        case Activation::clip:
        case Activation::abs:
        case Activation::neg: return {0, Growth::none};
        case Activation::sqrt: return {1, Growth::none};  // the add's rounding, then sqrt's
        case Activation::exp:
        case Activation::log:
        case Activation::rsqrt:
        case Activation::pow: return {2, Growth::none};
        case Activation::leaky_relu: return {1, Growth::none};  // the add, then the product (0.33 seen)
        case Activation::elu:
        case Activation::sigmoid:
        case Activation::tanh:
        case Activation::silu:
        case Activation::gelu:
        case Activation::gelu_tanh: return {2, Growth::none};  // 1.00 seen (sigmoid)
      }
      return {2, Growth::none};
    }
    // the exact function of the f32 input, relative to |f(x)| (issue 31: a few ulps, far tails
    // included; normal results are never flushed)
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh: return {4, Growth::none};
    // sin and cos of an angle computed in f32 (1.28 seen)
    case OpKind::rope: return {3, Growth::none};
    // a reduction along the axis, then a few operations per element
    case OpKind::softmax: return {2, Growth::log_n};      // 0.18 (columns; rows of 32000, before blocked sums: 0.47)
    case OpKind::log_softmax: return {1, Growth::log_n};  // 0.46
    case OpKind::layernorm: return {1.5, Growth::log_n};  // 0.57
    case OpKind::rmsnorm: return {4, Growth::log_n};      // 1.78 at N = 1: square, add, sqrt, divide, gamma
    case OpKind::attention: return {0.5, Growth::log_n};  // 0.18 (0.72 eps at D = 8)
    case OpKind::sum: return {1, Growth::log_n};          // 0.42
    case OpKind::mean: return {1.5, Growth::log_n};       // 0.56: the sum, then the division
  }
  return {0, Growth::none};
}

// The bound on ref::compare's error for one result whose longest reduction has `terms` terms.
inline double error_bound(OpKind op, const OpParams& params, std::int64_t terms) {
  const BoundRule rule = bound_rule(op, params);
  const double n = static_cast<double>(terms < 1 ? 1 : terms);
  switch (rule.growth) {
    case Growth::none: return rule.units * f32_eps;
    case Growth::log_n: return rule.units * f32_eps * std::log2(2 * n);
  }
  return 0;
}

// conv2d through Winograd F(4x4,3x3) on the cpu (debug::cpu_conv2d_path names the path a shape
// takes) gets 10 times conv2d's bound: 10 is the root-sum-square of the 1-D transform coefficients
// |A^T| |G| |B^T| behind the last output row (or column) of a tile, against direct convolution's 3
// taps. Rounding errors of independent sign add in quadrature, so that is the amplification on
// data like the suite's; the worst case (their plain sum, 16 per direction, 256 in 2-D) is for
// adversarial inputs, and a bound that loose would let a 3e-5 bias through. docs/ops.md has the
// derivation and the errors measured. F(2x2,3x3) (constants 0, +-1, +-1/2) fits conv2d's bound.
inline constexpr double winograd_f4_factor = 10.0;

// Devices whose math library is not within an ulp or two of correctly rounded get more room on the
// ops that still call it (never on exact ops, whose bound stays 0). Vulkan: the spec bounds sqrt as
// 1 / inversesqrt and inversesqrt at 2 ulp, and the shaders still take both from the builtins in
// rsqrt (and bias_act with rsqrt or sqrt) and in the norms' 1 / sqrt(var + eps): twice the bound.
// Every other op is held to the cpu's table: exp, log, pow, tanh, the other activations, softmax's
// and attention's exponentials are trine's own functions (shaders/common.glsl), accurate by
// construction, where the builtins (exp within 3 + 2|x| ulp) had needed the factor on every op
// (tanh measured 3.1 eps against a bound of 3 on lavapipe). The cpu (xsimd) and the PTX emulator
// (correctly rounded) keep the table as it is, and so does gelu on every backend since the GPU
// kernels took the cpu's form (2.83 ulps on cuda, 3.5 on lavapipe; their erfc fits had needed 1.25
// and 2 times the bound for 4.87 and 6.95).
inline double device_math_factor(DeviceKind kind, OpKind op, const OpParams& params) {
  const auto* p = std::get_if<BiasActParams>(&params);
  if (kind != DeviceKind::vulkan) return 1.0;
  if (op == OpKind::rsqrt || op == OpKind::layernorm || op == OpKind::rmsnorm) return 2.0;
  return op == OpKind::bias_act && p && (p->act == Activation::rsqrt || p->act == Activation::sqrt) ? 2.0 : 1.0;
}

// The bound for a result of `op` computed on a device of `kind`. Vulkan's division is the one exact
// op a device may round otherwise: the Vulkan environment of SPIR-V lets OpFDiv err by 2.5 ulp, and
// an NVIDIA H100 gave quotients an ulp off (1.18 eps seen) where lavapipe divides exactly. Its
// bound is 3 eps: 2.5 ulp, plus the half ulp of the reference's own rounding to f32.
// What storing a result in a 16-bit dtype adds to an op's f32 bound: one rounding to nearest, half
// an ulp relative (f16 2^-11, bf16 2^-8), measured against the reference rounded to f32 (a hair more
// for the f32 result being off by its own bound).
inline double storage_rounding(DType t) {
  if (t == DType::f16) return 0x1p-11 * 1.001;
  if (t == DType::bf16) return 0x1p-8 * 1.001;
  return 0;
}

inline double device_bound(OpKind op, const OpParams& params, std::int64_t terms, DeviceKind kind) {
  if (kind == DeviceKind::vulkan && op == OpKind::div) return 3 * f32_eps;
  // Vulkan's sqrt is "inherited from 1.0 / inversesqrt()": inversesqrt's 2 ulp and the division's
  // 2.5, not the correctly rounded root IEEE gives (lavapipe's is exact; a GPU's need not be).
  if (kind == DeviceKind::vulkan && op == OpKind::sqrt) return 5 * f32_eps;
  return error_bound(op, params, terms) * device_math_factor(kind, op, params);
}

}  // namespace trine::ref
