// Element types. f32 is computed everywhere; f16 and bf16 are storage types (cast, matmul inputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trine {

enum class DType : std::uint8_t { f32, f16, bf16 };

constexpr std::size_t dtype_size(DType t) noexcept { return t == DType::f32 ? 4 : 2; }
const char* dtype_name(DType t) noexcept;

// Round-to-nearest-even conversions used by every backend's casts and by the reference.
std::uint16_t f32_to_f16(float v) noexcept;
float f16_to_f32(std::uint16_t bits) noexcept;
std::uint16_t f32_to_bf16(float v) noexcept;
float bf16_to_f32(std::uint16_t bits) noexcept;

}  // namespace trine
