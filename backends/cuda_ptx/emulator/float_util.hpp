// Floating-point helpers for the emulator: bit casts, f16/bf16 encode/decode, and rounding of an
// exactly known result (value + error term) to f16/bf16/f32/f64 in each PTX rounding mode.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/cuda_ptx/emulator/ir.hpp"

namespace trine::cuda::emu {

inline float as_f32(std::uint64_t v) { return std::bit_cast<float>(static_cast<std::uint32_t>(v)); }

// sin.approx.f32 and cos.approx.f32 err by up to 2^-20.9 absolute on [-pi, pi] (PTX ISA); on a
// small angle that is a large relative error, which a kernel must not rely on being less (an H100
// put rope's outputs hundreds of ulp off where the emulator, exact, had them right). The emulator
// adds an error of that size, fixed for each input (a hash of its bits picks it in [-1, 1] times
// the bound), so such a kernel fails here as on a GPU. Exactly 0 stays exact, as on the hardware.
inline double approx_trig_error(double a) {
  if (a == 0 || !std::isfinite(a)) return 0;
  std::uint64_t h = std::bit_cast<std::uint64_t>(a) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  const double unit = static_cast<double>(h >> 11) * 0x1p-52 - 1.0;  // [-1, 1)
  return unit * 0x1.0p-20 * 0.535886731268;  // 2^-20.9 = 2^-20 * 2^-0.9
}
inline double as_f64(std::uint64_t v) { return std::bit_cast<double>(v); }
inline std::uint64_t bits_f32(float f) { return std::bit_cast<std::uint32_t>(f); }
inline std::uint64_t bits_f64(double d) { return std::bit_cast<std::uint64_t>(d); }

struct FloatFormat {
  int p;     // significand bits, the implicit one included
  int emin;  // exponent of the smallest normal
  int emax;  // exponent of the largest finite
  int bias, exp_bits;
};
inline constexpr FloatFormat kF16{11, -14, 15, 15, 5};
inline constexpr FloatFormat kBF16{8, -126, 127, 127, 8};
inline constexpr FloatFormat kF32{24, -126, 127, 127, 8};
inline constexpr FloatFormat kF64{53, -1022, 1023, 1023, 11};

// Rounds the exact value s + e (|e| far below the format's ulp of s; only its sign matters, and
// only when s itself is representable or a tie) to the format with mode r. Returns the rounded
// value (an infinity on overflow where the mode rounds there).
inline long double round_to(long double s, long double e, const FloatFormat& f, Rnd r) {
  if (std::isnan(s) || std::isinf(s)) return s;
  if (s == 0 && e == 0) return s;
  if (s == 0) s = e, e = 0;  // only for results below every quantum: then e is the value
  int ex;
  std::frexp(s, &ex);
  const int q = std::max(ex - 1, f.emin) - (f.p - 1);  // exponent of one ulp at s
  const long double n = std::ldexp(s, -q);             // exact: a power-of-two scaling
  long double lo = std::floor(n), hi = lo + 1;
  long double k;
  if (n == lo) {  // s is representable: e decides the directed modes
    k = n;
    // a step toward zero from a power of two lands in the binade below, where ulps are half as big
    const long double dz = (std::fabs(n) == std::ldexp(1.0L, f.p - 1) && ex - 1 > f.emin) ? 0.5L : 1.0L;
    const long double down = s > 0 ? dz : 1.0L, up = s > 0 ? 1.0L : dz;
    const bool toward_zero = (e < 0) != (s < 0);
    if (e != 0 && ((r == Rnd::rz || r == Rnd::rzi) && toward_zero)) k = s > 0 ? n - down : n + up;
    if (e < 0 && (r == Rnd::rm || r == Rnd::rmi)) k = n - down;
    if (e > 0 && (r == Rnd::rp || r == Rnd::rpi)) k = n + up;
  } else {
    switch (r) {
      case Rnd::rz: case Rnd::rzi: k = s > 0 ? lo : hi; break;
      case Rnd::rm: case Rnd::rmi: k = lo; break;
      case Rnd::rp: case Rnd::rpi: k = hi; break;
      default: {
        const long double dl = n - lo, dh = hi - n;
        if (dl < dh) k = lo;
        else if (dh < dl) k = hi;
        else if (e != 0) k = e > 0 ? hi : lo;
        else if (r == Rnd::rna) k = s > 0 ? hi : lo;
        else k = std::fmod(lo, 2.0L) == 0 ? lo : hi;
      }
    }
  }
  const long double v = std::ldexp(k, q);
  const long double max_finite = std::ldexp(2.0L - std::ldexp(1.0L, 1 - f.p), f.emax);
  if (std::fabs(v) > max_finite) {
    const bool to_inf = r == Rnd::rn || r == Rnd::rna || r == Rnd::none || (r == Rnd::rp && s > 0) || (r == Rnd::rm && s < 0);
    return to_inf ? std::copysign(std::numeric_limits<long double>::infinity(), s) : std::copysign(max_finite, s);
  }
  return v == 0 ? std::copysign(0.0L, s) : v;
}

// Bits of an exactly representable value v in a 16-bit format (f16, bf16).
inline std::uint16_t encode16(long double v, const FloatFormat& f) {
  const int mant_bits = f.p - 1;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7fff;
  const std::uint16_t exp_all = static_cast<std::uint16_t>(((1 << f.exp_bits) - 1) << mant_bits);
  if (std::isinf(v)) return sign | exp_all;
  v = std::fabs(v);
  if (v == 0) return sign;
  int ex;
  std::frexp(v, &ex);
  const int lead = ex - 1;
  if (lead < f.emin) return sign | static_cast<std::uint16_t>(std::ldexp(v, -(f.emin - mant_bits)));
  const auto mant = static_cast<std::uint16_t>(std::ldexp(v, -(lead - mant_bits)) - std::ldexp(1.0L, mant_bits));
  return sign | static_cast<std::uint16_t>((lead + f.bias) << mant_bits) | mant;
}

inline float decode16(std::uint16_t b, const FloatFormat& f) {
  const int mant_bits = f.p - 1;
  const int exp = (b >> mant_bits) & ((1 << f.exp_bits) - 1);
  const int mant = b & ((1 << mant_bits) - 1);
  float v;
  if (exp == (1 << f.exp_bits) - 1) v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (exp == 0) v = std::ldexp(static_cast<float>(mant), f.emin - mant_bits);
  // A normal f16/bf16 value is a normal f32: its bits directly (ldexp here was a quarter of the
  // tensor-core matmul's emulation time).
  else v = std::bit_cast<float>(static_cast<std::uint32_t>(exp - f.bias + 127) << 23 | static_cast<std::uint32_t>(mant) << (23 - mant_bits));
  return (b & 0x8000) ? -v : v;
}

inline float f16_to_f32(std::uint16_t b) { return decode16(b, kF16); }
inline float bf16_to_f32(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }
inline std::uint16_t f16_from(long double v, Rnd r = Rnd::rn, long double e = 0) {
  return encode16(round_to(v, e, kF16, r), kF16);
}
inline std::uint16_t bf16_from(long double v, Rnd r = Rnd::rn, long double e = 0) {
  return encode16(round_to(v, e, kBF16, r), kBF16);
}
inline float f32_from(long double v, Rnd r = Rnd::rn, long double e = 0) {
  return static_cast<float>(round_to(v, e, kF32, r));
}
inline double f64_from(long double v, Rnd r = Rnd::rn, long double e = 0) {
  return static_cast<double>(round_to(v, e, kF64, r));
}

inline float ftz32(float x) { return std::fabs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x; }

// The exact error terms of the basic operations, for directed rounding: s is the long double
// result, the return value the (sign-correct) remainder.
inline long double two_sum_err(long double a, long double b, long double s) {
  const long double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

}  // namespace trine::cuda::emu
