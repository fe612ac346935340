// The reference oracle: copies, casts, gathers, concatenation and where, in double precision.
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
    default: break;  // i32 is not a floating format: round_to_dtype handles it
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

}  // namespace trine::ref
