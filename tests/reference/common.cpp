// The reference oracle's shared helpers (common.hpp) and Array's own functions.
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace trine::ref {

namespace detail {

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
                std::int64_t max_rank) {
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

// Steps a multi-index to the next row-major position in `shape` (the last dim moves fastest).
void advance(Dims& index, const Dims& shape) {
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return;
    index[d] = 0;
  }
}

std::int64_t broadcast_source(const Dims& out_index, const Dims& in_shape) {
  const std::size_t lead = out_index.size() - in_shape.size();
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < in_shape.size(); ++d) {
    const std::int64_t i = in_shape[d] == 1 ? 0 : out_index[lead + d];
    flat = flat * in_shape[d] + i;
  }
  return flat;
}

AxisSplit split_at(const Dims& shape, int axis) {
  const auto a = static_cast<std::size_t>(axis);
  return {product(shape, 0, a), shape[a], product(shape, a + 1, shape.size())};
}

std::vector<double> softmax_row(const std::vector<double>& row, bool log_output, std::vector<double>* scale) {
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

}  // namespace detail

using namespace detail;

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

}  // namespace trine::ref
