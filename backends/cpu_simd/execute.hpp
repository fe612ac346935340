// Internal to the cpu_simd backend: running one validated op call with a kernel table, and the
// helpers every family's glue (kernels/<family>.cpp) turns a call into kernel arguments with.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

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
// `t` of any floating dtype as contiguous f32 data: contiguous_f32's for f32, a widened copy held by
// `keep` for f16 and bf16 (the compute-bound kernels, conv2d and attention, whose work per input
// element dwarfs one conversion pass). Null for an undefined `t`.
const float* widened_f32(const KernelTable& k, const Tensor& t, Tensor& keep);
// The call's result as an f32 array a kernel writes: the output itself when it is f32, else an f32
// temporary that round() rounds once into the 16-bit output (to nearest even, as cast does). For the
// ops whose result is O(inputs) or less against O(MNK) work (matmul, conv2d, attention).
class F32Result {
 public:
  F32Result(const KernelTable& k, const detail::OpCall& call);
  float* data() const noexcept { return data_; }
  void round() const;

 private:
  const KernelTable& k_;
  const detail::OpCall& call_;
  Tensor temp_;
  std::vector<float> small_;
  float* data_;
};
// `t` (any dtype) as contiguous bytes: its own memory, or a contiguous copy held by `keep`.
const std::uint8_t* contiguous_bytes(const KernelTable& k, const Tensor& t, Tensor& keep);
// dst (contiguous, dst_dtype) = src (any strides, any dtype), on the pool.
void strided_convert(const KernelTable& k, const Tensor& src, std::uint8_t* dst, DType dst_dtype);
// ---- f16 and bf16 tensors through the f32 kernels ----
//
// A kernel of a memory-bound family computes in f32 on f32 arrays. A call whose inputs or output
// are f16 or bf16 runs it staged: its `units` (elements, rows, [n, inner] slabs: independent pieces
// of work) are split over the pool, and each thread takes its share a few units at a time (about
// staged_piece_elems elements, 8 KiB of f32 per operand: in L1): each 16-bit input's piece is widened into an f32
// buffer of that thread, the kernel runs on the buffers, and a 16-bit output's piece is rounded once (to nearest even,
// overflow to inf, as cast does) into place. The buffers stay in L1/L2, so memory sees the 16-bit bytes only. f32 and
// i32 tensors are read and written in place; a call with none of f16 or bf16 runs the kernel once on the whole, as it
// always did.
//
// in_units[i]: elements of input i per unit, or 0 for an input every piece reads whole (a bias, a
// gamma: widened once, up front). out_unit: elements of the output per unit. grain_elems: the
// fewest elements a thread's share should have (simd_common.hpp's grain_cheap / grain_costly).
// kernel(in, out, count) runs the f32 kernel on `count` units: in[i] points at input i's piece (its
// whole for unit 0, null for an absent input), out at the output's piece (an i32 output's too,
// reinterpreted). Inside a piece it runs on the calling thread (its own parallel_for runs serially
// there). Strided inputs are made contiguous first (contiguous_bytes).
inline constexpr std::int64_t staged_piece_elems = std::int64_t{1} << 11;
using StagedKernel = void (*)(void* ctx, const float* const* in, float* out, std::int64_t count);
void run_staged_raw(const KernelTable& k, const detail::OpCall& call, std::int64_t units,
                    std::initializer_list<std::int64_t> in_units, std::int64_t out_unit, std::int64_t grain_elems,
                    StagedKernel kernel, void* ctx);
template <class F>
void run_staged(const KernelTable& k, const detail::OpCall& call, std::int64_t units,
                std::initializer_list<std::int64_t> in_units, std::int64_t out_unit, std::int64_t grain_elems,
                F&& kernel) {
  using Fn = std::remove_reference_t<F>;
  run_staged_raw(
      k, call, units, in_units, out_unit, grain_elems,
      [](void* c, const float* const* in, float* out, std::int64_t count) { (*static_cast<Fn*>(c))(in, out, count); },
      const_cast<void*>(static_cast<const void*>(&kernel)));
}

// [outer, n, inner] around `axis` of `shape` (negative counts from the end; validated already).
void split_axis(const Shape& shape, int axis, i64& outer, i64& n, i64& inner);

}  // namespace trine::cpu
