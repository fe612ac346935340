// GGUF's block-quantized weight formats, on the host: their layouts, and dequantization and
// quantization of every one, the quantization exactly as ggml's reference quantizers do it.
//
//   std::vector<std::uint8_t> q = trine::quant::quantize(weights, trine::quant::Format::q8_0);
//   trine::Tensor w = trine::quant::dequantize(q, trine::quant::Format::q8_0, {rows, k}, trine::DType::f16, dev);
//
// A block holds `block_elems` consecutive weights of a row in `block_bytes` bytes (little-endian,
// f16 scales), as GGUF stores them:
//   q8_0: 32 weights, 34 bytes: d (f16), 32 int8 q; w = d q.
//   q4_0: 32 weights, 18 bytes: d (f16), 16 bytes of nibbles, weight j in byte j % 16 (the low
//         nibble for j < 16); w = d (q - 8).
//   q4_k: 256 weights, 144 bytes: d, dmin (f16), 12 bytes of eight 6-bit scales and mins, 128 bytes
//         of nibbles; sub-block j of 32: w = d sc_j q - dmin m_j.
//   q5_k: 256 weights, 176 bytes: as q4_k with a fifth bit per weight (32 bytes before the nibbles).
//   q6_k: 256 weights, 210 bytes: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales,
//         d (f16); sub-block s of 16: w = d scale_s (q - 32).
// Dequantization computes in f32 in the order the formats define (docs/model-files.md), so its
// values equal the gguf package's (tests/io). matmul and gemv take a tensor of these blocks as their
// weights and dequantize it in their kernels (docs/ops.md, "Quantized weights").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "trine/device.hpp"
#include "trine/dtype.hpp"
#include "trine/shape.hpp"
#include "trine/tensor.hpp"

namespace trine::quant {

enum class Format { q8_0, q4_0, q4_k, q5_k, q6_k };

struct FormatInfo {
  const char* name;  // "q8_0", ...
  std::int64_t block_elems;
  std::int64_t block_bytes;
};
constexpr FormatInfo info(Format f) noexcept {
  switch (f) {
    case Format::q8_0: return {"q8_0", 32, 34};
    case Format::q4_0: return {"q4_0", 32, 18};
    case Format::q4_k: return {"q4_k", 256, 144};
    case Format::q5_k: return {"q5_k", 256, 176};
    case Format::q6_k: return {"q6_k", 256, 210};
  }
  return {"?", 1, 1};
}

// The DType of a format's tensors (Tensor::from_blocks), and back (a quantized DType only).
constexpr DType dtype_of(Format f) noexcept {
  switch (f) {
    case Format::q8_0: return DType::q8_0;
    case Format::q4_0: return DType::q4_0;
    case Format::q4_k: return DType::q4_k;
    case Format::q5_k: return DType::q5_k;
    case Format::q6_k: return DType::q6_k;
  }
  return DType::q8_0;
}
constexpr Format format_of(DType t) noexcept {
  return t == DType::q4_0   ? Format::q4_0
         : t == DType::q4_k ? Format::q4_k
         : t == DType::q5_k ? Format::q5_k
         : t == DType::q6_k ? Format::q6_k
                            : Format::q8_0;
}

// The bytes of `elements` weights (a multiple of the block; otherwise Error(invalid_shape)).
std::size_t bytes_for(Format f, std::int64_t elements);

// x (whole blocks: a multiple of 32 or 256 values, else Error(invalid_shape)) into blocks, bit for
// bit as ggml's quantize_row_*_ref: q8_0 and q4_0 scale by the largest magnitude; q4_k and q5_k
// search each sub-block's scale and min (weighted least squares over a grid of candidate scales)
// and quantize both to 6 bits; q6_k searches each sub-block's symmetric scale and stores it as int8.
std::vector<std::uint8_t> quantize(std::span<const float> x, Format f);

// blocks into out (bytes_for(f, out.size()) == blocks.size(), else Error(invalid_shape)).
void dequantize(std::span<const std::uint8_t> blocks, Format f, std::span<float> out);

// A tensor of `shape` (its last dim a multiple of the block) holding the blocks' weights, rounded
// once to dtype (f32, f16 or bf16), on device; the blocks are dequantized in chunks, with no
// full-size f32 copy on the host.
Tensor dequantize(std::span<const std::uint8_t> blocks, Format f, const Shape& shape, DType dtype = DType::f32,
                  std::optional<Device> device = std::nullopt);

}  // namespace trine::quant
