// The functions of one f32 value that the op table bounds at 2 eps relative to |f(x)| (exp, log,
// rsqrt, pow), written so that they meet it on the hardware by construction: IEEE operations only
// (fma/add/mul/div/sqrt .rn and exact conversions), no .approx instruction, so the PTX emulator
// computes the hardware's very bits. Each definition's comment gives its error budget.
#pragma once

#include "backends/cuda_ptx/kernels/common.hpp"

namespace trine::cuda::kernels {

// e^x within 0.91 ulp (Cody-Waite reduction, FMA polynomial); +inf from x > 88.7228 on, results below
// 2^-126 as IEEE subnormals (0 below 2^-149), exp(-inf) = 0, NaN stays NaN.
Reg<F32> exp_accurate(Kernel& k, Reg<F32> x);
// The natural log within 1.1 ulp; NaN below 0, -inf at +-0, +inf at +inf, subnormals included.
Reg<F32> log_accurate(Kernel& k, Reg<F32> x);
// 1/sqrt(x): sqrt.rn then rcp.rn, within 1 ulp; +-0 give +-inf, negatives NaN.
Reg<F32> rsqrt_accurate(Kernel& k, Reg<F32> x);
// x^y with C's pow rules, computed through y log|x| in f64: the result is the exact power rounded
// once to f32, but for a 2^-40 relative error before that rounding.
Reg<F32> pow_accurate(Kernel& k, Reg<F32> x, Reg<F32> y);

}  // namespace trine::cuda::kernels
