// The reference oracle: element-wise ops and activations, in double precision.
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace trine::ref {

using namespace detail;

namespace {

// ---- scalar activations ----

double relu_value(double x) { return x < 0 ? 0.0 : x; }  // NaN < 0 is false: NaN passes through
double leaky_relu_value(double x, double slope) { return x < 0 ? slope * x : x; }
double elu_value(double x, double alpha) { return x < 0 ? alpha * std::expm1(x) : x; }
double sigmoid_value(double x) { return 1.0 / (1.0 + std::exp(-x)); }  // exp(+inf) = inf gives 0 at -inf

double silu_value(double x) {
  if (x == -kInf) return 0.0;  // -inf * sigmoid(-inf) is -inf * 0 = NaN; the limit is 0
  return x * sigmoid_value(x);
}

double gelu_value(double x) {
  if (x == -kInf) return 0.0;  // -inf * 0 = NaN; the limit is 0
  // 1 + erf(z) == erfc(-z), which keeps its digits for negative x where 1 + erf cancels to 0
  return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
}

double gelu_tanh_value(double x) {
  if (x == -kInf) return 0.0;  // -inf * 0 = NaN; the limit is 0
  const double y = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  // x/2 * (1 + tanh(y)) == x / (1 + exp(-2y)), which does not cancel to 0 for negative x
  return x / (1.0 + std::exp(-2.0 * y));
}

double clip_value(double x, double low, double high) {
  if (std::isnan(x)) return x;  // std::max/min would keep or drop NaN depending on argument order
  return std::min(std::max(x, low), high);
}

// An upper bound of |f'(x)| for an activation, written as a sum of magnitudes so it never
// vanishes where f' crosses zero. An argument error of d moves f by about |f'(x)| d: with d the
// rounding of x (or of x + bias) this is the part of the error no f32 kernel can avoid.
double activation_slope(Activation act, double x, double alpha, double beta) {
  if (!std::isfinite(x)) return 0.0;
  // Each case computes only what it needs: the oracle evaluates this for millions of elements.
  const double ax = std::fabs(x);
  switch (act) {
    case Activation::identity: return 1.0;
    case Activation::relu: return x < 0 ? 0.0 : 1.0;
    case Activation::leaky_relu: return x < 0 ? std::fabs(alpha) : 1.0;
    case Activation::elu: return x < 0 ? std::fabs(alpha) * std::exp(x) : 1.0;
    case Activation::sigmoid: {
      const double sig = sigmoid_value(x);
      return sig * (1.0 - sig);
    }
    case Activation::tanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
    case Activation::silu: {
      const double sig = sigmoid_value(x);
      return sig + ax * sig * (1.0 - sig);
    }
    case Activation::gelu: {
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
      return 0.5 * std::erfc(-x / std::numbers::sqrt2) + ax * pdf;
    }
    case Activation::gelu_tanh: {
      // x * sigmoid(2y), y = c (x + 0.044715 x^3)
      const double c = std::sqrt(2.0 / std::numbers::pi);
      const double s2 = sigmoid_value(2.0 * c * (x + 0.044715 * x * x * x));
      return s2 + ax * s2 * (1.0 - s2) * 2.0 * c * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case Activation::clip: return (x < alpha || x > beta) ? 0.0 : 1.0;
    case Activation::exp: return std::exp(x);
    case Activation::log: return 1.0 / ax;
    case Activation::sqrt: return 0.5 / std::sqrt(ax);
    case Activation::rsqrt: return 0.5 / (ax * std::sqrt(ax));
    case Activation::abs:
    case Activation::neg: return 1.0;
    case Activation::pow: return std::fabs(alpha) * std::pow(ax, alpha - 1.0);
  }
  return 1.0;
}

}  // namespace

Array add(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "add", [](double u, double v) { return u + v; });
}
Array sub(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "sub", [](double u, double v) { return u - v; });
}
Array mul(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "mul", [](double u, double v) { return u * v; });
}
Array div(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "div", [](double u, double v) { return u / v; });
}
// NaN when either is NaN (numpy's minimum and maximum), whatever the order
Array minimum(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "minimum", [](double u, double v) {
    return std::isnan(u) || std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : std::min(u, v);
  });
}
Array maximum(const Array& a, const Array& b) {
  return zip_broadcast(a, b, "maximum", [](double u, double v) {
    return std::isnan(u) || std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : std::max(u, v);
  });
}

Array scale(const Array& x, const ScaleParams& params) {
  const double alpha = params.alpha, beta = params.beta;
  // Two roundings without FMA: the product's is relative to |alpha x|, which may exceed |y|.
  return map(
      x, "scale", [&](double v) { return alpha * v + beta; },
      [&](double v, double) { return std::fabs(alpha * v) + std::fabs(beta); });
}

double activation(Activation act, double x, double alpha, double beta) {
  switch (act) {
    case Activation::identity: return x;
    case Activation::relu: return relu_value(x);
    case Activation::leaky_relu: return leaky_relu_value(x, alpha);
    case Activation::elu: return elu_value(x, alpha);
    case Activation::sigmoid: return sigmoid_value(x);
    case Activation::tanh: return std::tanh(x);
    case Activation::silu: return silu_value(x);
    case Activation::gelu: return gelu_value(x);
    case Activation::gelu_tanh: return gelu_tanh_value(x);
    case Activation::clip: return clip_value(x, alpha, beta);
    case Activation::exp: return std::exp(x);
    case Activation::log: return std::log(x);
    case Activation::sqrt: return std::sqrt(x);
    case Activation::rsqrt: return 1.0 / std::sqrt(x);
    case Activation::abs: return std::fabs(x);
    case Activation::neg: return -x;
    case Activation::pow: return std::pow(x, alpha);
  }
  throw std::invalid_argument("[ref activation] unknown activation");
}

Array bias_act(const Array& x, const Array& bias, const BiasActParams& params) {
  const std::string op = "bias_act";
  check_array(x, op, "x");
  check_array(bias, op, "bias");
  check_rank(x, op, "x", 1);
  const std::int64_t n = x.shape.back();
  if (bias.shape != Dims{n}) fail(op, "bias " + dims_str(bias.shape) + " does not fit x " + dims_str(x.shape));
  Array y = x;
  y.scale.resize(y.data.size());
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const double z = x.data[i] + bias.data[i % n];
    y.data[i] = activation(params.act, z, params.alpha, params.beta);
    // x + bias is rounded before the activation sees it: an error relative to |x| + |bias|.
    const double spread = std::fabs(z) + std::fabs(x.data[i]) + std::fabs(bias.data[i % n]);
    y.scale[i] = std::fabs(y.data[i]) + activation_slope(params.act, z, params.alpha, params.beta) * spread;
  }
  return y;
}

Array relu(const Array& x) { return map(x, "relu", relu_value); }
Array leaky_relu(const Array& x, double slope) {
  return map(x, "leaky_relu", [&](double v) { return leaky_relu_value(v, slope); });
}
// The functions of one exact input, measured against |f(x)| alone (the input is an exact number,
// not a rounded one: an f32 kernel can reach within a few ulps of the exact function of it,
// whatever the size of x f'(x)), and with their normal results kept however small (Array's
// normal_results_kept).
template <class F>
Array exact_function(const Array& x, const std::string& op, F f) {
  Array y = map(x, op, f);
  y.normal_results_kept = true;
  return y;
}

Array elu(const Array& x, double alpha) {
  return exact_function(x, "elu", [&](double v) { return elu_value(v, alpha); });
}
Array sigmoid(const Array& x) { return exact_function(x, "sigmoid", sigmoid_value); }
Array tanh(const Array& x) {
  return exact_function(x, "tanh", [](double v) { return std::tanh(v); });
}
Array silu(const Array& x) { return exact_function(x, "silu", silu_value); }
Array gelu(const Array& x) { return exact_function(x, "gelu", gelu_value); }
Array gelu_tanh(const Array& x) { return exact_function(x, "gelu_tanh", gelu_tanh_value); }
Array exp(const Array& x) { return exact_function(x, "exp", [](double v) { return std::exp(v); }); }
Array log(const Array& x) { return exact_function(x, "log", [](double v) { return std::log(v); }); }
Array sqrt(const Array& x) { return exact_function(x, "sqrt", [](double v) { return std::sqrt(v); }); }
Array rsqrt(const Array& x) { return exact_function(x, "rsqrt", [](double v) { return 1.0 / std::sqrt(v); }); }
Array abs(const Array& x) { return map(x, "abs", [](double v) { return std::fabs(v); }); }
Array neg(const Array& x) { return map(x, "neg", [](double v) { return -v; }); }
Array pow(const Array& x, double exponent) {
  return exact_function(x, "pow", [&](double v) { return std::pow(v, exponent); });
}

Array clip(const Array& x, double low, double high) {
  if (low > high) fail("clip", "low " + std::to_string(low) + " > high " + std::to_string(high));
  return map(x, "clip", [&](double v) { return clip_value(v, low, high); });
}

}  // namespace trine::ref
