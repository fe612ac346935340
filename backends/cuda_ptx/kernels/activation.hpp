// The activation functions as PTX, shared by the unary kernels and the fused bias+activation.
#pragma once

#include "backends/cuda_ptx/kernels/common.hpp"
#include "trine/ops.hpp"

namespace trine::cuda::kernels {

// act(x) with alpha/beta as docs/ops.md defines them (leaky slope, elu alpha, clip bounds).
// NaN propagates; the infinities give the limits docs/ops.md lists. A case per Activation: a new
// TRINE_ACT row of ops.def fails the build here until it has its PTX, and needs nothing else in
// this backend (unary.cpp registers its op and its configurations from the row).
Reg<F32> activation(Kernel& k, Activation act, Reg<F32> x, Reg<F32> alpha, Reg<F32> beta);

}  // namespace trine::cuda::kernels
