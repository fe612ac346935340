// Element types. f32 is computed everywhere; f16 and bf16 are storage types: an op reads them,
// computes in f32 and rounds its result once, when it writes it (docs/ops.md, "Dtypes"). i32 holds
// indices (gather's, argmax's result, where's condition) and casts to and from the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trine {

enum class DType : std::uint8_t { f32, f16, bf16, i32 };

constexpr std::size_t dtype_size(DType t) noexcept { return t == DType::f16 || t == DType::bf16 ? 2 : 4; }
constexpr bool dtype_is_float(DType t) noexcept { return t != DType::i32; }
// f16 or bf16: the storage-only dtypes.
constexpr bool dtype_is_16bit(DType t) noexcept { return t == DType::f16 || t == DType::bf16; }
const char* dtype_name(DType t) noexcept;
// The dtype of an op's result from two floating inputs: their dtype when they share it, else f32
// (f16 with bf16, or either with f32: neither 16-bit format holds the other's values).
constexpr DType dtype_promote(DType a, DType b) noexcept { return a == b ? a : DType::f32; }

// Round-to-nearest-even conversions used by every backend's casts and by the reference.
std::uint16_t f32_to_f16(float v) noexcept;
float f16_to_f32(std::uint16_t bits) noexcept;
std::uint16_t f32_to_bf16(float v) noexcept;
float bf16_to_f32(std::uint16_t bits) noexcept;
// f32 -> i32 as cast does: toward zero, saturating at the i32 range, NaN to 0. i32 -> f32 (and
// through f32 to f16 and bf16) rounds to nearest even.
std::int32_t f32_to_i32(float v) noexcept;

}  // namespace trine
