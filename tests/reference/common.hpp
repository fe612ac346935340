// The reference oracle's shared helpers: checks, indexing, and the loops that map, zip and
// reduce arrays. Internal to tests/reference/*.cpp; the oracle's interface is reference.hpp.
#pragma once

#include "reference.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace trine::ref::detail {

using Dims = std::vector<std::int64_t>;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- errors and checks ----

std::string dims_str(const Dims& d);
[[noreturn]] void fail(const std::string& op, const std::string& what);
std::int64_t product(const Dims& d, std::size_t begin, std::size_t end);
std::int64_t product(const Dims& d);
std::int64_t rank(const Array& a);
// Every array an op reads goes through here, so a harness bug shows up as an error, not as garbage.
void check_array(const Array& a, const std::string& op, const char* name);
void check_rank(const Array& a, const std::string& op, const char* name, std::int64_t min_rank,
                std::int64_t max_rank = std::numeric_limits<std::int64_t>::max());
// The ops outside the element-wise family and the matmul family reject zero-size dims.
void check_non_empty(const Array& a, const std::string& op, const char* name);
// An optional per-channel vector: absent, or exactly [n].
void check_optional_vector(const Array& a, std::int64_t n, const std::string& op, const char* name);
int normalize_axis(int axis, std::int64_t rank, const std::string& op);
Array zeros(const Dims& shape);

// ---- indexing ----

// Steps a multi-index to the next row-major position in `shape` (the last dim moves fastest).
void advance(Dims& index, const Dims& shape);
// The row-major position in `in_shape` that numpy broadcasting reads for the output element at
// `out_index`: in_shape is aligned to the right, and its size-1 dims always read index 0.
std::int64_t broadcast_source(const Dims& out_index, const Dims& in_shape);

// A shape seen as [outer, n, inner] around one axis: element (o, i, j) is at (o * n + i) * inner + j.
struct AxisSplit {
  std::int64_t outer;
  std::int64_t n;
  std::int64_t inner;
  std::int64_t at(std::int64_t o, std::int64_t i, std::int64_t j) const { return (o * n + i) * inner + j; }
};


AxisSplit split_at(const Dims& shape, int axis);

// A value with no scale of its own: one rounding or a select, measured against |value|.
inline constexpr auto no_scale = [](auto...) { return -1.0; };

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

// ---- softmax of one row (shared by softmax, log_softmax and attention) ----

// scale (optional) receives each output's scale: for p_i = exp(x_i - m) / S, p_i (1 + |x_i - m|),
// since x_i - m is rounded before exp magnifies its error; for log p_i, |x_i - m| + |log S| + 1.
std::vector<double> softmax_row(const std::vector<double>& row, bool log_output, std::vector<double>* scale = nullptr);

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

}  // namespace trine::ref::detail
