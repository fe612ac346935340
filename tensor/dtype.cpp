// DType names and the f16/bf16 <-> f32 conversions (round to nearest even) every backend uses.
#include "trine/dtype.hpp"

#include <bit>
#include <cstring>

namespace trine {

const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
    case DType::q4_k: return "q4_k";
    case DType::q5_k: return "q5_k";
    case DType::q6_k: return "q6_k";
  }
  return "?";
}

std::int32_t f32_to_i32(float v) noexcept {
  if (v != v) return 0;
  if (v >= 2147483648.0f) return 2147483647;
  if (v < -2147483648.0f) return -2147483647 - 1;
  return static_cast<std::int32_t>(v);  // in range: truncation toward zero
}

std::uint16_t f32_to_f16(float v) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal f16 (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25 rounds to 0 (2^-25 ties to 0)
    std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14 + (113 - exp) ... distance to the f16 subnormal grid
    // value = mant * 2^(e-150); f16 subnormal unit is 2^-24, so result = mant >> (126 - e).
    std::uint32_t q = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1u);
    std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  // normal: rebias exponent 127 -> 15, round the 13 dropped mantissa bits to nearest even
  // Branch-free round half to even (random data mispredicts a branch half the time); a carry
  // into the exponent is still the right answer.
  std::uint32_t r = abs - 0x38000000u;  // exponent - 112
  std::uint32_t q = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  return static_cast<std::uint16_t>(sign | q);
}

float f16_to_f32(std::uint16_t h) noexcept {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        mant <<= 1;
        ++e;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t f32_to_bf16(float v) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float bf16_to_f32(std::uint16_t bits) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace trine
