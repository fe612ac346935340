// Shape: dimensions and strides, with their checks and printing.
#include "trine/shape.hpp"

#include <string>

#include "trine/error.hpp"

namespace trine {

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(max_rank)) {
    throw Error(ErrorCode::invalid_shape,
                "[shape] rank " + std::to_string(dims.size()) + " exceeds the maximum of " + std::to_string(max_rank));
  }
  for (auto d : dims) dims_[static_cast<std::size_t>(rank_++)] = d;
}

std::int64_t Shape::dim(int i) const {
  int j = i < 0 ? i + rank_ : i;
  if (j < 0 || j >= rank_) {
    throw Error(ErrorCode::invalid_argument,
                "[shape] dim " + std::to_string(i) + " out of range for rank " + std::to_string(rank_) + " " + str());
  }
  return dims_[static_cast<std::size_t>(j)];
}

std::int64_t Shape::numel() const noexcept {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

void Shape::push_back(std::int64_t d) {
  if (rank_ >= max_rank) {
    throw Error(ErrorCode::invalid_shape,
                "[shape] cannot append to " + str() + ": rank limit " + std::to_string(max_rank));
  }
  dims_[static_cast<std::size_t>(rank_++)] = d;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

bool operator==(const Shape& a, const Shape& b) noexcept {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[static_cast<std::size_t>(i)] != b.dims_[static_cast<std::size_t>(i)]) return false;
  return true;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s = shape;
  std::int64_t acc = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace trine
