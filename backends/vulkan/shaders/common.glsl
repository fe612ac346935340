// Shared by every shader: the workgroup index over a grid that may be split into 2-D (the host
// splits past maxComputeWorkGroupCount[0]), and the activations of trine::Activation.
// Compiled with TRINE_FLOAT64 (the build makes <name>_f64 variants of the shaders that call
// activate(), for devices with shaderFloat64): pow's logarithm and exponential in double.

// Compiled with TRINE_IEEE (every shader's <name>_ieee form, vulkan.cmake): SignedZeroInfNanPreserve
// for 32-bit floats, without which a driver may assume no NaN or infinity exists (NVIDIA's folds
// isnan() to false and drops max's NaN); with TRINE_DENORM too (<name>_ieee_denorm): DenormPreserve,
// without which it may flush subnormal results to zero. The pipelines take the form the device
// supports (VkPhysicalDeviceFloatControlsProperties).
#ifdef TRINE_IEEE
#extension GL_EXT_spirv_intrinsics : require
// SignedZeroInfNanPreserve (execution mode 4461, capability 4466), 32-bit
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#ifdef TRINE_DENORM
// DenormPreserve (execution mode 4459, capability 4464), 32-bit
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
#endif
#endif

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

float k_inf() { return uintBitsToFloat(0x7F800000u); }
float k_nan() { return uintBitsToFloat(0x7FC00000u); }

// The math of the activations, softmax and attention is computed here rather than by the GLSL
// builtins: Vulkan lets exp err by 3 + 2|x| ulp (180 ulp near overflow) and log by 2^-21 absolute
// near 1, far past the op table's few ulps (lavapipe's tanh measured 1.5 times its bound). Each
// function reduces its argument exactly (Cody-Waite: the constant split in two, the first part
// short enough that n times it is exact) and evaluates a short polynomial; `precise` keeps the
// compiler from reassociating the reduction (x - n C1 - n C2 folded into x - n (C1 + C2) would undo
// it). Inputs that are subnormal are taken apart in integer arithmetic, so a device that flushes
// denormal floats still sees them. Results are scaled by their power of two last, so a result in
// the normal range is never lost to an intermediate below it (silu(-91.2) = -2.3e-38 is -91.2 times
// e^-91.2 = 2.5e-40).

// 2^k for k in [-127, 128], made from its bits: 2^-127 comes out as 0 and 2^128 as inf.
float pow2i(int k) { return uintBitsToFloat(uint(k + 127) << 23); }

// v 2^k for k in [-252, 254], in two factors that are both normal floats: v 2^(k/2) is exact for
// the callers' v (within a few octaves of 1), so a result near FLT_MAX or in the subnormal range is
// rounded once.
float ldexp_f32(float v, int k) {
  int k1 = k >> 1;
  precise float r = (v * pow2i(k1)) * pow2i(k - k1);
  return r;
}

// v 2^k for k in [-190, 63], as (v 2^(k + 64)) 2^-64: the first product exact for the callers' v
// (within a few octaves of 1), the second rounded once, subnormal or not. One made power of two
// where ldexp_f32 makes two.
float ldexp_small(float v, int k) {
  precise float r = (v * pow2i(k + 64)) * 5.4210108624275222e-20;
  return r;
}

// v 2^k for v within an octave of 1 and k <= 127, in one multiply where a result that may flush
// to zero (below 2^-126) may: v 2^k rounded once from k = -126 up, 0 below.
float scale_flush(float v, int k) { return v * pow2i(max(k, -127)); }

// q = e^r - 1 for the reduced r (exp_parts_lo below): P of degree 4 in Estrin's form (two
// independent pairs, then two steps: a chain of dependent FMAs is what lavapipe waits on)
float exp_q(float r) {
  float r2 = r * r;
  float p = fma(r2, fma(r2, 1.3814393897e-3, fma(8.3688180894e-3, r, 4.1668396443e-2)),
                fma(1.6666519642e-1, r, 4.9999994040e-1));
  return fma(p, r2, r);
}

// e^x = (1 + q) 2^k for finite x in [-2^15 ln2, 2^15 ln2] (the callers clamp it): x = k ln2 + r,
// |r| <= ln2/2, reduced exactly; e^r - 1 = q = r + r^2 P(r), P of degree 4 fitted to the relative
// error of e^r (4.3e-9 with its f32 coefficients, 0.04 eps; Cephes' expf has a degree more for
// 1.1e-9), so q and 1 + q are within about half an ulp of e^r - 1 and e^r. q is accurate relative
// to itself, which gives e^x - 1 without cancellation (expm1_neg). A NaN x gives a NaN q, some k.
// lo extends x: e^(x + lo) for a correction below x's ulp (x + lo a sum of two floats, as gelu's
// and gelu_tanh's exponents are formed), joining the reduced r, beside which it is no longer small;
// r + lo is rounded once more (half an ulp of r, which e^r passes on scaled by r, at most 0.35).
void exp_parts_lo(float x, float lo, out float q, out int k) {
  float n = roundEven(x * 1.44269504088896341);
  // `precise` keeps the compiler from folding the two steps into x - n (C1 + C2), which would undo
  // them (glslc marks precise multiplies and subtractions, not fma: written as fma, lavapipe folded
  // them and exp erred by 34 eps at x = -72).
  precise float r1 = x - n * 0.693359375;  // C1: 9 significant bits, so n C1 is exact for |n| <= 2^15
  float r = fma(n, 2.12194440e-4, r1) + lo;  // - n C2, C2 = ln2 - C1
  q = exp_q(r);
  k = int(n);
}

// e^(x + p + lo) = (1 + q) 2^k with x + p never rounded (gelu's e^(G - a^2/2): x = -a^2/2, p = G,
// lo = x's low part): n from x + p, r = ((x - n C1) + p) - n C2 + lo. x - n C1 is exact for gelu's
// x and p (at most 1.103 and a multiple of x's ulp: checked for every f32 a up to the cap), and p
// joins it at |r| <= 0.38, so the exponent's size (up to 87) never meets a rounding.
void exp_parts_sum(float x, float p, float lo, out float q, out int k) {
  float n = roundEven((x + p) * 1.44269504088896341);
  precise float r1 = (x - n * 0.693359375) + p;
  float r = fma(n, 2.12194440e-4, r1) + lo;
  q = exp_q(r);
  k = int(n);
}

void exp_parts(float x, out float q, out int k) { exp_parts_lo(x, 0.0, q, k); }

// a + b = s + e exactly (Knuth's TwoSum, any order of magnitude): the sums of two floats that carry
// gelu's and gelu_tanh's exponents. `precise`: reassociated, e would be 0.
void two_sum(float a, float b, out float s, out float e) {
  precise float t = a + b;
  precise float bb = t - a;
  precise float err = (a - (t - bb)) + (b - bb);
  s = t;
  e = err;
}

// Veltkamp's split of a into a_hi + a_lo, each of 12 significant bits at most, so that products of
// halves are exact (|a| below 2^115: 4097 a must not overflow)
void split_half(float a, out float hi, out float lo) {
  precise float c = 4097.0 * a;
  precise float h = c - (c - a);
  hi = h;
  lo = a - h;
}

// a b = p + e exactly (Dekker's product: p rounded, e its error) from products of halves, not an
// FMA: glslc does not carry `precise` to fma(), and lavapipe, free to evaluate fma(a, b, -a b) as two
// roundings, got 0 for e (gelu_tanh stayed 176 ulps off).
void two_prod(float a, float b, out float p, out float e) {
  float ah, al, bh, bl;
  split_half(a, ah, al);
  split_half(b, bh, bl);
  precise float t = a * b;
  precise float err = ((ah * bh - t) + ah * bl + al * bh) + al * bl;
  p = t;
  e = err;
}

// e^x within about an ulp: inf from ln(FLT_MAX + ulp/2) on, subnormal results rounded once, 0 below
// half the least subnormal (e^-104 rounds to 0). Selects rather than branches: a device running
// invocations as SIMD lanes (lavapipe) pays for every branch any lane takes.
float exp_f32(float x) {
  float q;
  int k;
  exp_parts(clamp(x, -104.0, 88.75), q, k);  // clamp's result for NaN is undefined: the select below
  float r = ldexp_f32(q + 1.0, k);
  return isnan(x) ? x : r;
}

// e^(v - m) for v <= m (softmax's e^(x - max), attention's weights and rescales) with v - m carried
// exactly into the exponential (TwoSum: d + lo), so the result is within about an ulp of the exact
// function of v and m however far v is below m (e^(v - m) of the rounded difference errs by
// |v - m| 2^-24 relative: 65 ulps at v - m = -90). Results below 2^-126 are flushed to 0 (the op
// table lets them: they are below every normal probability), in one multiply; v = -inf gives 0;
// NaN stays NaN.
float exp_diff(float v, float m, float v_lo) {  // v_lo: a low part of v (attention's scaled scores)
  float d, lo;
  two_sum(v, -m, d, lo);
  lo += v_lo;
  float q;
  int k;
  exp_parts_lo(max(d, -104.0), d > -104.0 ? lo : 0.0, q, k);  // lo is NaN for v = -inf
  float r = scale_flush(q + 1.0, k);
  return isnan(d) ? d : r;
}
float exp_diff(float v, float m) { return exp_diff(v, m, 0.0); }

// e^x - 1 for x <= 0 (elu, tanh), accurate relative to itself: (1 + q) 2^k - 1 = q 2^k + (2^k - 1),
// where 2^k - 1 is exact for k >= -24 and q 2^k is exact, so the sum is rounded once (fused or
// not). Below -32 it is -1 in f32 (-inf included); NaN stays NaN.
float expm1_neg(float x) {
  float q;
  int k;
  exp_parts(max(x, -32.0), q, k);
  float s = pow2i(k);
  float r = fma(q, s, s - 1.0);
  return isnan(x) ? x : r;
}

// sigmoid(x) = 1 / (1 + e^-x) = e^x / (1 + e^x), the second for x < 0, where e^-x would overflow:
// with e = e^-|x|, (x < 0 ? e : 1) / (1 + e). e below 2^-126 may flush: 1 + e is 1 there, and the
// result, e, may too.
float sigmoid_f32(float x) {
  float q;
  int k;
  exp_parts(max(-abs(x), -120.0), q, k);
  float e = scale_flush(q + 1.0, k);
  float r = (x < 0.0 ? e : 1.0) / (1.0 + e);
  return isnan(x) ? x : r;
}

// num sigmoid(x + lo), for silu (num sigmoid(num), lo 0) and gelu_tanh (x sigmoid(2u), 2u a sum of
// two floats). Callers keep num above -120: where x < -120, the result (under 2^-150 |num|) is 0 in
// f32. For x < 0 it is num e^x / (1 + e^x) with e^x = m 2^k (m = 1 + q), computed as
// (num m) 2^k / (1 + e^x): the power of two applied to num m, not to e^x, so a normal result whose
// e^x is subnormal (silu(-91.2) = -2.3e-38, e^-91.2 = 2.5e-40) is not lost with it. A NaN x is the
// caller's to keep.
float times_sigmoid_lo(float x, float lo, float num) {
  float q;
  int k;
  // lo only where it counts: past -120 the clamp decides, and a huge x's lo may be NaN (x^3 = inf)
  exp_parts_lo(max(-abs(x), -120.0), abs(x) < 120.0 ? (x < 0.0 ? lo : -lo) : 0.0, q, k);
  float m = q + 1.0;
  float r = x < 0.0 ? ldexp_small(num * m, k) : num;
  return r / (1.0 + scale_flush(m, k));
}

float times_sigmoid(float x, float num) { return times_sigmoid_lo(x, 0.0, num); }

// tanh(x) = -e / (2 + e) with e = e^-2|x| - 1 (expm1_neg, accurate relative to itself near 0, where
// 1 - e^-2|x| would cancel), the sign put back from x's bit (so -0 stays -0): e / (2 + e) magnifies
// e's relative error by 2 / (2 + e) <= 2. From |x| = 9 on it is 1 in f32.
float tanh_f32(float x) {
  float e = expm1_neg(-2.0 * abs(x));  // NaN for a NaN x, which the quotient keeps
  float r = e / (-2.0 - e);
  return uintBitsToFloat(floatBitsToUint(r) | (floatBitsToUint(x) & 0x80000000u));
}

// gelu(x) = x Phi(x) = max(x, 0) - F(a), a = min(|x|, 13.15), F(a) = a erfc(a / sqrt 2) / 2 =
// s e^(G(s) - a^2/2), s = a / (K + a): the cpu's and cuda's form, G's fit and K the numbers of
// backends/gelu_erf_fit.hpp (GLSL cannot include it; GLSL has no erf either). For x < 0 it is -F(a),
// where 1 + erf would cancel; G's error (1.8u absolute, u = 2^-24) enters the exponent, where it is
// a relative error of F. a^2/2 reaches 87 where gelu is still normal, so a^2 enters e^ as the sum of
// two floats (two_prod) and G joins it unrounded (exp_parts_sum): the rounded exponent would cost
// its size times 2^-24 (43 ulps). F is scaled by 2^k (k >= -126 up to the cap) in the last FMA,
// whose one rounding gives x - F for x > 0. Past the cap F < 2^-126: x < -13.15 gives 0 (-inf too,
// not -inf + inf), +inf gives +inf. 3.5 ulps on lavapipe, which rounds GLSL's fma twice (a host
// simulation of fused FMAs: 3.1); the form before it, erfc as t Q(t) e^(-x^2/2), t = 1 / (1 + w/2),
// erred by 6.95 (w rounded, four roundings in t Q m x/2).
float gelu_erf(float x) {
  float a = min(abs(x), 13.15);  // min's result for NaN is undefined: the select below
  float s = a / (2.82842712 + a);
  float p = 0.0588186756;
  p = fma(p, s, -0.416879088);
  p = fma(p, s, 1.00175714);
  p = fma(p, s, -1.05791807);
  p = fma(p, s, 0.549255013);
  p = fma(p, s, -0.30186215);
  p = fma(p, s, 0.114825808);
  p = fma(p, s, 0.184240326);
  p = fma(p, s, 0.162237555);
  p = fma(p, s, -0.303273559);
  p = fma(p, s, -1.25675762);
  p = fma(p, s, 0.346573561);
  float h, l;
  two_prod(a, a, h, l);
  float q;
  int k;
  exp_parts_sum(-0.5 * h, p, -0.5 * l, q, k);  // halving is exact
  // `precise`: left to itself, lavapipe rewrote s (q + 1) and erred by 3.98 ulps (3.5 with it)
  precise float f = s * (q + 1.0);
  float r = fma(-f, pow2i(k), max(x, 0.0));
  r = x < -13.15 ? 0.0 : r;
  // Below 2^-30, gelu(x) = x/2 (1 + x sqrt(2/pi) + ...) is x/2 correctly rounded, and s above is
  // subnormal for |x| < 3.3e-38: a driver that flushes subnormals (NVIDIA's flushed 410 of the
  // numerics test's normal results to x, not x/2) makes F vanish. x/2 needs no s.
  r = abs(x) < 9.3132257e-10 ? 0.5 * x : r;
  r = x == 0.0 ? x : r;  // -0 - 0 would lose -0's sign
  return isnan(x) ? x : r;
}

// gelu_tanh(x) = x/2 (1 + tanh(u)) = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3): no
// cancellation for x << 0. 2u reaches -87 where the result is still normal, so it is formed as a sum
// of two floats (x^3, its product with 0.044715 and with 2 sqrt(2/pi), each constant in two parts):
// rounded to f32, it had moved e^2u by up to 87 2^-24 (184 ulps at x = -9.8).
float gelu_tanh_f32(float x) {
  float x2, x2_lo, x3, x3_lo, a, a_lo, v, v_lo, u, u_lo;
  two_prod(x, x, x2, x2_lo);
  two_prod(x2, x, x3, x3_lo);
  x3_lo = fma(x2_lo, x, x3_lo);
  two_prod(0.044715, x3, a, a_lo);  // 0.044715 = 0.044715f + 1.5461445e-9 (its f32 error)
  a_lo = fma(0.044715, x3_lo, fma(1.5461445e-9, x3, a_lo));
  two_sum(x, a, v, v_lo);
  v_lo += a_lo;
  two_prod(1.5957691216057308, v, u, u_lo);  // 2 sqrt(2/pi) = 1.59576917f - 4.534068e-8
  u_lo = fma(1.5957691216057308, v_lo, fma(-4.534068e-8, v, u_lo));
  float r = times_sigmoid_lo(u, u_lo, max(x, -120.0));
  return isnan(x) ? x : r;
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

// ln(1 + t) for t >= 0 (or NaN), accurate relative to itself when t is small, where ln(1 + t)
// rounded first would lose t (log_softmax's log of a row's sum 1 + t is -1e-10 where its largest
// entry leads the next by 23): u = 1 + t rounded, its error d = u - 1 - t exact (Fast2Sum, the
// larger addend first), and ln(1 + t) = ln u - d / u to within (d / u)^2 <= 2^-48.
float log1p_f32(float t) {
  precise float u = 1.0 + t;
  precise float d = t <= 1.0 ? (u - 1.0) - t : (u - t) - 1.0;
  return log_f32(u) - d / u;
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
// The activation primitives that ops.def's formulas (TRINE_ACT) call, beside the functions above
// (exp_f32, sigmoid_f32, ...). below and above compare with < and >, false for NaN, so NaN passes
// through.
float below(float v, float c, float a, float b) { return v < c ? a : b; }
float above(float v, float c, float a, float b) { return v > c ? a : b; }
float silu_f32(float x) { return isnan(x) ? x : times_sigmoid(x, max(x, -120.0)); }  // -inf: 0
float abs_f32(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7FFFFFFFu); }  // bits: exact for every input
float neg_f32(float x) { return uintBitsToFloat(floatBitsToUint(x) ^ 0x80000000u); }
float pow_f32(float x, float e) {
#ifdef TRINE_FLOAT64
  return pow_c(x, e);
#else
  return k_nan();  // never run: the host dispatches pow to the <shader>_f64 variants only (kernels/unary.cpp)
#endif
}

// Each activation is its formula in ops.def (TRINE_ACT), expanded from the generated ops.glsl's
// TRINE_ACTIVATION_CASES (backends/vulkan/vulkan.cmake); OP_copy (the identity) and OP_scale are not
// activations. A formula calling a primitive missing here fails glslc, naming it.
float activate(uint code, float x, float alpha, float beta) {
  switch (code) {
    case OP_copy: return x;
    case OP_scale: return alpha * x + beta;
    TRINE_ACTIVATION_CASES
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

// f32 bits as the bits of an f16 (rounded to nearest even, overflow to inf, NaN stays NaN,
// subnormals kept) and of a bf16: the rounding of cast, in integer arithmetic (copy.comp and the
// shaders that read and write 16-bit tensors).
uint f32_bits_to_f16(uint b) {
  uint s = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return s | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);
  if (a >= 0x477FF000u) return s | 0x7C00u;  // rounds past 65504
  if (a < 0x38800000u) {                      // f16 subnormal (or zero): units of 2^-24
    float f = uintBitsToFloat(a) * 16777216.0;
    return s | uint(roundEven(f));
  }
  uint r = a - 0x38000000u;
  r += 0xFFFu + ((r >> 13) & 1u);
  return s | (r >> 13);
}

uint f32_bits_to_bf16(uint b) {
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return ((b >> 16) | 0x40u) & 0xFFFFu;
  return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
}
// A value rounded to a 16-bit dtype's bits (type 1: f16, 2: bf16).
uint round16(float v, uint type) {
  uint b = floatBitsToUint(v);
  return type == 1u ? f32_bits_to_f16(b) : f32_bits_to_bf16(b);
}
// Half of a 32-bit word (the element at an odd index is the high half) as f32.
float widen16(uint word, uint odd, uint type) {
  uint h = (word >> (odd * 16u)) & 0xFFFFu;
  return uintBitsToFloat(type == 1u ? f16_to_f32_bits(h) : h << 16);
}

// Element `idx` of a buffer of 32-bit words holding f32 (type 0) or pairs of f16/bf16 (1, 2):
// word_of(type, idx) is the word to read, element_of(type, word, idx) its value, exactly.
uint word_of(uint type, uint idx) { return type == 0u ? idx : idx >> 1; }
float element_of(uint type, uint word, uint idx) {
  return type == 0u ? uintBitsToFloat(word) : widen16(word, idx & 1u, type);
}
