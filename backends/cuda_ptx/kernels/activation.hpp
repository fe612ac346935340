// The activation functions as PTX, shared by the unary kernels and the fused bias+activation.
#pragma once

#include "backends/cuda_ptx/kernels/common.hpp"
#include "trine/ops.hpp"

namespace trine::cuda::kernels {

// act(x) with alpha/beta as docs/ops.md defines them (leaky slope, elu alpha, clip bounds).
// NaN propagates; the infinities give the limits docs/ops.md lists.
Reg<F32> activation(Kernel& k, Activation act, Reg<F32> x, Reg<F32> alpha, Reg<F32> beta);
// Configuration names: "identity", "relu", ...; false when the name is not an activation.
bool parse_activation(std::string_view name, Activation& act);

}  // namespace trine::cuda::kernels
