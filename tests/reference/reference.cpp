// The scalar reference oracle: plain double-precision loops that follow docs/ops.md line by line.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <variant>

namespace trine::ref {

namespace {

using Dims = std::vector<std::int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- errors and checks ----

std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

[[noreturn]] void fail(const std::string& op, const std::string& what) {
  throw std::invalid_argument("[ref " + op + "] " + what);
}

std::int64_t product(const Dims& d, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) n *= d[i];
  return n;
}

std::int64_t product(const Dims& d) { return product(d, 0, d.size()); }

std::int64_t rank(const Array& a) { return static_cast<std::int64_t>(a.shape.size()); }

// Every array an op reads goes through here, so a harness bug shows up as an error, not as garbage.
void check_array(const Array& a, const std::string& op, const char* name) {
  if (!a.present) fail(op, std::string(name) + " is absent");
  for (std::int64_t d : a.shape) {
    if (d < 0) fail(op, std::string(name) + " has a negative dim: " + dims_str(a.shape));
  }
  if (static_cast<std::int64_t>(a.data.size()) != product(a.shape)) {
    fail(op, std::string(name) + " " + dims_str(a.shape) + " holds " + std::to_string(a.data.size()) + " values");
  }
}

void check_rank(const Array& a, const std::string& op, const char* name, std::int64_t min_rank,
                std::int64_t max_rank = std::numeric_limits<std::int64_t>::max()) {
  if (rank(a) < min_rank || rank(a) > max_rank) {
    fail(op, std::string(name) + " " + dims_str(a.shape) + " has the wrong rank");
  }
}

// The ops outside the element-wise family and the matmul family reject zero-size dims.
void check_non_empty(const Array& a, const std::string& op, const char* name) {
  for (std::int64_t d : a.shape) {
    if (d == 0) fail(op, std::string(name) + " " + dims_str(a.shape) + " has a zero-size dim");
  }
}

// An optional per-channel vector: absent, or exactly [n].
void check_optional_vector(const Array& a, std::int64_t n, const std::string& op, const char* name) {
  if (!a.present) return;
  check_array(a, op, name);
  if (a.shape != Dims{n}) fail(op, std::string(name) + " " + dims_str(a.shape) + " is not [" + std::to_string(n) + "]");
}

int normalize_axis(int axis, std::int64_t rank, const std::string& op) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a);
}

Array zeros(const Dims& shape) {
  return Array{shape, std::vector<double>(static_cast<std::size_t>(product(shape)), 0.0)};
}

// ---- indexing ----

// Steps a multi-index to the next row-major position in `shape` (the last dim moves fastest).
void advance(Dims& index, const Dims& shape) {
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return;
    index[d] = 0;
  }
}

// The row-major position in `in_shape` that numpy broadcasting reads for the output element at
// `out_index`: in_shape is aligned to the right, and its size-1 dims always read index 0.
std::int64_t broadcast_source(const Dims& out_index, const Dims& in_shape) {
  const std::size_t lead = out_index.size() - in_shape.size();
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < in_shape.size(); ++d) {
    const std::int64_t i = in_shape[d] == 1 ? 0 : out_index[lead + d];
    flat = flat * in_shape[d] + i;
  }
  return flat;
}

// A shape seen as [outer, n, inner] around one axis: element (o, i, j) is at (o * n + i) * inner + j.
struct AxisSplit {
  std::int64_t outer;
  std::int64_t n;
  std::int64_t inner;
  std::int64_t at(std::int64_t o, std::int64_t i, std::int64_t j) const { return (o * n + i) * inner + j; }
};

AxisSplit split_at(const Dims& shape, int axis) {
  const auto a = static_cast<std::size_t>(axis);
  return {product(shape, 0, a), shape[a], product(shape, a + 1, shape.size())};
}

// A value with no scale of its own: one rounding or a select, measured against |value|.
constexpr auto no_scale = [](auto...) { return -1.0; };

// y = f(x) element by element; scale_of(x, y) is the element's scale, negative for none.
template <class F, class S = decltype(no_scale)>
Array map(const Array& x, const std::string& op, F f, S scale_of = no_scale) {
  check_array(x, op, "x");
  Array y = x;
  y.scale.assign(y.data.size(), 0.0);
  bool scaled = false;
  for (std::size_t i = 0; i < y.data.size(); ++i) {
    y.data[i] = f(x.data[i]);
    y.scale[i] = scale_of(x.data[i], y.data[i]);
    scaled = scaled || y.scale[i] >= 0;
  }
  if (!scaled) y.scale.clear();
  return y;
}

template <class F, class S = decltype(no_scale)>
Array zip_broadcast(const Array& a, const Array& b, const std::string& op, F f, S scale_of = no_scale) {
  check_array(a, op, "a");
  check_array(b, op, "b");
  Array out = zeros(broadcast_shapes(a.shape, b.shape));
  out.scale.assign(out.data.size(), 0.0);
  bool scaled = false;
  Dims index(out.shape.size(), 0);
  for (std::int64_t i = 0; i < out.numel(); ++i, advance(index, out.shape)) {
    const double u = a.data[broadcast_source(index, a.shape)], v = b.data[broadcast_source(index, b.shape)];
    out.data[i] = f(u, v);
    out.scale[i] = scale_of(u, v, out.data[i]);
    scaled = scaled || out.scale[i] >= 0;
  }
  if (!scaled) out.scale.clear();
  return out;
}

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

// ---- softmax of one row (shared by softmax, log_softmax and attention) ----

// scale (optional) receives each output's scale: for p_i = exp(x_i - m) / S, p_i (1 + |x_i - m|),
// since x_i - m is rounded before exp magnifies its error; for log p_i, |x_i - m| + |log S| + 1.
std::vector<double> softmax_row(const std::vector<double>& row, bool log_output, std::vector<double>* scale = nullptr) {
  bool poisoned = false;  // +inf or NaN makes the whole row NaN (inf - inf)
  double m = -kInf;
  for (double v : row) {
    if (std::isnan(v) || v == kInf) {
      poisoned = true;
    } else {
      m = std::max(m, v);
    }
  }
  // All -inf is 0/0, as numpy and PyTorch give.
  if (scale) scale->assign(row.size(), 0.0);
  if (poisoned || m == -kInf) return std::vector<double>(row.size(), kNaN);
  double total = 0.0;
  for (double v : row) total += std::exp(v - m);  // -inf entries add exp(-inf) = 0
  std::vector<double> out(row.size());
  for (std::size_t i = 0; i < row.size(); ++i) {
    out[i] = log_output ? (row[i] - m) - std::log(total) : std::exp(row[i] - m) / total;
    if (scale && std::isfinite(row[i])) {
      const double shift = std::fabs(row[i] - m);
      (*scale)[i] = log_output ? shift + std::fabs(std::log(total)) + 1.0 : out[i] * (1.0 + shift);
    }
  }
  return out;
}

Array softmax_along(const Array& x, int axis, bool log_output, const std::string& op) {
  check_array(x, op, "x");
  check_rank(x, op, "x", 1);
  check_non_empty(x, op, "x");
  const AxisSplit s = split_at(x.shape, normalize_axis(axis, rank(x), op));
  Array y = x;
  y.scale.resize(y.data.size());
  y.terms = s.n;
  // A probability in the normal range may not be flushed (e^-87, 1.6e-38, of the row
  // [0, -80, -87, -90]); one below 2^-126 may.
  y.normal_results_kept = !log_output;
  std::vector<double> row(static_cast<std::size_t>(s.n)), scale;
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t j = 0; j < s.inner; ++j) {
      for (std::int64_t i = 0; i < s.n; ++i) row[i] = x.data[s.at(o, i, j)];
      const std::vector<double> r = softmax_row(row, log_output, &scale);
      for (std::int64_t i = 0; i < s.n; ++i) {
        y.data[s.at(o, i, j)] = r[i];
        y.scale[s.at(o, i, j)] = scale[i];
      }
    }
  }
  return y;
}

// ---- reductions ----

// reduce_row gives an output's value; scale_row its scale (negative for none).
template <class F, class S = decltype(no_scale)>
Array reduce(const Array& x, int axis, bool keepdims, const std::string& op, F reduce_row, S scale_row = no_scale) {
  check_array(x, op, "x");
  check_rank(x, op, "x", 1);
  check_non_empty(x, op, "x");
  const int a = normalize_axis(axis, rank(x), op);
  const AxisSplit s = split_at(x.shape, a);
  Dims out_shape = x.shape;
  if (keepdims) {
    out_shape[static_cast<std::size_t>(a)] = 1;
  } else {
    out_shape.erase(out_shape.begin() + a);
  }
  Array y = zeros(out_shape);
  y.scale.resize(y.data.size());
  y.terms = s.n;
  bool scaled = false;
  std::vector<double> row(static_cast<std::size_t>(s.n));
  for (std::int64_t o = 0; o < s.outer; ++o) {
    for (std::int64_t j = 0; j < s.inner; ++j) {
      for (std::int64_t i = 0; i < s.n; ++i) row[i] = x.data[s.at(o, i, j)];
      y.data[o * s.inner + j] = reduce_row(row);
      y.scale[o * s.inner + j] = scale_row(row);
      scaled = scaled || y.scale[o * s.inner + j] >= 0;
    }
  }
  if (!scaled) y.scale.clear();
  return y;
}

double row_sum(const std::vector<double>& row) {
  double total = 0.0;
  for (double v : row) total += v;
  return total;
}

double row_abs_sum(const std::vector<double>& row) {
  double total = 0.0;
  for (double v : row) total += std::fabs(v);
  return total;
}

// ---- casts ----

struct FloatFormat {
  int mantissa_bits;  // stored fraction bits
  int min_exponent;   // exponent of the smallest normal value
  int max_exponent;   // exponent of the largest finite value
};

FloatFormat format_of(DType t) {
  switch (t) {
    case DType::f32: return {23, -126, 127};
    case DType::f16: return {10, -14, 15};
    case DType::bf16: return {7, -126, 127};
    case DType::i32: break;  // not a floating format: round_to_dtype handles it
  }
  throw std::invalid_argument("[ref cast] unknown dtype");
}

// Rounds on the format's grid of representable values: below the smallest normal the grid
// spacing stops shrinking, which gives the subnormals.
double round_to_format(double v, const FloatFormat& f) {
  if (std::isnan(v) || std::isinf(v) || v == 0.0) return v;
  const double magnitude = std::fabs(v);
  const int exponent = std::max(std::ilogb(magnitude), f.min_exponent);
  const int quantum = exponent - f.mantissa_bits;         // the grid spacing is 2^quantum
  const double scaled = std::ldexp(magnitude, -quantum);  // exact: a power-of-two scaling
  const double below = std::floor(scaled);
  const double remainder = scaled - below;  // exact
  const bool below_is_odd = std::fmod(below, 2.0) != 0.0;
  const double rounded = (remainder > 0.5 || (remainder == 0.5 && below_is_odd)) ? below + 1.0 : below;
  double result = std::ldexp(rounded, quantum);
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -f.mantissa_bits), f.max_exponent);
  if (result > max_finite) result = kInf;
  return std::copysign(result, v);
}

}  // namespace

// ---- Array ----

std::int64_t Array::numel() const { return product(shape); }

Array absent() {
  Array a;
  a.present = false;
  return a;
}

std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (std::size_t i = 0; i < r; ++i) {
    // Missing leading dims act as 1.
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument("[ref broadcast] " + dims_str(a) + " and " + dims_str(b) + " do not broadcast");
    }
    out[r - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// ---- matmul family ----

Array matmul(const Array& a, const Array& b, const MatmulParams& params) {
  const std::string op = "matmul";
  check_array(a, op, "a");
  check_array(b, op, "b");
  check_rank(a, op, "a", 2);
  check_rank(b, op, "b", 2);
  // Stored last two dims; a trans flag means the stored matrix is the transpose of the operand.
  const std::int64_t a_rows = a.shape[a.shape.size() - 2], a_cols = a.shape.back();
  const std::int64_t b_rows = b.shape[b.shape.size() - 2], b_cols = b.shape.back();
  const std::int64_t m = params.trans_a ? a_cols : a_rows;
  const std::int64_t k = params.trans_a ? a_rows : a_cols;
  const std::int64_t k_b = params.trans_b ? b_cols : b_rows;
  const std::int64_t n = params.trans_b ? b_rows : b_cols;
  if (k != k_b) fail(op, "inner dims differ: " + dims_str(a.shape) + " @ " + dims_str(b.shape));

  const Dims a_batch(a.shape.begin(), a.shape.end() - 2);
  const Dims b_batch(b.shape.begin(), b.shape.end() - 2);
  Dims out_shape = broadcast_shapes(a_batch, b_batch);
  const Dims batch = out_shape;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Array out = zeros(out_shape);
  out.scale.resize(out.data.size());
  out.terms = k;

  Dims index(batch.size(), 0);
  for (std::int64_t bi = 0; bi < product(batch); ++bi, advance(index, batch)) {
    const std::int64_t a_base = broadcast_source(index, a_batch) * a_rows * a_cols;
    const std::int64_t b_base = broadcast_source(index, b_batch) * b_rows * b_cols;
    auto a_at = [&](std::int64_t i, std::int64_t kk) {
      return a.data[a_base + (params.trans_a ? kk * a_cols + i : i * a_cols + kk)];
    };
    auto b_at = [&](std::int64_t kk, std::int64_t j) {
      return b.data[b_base + (params.trans_b ? j * b_cols + kk : kk * b_cols + j)];
    };
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double total = 0.0, magnitude = 0.0;  // K == 0 leaves the empty sum, 0
        for (std::int64_t kk = 0; kk < k; ++kk) {
          total += a_at(i, kk) * b_at(kk, j);
          magnitude += std::fabs(a_at(i, kk) * b_at(kk, j));
        }
        out.data[(bi * m + i) * n + j] = total;
        out.scale[(bi * m + i) * n + j] = magnitude;
      }
    }
  }
  return out;
}

Array gemv(const Array& a, const Array& x, const GemvParams& params) {
  const std::string op = "gemv";
  check_array(a, op, "a");
  check_array(x, op, "x");
  check_rank(a, op, "a", 2, 2);
  check_rank(x, op, "x", 1, 1);
  const std::int64_t rows = a.shape[0], cols = a.shape[1];
  const std::int64_t m = params.trans ? cols : rows;
  const std::int64_t k = params.trans ? rows : cols;
  if (x.shape[0] != k) fail(op, "a " + dims_str(a.shape) + " does not fit x " + dims_str(x.shape));
  Array y = zeros({m});
  y.scale.resize(y.data.size());
  y.terms = k;
  for (std::int64_t i = 0; i < m; ++i) {
    double total = 0.0, magnitude = 0.0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const double a_ik = params.trans ? a.data[kk * cols + i] : a.data[i * cols + kk];
      total += a_ik * x.data[kk];
      magnitude += std::fabs(a_ik * x.data[kk]);
    }
    y.data[i] = total;
    y.scale[i] = magnitude;
  }
  return y;
}

Array dot(const Array& x, const Array& y) {
  const std::string op = "dot";
  check_array(x, op, "x");
  check_array(y, op, "y");
  check_rank(x, op, "x", 1, 1);
  check_rank(y, op, "y", 1, 1);
  if (x.shape != y.shape) fail(op, "x " + dims_str(x.shape) + " and y " + dims_str(y.shape) + " differ");
  double total = 0.0, magnitude = 0.0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    total += x.data[i] * y.data[i];
    magnitude += std::fabs(x.data[i] * y.data[i]);
  }
  Array out{{}, {total}};
  out.scale = {magnitude};
  out.terms = x.numel();
  return out;
}

// ---- element-wise ----

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

// ---- softmax and norms ----

Array softmax(const Array& x, int axis) { return softmax_along(x, axis, false, "softmax"); }
Array log_softmax(const Array& x, int axis) { return softmax_along(x, axis, true, "log_softmax"); }

Array layernorm(const Array& x, const Array& gamma, const Array& beta, double eps) {
  const std::string op = "layernorm";
  check_array(x, op, "x");
  check_rank(x, op, "x", 1);
  check_non_empty(x, op, "x");
  if (!(eps > 0)) fail(op, "eps must be > 0");
  const std::int64_t n = x.shape.back();
  check_optional_vector(gamma, n, op, "gamma");
  check_optional_vector(beta, n, op, "beta");
  Array y = x;
  y.scale.resize(y.data.size());
  y.terms = n;
  for (std::int64_t row = 0; row < x.numel() / n; ++row) {
    const double* v = x.data.data() + row * n;
    double mean = 0.0;
    for (std::int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= static_cast<double>(n);
    double mean_abs = 0.0;  // the mean's own scale: its rounding is relative to mean |x|, not |mean|
    for (std::int64_t i = 0; i < n; ++i) mean_abs += std::fabs(v[i]);
    mean_abs /= static_cast<double>(n);
    double var = 0.0;  // biased: divided by N, not N - 1
    for (std::int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i) {
      const double g = gamma.present ? gamma.data[i] : 1.0;
      const double b = beta.present ? beta.data[i] : 0.0;
      y.data[row * n + i] = (v[i] - mean) / std::sqrt(var + eps) * g + b;
      // x - mean carries x's rounding and the mean's (relative to mean |x|), then is scaled by
      // g / sigma; beta adds its own.
      y.scale[row * n + i] = (std::fabs(v[i]) + mean_abs) / std::sqrt(var + eps) * std::fabs(g) + std::fabs(b);
    }
  }
  return y;
}

Array rmsnorm(const Array& x, const Array& gamma, double eps) {
  const std::string op = "rmsnorm";
  check_array(x, op, "x");
  check_rank(x, op, "x", 1);
  check_non_empty(x, op, "x");
  if (!(eps > 0)) fail(op, "eps must be > 0");
  const std::int64_t n = x.shape.back();
  check_optional_vector(gamma, n, op, "gamma");
  Array y = x;
  y.scale.clear();  // a product of well-conditioned factors: relative to |y|
  y.terms = n;
  for (std::int64_t row = 0; row < x.numel() / n; ++row) {
    const double* v = x.data.data() + row * n;
    double mean_square = 0.0;
    for (std::int64_t i = 0; i < n; ++i) mean_square += v[i] * v[i];
    mean_square /= static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i) {
      const double g = gamma.present ? gamma.data[i] : 1.0;
      y.data[row * n + i] = v[i] / std::sqrt(mean_square + eps) * g;
    }
  }
  return y;
}

// ---- conv2d, attention, rope ----

Array conv2d(const Array& x, const Array& w, const Array& bias, const Conv2dParams& params) {
  const std::string op = "conv2d";
  check_array(x, op, "x");
  check_array(w, op, "w");
  check_rank(x, op, "x", 4, 4);
  check_rank(w, op, "w", 4, 4);
  check_non_empty(x, op, "x");
  check_non_empty(w, op, "w");
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  const std::int64_t filters = w.shape[0], group_channels = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const std::int64_t groups = params.groups;
  const Pair2 stride = params.stride, pad = params.padding, dil = params.dilation;
  if (groups < 1 || channels % groups != 0 || filters % groups != 0) {
    fail(op, "groups " + std::to_string(groups) + " does not divide C " + std::to_string(channels) + " and K " +
                 std::to_string(filters));
  }
  if (group_channels != channels / groups) {
    fail(op,
         "w " + dims_str(w.shape) + " does not fit x " + dims_str(x.shape) + " with groups " + std::to_string(groups));
  }
  if (stride.h < 1 || stride.w < 1 || dil.h < 1 || dil.w < 1 || pad.h < 0 || pad.w < 0) {
    fail(op, "stride and dilation must be >= 1 and padding >= 0");
  }
  check_optional_vector(bias, filters, op, "bias");
  // The extent the dilated kernel sweeps must fit the padded input, or there is no output pixel.
  const std::int64_t span_h = height + 2 * pad.h - dil.h * (kh - 1) - 1;
  const std::int64_t span_w = width + 2 * pad.w - dil.w * (kw - 1) - 1;
  if (span_h < 0 || span_w < 0) fail(op, "the dilated kernel is larger than the padded input");
  const std::int64_t out_h = span_h / stride.h + 1, out_w = span_w / stride.w + 1;

  Array y = zeros({batch, filters, out_h, out_w});
  y.scale.resize(y.data.size());
  y.terms = group_channels * kh * kw + (bias.present ? 1 : 0);
  const std::int64_t filters_per_group = filters / groups;
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t k = 0; k < filters; ++k) {
      const std::int64_t first_channel = (k / filters_per_group) * group_channels;
      for (std::int64_t p = 0; p < out_h; ++p) {
        for (std::int64_t q = 0; q < out_w; ++q) {
          double total = 0.0, magnitude = 0.0;
          for (std::int64_t c = 0; c < group_channels; ++c) {
            for (std::int64_t r = 0; r < kh; ++r) {
              const std::int64_t h = p * stride.h - pad.h + r * dil.h;
              if (h < 0 || h >= height) continue;  // zero padding
              for (std::int64_t s = 0; s < kw; ++s) {
                const std::int64_t col = q * stride.w - pad.w + s * dil.w;
                if (col < 0 || col >= width) continue;
                const double xv = x.data[((n * channels + first_channel + c) * height + h) * width + col];
                const double wv = w.data[((k * group_channels + c) * kh + r) * kw + s];
                total += xv * wv;
                magnitude += std::fabs(xv * wv);
              }
            }
          }
          if (bias.present) total += bias.data[k], magnitude += std::fabs(bias.data[k]);
          y.data[((n * filters + k) * out_h + p) * out_w + q] = total;
          y.scale[((n * filters + k) * out_h + p) * out_w + q] = magnitude;
        }
      }
    }
  }
  return y;
}

Array attention(const Array& q, const Array& k, const Array& v, const AttentionParams& params) {
  const std::string op = "attention";
  check_array(q, op, "q");
  check_array(k, op, "k");
  check_array(v, op, "v");
  check_rank(q, op, "q", 2);
  check_non_empty(q, op, "q");
  check_non_empty(k, op, "k");
  check_non_empty(v, op, "v");
  const std::size_t r = q.shape.size();
  if (k.shape.size() != r || v.shape.size() != r) fail(op, "q, k and v must have the same rank");
  const Dims lead(q.shape.begin(), q.shape.end() - 2);
  // Grouped-query attention: dim -3 (the heads) of k and v may divide q's; every other leading dim is equal.
  const std::int64_t hq = r >= 3 ? q.shape[r - 3] : 1, hkv = r >= 3 ? k.shape[r - 3] : 1;
  Dims kv_lead = lead;
  if (r >= 3) kv_lead[r - 3] = hkv;
  if (Dims(k.shape.begin(), k.shape.end() - 2) != kv_lead || Dims(v.shape.begin(), v.shape.end() - 2) != kv_lead ||
      hkv < 1 || hq % hkv != 0) {
    fail(op,
         "leading dims do not fit: q " + dims_str(q.shape) + ", k " + dims_str(k.shape) + ", v " + dims_str(v.shape));
  }
  const std::int64_t group = hq / hkv;
  const std::int64_t lq = q.shape[r - 2], d = q.shape[r - 1];
  const std::int64_t lk = k.shape[r - 2], dv = v.shape[r - 1];
  if (k.shape[r - 1] != d || v.shape[r - 2] != lk) {
    fail(op, "q " + dims_str(q.shape) + ", k " + dims_str(k.shape) + ", v " + dims_str(v.shape) + " do not fit");
  }
  if (params.causal && lq > lk) fail(op, "causal needs Lq <= Lk");
  if (params.window < 0 || (params.window > 0 && !params.causal)) fail(op, "window needs causal and >= 0");
  const double scale = params.scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(d)) : params.scale;

  Array out = zeros([&] {
    Dims s = lead;
    s.push_back(lq);
    s.push_back(dv);
    return s;
  }());
  out.scale.resize(out.data.size());
  out.terms = std::max(lk, d);
  std::vector<double> scores(static_cast<std::size_t>(lk)), score_scale(static_cast<std::size_t>(lk)), p_scale;
  for (std::int64_t b = 0; b < product(lead); ++b) {
    const double* qb = q.data.data() + b * lq * d;
    const std::int64_t kv = (b / hq) * hkv + (b % hq) / group;  // q head h reads kv head h / group
    const double* kb = k.data.data() + kv * lk * d;
    const double* vb = v.data.data() + kv * lk * dv;
    double* ob = out.data.data() + b * lq * dv;
    for (std::int64_t i = 0; i < lq; ++i) {
      // Causal alignment is to the end: the last query sees every key.
      // A window sees the last `window` keys up to the query's position.
      const std::int64_t pos = i + (lk - lq);
      auto visible = [&](std::int64_t j) {
        return !params.causal || (j <= pos && (params.window == 0 || j > pos - params.window));
      };
      for (std::int64_t j = 0; j < lk; ++j) {
        double s = 0.0, magnitude = 0.0;
        for (std::int64_t c = 0; c < d; ++c) {
          s += qb[i * d + c] * kb[j * d + c];
          magnitude += std::fabs(qb[i * d + c] * kb[j * d + c]);
        }
        scores[j] = visible(j) ? s * scale : -kInf;
        score_scale[j] = magnitude * std::fabs(scale);
      }
      const std::vector<double> p = softmax_row(scores, false, &p_scale);
      for (std::int64_t c = 0; c < dv; ++c) {
        double total = 0.0, magnitude = 0.0;
        // Masked keys are skipped rather than weighted by 0, so an inf or a NaN in their value rows does not leak in.
        for (std::int64_t j = 0; j < lk; ++j) {
          if (!visible(j)) continue;
          total += p[j] * vb[j * dv + c];
          // p_j is off by its own scale, plus the score's rounding (relative to sum |q k|) that exp turns relative.
          magnitude += (p_scale[j] + p[j] * score_scale[j]) * std::fabs(vb[j * dv + c]);
        }
        ob[i * dv + c] = total;
        out.scale[static_cast<std::size_t>(ob - out.data.data() + i * dv + c)] = magnitude;
      }
    }
  }
  return out;
}

Array rope(const Array& x, const RopeParams& params) {
  const std::string op = "rope";
  check_array(x, op, "x");
  check_rank(x, op, "x", 2);
  check_non_empty(x, op, "x");
  const std::int64_t len = x.shape[x.shape.size() - 2], d = x.shape.back();
  if (d % 2 != 0) fail(op, "D " + std::to_string(d) + " is odd");
  const double base = params.base;
  Array y = x;
  y.scale.resize(y.data.size());
  const bool halves = params.pairs == RopePairs::halves;
  for (std::int64_t row = 0; row < x.numel() / d; ++row) {
    const double position = static_cast<double>(params.position_offset + row % len);
    for (std::int64_t i = 0; i < d / 2; ++i) {
      // pair i: (x[2i], x[2i+1]) interleaved, (x[i], x[i + D/2]) in halves
      const std::int64_t a = row * d + (halves ? i : 2 * i), b = halves ? a + d / 2 : a + 1;
      const double angle = position * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      const double x0 = x.data[a], x1 = x.data[b];
      y.data[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      y.data[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
      // The angle is position * base^(-2i/D), computed in f32: an error relative to |angle|, which
      // moves the pair by |angle| times its derivative; plus the two products' roundings.
      const double c = std::fabs(std::cos(angle)), sn = std::fabs(std::sin(angle)), ax0 = std::fabs(x0),
                   ax1 = std::fabs(x1);
      y.scale[a] = ax0 * c + ax1 * sn + angle * (ax0 * sn + ax1 * c);
      y.scale[b] = ax0 * sn + ax1 * c + angle * (ax0 * c + ax1 * sn);
    }
  }
  return y;
}

// ---- reductions, copy, cast ----

Array sum(const Array& x, int axis, bool keepdims) { return reduce(x, axis, keepdims, "sum", row_sum, row_abs_sum); }

Array mean(const Array& x, int axis, bool keepdims) {
  const auto n = [](const std::vector<double>& row) { return static_cast<double>(row.size()); };
  return reduce(
      x, axis, keepdims, "mean", [&](const std::vector<double>& row) { return row_sum(row) / n(row); },
      [&](const std::vector<double>& row) { return row_abs_sum(row) / n(row); });
}

Array max(const Array& x, int axis, bool keepdims) {
  return reduce(x, axis, keepdims, "max", [](const std::vector<double>& row) {
    double m = -kInf;
    for (double v : row) {
      if (std::isnan(v)) return v;
      m = std::max(m, v);
    }
    return m;
  });
}

Array copy(const Array& x) {
  check_array(x, "copy", "x");
  return x;
}

double round_to_dtype(double v, DType dtype) {
  if (dtype == DType::i32) {  // toward zero, saturating at the i32 range, NaN to 0
    if (std::isnan(v)) return 0.0;
    return std::clamp(std::trunc(v), -2147483648.0, 2147483647.0);
  }
  return round_to_format(v, format_of(dtype));
}

Array cast(const Array& x, DType dtype) {
  // trine's cast reads f32 values, so a double input becomes f32 first (an i32 input too: i32 to
  // f16 or bf16 goes through f32, as the op defines it).
  return map(x, "cast", [&](double v) { return round_to_dtype(round_to_dtype(v, DType::f32), dtype); });
}

Array argmax(const Array& x, int axis, bool keepdims) {
  return reduce(x, axis, keepdims, "argmax", [](const std::vector<double>& row) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (std::isnan(row[i])) return static_cast<double>(i);  // the first NaN wins
      if (row[i] > row[best]) best = i;                        // ties keep the first
    }
    return static_cast<double>(best);
  });
}

Array gather(const Array& table, const Array& indices) {
  const std::string op = "gather";
  check_array(table, op, "table");
  check_array(indices, op, "indices");
  if (table.shape.size() != 2 || indices.shape.size() != 1)
    fail(op, "table must be [V, D] and indices [N], got " + dims_str(table.shape) + " and " + dims_str(indices.shape));
  const std::int64_t v = table.shape[0], d = table.shape[1], n = indices.shape[0];
  Array y = zeros({n, d});
  for (std::int64_t i = 0; i < n; ++i) {
    const double at = indices.data[static_cast<std::size_t>(i)];
    if (!(at >= 0 && at < static_cast<double>(v)))
      fail(op, "index " + std::to_string(at) + " at position " + std::to_string(i) + " is outside [0, " +
                   std::to_string(v) + ")");
    for (std::int64_t j = 0; j < d; ++j)
      y.data[static_cast<std::size_t>(i * d + j)] = table.data[static_cast<std::size_t>(static_cast<std::int64_t>(at) * d + j)];
  }
  return y;
}

Array concat(const std::vector<Array>& inputs, int axis) {
  const std::string op = "concat";
  if (inputs.empty()) fail(op, "no inputs");
  const Dims& first = inputs[0].shape;
  const int rank = static_cast<int>(first.size());
  const int a = axis < 0 ? axis + rank : axis;
  if (rank == 0 || a < 0 || a >= rank) fail(op, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  Dims out = first;
  out[static_cast<std::size_t>(a)] = 0;
  for (const Array& x : inputs) {
    check_array(x, op, "input");
    bool fits = x.shape.size() == first.size();
    for (int d = 0; fits && d < rank; ++d) fits = d == a || x.shape[static_cast<std::size_t>(d)] == first[static_cast<std::size_t>(d)];
    if (!fits) fail(op, dims_str(x.shape) + " does not fit " + dims_str(first) + " along axis " + std::to_string(axis));
    out[static_cast<std::size_t>(a)] += x.shape[static_cast<std::size_t>(a)];
  }
  // rows of the output: outer blocks, each the inputs' slabs along the axis one after another
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; ++d) outer *= first[static_cast<std::size_t>(d)];
  for (int d = a + 1; d < rank; ++d) inner *= first[static_cast<std::size_t>(d)];
  Array y = zeros(out);
  std::size_t at = 0;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Array& x : inputs) {
      const std::int64_t slab = x.shape[static_cast<std::size_t>(a)] * inner;
      for (std::int64_t k = 0; k < slab; ++k) y.data[at++] = x.data[static_cast<std::size_t>(o * slab + k)];
    }
  }
  return y;
}

Array where(const Array& cond, const Array& a, const Array& b) {
  const std::string op = "where";
  check_array(cond, op, "cond");
  const Array ab = zip_broadcast(a, b, op, [](double, double) { return 0.0; });  // a and b's broadcast shape
  Array y = zeros(broadcast_shapes(cond.shape, ab.shape));
  Dims index(y.shape.size(), 0);
  for (std::int64_t i = 0; i < y.numel(); ++i, advance(index, y.shape)) {
    const double c = cond.data[broadcast_source(index, cond.shape)];
    const Array& pick = c != 0.0 ? a : b;  // NaN != 0: true
    y.data[static_cast<std::size_t>(i)] = pick.data[broadcast_source(index, pick.shape)];
  }
  return y;
}

// ---- dispatch ----

Array run(OpKind op, const std::vector<Array>& inputs, const OpParams& params) {
  if (static_cast<std::size_t>(op) >= static_cast<std::size_t>(TRINE_OP_COUNT))
    throw std::invalid_argument("[ref run] unknown op");
  const OpInfo& row = op_info(op);
  const std::string name = row.name;
  const auto count = static_cast<int>(inputs.size());
  if (count < row.min_inputs || count > row.max_inputs) {
    fail(name, "takes " + std::to_string(row.min_inputs) + ".." + std::to_string(row.max_inputs) + " inputs, got " +
                   std::to_string(count));
  }
  for (int i = 0; i < row.min_inputs; ++i) {
    if (!inputs[static_cast<std::size_t>(i)].present) fail(name, "input " + std::to_string(i) + " is required");
  }
  if (params.index() != row.params_index) fail(name, "params are not the op's parameter struct");

  const Array missing = absent();
  auto in = [&](std::size_t i) -> const Array& { return i < inputs.size() ? inputs[i] : missing; };
  // The holds_alternative check above makes each std::get below safe.
  switch (op) {
    case OpKind::matmul: return matmul(in(0), in(1), std::get<MatmulParams>(params));
    case OpKind::gemv: return gemv(in(0), in(1), std::get<GemvParams>(params));
    case OpKind::dot: return dot(in(0), in(1));
    case OpKind::add: return add(in(0), in(1));
    case OpKind::sub: return sub(in(0), in(1));
    case OpKind::mul: return mul(in(0), in(1));
    case OpKind::div: return div(in(0), in(1));
    case OpKind::scale: return scale(in(0), std::get<ScaleParams>(params));
    case OpKind::bias_act: return bias_act(in(0), in(1), std::get<BiasActParams>(params));
    case OpKind::relu: return relu(in(0));
    case OpKind::leaky_relu: return leaky_relu(in(0), std::get<ActParams>(params).alpha);
    case OpKind::elu: return elu(in(0), std::get<ActParams>(params).alpha);
    case OpKind::sigmoid: return sigmoid(in(0));
    case OpKind::tanh: return tanh(in(0));
    case OpKind::silu: return silu(in(0));
    case OpKind::gelu: return gelu(in(0));
    case OpKind::gelu_tanh: return gelu_tanh(in(0));
    case OpKind::clip: {
      const auto& p = std::get<ActParams>(params);
      return clip(in(0), p.alpha, p.beta);
    }
    case OpKind::softmax: return softmax(in(0), std::get<AxisParams>(params).axis);
    case OpKind::log_softmax: return log_softmax(in(0), std::get<AxisParams>(params).axis);
    case OpKind::layernorm: return layernorm(in(0), in(1), in(2), std::get<NormParams>(params).eps);
    case OpKind::rmsnorm: return rmsnorm(in(0), in(1), std::get<NormParams>(params).eps);
    case OpKind::conv2d: return conv2d(in(0), in(1), in(2), std::get<Conv2dParams>(params));
    case OpKind::attention: return attention(in(0), in(1), in(2), std::get<AttentionParams>(params));
    case OpKind::rope: return rope(in(0), std::get<RopeParams>(params));
    case OpKind::sum: {
      const auto& p = std::get<ReduceParams>(params);
      return sum(in(0), p.axis, p.keepdims);
    }
    case OpKind::mean: {
      const auto& p = std::get<ReduceParams>(params);
      return mean(in(0), p.axis, p.keepdims);
    }
    case OpKind::max: {
      const auto& p = std::get<ReduceParams>(params);
      return max(in(0), p.axis, p.keepdims);
    }
    case OpKind::copy: return copy(in(0));
    case OpKind::cast: return cast(in(0), std::get<CastParams>(params).dtype);
    case OpKind::minimum: return minimum(in(0), in(1));
    case OpKind::maximum: return maximum(in(0), in(1));
    case OpKind::where: return where(in(0), in(1), in(2));
    case OpKind::exp: return exp(in(0));
    case OpKind::log: return log(in(0));
    case OpKind::sqrt: return sqrt(in(0));
    case OpKind::rsqrt: return rsqrt(in(0));
    case OpKind::abs: return abs(in(0));
    case OpKind::neg: return neg(in(0));
    case OpKind::pow: return pow(in(0), std::get<ActParams>(params).alpha);
    case OpKind::argmax: {
      const auto& p = std::get<ReduceParams>(params);
      return argmax(in(0), p.axis, p.keepdims);
    }
    case OpKind::gather: return gather(in(0), in(1));
    case OpKind::concat: return concat(inputs, std::get<AxisParams>(params).axis);
  }
  throw std::invalid_argument("[ref run] unknown op");
}

}  // namespace trine::ref
