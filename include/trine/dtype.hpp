// Element types. f32 is computed everywhere; f16 and bf16 are storage types (cast, matmul inputs);
// i32 holds indices (gather's, argmax's result, where's condition) and casts to and from the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trine {

enum class DType : std::uint8_t { f32, f16, bf16, i32 };

constexpr std::size_t dtype_size(DType t) noexcept { return t == DType::f16 || t == DType::bf16 ? 2 : 4; }
constexpr bool dtype_is_float(DType t) noexcept { return t != DType::i32; }
const char* dtype_name(DType t) noexcept;

// Round-to-nearest-even conversions used by every backend's casts and by the reference.
std::uint16_t f32_to_f16(float v) noexcept;
float f16_to_f32(std::uint16_t bits) noexcept;
std::uint16_t f32_to_bf16(float v) noexcept;
float bf16_to_f32(std::uint16_t bits) noexcept;
// f32 -> i32 as cast does: toward zero, saturating at the i32 range, NaN to 0. i32 -> f32 (and
// through f32 to f16 and bf16) rounds to nearest even.
std::int32_t f32_to_i32(float v) noexcept;

}  // namespace trine
