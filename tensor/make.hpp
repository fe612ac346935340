// Internal: tensor creation with the pin stated (the public Tensor::empty pins exactly when the
// user names a device).
#pragma once

#include "trine/tensor.hpp"

namespace trine::detail {

// A contiguous tensor on `device` with fresh memory from its cache; `pinned` as given.
Tensor empty_tensor(const Shape& shape, DType dtype, Device device, bool pinned);

// Host data to and from a dtype's bytes, converted as cast converts (tensor.cpp): `count` floats
// into `dst`, and `count` elements of `dtype` at `src` as floats or int32s.
void encode_host(const float* src, std::size_t count, DType dtype, unsigned char* dst);
template <class T>
void decode_host(const unsigned char* src, DType dtype, std::size_t count, T* out);

}  // namespace trine::detail
