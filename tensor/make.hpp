// Internal: tensor creation with the pin stated (the public Tensor::empty pins exactly when the
// user names a device).
#pragma once

#include "trine/tensor.hpp"

namespace trine::detail {

// A contiguous tensor on `device` with fresh memory from its cache; `pinned` as given.
Tensor empty_tensor(const Shape& shape, DType dtype, Device device, bool pinned);

}  // namespace trine::detail
