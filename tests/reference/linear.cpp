// The reference oracle: the matmul family (matmul, gemv, dot), in double precision.
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

}  // namespace trine::ref
