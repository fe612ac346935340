// Building blocks the kernel generators share: thread indexing, grid-stride loops, warp reductions,
// NaN-propagating max, and f16/bf16 loads and stores through f32 (the math functions: math.hpp).
#pragma once

#include <array>
#include <limits>
#include <string>

#include "backends/cuda_ptx/kernels/generator.hpp"
#include "backends/cuda_ptx/ptx/instructions.hpp"

namespace trine::cuda::kernels {

using namespace ptx;  // generators read as PTX: add(k, a, b), ld(k, p)

// blockIdx.x * blockDim.x + threadIdx.x as u64, and the grid's thread count as u64.
Reg<U64> global_thread_u64(Kernel& k);
Reg<U64> grid_threads_u64(Kernel& k);
Reg<U64> to_u64(Kernel& k, Reg<U32> a);

// body(i) for every i in [0, n) across the grid (grid-stride loop).
template <class Body>
void grid_stride(Kernel& k, Reg<U64> n, Body&& body) {
  Reg<U64> start = global_thread_u64(k);
  Reg<U64> step = grid_threads_u64(k);
  for_range<U64>(k, start, n, step, body);
}

// Horner evaluation of c[0] + c[1] t + c[2] t^2 + ... with one FMA per coefficient.
template <FloatType T, std::size_t N>
Reg<T> horner(Kernel& k, Reg<T> t, const std::array<typename T::imm, N>& c) {
  Reg<T> acc = mov<T>(k, c[N - 1]);
  for (std::size_t i = N - 1; i-- > 0;) acc = fma(k, acc, V<T>(t), V<T>(c[i]));
  return acc;
}

// max and min that return NaN when either input is NaN (PTX max.f32 and min.f32 return the other
// operand; their .NaN forms need sm_80).
Reg<F32> max_nan(Kernel& k, Reg<F32> a, Reg<F32> b);
Reg<F32> min_nan(Kernel& k, Reg<F32> a, Reg<F32> b);
// Butterfly reductions over the 32 lanes of a warp: every lane ends with the result.
Reg<F32> warp_sum(Kernel& k, Reg<F32> v);
Reg<F32> warp_max_nan(Kernel& k, Reg<F32> v);

// Loads one element stored as e and widens it to f32 (exact; i32 rounds to nearest even).
Reg<F32> load_f32(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index);
// Narrows v to e, rounding to nearest even (overflow to inf, NaN stays NaN), and stores it; to i32:
// toward zero, saturating, NaN to 0.
void store_f32(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index, Reg<F32> v);
Reg<F32> f16_to_f32(Kernel& k, Reg<F16> h);
Reg<F32> bf16_to_f32(Kernel& k, Reg<BF16> h);
Reg<F16> f32_to_f16(Kernel& k, Reg<F32> v);
Reg<BF16> f32_to_bf16(Kernel& k, Reg<F32> v);  // cvt.rn.bf16.f32 on sm_80+, integer rounding on sm_75

// A module holding one kernel, as text.
std::string module_text(const Kernel& k);

}  // namespace trine::cuda::kernels
