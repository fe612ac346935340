// Element types. f32 is computed everywhere; f16 and bf16 are storage types: an op reads them,
// computes in f32 and rounds its result once, when it writes it (docs/ops.md, "Dtypes"). i32 holds
// indices (gather's, argmax's result, where's condition) and casts to and from the others.
// q8_0, q4_0, q4_k, q5_k and q6_k are GGUF's block-quantized weight formats (trine/quant.hpp): a
// tensor of them holds whole blocks along its last dim and is the weight of matmul and gemv, which
// dequantize it in their kernels; other ops refuse it (trine::quant::dequantize gives floats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trine {

enum class DType : std::uint8_t { f32, f16, bf16, i32, q8_0, q4_0, q4_k, q5_k, q6_k };

// A block-quantized weight format.
constexpr bool dtype_is_quantized(DType t) noexcept { return t >= DType::q8_0; }
// The bytes of one element: 4 or 2; 0 for the quantized formats, whose elements come in blocks
// (dtype_block_elems weights in dtype_block_bytes bytes): count their bytes with dtype_bytes.
constexpr std::size_t dtype_size(DType t) noexcept {
  return dtype_is_quantized(t) ? 0 : t == DType::f16 || t == DType::bf16 ? 2 : 4;
}
constexpr std::int64_t dtype_block_elems(DType t) noexcept {
  return t == DType::q8_0 || t == DType::q4_0 ? 32 : t == DType::q4_k || t == DType::q5_k || t == DType::q6_k ? 256 : 1;
}
constexpr std::size_t dtype_block_bytes(DType t) noexcept {
  switch (t) {
    case DType::q8_0: return 34;
    case DType::q4_0: return 18;
    case DType::q4_k: return 144;
    case DType::q5_k: return 176;
    case DType::q6_k: return 210;
    default: return dtype_size(t);
  }
}
// The bytes of `elements` consecutive elements (for a quantized dtype, whole blocks: elements a
// multiple of dtype_block_elems).
constexpr std::size_t dtype_bytes(DType t, std::int64_t elements) noexcept {
  return static_cast<std::size_t>(elements / dtype_block_elems(t)) * dtype_block_bytes(t);
}
// f32, f16 or bf16: what ops compute with.
constexpr bool dtype_is_float(DType t) noexcept { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
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
