// Internal to the cpu_simd backend: running one validated op call with a kernel table, and the
// helpers every family's glue (kernels/<family>.cpp) turns a call into kernel arguments with.
#pragma once

#include <cstdint>

#include "backends/backend.hpp"
#include "backends/cpu_simd/kernel_table.hpp"

namespace trine::cpu {

// Runs `call` (validated by the op table; output contiguous and allocated) with the kernel its
// family registered in `table`.
void execute(const KernelTable& table, const detail::OpCall& call);

// The first element of `t` in host memory.
std::uint8_t* base_ptr(const Tensor& t);
// The call's output as f32 (contiguous, allocated).
float* out_f32(const detail::OpCall& call);
// `t` as contiguous f32 data: its own memory when it is contiguous, else the one clearly named step
// that copies a strided view into a temporary, which `keep` holds alive. Null for an undefined `t`.
const float* contiguous_f32(const KernelTable& k, const Tensor& t, Tensor& keep);
// `t` (any dtype) as contiguous bytes: its own memory, or a contiguous copy held by `keep`.
const std::uint8_t* contiguous_bytes(const KernelTable& k, const Tensor& t, Tensor& keep);
// dst (contiguous, dst_dtype) = src (any strides, any dtype), on the pool.
void strided_convert(const KernelTable& k, const Tensor& src, std::uint8_t* dst, DType dst_dtype);
// [outer, n, inner] around `axis` of `shape` (negative counts from the end; validated already).
void split_axis(const Shape& shape, int axis, i64& outer, i64& n, i64& inner);

}  // namespace trine::cpu
