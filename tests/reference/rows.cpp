// The reference oracle: softmax, norms and reductions along an axis, in double precision.
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

// The norms' checks of x, gamma and eps; returns the length of the normalized (last) axis.
std::int64_t check_norm(const Array& x, const Array& gamma, double eps, const std::string& op) {
  check_array(x, op, "x");
  check_rank(x, op, "x", 1);
  check_non_empty(x, op, "x");
  if (!(eps > 0)) fail(op, "eps must be > 0");
  const std::int64_t n = x.shape.back();
  check_optional_vector(gamma, n, op, "gamma");
  return n;
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

}  // namespace

Array softmax(const Array& x, int axis) { return softmax_along(x, axis, false, "softmax"); }
Array log_softmax(const Array& x, int axis) { return softmax_along(x, axis, true, "log_softmax"); }

Array layernorm(const Array& x, const Array& gamma, const Array& beta, double eps) {
  const std::string op = "layernorm";
  const std::int64_t n = check_norm(x, gamma, eps, op);
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
  const std::int64_t n = check_norm(x, gamma, eps, op);
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

}  // namespace trine::ref
