// Shape: up to 8 dimensions, row-major. Also used for strides (in elements).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace trine {

class Shape {
 public:
  static constexpr int max_rank = 8;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);  // throws invalid_shape past max_rank
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const noexcept { return rank_; }
  std::int64_t operator[](int i) const noexcept { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) noexcept { return dims_[static_cast<std::size_t>(i)]; }
  // Negative i counts from the end; throws invalid_argument when out of range.
  std::int64_t dim(int i) const;
  std::int64_t numel() const noexcept;  // 1 for rank 0
  std::span<const std::int64_t> dims() const noexcept { return {dims_.data(), static_cast<std::size_t>(rank_)}; }

  void push_back(std::int64_t d);  // throws invalid_shape past max_rank
  std::string str() const;         // "[2, 3, 4]"

  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  std::array<std::int64_t, max_rank> dims_{};
  int rank_ = 0;
};

using Strides = Shape;

// Row-major (C-contiguous) strides, in elements.
Strides contiguous_strides(const Shape& shape);

}  // namespace trine
