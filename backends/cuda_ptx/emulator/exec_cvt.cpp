// cvt between every integer and float type (f16/bf16 and the packed x2 forms included), with the
// PTX rounding modes, saturation, .ftz and .relu. Values pass through long double, which holds
// every source exactly (64-bit integers included), so each conversion rounds once.
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "backends/cuda_ptx/emulator/cta.hpp"
#include "backends/cuda_ptx/emulator/float_util.hpp"

namespace trine::cuda::emu {
namespace {

using LD = long double;

LD read_value(Type t, std::uint64_t v, bool ftz) {
  switch (t) {
    case Type::s8: return static_cast<std::int8_t>(v);
    case Type::s16: return static_cast<std::int16_t>(v);
    case Type::s32: return static_cast<std::int32_t>(v);
    case Type::s64: return static_cast<std::int64_t>(v);
    case Type::u8: case Type::b8: return static_cast<std::uint8_t>(v);
    case Type::u16: case Type::b16: return static_cast<std::uint16_t>(v);
    case Type::u32: case Type::b32: return static_cast<std::uint32_t>(v);
    case Type::u64: case Type::b64: return static_cast<LD>(v);
    case Type::f16: case Type::f16x2: return f16_to_f32(static_cast<std::uint16_t>(v));
    case Type::bf16: case Type::bf16x2: return bf16_to_f32(static_cast<std::uint16_t>(v));
    case Type::f32: { const float f = as_f32(v); return ftz ? ftz32(f) : f; }
    case Type::f64: return as_f64(v);
    default: return 0;
  }
}

// Integer destination: round by mode (integer conversions from floats), saturate to the range.
std::uint64_t to_int(Type dst, LD x, Rnd r, bool from_float) {
  if (from_float) {
    if (std::isnan(x)) return 0;
    switch (r) {
      case Rnd::rni: case Rnd::rn: x = std::nearbyint(x); break;
      case Rnd::rmi: case Rnd::rm: x = std::floor(x); break;
      case Rnd::rpi: case Rnd::rp: x = std::ceil(x); break;
      default: x = std::trunc(x); break;
    }
  }
  auto clamp = [&](LD lo, LD hi) { return std::min(std::max(x, lo), hi); };
  switch (dst) {
    case Type::s8: return static_cast<std::uint8_t>(static_cast<std::int8_t>(clamp(-128, 127)));
    case Type::s16: return static_cast<std::uint16_t>(static_cast<std::int16_t>(clamp(-32768, 32767)));
    case Type::s32: return static_cast<std::uint32_t>(static_cast<std::int32_t>(clamp(-2147483648.0L, 2147483647.0L)));
    case Type::s64: return static_cast<std::uint64_t>(static_cast<std::int64_t>(clamp(-9223372036854775808.0L, 9223372036854775807.0L)));
    case Type::u8: case Type::b8: return static_cast<std::uint8_t>(clamp(0, 255));
    case Type::u16: case Type::b16: return static_cast<std::uint16_t>(clamp(0, 65535));
    case Type::u32: case Type::b32: return static_cast<std::uint32_t>(clamp(0, 4294967295.0L));
    case Type::u64: case Type::b64: return static_cast<std::uint64_t>(clamp(0, 18446744073709551615.0L));
    default: return 0;
  }
}

// Integer to integer: truncation, or clamping with .sat.
std::uint64_t int_to_int(Type dst, Type src, std::uint64_t v, bool sat) {
  const LD x = read_value(src, v, false);
  if (sat) return to_int(dst, x, Rnd::none, false);
  const std::int64_t s = is_signed(src) ? static_cast<std::int64_t>(x) : static_cast<std::int64_t>(v & (type_bytes(src) == 8 ? ~0ull : (1ull << (8 * type_bytes(src))) - 1));
  const int b = type_bytes(dst);
  const std::uint64_t u = static_cast<std::uint64_t>(s);
  if (b == 8) return u;
  const std::uint64_t mask = (1ull << (8 * b)) - 1;
  // a signed destination keeps the sign-extended bits in the low part only; readers truncate
  return u & mask;
}

std::uint64_t to_float(Type dst, LD x, Rnd r, bool ftz, bool sat, bool relu) {
  if (sat && !std::isnan(x)) x = std::min<LD>(std::max<LD>(x, 0), 1);
  if (sat && std::isnan(x)) x = 0;
  if (relu && (x < 0 || std::isnan(x))) x = std::isnan(x) ? x : 0;
  switch (r) {  // integer rounding to a float type: round to an integral value first
    case Rnd::rni: x = std::nearbyint(x), r = Rnd::rn; break;
    case Rnd::rzi: x = std::trunc(x), r = Rnd::rn; break;
    case Rnd::rmi: x = std::floor(x), r = Rnd::rn; break;
    case Rnd::rpi: x = std::ceil(x), r = Rnd::rn; break;
    case Rnd::none: r = Rnd::rn; break;
    default: break;
  }
  switch (dst) {
    case Type::f16: case Type::f16x2: return f16_from(x, r);
    case Type::bf16: case Type::bf16x2: return bf16_from(x, r);
    case Type::f32: {
      float f = f32_from(x, r);
      if (std::isnan(f)) return 0x7fffffffu;
      return bits_f32(ftz ? ftz32(f) : f);
    }
    case Type::f64: return bits_f64(f64_from(x, r));
    default: return 0;
  }
}

}  // namespace

void exec_cvt(Cta&, Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  const Type dst = in.type, src = in.type2;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat, relu = in.flags & kRelu;
  if (dst == Type::f16x2 || dst == Type::bf16x2) {  // d = {cvt(a) high, cvt(b) low}
    const std::uint64_t* b = R + in.ops[2].reg[0] * 32;
    for_lanes(m, [&](int l) {
      const std::uint64_t hi = to_float(dst, read_value(src, a[l], ftz), in.rnd, ftz, sat, relu);
      const std::uint64_t lo = to_float(dst, read_value(src, b[l], ftz), in.rnd, ftz, sat, relu);
      d[l] = (hi & 0xffff) << 16 | (lo & 0xffff);
    });
    return;
  }
  // the common conversions on native paths: C++ int<->float casts round as PTX's .rn/.rzi do
  const bool rn = in.rnd == Rnd::none || in.rnd == Rnd::rn;
  if (dst == Type::f32 && !ftz && !sat && !relu && rn && (src == Type::s32 || src == Type::u32)) {
    if (src == Type::s32) for_lanes(m, [&](int l) { d[l] = bits_f32(static_cast<float>(static_cast<std::int32_t>(a[l]))); });
    else for_lanes(m, [&](int l) { d[l] = bits_f32(static_cast<float>(static_cast<std::uint32_t>(a[l]))); });
    return;
  }
  if (src == Type::f32 && dst == Type::s32 && !ftz && (in.rnd == Rnd::rzi || in.rnd == Rnd::none)) {
    for_lanes(m, [&](int l) {
      const float f = as_f32(a[l]);
      const std::int32_t v = std::isnan(f) ? 0 : f >= 2147483648.0f ? 2147483647 : f < -2147483648.0f ? INT32_MIN : static_cast<std::int32_t>(f);
      d[l] = static_cast<std::uint32_t>(v);
    });
    return;
  }
  // f32/f64 sources on double arithmetic, which holds both exactly: to s32/u32 with an integer
  // rounding (the x87 nearbyintl of the generic path was a sixth of the emulated transcendental
  // ops' time), and between f32 and f64 where the result is exact or rounds to nearest
  const bool float_src = src == Type::f32 || src == Type::f64;
  auto read_native = [&](std::uint64_t v) {
    return src == Type::f32 ? static_cast<double>(ftz ? ftz32(as_f32(v)) : as_f32(v)) : as_f64(v);
  };
  auto integral = [&](double x) {  // the integer roundings; the other modes leave x
    switch (in.rnd) {
      case Rnd::rni: return std::rint(x);  // the host rounds to nearest, ties to even
      case Rnd::rzi: return std::trunc(x);
      case Rnd::rmi: return std::floor(x);
      case Rnd::rpi: return std::ceil(x);
      default: return x;
    }
  };
  if (float_src && (dst == Type::s32 || dst == Type::u32)) {
    const bool s32 = dst == Type::s32;
    for_lanes(m, [&](int l) {
      double x = read_native(a[l]);
      switch (in.rnd) {
        case Rnd::rni:
        case Rnd::rn: x = std::rint(x); break;
        case Rnd::rmi:
        case Rnd::rm: x = std::floor(x); break;
        case Rnd::rpi:
        case Rnd::rp: x = std::ceil(x); break;
        default: x = std::trunc(x); break;
      }
      if (std::isnan(x))
        d[l] = 0;
      else if (s32)
        d[l] = static_cast<std::uint32_t>(static_cast<std::int32_t>(std::clamp(x, -2147483648.0, 2147483647.0)));
      else
        d[l] = static_cast<std::uint32_t>(std::clamp(x, 0.0, 4294967295.0));
    });
    return;
  }
  const bool integer_rnd = in.rnd == Rnd::rni || in.rnd == Rnd::rzi || in.rnd == Rnd::rmi || in.rnd == Rnd::rpi;
  const bool exact_or_rn = rn || integer_rnd || src == Type::f32;  // f32 -> f32/f64 never rounds
  if (float_src && (dst == Type::f32 || dst == Type::f64) && !sat && !relu && exact_or_rn) {
    if (dst == Type::f64) {
      for_lanes(m, [&](int l) { d[l] = bits_f64(integral(read_native(a[l]))); });
    } else {
      for_lanes(m, [&](int l) {
        const float f = static_cast<float>(integral(read_native(a[l])));  // rounds to nearest
        d[l] = std::isnan(f) ? 0x7fffffffu : bits_f32(ftz ? ftz32(f) : f);
      });
    }
    return;
  }
  if (!is_float(dst) && !is_float(src)) {
    for_lanes(m, [&](int l) { d[l] = int_to_int(dst, src, a[l], sat); });
  } else if (!is_float(dst)) {
    for_lanes(m, [&](int l) { d[l] = to_int(dst, read_value(src, a[l], ftz), in.rnd, true); });
  } else if (dst == Type::f32 && src == Type::f16 && !sat && !ftz) {  // the common widening, exact
    for_lanes(m, [&](int l) { d[l] = bits_f32(f16_to_f32(static_cast<std::uint16_t>(a[l]))); });
  } else {
    for_lanes(m, [&](int l) { d[l] = to_float(dst, read_value(src, a[l], ftz), in.rnd, ftz, sat, relu); });
  }
}

}  // namespace trine::cuda::emu
