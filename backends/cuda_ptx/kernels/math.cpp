// exp, log, rsqrt and pow accurate to the op table's bounds on the hardware, not only on the
// emulator: every step is an IEEE operation whose rounding the PTX ISA defines, so the budgets below
// hold on any target. Units: u = 2^-24, half an ulp of [1, 2) (f32 eps is 2u); an error bound
// "relative" is relative to the exact result. The tests compare against the exact value rounded to
// f32, which adds up to half an ulp to each figure.
#include "backends/cuda_ptx/kernels/math.hpp"

#include <bit>
#include <cfloat>
#include <cstdint>
#include <limits>
#include <optional>

namespace trine::cuda::kernels {
namespace {

constexpr float f32_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float f32_inf = std::numeric_limits<float>::infinity();

// ln 2 split for Cody-Waite: the high part has 15 significant bits (it is 0xb172 * 2^-16), so its
// product with any |k| < 512 is exact; hi + lo is ln 2 to 2^-45 relative.
constexpr float ln2_hi_f32 = std::bit_cast<float>(0x3f317200u);  // 0.693145751953125
constexpr float ln2_lo_f32 = std::bit_cast<float>(0x35bfbe8eu);  // 1.4286068e-06
// fdlibm's: 32 significant bits (k * hi exact for |k| < 2^21), and the rest to 2^-85.
constexpr double ln2_hi_f64 = std::bit_cast<double>(0x3fe62e42fee00000ull);
constexpr double ln2_lo_f64 = std::bit_cast<double>(0x3dea39ef35793c76ull);
constexpr double ln2_f64 = 0.693147180559945309417;

// x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), both exact: e from the exponent field (after
// scaling a subnormal x by 2^23), 1 + f by replacing it, and f = (1 + f) - 1 by Sterbenz's lemma.
// For x > 0 finite; anything else gives garbage the callers select away.
struct LogArgument {
  Reg<S32> e;
  Reg<F32> f;
};
LogArgument log_argument(Kernel& k, Reg<F32> x) {
  Reg<Pred> subnormal = setp(k, Cmp::lt, x, V<F32>(FLT_MIN));
  Reg<F32> xs = selp<F32>(k, mul(k, x, V<F32>(0x1p23f)), x, subnormal);
  Reg<S32> bits = bitcast<S32>(k, xs);
  // Subtracting sqrt(1/2)'s bits moves the exponent boundary from 1 to sqrt(1/2): e is then the
  // exponent of x / sqrt(1/2), and the mantissa bits left over are those of x / 2^e.
  Reg<S32> e = shr(k, sub(k, bits, V<S32>(0x3f3504f3)), 23u);
  Reg<F32> m = bitcast<F32>(k, sub(k, bits, V<S32>(shl(k, e, 23u))));
  Reg<F32> f = sub(k, m, V<F32>(1.0f));
  return {sub(k, e, V<S32>(selp<S32>(k, 23, 0, subnormal))), f};
}

}  // namespace

Reg<F32> pow2_f32(Kernel& k, Reg<S32> e) { return bitcast<F32>(k, shl(k, add(k, e, V<S32>(127)), 23u)); }

Reg<F32> scale_pow2(Kernel& k, Reg<F32> v, Reg<S32> e) {
  Reg<S32> e1 = shr(k, e, 1u);
  Reg<S32> e2 = sub(k, e, V<S32>(e1));
  return mul(k, mul(k, v, V<F32>(pow2_f32(k, e1))), V<F32>(pow2_f32(k, e2)));
}

// e^x = 2^k e^r, k = rint(x log2 e), r = x - k ln2 in [-0.347, 0.347]:
// - r: x - k ln2_hi is exact (k ln2_hi is exact and a multiple of 2^-16, x one of 2^-25 wherever
//   k != 0, and |r| < 1/2 holds it in 24 bits); subtracting k ln2_lo rounds once: |dr| <= 2^-26,
//   plus |k| 2^-45 ln2 for the split, which moves e^r by 0.26u relative. With a low part x_lo
//   (|x_lo| <= ulp(x)), adding it rounds once more: 0.25u.
// - e^r = 1 + r (1 + r h), h the Taylor series to r^8 / 8! / r^2: truncation 2^-31.7 relative
//   (0.005u), coefficient roundings 0.01u; the error of (1 + r h) (1.3u) reaches the result scaled
//   by |r (1 + r h)| / e^r <= 0.42 (0.55u); the last FMA rounds once (1u).
// Total: m within 1.82u (2.07u with x_lo) of e^(x + x_lo) / 2^k.
namespace {
constexpr float log2e_f32 = 1.44269504088896340736f;
// e^r for the reduced |r| <= 0.35 and the integer kf: the Taylor polynomial and k as an integer.
ExpParts exp_reduced(Kernel& k, Reg<F32> r, Reg<F32> kf) {
  Reg<F32> h = horner<F32, 7>(k, r, {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040, 1.0f / 40320});
  Reg<F32> er = fma(k, fma(k, h, V<F32>(r), V<F32>(1.0f)), V<F32>(r), V<F32>(1.0f));
  Reg<S32> ki = cvt<S32>(k, kf, Round::rzi);  // kf is an integer in [-173, 511]: exact
  return {er, ki};
}
}  // namespace

ExpParts exp_parts(Kernel& k, Reg<F32> x, std::optional<Reg<F32>> x_lo) {
  Reg<F32> kf = cvt<F32>(k, mul(k, x, V<F32>(log2e_f32)), Round::rni);
  Reg<F32> r = fma(k, kf, V<F32>(-ln2_hi_f32), V<F32>(x));
  r = fma(k, kf, V<F32>(-ln2_lo_f32), V<F32>(r));
  if (x_lo) r = add(k, r, V<F32>(*x_lo));
  return exp_reduced(k, r, kf);
}

// e^(x + p + x_lo), |p| < 1, |x_lo| <= ulp(x): k = rint((x + p) log2 e), and x + p is never
// rounded: r = ((x - k ln2_hi) + p) - k ln2_lo + x_lo. x - k ln2_hi is exact for gelu's x = -a^2/2
// and p = G(s) (checked for every f32 a up to the cap: the difference stays under 1.08 and a
// multiple of x's ulp); the three steps after it round at |r| <= 0.35 (2^-26 each): r within 0.75u
// (+ |k| 2^-45 ln2 for the split) of the exact reduced argument, which e^r takes as its relative
// error, plus the polynomial's 1.57u: 2.32u.
ExpParts exp_parts_sum(Kernel& k, Reg<F32> x, Reg<F32> p, Reg<F32> x_lo) {
  Reg<F32> kf = cvt<F32>(k, mul(k, add(k, x, V<F32>(p)), V<F32>(log2e_f32)), Round::rni);
  Reg<F32> r = add(k, fma(k, kf, V<F32>(-ln2_hi_f32), V<F32>(x)), V<F32>(p));
  r = fma(k, kf, V<F32>(-ln2_lo_f32), V<F32>(r));
  return exp_reduced(k, add(k, r, V<F32>(x_lo)), kf);
}

// 2^t = 2^k 2^f, k = rint(t), f = t - k in [-1/2, 1/2] exact (t and k are close floats, or t is
// an integer); 2^f = e^r with r = f ln2 rounded once (|dr| <= 2^-26: 0.25u), then exp_parts'
// polynomial (1.57u): m within 1.82u of 2^t / 2^k.
ExpParts exp2_parts(Kernel& k, Reg<F32> t) {
  constexpr float ln2 = 0.693147180559945309f;
  Reg<F32> kf = cvt<F32>(k, t, Round::rni);
  Reg<F32> r = mul(k, sub(k, t, V<F32>(kf)), V<F32>(ln2));
  Reg<F32> h = horner<F32, 7>(k, r, {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040, 1.0f / 40320});
  Reg<F32> er = fma(k, fma(k, h, V<F32>(r), V<F32>(1.0f)), V<F32>(r), V<F32>(1.0f));
  return {er, cvt<S32>(k, kf, Round::rzi)};
}

Reg<F32> exp_nonpositive(Kernel& k, Reg<F32> x) {
  const ExpParts p = exp_parts(k, max(k, x, V<F32>(-120.0f)));
  return mul(k, p.m, V<F32>(pow2_f32(k, max(k, p.e, V<S32>(-127)))));
}

TwoF32 two_sum(Kernel& k, Reg<F32> a, Reg<F32> b) {
  Reg<F32> hi = add(k, a, V<F32>(b));
  Reg<F32> bb = sub(k, hi, V<F32>(a));
  Reg<F32> lo = add(k, sub(k, a, V<F32>(sub(k, hi, V<F32>(bb)))), V<F32>(sub(k, b, V<F32>(bb))));
  return {hi, lo};
}

TwoF32 two_prod(Kernel& k, Reg<F32> a, Reg<F32> b) {
  Reg<F32> hi = mul(k, a, V<F32>(b));
  return {hi, fma(k, a, V<F32>(b), V<F32>(neg(k, hi)))};
}

Reg<F32> exp_neg_dist(Kernel& k, Reg<F32> a, Reg<F32> b) {
  // TwoSum of a and -b: d + lo = a - b exactly. -|a - b| = -|d| - sign(d) lo.
  const TwoF32 diff = two_sum(k, a, neg(k, b));
  Reg<F32> d = diff.hi, lo = diff.lo;
  Reg<F32> nd = neg(k, abs(k, d));
  Reg<F32> nlo = selp<F32>(k, lo, neg(k, lo), setp(k, Cmp::lt, d, V<F32>(0.0f)));
  // Below -120 (an infinite a or b included, where lo is NaN) e^nd is 0 in f32: the low part goes.
  Reg<Pred> far = setp(k, Cmp::lt, nd, V<F32>(-120.0f));
  const ExpParts p = exp_parts(k, max(k, nd, V<F32>(-120.0f)), selp<F32>(k, 0.0f, nlo, far));
  return mul(k, p.m, V<F32>(pow2_f32(k, max(k, p.e, V<S32>(-127)))));
}

Reg<F32> exp2_nonpositive(Kernel& k, Reg<F32> t) {
  const ExpParts p = exp2_parts(k, max(k, t, V<F32>(-150.0f)));
  return mul(k, p.m, V<F32>(pow2_f32(k, max(k, p.e, V<S32>(-127)))));
}

// exp_parts, then 2^k = 2^k1 2^k2 (k1 = k >> 1): two exact power-of-two products while the result
// is normal; the second rounds once into the subnormals (an absolute error under 2^-150, which the
// suite does not measure). Total <= 1.82u (0.91 ulp) relative. The host simulation of this sequence
// over every f32 input in [-120, 90] (IEEE arithmetic gives the same bits everywhere) errs by at
// most 1.00 eps against the exact value rounded to f32. Inputs are clamped to [-120, 89] first,
// where e^x is already 0 or inf.
Reg<F32> exp_accurate(Kernel& k, Reg<F32> x) {
  Reg<F32> xc = min(k, max(k, x, V<F32>(-120.0f)), V<F32>(89.0f));  // NaN becomes -120; selected back below
  const ExpParts p = exp_parts(k, xc);
  Reg<F32> y = scale_pow2(k, p.m, p.e);
  return selp<F32>(k, x, y, setp(k, Cmp::nan, x, V<F32>(x)));
}

// log(x) = e ln2 + log(1 + f) (log_argument), log(1 + f) = 2 atanh(s) = f - s (f - R) with
// s = f / (2 + f), |s| <= 0.1716, R = 2s^2/3 + 2s^4/5 + ... to s^10 (truncation 0.001u):
// - s: 2 + f and the quotient round once each (2u); f - R (1.2u) and the product c = s (f - R)
//   (1u): c errs by 4.2u relative, and |c| <= 0.195 |log(1 + f)|, so 0.82u of the result.
// - e = 0: the result is f - c, one rounding (1u): 1.82u in all.
// - e != 0: |result| >= 0.3466 (e ln2 and log(1 + f) have opposite signs at worst). e ln2_hi + f
//   is kept exact as a sum of two floats (Fast2Sum: |e ln2_hi| > |f|), the small terms
//   (e ln2_lo - c and that sum's error) round twice at magnitudes under 0.07 (2^-28 each), c's
//   error is at most 0.29u absolute: 1.2u relative at the smallest result, plus the last rounding
//   (1u): 2.2u in all.
// The host simulation over every positive f32 errs by at most 1.00 eps against the exact value
// rounded to f32.
namespace {
// log(2^e (1 + f)) for |e| <= 149 and 1 + f in [sqrt(1/2), sqrt(2)), as the comment above counts
// it; no special values. `extra`, a term under 2^-23 in magnitude, joins the small
// terms (one more rounding at a magnitude under 0.07: 2^-28, 0.06u of a result of at least 0.346).
Reg<F32> log_core(Kernel& k, Reg<F32> ef, Reg<F32> f, std::optional<Reg<F32>> extra = std::nullopt) {
  Reg<F32> s = div(k, f, V<F32>(add(k, f, V<F32>(2.0f))));
  Reg<F32> z = mul(k, s, V<F32>(s));
  Reg<F32> big_r = mul(k, z, V<F32>(horner<F32, 5>(k, z, {2.0f / 3, 2.0f / 5, 2.0f / 7, 2.0f / 9, 2.0f / 11})));
  Reg<F32> c = mul(k, s, V<F32>(sub(k, f, V<F32>(big_r))));
  Reg<F32> hi = mul(k, ef, V<F32>(ln2_hi_f32));  // exact
  Reg<F32> t = add(k, hi, V<F32>(f));
  Reg<F32> t_err = sub(k, f, V<F32>(sub(k, t, V<F32>(hi))));  // hi + f = t + t_err exactly
  Reg<F32> lo = fma(k, ef, V<F32>(ln2_lo_f32), V<F32>(neg(k, c)));
  if (extra) lo = add(k, lo, V<F32>(*extra));
  return add(k, t, V<F32>(add(k, t_err, V<F32>(lo))));
}
}  // namespace

Reg<F32> log_accurate(Kernel& k, Reg<F32> x) {
  const LogArgument a = log_argument(k, x);
  Reg<F32> y = log_core(k, cvt<F32>(k, a.e, Round::rn), a.f);  // |e| <= 149: exact
  // log(+-0) = -inf, negative x (-inf included) NaN; +inf and NaN give themselves.
  y = selp<F32>(k, -f32_inf, y, setp(k, Cmp::eq, x, V<F32>(0.0f)));
  y = selp<F32>(k, f32_nan, y, setp(k, Cmp::lt, x, V<F32>(0.0f)));
  return selp<F32>(k, x, y, setp(k, Cmp::geu, x, V<F32>(f32_inf)));
}

// log(1 + t) = log(u) + log(1 + c/u), u = 1 + t rounded and c = t - (u - 1) its rounding error:
// - t in [sqrt(1/2) - 1, sqrt(2) - 1): 1 + t is 2^0 (1 + t), t itself the exact f (u is not used):
//   log_core's e = 0 case, 1.82u relative however small t is (log(u) of the rounded u would lose
//   everything below ulp(1): log(1 + 1e-9) = 1e-9 came out 0).
// - elsewhere: log(u) by log_argument, within log_core's 2.2u (|log(1 + t)| >= 0.346), and c/u,
//   c exact (u - 1 is exact for t >= sqrt(2) - 1: u is a multiple of ulp(u) <= 1, and so is u - 1;
//   for t in (-1, -1/2], 1 + t is exact and c is 0; between, Sterbenz makes u - 1 exact), |c/u| <=
//   2^-24, its division and the dropped -c^2/2u^2 under 2^-48: log_core's `extra`. 2.3u in all.
Reg<F32> log1p_accurate(Kernel& k, Reg<F32> t) {
  Reg<F32> u = add(k, t, V<F32>(1.0f));
  const LogArgument a = log_argument(k, u);
  Reg<F32> c = sub(k, t, V<F32>(sub(k, u, V<F32>(1.0f))));
  Reg<Pred> near0 = and_(k, setp(k, Cmp::ge, t, V<F32>(std::bit_cast<float>(0xbe95f619u))),  // sqrt(1/2) - 1
                         V<Pred>(setp(k, Cmp::lt, t, V<F32>(std::bit_cast<float>(0x3ed413ccu)))));  // sqrt(2) - 1
  Reg<F32> ef = selp<F32>(k, 0.0f, cvt<F32>(k, a.e, Round::rn), near0);
  Reg<F32> f = selp<F32>(k, t, a.f, near0);
  Reg<F32> extra = selp<F32>(k, 0.0f, div(k, c, V<F32>(u)), near0);
  Reg<F32> y = log_core(k, ef, f, extra);
  // log1p(-1) = -inf, below -1 (-inf included) NaN; +inf and NaN give themselves.
  y = selp<F32>(k, -f32_inf, y, setp(k, Cmp::eq, t, V<F32>(-1.0f)));
  y = selp<F32>(k, f32_nan, y, setp(k, Cmp::lt, t, V<F32>(-1.0f)));
  return selp<F32>(k, t, y, setp(k, Cmp::geu, t, V<F32>(f32_inf)));
}

// sqrt.rn and rcp.rn round once each (u, then u relative): within 2u + u^2 of 1/sqrt(x).
Reg<F32> rsqrt_accurate(Kernel& k, Reg<F32> x) { return rcp_rn(k, sqrt_rn(k, x)); }

// x^y = 2^k e^r with y log|x| = k ln2 + r, in f64:
// - log|x| = e ln2 + 2 atanh(s), s = f / (2 + f) (log_argument; 2 + f is exact in f64), the
//   series to s^17 (truncation 2^-50 relative), e ln2 in f64 (|e| 2^-54 against |log| >= 0.35 |e|):
//   2^-48 relative.
// - z = y log|x|: 2^-48 relative; where the f32 result is neither 0 nor inf, |z| < 104, so z errs by
//   at most 2^-41 absolute, which is e^z's relative error.
// - e^z: Cody-Waite with fdlibm's split (|dr| <= 2^-54), the Taylor series to r^10 (truncation
//   2^-41.6 relative), f64 roundings (2^-50); 2^k scales exactly (|k| <= 289).
// The power reaches the conversion to f32 within 2^-40 relative, so the result is the exact power
// rounded to nearest, or its other neighbour when the exact power lies within 2^-40 of halfway:
// within 1 ulp of the exact power rounded to f32, never further. (f64 is the honest route here:
// an f32 evaluation would need |z| to 2^-30, a double-f32 log.)
// C's special values: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN; pow(-1, +-inf) = 1; a finite
// negative x with a non-integer y is NaN; an odd integer y keeps x's sign (pow(-0, -1) = -inf); the
// zeros and infinities of x and y follow from log|x| = +-inf and e^(+-inf).
Reg<F32> pow_accurate(Kernel& k, Reg<F32> x, Reg<F32> y) {
  Reg<F32> ax = abs(k, x);
  const LogArgument a = log_argument(k, ax);
  Reg<F64> f = cvt<F64>(k, a.f);
  Reg<F64> s = div(k, f, V<F64>(add(k, f, V<F64>(2.0))));
  Reg<F64> z2 = mul(k, s, V<F64>(s));
  Reg<F64> big_r =
      mul(k, z2,
          V<F64>(horner<F64, 8>(k, z2, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15, 2.0 / 17})));
  Reg<F64> log1p = fma(k, s, V<F64>(big_r), V<F64>(add(k, s, V<F64>(s))));
  Reg<F64> log_ax = fma(k, cvt<F64>(k, a.e, Round::rn), V<F64>(ln2_f64), V<F64>(log1p));
  // log 0 = -inf; +inf and NaN give themselves.
  log_ax = selp<F64>(k, -std::numeric_limits<double>::infinity(), log_ax, setp(k, Cmp::eq, ax, V<F32>(0.0f)));
  log_ax = selp<F64>(k, cvt<F64>(k, ax), log_ax, setp(k, Cmp::geu, ax, V<F32>(f32_inf)));

  Reg<F64> z = mul(k, cvt<F64>(k, y), V<F64>(log_ax));
  Reg<F64> zc = min(k, max(k, z, V<F64>(-200.0)), V<F64>(200.0));  // 0 or inf in f32 beyond
  Reg<F64> kd = cvt<F64>(k, mul(k, zc, V<F64>(1.4426950408889634074)), Round::rni);
  Reg<F64> r = fma(k, kd, V<F64>(-ln2_hi_f64), V<F64>(zc));
  r = fma(k, kd, V<F64>(-ln2_lo_f64), V<F64>(r));
  Reg<F64> h = horner<F64, 9>(
      k, r, {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800});
  Reg<F64> er = fma(k, fma(k, h, V<F64>(r), V<F64>(1.0)), V<F64>(r), V<F64>(1.0));
  Reg<S32> biased = add(k, cvt<S32>(k, kd, Round::rzi), V<S32>(1023));
  Reg<F64> scale = bitcast<F64>(k, shl(k, cvt<U64>(k, biased), 52u));
  Reg<F32> p = cvt<F32>(k, mul(k, er, V<F64>(scale)), Round::rn);
  p = selp<F32>(k, f32_nan, p, setp(k, Cmp::nan, z, V<F64>(z)));

  // y's parity: an integer equals its truncation; an odd one's half does not (inf is even).
  Reg<Pred> y_int = setp(k, Cmp::eq, y, V<F32>(cvt<F32>(k, y, Round::rzi)));
  Reg<F32> half = mul(k, y, V<F32>(0.5f));
  Reg<Pred> half_int = setp(k, Cmp::eq, half, V<F32>(cvt<F32>(k, half, Round::rzi)));
  Reg<Pred> y_odd = and_(k, y_int, V<Pred>(not_(k, half_int)));
  Reg<Pred> x_signed = setp(k, Cmp::lt, bitcast<S32>(k, x), V<S32>(0));
  p = selp<F32>(k, neg(k, p), p, and_(k, x_signed, V<Pred>(y_odd)));
  Reg<Pred> finite_negative =
      and_(k, setp(k, Cmp::lt, x, V<F32>(0.0f)), V<Pred>(setp(k, Cmp::lt, ax, V<F32>(f32_inf))));
  p = selp<F32>(k, f32_nan, p, and_(k, finite_negative, V<Pred>(not_(k, y_int))));
  Reg<Pred> one = or_(k, setp(k, Cmp::eq, y, V<F32>(0.0f)), V<Pred>(setp(k, Cmp::eq, x, V<F32>(1.0f))));
  Reg<Pred> minus_one_inf =
      and_(k, setp(k, Cmp::eq, x, V<F32>(-1.0f)), V<Pred>(setp(k, Cmp::eq, abs(k, y), V<F32>(f32_inf))));
  return selp<F32>(k, 1.0f, p, or_(k, one, V<Pred>(minus_one_inf)));
}

}  // namespace trine::cuda::kernels
