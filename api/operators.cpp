// The arithmetic operators on tensors (ops.hpp): each is the op function it spells, a float operand
// made a rank-0 tensor beside the other.
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine {
namespace {

// `v` as a rank-0 tensor of `like`'s dtype (f32 beside an i32 tensor: the op then names the i32),
// pinned on like's device when like is pinned there, else on the host for the dispatcher to place.
Tensor scalar_like(const Tensor& like, float v) {
  const DType dtype = like.defined() && dtype_is_float(like.dtype()) ? like.dtype() : DType::f32;
  const std::optional<Device> device =
      like.defined() && like.pinned() ? std::optional<Device>(like.device()) : std::nullopt;
  return Tensor::full(Shape{}, v, dtype, device);
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, float b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, float b) { return sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, float b) { return mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, float b) { return div(a, scalar_like(a, b)); }
Tensor operator+(float a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(float a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor operator*(float a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor operator/(float a, const Tensor& b) { return div(scalar_like(b, a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace trine
