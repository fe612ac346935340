// Internal: tensor creation with the pin stated (the public Tensor::empty pins exactly when the
// user names a device).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "trine/tensor.hpp"

namespace trine::detail {

// A contiguous tensor on `device` with fresh memory from its cache; `pinned` as given.
Tensor empty_tensor(const Shape& shape, DType dtype, Device device, bool pinned);

// Host data to and from a dtype's bytes, converted as cast converts (tensor.cpp): `count` floats
// into `dst`, and `count` elements of `dtype` at `src` as floats or int32s.
void encode_host(const float* src, std::size_t count, DType dtype, unsigned char* dst);
template <class T>
void decode_host(const unsigned char* src, DType dtype, std::size_t count, T* out);

// A contiguous tensor holding `bytes` (shape.numel() elements of dtype, as stored, unaligned allowed)
// copied once into `device`'s memory, pinned when a device is named; Error(invalid_shape) naming
// `op` when the byte count does not fit. And a tensor's elements as stored, read back contiguous.
Tensor tensor_from_bytes(const unsigned char* bytes, std::size_t count, const Shape& shape, DType dtype,
                         std::optional<Device> device, const char* op);
std::vector<unsigned char> tensor_bytes(const Tensor& t, const char* op);
// A contiguous tensor whose values gen(first, count, out) writes as floats, `count` at a time from
// element `first` (first a multiple of 65536), converted to dtype: no full-size host temporary.
Tensor tensor_generated(const Shape& shape, DType dtype, std::optional<Device> device, const char* op,
                        const std::function<void(std::size_t, std::size_t, float*)>& gen);

}  // namespace trine::detail
