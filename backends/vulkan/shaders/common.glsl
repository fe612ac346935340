// Shared by every shader: the workgroup index over a grid that may be split into 2-D (the host
// splits past maxComputeWorkGroupCount[0]), and the activations of trine::Activation.
// Compiled with TRINE_FLOAT64 (the build makes <name>_f64 variants of the shaders that call
// activate(), for devices with shaderFloat64): pow's logarithm and exponential in double.

// OP_<name>: trine::OpKind::<name>'s value, generated from ops.def into the build tree
// (vulkan.cmake), so these codes are the host's static_cast<uint32_t>(op).
#include "ops.glsl"

uint linear_group() { return gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y; }

// NaN wins: max propagates NaN, as the op table says.
float nan_max(float a, float b) { return (isnan(a) || a > b) ? a : b; }

// argmax's order: whether (v, i) beats (w, j), a value and its index. NaN beats every number, a
// larger value a smaller one, and between equal values (or two NaNs) the lower index wins. A total
// order: whatever tree or order the candidates meet in, the winner is the first index of the
// largest value (or of the first NaN), so the result does not depend on how workgroups run.
bool arg_better(float v, uint i, float w, uint j) {
  bool vn = isnan(v), wn = isnan(w);
  if (vn != wn) return vn;
  if (!vn && v != w) return v > w;
  return i < j;
}

// tanh from exp(-2|x|): never overflows (the naive (e^2x - 1)/(e^2x + 1) gives inf/inf past |x| ~ 44);
// a short series near 0, where 1 - t would cancel.
float stable_tanh(float x) {
  float ax = abs(x);
  if (ax < 0.125) {  // truncation below 2e-11 relative; past it 1 - t loses under two bits
    float x2 = x * x;
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
  }
  float t = exp(-2.0 * ax);
  float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}

// exp(x) - 1 without the cancellation near 0: a Taylor series to x^9 for |x| < 0.5 (truncation
// below 3e-10 relative); beyond, exp(x) - 1 loses at most a bit or two. Not Kahan's (u - 1) x / log u:
// that needs an exp and log more accurate than lavapipe's.
float expm1_stable(float x) {
  if (abs(x) < 0.5) {
    return x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 +
           x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (1.0 / 362880.0)))))))));
  }
  return exp(x) - 1.0;
}

// erfc(z) for z >= 0 with fractional error < 1.2e-7 (Numerical Recipes' erfcc): GLSL has no erf.
// Kept as erfc so gelu's negative tail, 1 + erf(z) = erfc(-z), has no cancellation.
float erfc_pos(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
               t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + poly);
}

// 1 + erf(z), accurate relative to its value on both sides.
float one_plus_erf(float z) {
  if (abs(z) < 0.5) {
    float z2 = z * z;  // Taylor to z^11: error < 2e-8 on [0, 0.5]
    return 1.0 + z * (1.1283791671 + z2 * (-0.3761263890 + z2 * (0.1128379167 + z2 * (-0.0268661706 +
                 z2 * (0.0052239776 + z2 * -0.0008548327)))));
  }
  return z < 0.0 ? erfc_pos(-z) : 2.0 - erfc_pos(z);
}

float k_inf() { return uintBitsToFloat(0x7F800000u); }
float k_nan() { return uintBitsToFloat(0x7FC00000u); }

// The math activations (exp, log, pow) are computed here rather than by the GLSL builtins: Vulkan
// lets exp err by 3 + 2|x| ulp (180 ulp near overflow) and log by 2^-21 absolute near 1, far past
// the op table's few ulps. Each reduces its argument exactly (Cody-Waite: the constant split in
// two, the first part short enough that n times it is exact) and evaluates a short polynomial;
// `precise` keeps the compiler from reassociating the reduction (x - n C1 - n C2 folded into
// x - n (C1 + C2) would undo it). Inputs that are subnormal are taken apart in integer arithmetic,
// so a device that flushes denormal floats still sees them.

// e^x within about an ulp: x = n ln2 + r, |r| <= ln2/2, e^r by Cephes' expf polynomial (relative
// error 1.7e-7 over its range), then scaled by 2^n in two factors that are both normal, so a result
// near FLT_MAX or in the subnormal range is rounded once. inf only past ln(FLT_MAX + ulp/2).
float exp_f32(float x) {
  if (isnan(x)) return x;
  if (x > 88.75) return k_inf();  // n would pass 128
  if (x < -104.0) return 0.0;   // below half the least subnormal (2^-150)
  float n = roundEven(x * 1.44269504088896341);
  precise float r = x - n * 0.693359375;  // C1: 9 significant bits, so n C1 is exact for |n| <= 2^15
  r = r - n * -2.12194440e-4;             // C2 = ln2 - C1
  float p = fma(fma(fma(fma(fma(1.9875691500e-4, r, 1.3981999507e-3), r, 8.3334519073e-3), r, 4.1665795894e-2), r,
                    1.6666665459e-1), r, 5.0000001201e-1);
  p = fma(p, r * r, r) + 1.0;
  int k = int(n), k1 = k / 2;  // k in [-150, 128]: 2^k1 and 2^(k - k1) are normal floats
  return p * uintBitsToFloat(uint(k1 + 127) << 23) * uintBitsToFloat(uint(k - k1 + 127) << 23);
}

// A positive finite float's bits as m * 2^e with m's 23 fraction bits (the leading 1 implied),
// subnormals normalized in integer arithmetic.
void split_f32(uint b, out uint m, out int e) {
  m = b & 0x7FFFFFu;
  e = int(b >> 23) - 127;
  if ((b >> 23) == 0u) {
    int s = 23 - findMSB(m);
    m = (m << uint(s)) & 0x7FFFFFu;
    e = -126 - s;
  }
}

// ln x within about an ulp (fdlibm's logf): x = 2^k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)),
// f exact; log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with s = f / (2 + f), so the division's
// rounding is scaled by f^2 and the result keeps its relative accuracy near 1.
float log_f32(float x) {
  uint b = floatBitsToUint(x);
  if (isnan(x)) return x;
  if ((b & 0x7FFFFFFFu) == 0u) return -k_inf();  // log(+-0)
  if ((b >> 31) != 0u) return k_nan();
  if (b == 0x7F800000u) return x;
  uint m;
  int e;
  split_f32(b, m, e);
  float mf = uintBitsToFloat(m | 0x3F800000u);  // [1, 2)
  if (mf > 1.41421356) {
    mf *= 0.5;
    e += 1;
  }
  precise float f = mf - 1.0;  // exact (Sterbenz)
  float s = f / (2.0 + f);
  float z = s * s, w = z * z;
  float R = z * fma(w, 2.8571429849e-1, 6.6666668653e-1) + w * fma(w, 2.2222198546e-1, 4.0000000596e-1);
  float hfsq = 0.5 * f * f;
  float k = float(e);
  precise float lo = s * (hfsq + R) + k * 9.0580006145e-6;  // ln2_lo
  precise float res = k * 6.9313812256e-1 - ((hfsq - lo) - f);  // ln2_hi: 17 significant bits
  return res;
}

// sqrt and 1/sqrt: the builtins (Vulkan bounds sqrt as 1 / inversesqrt and inversesqrt at 2 ulp,
// within the op table's bounds for this device), with the values their definitions leave undefined
// handled here: negatives are NaN, +-0 gives +-0 (and +-inf), and a subnormal input is scaled by
// 2^64 exactly before the builtin sees it (a device may flush it to zero).
float sqrt_f32(float x) {
  uint b = floatBitsToUint(x);
  if (isnan(x) || (b & 0x7FFFFFFFu) == 0u || b == 0x7F800000u) return x;
  if ((b >> 31) != 0u) return k_nan();
  if ((b >> 23) == 0u) return sqrt(float(b) * 2.5849394142282115e-26) * 2.3283064365386963e-10;  // m 2^-85, 2^-32
  return sqrt(x);
}

float rsqrt_f32(float x) {
  uint b = floatBitsToUint(x);
  if (isnan(x)) return x;
  if ((b & 0x7FFFFFFFu) == 0u) return uintBitsToFloat((b & 0x80000000u) | 0x7F800000u);  // 1/+-0
  if ((b >> 31) != 0u) return k_nan();
  if (b == 0x7F800000u) return 0.0;
  if ((b >> 23) == 0u) return inversesqrt(float(b) * 2.5849394142282115e-26) * 4294967296.0;  // m 2^-85, 2^32
  return inversesqrt(x);
}

#ifdef TRINE_FLOAT64
// |x|^y for x > 0 finite (its bits), y finite, as e^(y ln x) with y ln x in double: the result's
// relative error is that product's absolute error, which must stay near 2^-30 for |y ln x| up to
// 104 (f32's range), beyond what any f32 evaluation reaches. ln x: x = 2^e m, m in [sqrt(1/2),
// sqrt(2)), ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, the series to s^19 (truncation
// below 2^-55). The quotient is refined by two Newton steps, so it is double-accurate whatever
// precision the device gives double division. e^t: t = n ln2 + r (Cody-Waite in double), Taylor to
// r^13 (below 2^-57), times 2^n made from its bits, rounded to f32 once.
float pow_positive(uint bx, float y) {
  uint m;
  int e;
  split_f32(bx, m, e);
  double mf = packDouble2x32(uvec2(m << 29, 0x3FF00000u | (m >> 3)));  // 1.m, exactly
  if (mf > 1.4142135623730951LF) {
    mf *= 0.5LF;
    e += 1;
  }
  double f = mf - 1.0LF, d = mf + 1.0LF;
  double q = 1.0LF / d;
  q = q * (2.0LF - d * q);
  q = q * (2.0LF - d * q);
  double s = f * q, z = s * s;
  // 1 + z/3 + z^2/5 + ... + z^9/19
  double series = fma(0.05263157894736842LF, z, 0.058823529411764705LF);
  series = fma(series, z, 0.06666666666666667LF);
  series = fma(series, z, 0.07692307692307693LF);
  series = fma(series, z, 0.09090909090909091LF);
  series = fma(series, z, 0.1111111111111111LF);
  series = fma(series, z, 0.14285714285714285LF);
  series = fma(series, z, 0.2LF);
  series = fma(series, z, 0.3333333333333333LF);
  series = fma(series, z, 1.0LF);
  double t = double(y) * (double(e) * 0.6931471805599453094LF + 2.0LF * s * series);
  if (t > 89.0LF) return k_inf();  // past ln(FLT_MAX + ulp/2) = 88.72...
  if (t < -104.0LF) return 0.0;  // below half the least subnormal
  double n = roundEven(t * 1.4426950408889634074LF);
  precise double r = t - n * 6.93147180369123816490e-01LF;  // ln2_hi: 32 significant bits
  r = r - n * 1.90821492927058770002e-10LF;                  // ln2_lo
  // the sum of r^k / k! for k <= 13
  double p = fma(1.6059043836821613e-10LF, r, 2.08767569878681e-09LF);
  p = fma(p, r, 2.505210838544172e-08LF);
  p = fma(p, r, 2.755731922398589e-07LF);
  p = fma(p, r, 2.7557319223985893e-06LF);
  p = fma(p, r, 2.48015873015873e-05LF);
  p = fma(p, r, 0.0001984126984126984LF);
  p = fma(p, r, 0.001388888888888889LF);
  p = fma(p, r, 0.008333333333333333LF);
  p = fma(p, r, 0.041666666666666664LF);
  p = fma(p, r, 0.16666666666666666LF);
  p = fma(p, r, 0.5LF);
  p = fma(p, r, 1.0LF);
  p = fma(p, r, 1.0LF);
  double v = p * packDouble2x32(uvec2(0u, uint(int(n) + 1023) << 20));
  if (v >= 3.4028235677973366e38LF) return k_inf();  // rounds past FLT_MAX
  return float(v);
}

// C's pow (C99 F.9.4.4) for f32, special values first.
float pow_c(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;  // even for NaN
  if (isnan(x) || isnan(y)) return k_nan();
  uint b = floatBitsToUint(x), a = b & 0x7FFFFFFFu;
  bool neg = (b >> 31) != 0u;
  float ay = abs(y);
  if (isinf(y)) {
    if (a == 0x3F800000u) return 1.0;  // pow(-1, +-inf)
    return (a < 0x3F800000u) == (y < 0.0) ? k_inf() : 0.0;
  }
  bool y_int = ay == floor(ay);
  bool y_odd = y_int && ay < 16777216.0 && (uint(ay) & 1u) == 1u;  // from 2^24 every float is even
  float sign = neg && y_odd ? -1.0 : 1.0;
  if (a == 0u) return sign * (y < 0.0 ? k_inf() : 0.0);
  if (a == 0x7F800000u) return sign * (y < 0.0 ? 0.0 : k_inf());
  if (neg && !y_int) return k_nan();
  return sign * pow_positive(a, y);
}
#endif

// An activation's op code (ops.def's TRINE_ACT rows), OP_scale (alpha * x + beta), or OP_copy for
// the identity (a copy is what the identity does).
float activate(uint code, float x, float alpha, float beta) {
  switch (code) {
    case OP_copy: return x;
    case OP_relu: return x < 0.0 ? 0.0 : x;  // NaN stays NaN
    case OP_leaky_relu: return x < 0.0 ? alpha * x : x;
    case OP_elu: return x < 0.0 ? alpha * expm1_stable(x) : x;
    case OP_sigmoid: return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case OP_tanh: return stable_tanh(x);
    case OP_silu:
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      return x >= 0.0 ? x / (1.0 + exp(-x)) : x * exp(x) / (1.0 + exp(x));
    case OP_gelu:
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      return 0.5 * x * one_plus_erf(x * 0.70710678118654752);
    case OP_gelu_tanh: {
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      // 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation in the negative tail
      float u2 = 2.0 * 0.79788456080286536 * (x + 0.044715 * x * x * x);
      return u2 >= 0.0 ? x / (1.0 + exp(-u2)) : x * exp(u2) / (1.0 + exp(u2));
    }
    case OP_clip: return x < alpha ? alpha : (x > beta ? beta : x);  // NaN fails both: stays NaN
    case OP_scale: return alpha * x + beta;
    case OP_exp: return exp_f32(x);
    case OP_log: return log_f32(x);
    case OP_sqrt: return sqrt_f32(x);
    case OP_rsqrt: return rsqrt_f32(x);
    case OP_abs: return uintBitsToFloat(floatBitsToUint(x) & 0x7FFFFFFFu);  // bits: exact for every input
    case OP_neg: return uintBitsToFloat(floatBitsToUint(x) ^ 0x80000000u);
    case OP_pow:  // alpha is the exponent
#ifdef TRINE_FLOAT64
      return pow_c(x, alpha);
#else
      return k_nan();  // never run: the host dispatches pow to the <shader>_f64 variants only (kernels/unary.cpp)
#endif
  }
  return x;
}

// An f16's bits as the f32 bits of the same value, exactly (subnormals included), in integer
// arithmetic so no denormal flushing of the device changes it.
uint f16_to_f32_bits(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0u) {
    if (m == 0u) return s;
    return s | floatBitsToUint(float(m) * 5.9604644775390625e-8);  // m * 2^-24: exact, normal in f32
  }
  if (e == 31u) return s | 0x7F800000u | (m << 13);
  return s | ((e + 112u) << 23) | (m << 13);
}
