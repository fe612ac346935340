// Bridges trine tensors to the reference oracle, and measures a result against it: the one
// definition of the error the tests bound and the tour prints (bounds: tests/reference/bounds.hpp).
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/reference/reference.hpp"
#include "trine/debug.hpp"
#include "trine/tensor.hpp"

namespace trine::ref {

// One IEEE binary value from its bits, by integer arithmetic of its own (not trine's f16_to_f32 or
// a memcpy), so a conversion bug in trine cannot cancel itself out against the oracle.
inline double decode_binary(std::uint32_t bits, int exponent_bits, int fraction_bits) {
  const int total = 1 + exponent_bits + fraction_bits;
  const bool negative = ((bits >> (total - 1)) & 1u) != 0;
  const std::uint32_t exponent = (bits >> fraction_bits) & ((1u << exponent_bits) - 1u);
  const std::uint32_t fraction = bits & ((1u << fraction_bits) - 1u);
  const int bias = (1 << (exponent_bits - 1)) - 1;
  if (exponent == (1u << exponent_bits) - 1u) {
    const double special =
        fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return negative ? -special : special;
  }
  if (exponent == 0) {  // zero and subnormals: no implicit leading 1
    const double v = std::ldexp(static_cast<double>(fraction), 1 - bias - fraction_bits);
    return negative ? -v : v;
  }
  // A normal value is the same number in binary64: re-bias the exponent, widen the fraction
  // (integer work only: the oracle decodes millions of elements per run).
  const std::uint64_t bits64 = (std::uint64_t{negative} << 63) |
                               (static_cast<std::uint64_t>(static_cast<int>(exponent) - bias + 1023) << 52) |
                               (static_cast<std::uint64_t>(fraction) << (52 - fraction_bits));
  double v;
  std::memcpy(&v, &bits64, sizeof v);
  return v;
}

// Element `index` (in elements) of raw little-endian storage holding `dtype`.
inline double decode_element(const std::vector<std::uint8_t>& bytes, std::int64_t index, DType dtype) {
  const std::size_t width = dtype_size(dtype);
  const auto at = static_cast<std::size_t>(index) * width;
  if (index < 0 || at + width > bytes.size()) {
    throw std::out_of_range("[ref decode] element " + std::to_string(index) + " lies outside the storage");
  }
  std::uint32_t bits = 0;
  for (std::size_t b = width; b-- > 0;) bits = (bits << 8) | bytes[at + b];
  switch (dtype) {
    case DType::f32: return decode_binary(bits, 8, 23);
    case DType::f16: return decode_binary(bits, 5, 10);
    case DType::bf16: return decode_binary(bits, 8, 7);
    case DType::i32: return static_cast<double>(static_cast<std::int32_t>(bits));
    default: break;  // quantized: from_tensor dequantizes whole rows
  }
  throw std::invalid_argument("[ref decode] unknown dtype");
}

// The tensor's values as the oracle sees them: read from the raw bytes of its storage with the
// view's own shape, strides, offset and dtype, row-major. Nothing of trine's conversion or
// strided-copy code runs, so a strided input is not checked against the code under test.
// An undefined tensor is an absent optional input.
// `bytes` is the whole storage as debug::storage_bytes gives it (a caller that already holds it
// saves a copy).
inline Array from_tensor(const Tensor& t, const std::vector<std::uint8_t>& bytes) {
  if (!t.defined()) return absent();
  Array a;
  a.shape.assign(t.shape().dims().begin(), t.shape().dims().end());
  const std::int64_t n = t.numel();
  a.data.resize(static_cast<std::size_t>(n));
  if (n == 0) return a;
  // Row by row along the last dim; `index` walks the leading dims row-major.
  const std::size_t rank = a.shape.size();
  const std::int64_t row_len = rank ? a.shape.back() : 1;
  const std::int64_t row_stride = rank ? t.strides()[static_cast<int>(rank - 1)] : 0;
  std::vector<std::int64_t> index(rank ? rank - 1 : 0, 0);
  for (std::int64_t row = 0; row < n / row_len; ++row) {
    std::int64_t at = t.offset();
    for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * t.strides()[static_cast<int>(d)];
    for (std::int64_t j = 0; j < row_len; ++j) {
      a.data[static_cast<std::size_t>(row * row_len + j)] = decode_element(bytes, at + j * row_stride, t.dtype());
    }
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  return a;
}

inline Array from_tensor(const Tensor& t) { return t.defined() ? from_tensor(t, debug::storage_bytes(t)) : absent(); }

// The error measure. Each output element i is compared with the reference rounded to f32 (the
// best an f32 result can be) and normalized by the element's scale s_i, the magnitude of the terms
// that produced it (Array::scale; |ref_i| for ops that are one rounding or a select):
//     error = max_i |out_i - fl32(ref_i)| / s_i
// For sums and dot products s_i = sum |a_k b_k|, so the bound does not blow up when the sum
// cancels; an exact op has error 0. Elements that are NaN or inf on either side (the reference
// after rounding to f32) are not measured but must agree: NaN where the reference has NaN, the
// same infinity where it has one.
// Absolute differences below 2^-100 are not measured: kernels may flush subnormal results and
// intermediates to zero (an exp below -87.3 gives 0), which moves a result by FLT_MIN (2^-126)
// times the operands it multiplies; any real defect on the suite's data is far above that.
// Functions of one exact input (Array::normal_results_kept: exp, log, pow, the activations) are
// held closer: only a result whose reference is below FLT_MIN may be off by up to FLT_MIN (flushed
// to zero); a normal result is measured relative to itself however small it is.
struct Comparison {
  double error = 0;            // the measure above; bounded per op by bounds.hpp
  double max_abs = 0;          // the largest |out - ref| over the measured elements, for the eye
  bool specials_match = true;  // NaN and inf agree
  std::string first_mismatch;  // where specials differ, or the worst element
};

// `out_dtype` is the result's dtype: an i32 result is compared exactly, not rounded to f32 first;
// an f16 or bf16 result is measured the same way as an f32 one (its bound adds storage_rounding,
// bounds.hpp), its infinities where the reference overflows the 16-bit format, and f16's subnormal
// results allowed their absolute rounding (2^-25).
inline Comparison compare(const std::vector<double>& out, const Array& expect, DType out_dtype = DType::f32) {
  if (out.size() != expect.data.size()) throw std::invalid_argument("[ref compare] sizes differ");
  Comparison c;
  const bool sixteen = out_dtype == DType::f16 || out_dtype == DType::bf16;
  double worst = -1;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double r = expect.data[i];
    const double o = out[i];
    // The hardware's double -> float conversion rounds to nearest even; from FLT_MAX plus half an
    // ulp (2^128 - 2^103) on, round to nearest gives inf (and the conversion would be undefined).
    // A finite reference beyond f32's range must come out as that infinity.
    double r32 = out_dtype == DType::i32                              ? r
                 : std::isfinite(r) && std::fabs(r) >= 0x1.ffffffp127 ? std::copysign(HUGE_VAL, r)
                                                                      : static_cast<double>(static_cast<float>(r));
    // A 16-bit result is the f32 one rounded once more: a reference past the format's range must
    // come out as its infinity (f16 from 65520 on).
    if (sixteen && std::isfinite(r32) && std::isinf(round_to_dtype(r, out_dtype))) r32 = std::copysign(HUGE_VAL, r);
    if (!std::isfinite(r32) || !std::isfinite(o)) {
      const bool same = (std::isnan(r32) && std::isnan(o)) || r32 == o;  // r32 == o: the same infinity
      if (!same && c.specials_match) {
        c.specials_match = false;
        std::ostringstream s;
        s << "element " << i << ": got " << o << ", reference " << r;
        c.first_mismatch = s.str();
      }
      continue;
    }
    double diff = std::fabs(o - r32);
    if (expect.normal_results_kept ? std::fabs(r32) < FLT_MIN && diff <= FLT_MIN : diff < 0x1p-100) diff = 0;
    // f16's subnormal results (below 2^-14) are 2^-24 apart: half of that is their rounding.
    if (out_dtype == DType::f16 && std::fabs(r32) < 0x1p-14) diff = std::max(0.0, diff - 0x1p-25);
    const double scale = expect.scale.empty() ? std::fabs(r) : expect.scale[i];
    double e = 0;
    if (diff > 0) e = scale > 0 ? diff / scale : std::numeric_limits<double>::infinity();
    c.max_abs = std::max(c.max_abs, std::fabs(o - r));
    if (e > worst) {
      worst = e;
      worst_i = i;
    }
  }
  if (worst > 0) c.error = worst;
  if (c.specials_match && worst >= 0) {
    std::ostringstream s;
    s.precision(9);
    s << "worst element " << worst_i << ": got " << out[worst_i] << ", reference " << expect.data[worst_i] << ", scale "
      << (expect.scale.empty() ? std::fabs(expect.data[worst_i]) : expect.scale[worst_i]);
    c.first_mismatch = s.str();
  }
  return c;
}

}  // namespace trine::ref
