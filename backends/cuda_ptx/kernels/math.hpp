// The functions of one f32 value that the op table bounds at 2 eps relative to |f(x)| (exp, log,
// rsqrt, pow), written so that they meet it on the hardware by construction: IEEE operations only
// (fma/add/mul/div/sqrt .rn and exact conversions), no .approx instruction, so the PTX emulator
// computes the hardware's very bits. Each definition's comment gives its error budget.
#pragma once

#include <optional>

#include "backends/cuda_ptx/kernels/common.hpp"

namespace trine::cuda::kernels {

// e^x within 0.91 ulp (Cody-Waite reduction, FMA polynomial); +inf from x > 88.7228 on, results below
// 2^-126 as IEEE subnormals (0 below 2^-149), exp(-inf) = 0, NaN stays NaN.
Reg<F32> exp_accurate(Kernel& k, Reg<F32> x);

// The pieces the exp-based kernels build on, so that a result whose e^x leaves the normal range
// (silu(-91) = -91 e^-91, normal while e^-91 is not) is scaled once, at the end.
// e^x as m 2^e: m in [0.70, 1.42] within 1.82u (u = 2^-24) of e^x / 2^e (2.07u with a low part:
// e^(x + x_lo), |x_lo| <= ulp(x)), e an integer in [-173, 511]. For x in [-120, 354] (callers clamp:
// below, e^x is 0 in f32; past 89 it is inf, and only a sum kept with its own exponent, softmax's,
// takes it that far: up to 354, k stays under 512 and k ln2_hi exact); no special values.
struct ExpParts {
  Reg<F32> m;
  Reg<S32> e;
};
ExpParts exp_parts(Kernel& k, Reg<F32> x, std::optional<Reg<F32>> x_lo = std::nullopt);
// e^(x + p + x_lo) as m 2^e, x + p never rounded (gelu's e^(G - a^2/2): x = -a^2/2 exact, p = G):
// m within 2.32u of e^(x + p + x_lo) / 2^e where x - k ln2_hi is exact (math.cpp).
ExpParts exp_parts_sum(Kernel& k, Reg<F32> x, Reg<F32> p, Reg<F32> x_lo);
// 2^t as m 2^e, m within 1.82u; t in [-173, 128].
ExpParts exp2_parts(Kernel& k, Reg<F32> t);
// 2^e for e in [-127, 127], exact, from the exponent field; e = -127 gives 0 (2^-127 is subnormal).
Reg<F32> pow2_f32(Kernel& k, Reg<S32> e);
// v 2^e for e in [-254, 254], |v| in [2^-100, 2^100]: two exact power-of-two products while the
// result is normal, one rounding into the subnormals.
Reg<F32> scale_pow2(Kernel& k, Reg<F32> v, Reg<S32> e);
// e^x for x <= 0 (-inf included), within 1.82u where the result is normal (at least 2^-126);
// results below 2^-126 may be 0. A NaN x gives a finite value: callers that take NaN select it.
Reg<F32> exp_nonpositive(Kernel& k, Reg<F32> x);
// a + b = hi + lo exactly (TwoSum: add.rn and sub.rn, which ptxas neither fuses nor reassociates);
// a * b = hi + lo exactly (fma), unless the product leaves the normal range. hi is the rounded
// result; an infinite or NaN operand makes lo NaN.
struct TwoF32 {
  Reg<F32> hi, lo;
};
TwoF32 two_sum(Kernel& k, Reg<F32> a, Reg<F32> b);
TwoF32 two_prod(Kernel& k, Reg<F32> a, Reg<F32> b);
// e^-|a - b| with a - b carried exactly into the exponential (TwoSum, then exp_parts' low part):
// within 2.07u of the exact e^-|a - b| where that is normal, however far apart a and b are (the
// rounded difference would cost |a - b| u more). Results below 2^-126 may be 0; an infinite a or b
// (not both) gives 0; NaN gives NaN. softmax's e^(x - max) and its running rescales.
Reg<F32> exp_neg_dist(Kernel& k, Reg<F32> a, Reg<F32> b);
// 2^t the same way, for t <= 0 (-inf included).
Reg<F32> exp2_nonpositive(Kernel& k, Reg<F32> t);
// The natural log within 1.1 ulp; NaN below 0, -inf at +-0, +inf at +inf, subnormals included.
Reg<F32> log_accurate(Kernel& k, Reg<F32> x);
// log(1 + t) within 2.3u relative however small t is (t itself enters, not the rounded 1 + t);
// -inf at -1, NaN below, +inf at +inf. log_softmax's log of a row's sum less the max's own 1.
Reg<F32> log1p_accurate(Kernel& k, Reg<F32> t);
// 1/sqrt(x): sqrt.rn then rcp.rn, within 1 ulp; +-0 give +-inf, negatives NaN.
Reg<F32> rsqrt_accurate(Kernel& k, Reg<F32> x);
// x^y with C's pow rules, computed through y log|x| in f64: the result is the exact power rounded
// once to f32, but for a 2^-40 relative error before that rounding.
Reg<F32> pow_accurate(Kernel& k, Reg<F32> x, Reg<F32> y);

}  // namespace trine::cuda::kernels
