// Bridges a trine::Tensor (any device, dtype or view) to the reference oracle's Array.
#pragma once

#include "tests/reference/reference.hpp"
#include "trine/tensor.hpp"

namespace trine::ref {

// The tensor's values as the oracle sees them: row-major, converted to f32 then double.
// An undefined tensor is an absent optional input.
inline Array from_tensor(const Tensor& t) {
  if (!t.defined()) return absent();
  Array a;
  a.shape.assign(t.shape().dims().begin(), t.shape().dims().end());
  auto v = t.to_vector();
  a.data.assign(v.begin(), v.end());
  return a;
}

}  // namespace trine::ref
