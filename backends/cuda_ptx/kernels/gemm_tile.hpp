// The shared-memory tiled GEMM core with register blocking that matmul_tiled and conv2d (as an
// implicit GEMM) share: the caller says how to read an element of A and B and where C goes.
#pragma once

#include <functional>

#include "backends/cuda_ptx/kernels/common.hpp"

namespace trine::cuda::kernels {

struct TileShape {
  int bm = 64, bn = 64, bk = 16;  // CTA tile
  int tm = 4, tn = 4;             // outputs per thread (tm, tn multiples of 4)
  int threads() const { return (bm / tm) * (bn / tn); }
};

// Reads one element as f32; must return 0 where `inside` is false (and not touch memory there).
using TileLoad = std::function<Reg<F32>(Reg<U32> row, Reg<U32> col, Reg<Pred> inside)>;
// Writes one result; called only inside the problem.
using TileStore = std::function<void(Reg<U32> row, Reg<U32> col, Reg<F32> value)>;

// C[m0.., n0..] = sum_k A[m, k] B[k, n] over the CTA tile at (m0, n0); every partial tile is
// bounds-checked against (m, n, kdim). kdim == 0 stores zeros.
void gemm_tiled(Kernel& k, const TileShape& t, Reg<U32> m, Reg<U32> n, Reg<U32> kdim, Reg<U32> m0, Reg<U32> n0,
                const TileLoad& load_a, const TileLoad& load_b, const TileStore& store_c);

// A bounds-checked load of element `index` of a tensor stored as e: 0 where !inside.
Reg<F32> load_f32_if(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index, Reg<Pred> inside);

// The parameters every matmul kernel takes (matmul_params says them in words), loaded, with this
// CTA's batch (grid.z) resolved into element offsets.
struct MatmulOperands {
  Reg<U64> a, b;  // global-window addresses
  Ptr<Global, F32> c;
  Elem c_elem = Elem::f32;  // how C is stored: f32, or f16 / bf16 rounded once as it is written
  Reg<U32> m, n, kdim;
  Reg<U64> a_row, a_col, b_row, b_col;  // element strides (two's complement)
  Reg<U64> a_batch, b_batch, c_batch;   // where this CTA's batch starts (elements)
};
MatmulOperands load_matmul_operands(Kernel& k, Elem c = Elem::f32);
extern const std::string_view matmul_params;
// start + i*si + j*sj (elements).
Reg<U64> matmul_offset(Kernel& k, Reg<U64> start, Reg<U32> i, Reg<U64> si, Reg<U32> j, Reg<U64> sj);
// c[batch][row][col] = v (rounded to o.c_elem).
void matmul_store(Kernel& k, const MatmulOperands& o, Reg<U32> row, Reg<U32> col, Reg<F32> v);
// The tiled kernel's body for inputs stored as ea, eb (also the tensor-core kernel's sm_75 form).
void matmul_tiled_body(Kernel& k, const TileShape& t, Elem ea, Elem eb, Elem ec = Elem::f32);

// matmul_mma.cpp: the tensor-core kernel, and its configuration for A and B row-major and both
// stored as e (f16 or bf16), the one matmul's plan picks.
const Generator& matmul_mma_generator();
// ec: how C is stored, f32 or e itself (the _c16 configs).
std::size_t matmul_mma_config(Elem e, Elem ec = Elem::f32);

}  // namespace trine::cuda::kernels
