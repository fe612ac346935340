// GGUF's block formats on the host (include/trine/quant.hpp): dequantization of q8_0, q4_0, q4_k,
// q5_k and q6_k, and quantization into q8_0 and q4_0 as ggml's reference quantizers do it.
#include "trine/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "tensor/make.hpp"
#include "trine/error.hpp"

namespace trine::quant {

namespace {

float f16_at(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  return f16_to_f32(bits);
}

void put_f16(std::uint8_t* p, float v) {
  const std::uint16_t bits = f32_to_f16(v);
  std::memcpy(p, &bits, 2);
}

// q4_k's and q5_k's 6-bit scale and min of sub-block j (0..7), from their 12 packed bytes: the low
// six bits of bytes 0-3 (scales) and 4-7 (mins) for j < 4; for j >= 4, a nibble of byte j + 4 with
// the top two bits of byte j - 4 (scales) or byte j (mins) above it.
void scale_min(const std::uint8_t* s, int j, float& sc, float& m) {
  if (j < 4) {
    sc = static_cast<float>(s[j] & 63);
    m = static_cast<float>(s[j + 4] & 63);
  } else {
    sc = static_cast<float>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    m = static_cast<float>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// One block into 32 or 256 floats. The arithmetic is f32 in the order the formats define it.
void dequantize_block(Format f, const std::uint8_t* b, float* y) {
  switch (f) {
    case Format::q8_0: {
      const float d = f16_at(b);
      for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<std::int8_t>(b[2 + i])) * d;
      return;
    }
    case Format::q4_0: {
      const float d = f16_at(b);
      for (int i = 0; i < 16; ++i) {
        y[i] = d * static_cast<float>((b[2 + i] & 0x0F) - 8);
        y[i + 16] = d * static_cast<float>((b[2 + i] >> 4) - 8);
      }
      return;
    }
    case Format::q4_k:
    case Format::q5_k: {
      const bool five = f == Format::q5_k;
      const float d = f16_at(b), dmin = f16_at(b + 2);
      const std::uint8_t* scales = b + 4;
      const std::uint8_t* qh = b + 16;                // q5_k: bit j of byte i is weight i of sub-block j's fifth bit
      const std::uint8_t* qs = b + (five ? 48 : 16);  // sub-blocks 2g and 2g+1: the low and high nibbles of 32 bytes
      for (int j = 0; j < 8; ++j) {
        float sc, m;
        scale_min(scales, j, sc, m);
        const float a = d * sc, c = dmin * m;
        for (int i = 0; i < 32; ++i) {
          int q = (qs[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0F;
          if (five) q |= ((qh[i] >> j) & 1) << 4;
          y[32 * j + i] = a * static_cast<float>(q) - c;
        }
      }
      return;
    }
    case Format::q6_k: {
      const std::uint8_t* ql = b;         // 128 bytes: element p's low nibble
      const std::uint8_t* qh = b + 128;   // 64 bytes: its high two bits
      const std::uint8_t* sc = b + 192;   // 16 int8 scales, one per 16 weights
      const float d = f16_at(b + 208);
      for (int p = 0; p < 256; ++p) {
        const int half = p / 128, r = p % 128;
        const int lo = (ql[64 * half + r % 64] >> (4 * (r / 64))) & 0x0F;
        const int hi = (qh[32 * half + r % 32] >> (2 * (r / 32))) & 0x03;
        const float ds = d * static_cast<float>(static_cast<std::int8_t>(sc[p / 16]));
        y[p] = ds * static_cast<float>((lo | (hi << 4)) - 32);
      }
      return;
    }
  }
}

void check_blocks(const char* op, Format f, std::size_t bytes, std::int64_t elements) {
  const FormatInfo fi = info(f);
  if (elements < 0 || elements % fi.block_elems != 0) {
    throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] " + std::to_string(elements) + " weights are not whole " +
                                              fi.name + " blocks of " + std::to_string(fi.block_elems));
  }
  if (bytes != static_cast<std::size_t>(elements / fi.block_elems * fi.block_bytes)) {
    throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] " + std::to_string(bytes) + " bytes of " + fi.name +
                                              " blocks for " + std::to_string(elements) + " weights, which take " +
                                              std::to_string(elements / fi.block_elems * fi.block_bytes));
  }
}

}  // namespace

std::size_t bytes_for(Format f, std::int64_t elements) {
  const FormatInfo fi = info(f);
  if (elements < 0 || elements % fi.block_elems != 0) {
    throw Error(ErrorCode::invalid_shape, "[quant] " + std::to_string(elements) + " weights are not whole " + fi.name +
                                              " blocks of " + std::to_string(fi.block_elems));
  }
  return static_cast<std::size_t>(elements / fi.block_elems * fi.block_bytes);
}

std::vector<std::uint8_t> quantize(std::span<const float> x, Format f) {
  const FormatInfo fi = info(f);
  if (f != Format::q8_0 && f != Format::q4_0) {
    throw Error(ErrorCode::unsupported, std::string("[quantize] ") + fi.name +
                                            ": the k-quants' scale search is not implemented yet (issue 29); "
                                            "q8_0 and q4_0 quantize");
  }
  const std::size_t n = x.size();
  std::vector<std::uint8_t> out(bytes_for(f, static_cast<std::int64_t>(n)));
  for (std::size_t blk = 0; blk < n / 32; ++blk) {
    const float* v = x.data() + 32 * blk;
    std::uint8_t* b = out.data() + static_cast<std::size_t>(fi.block_bytes) * blk;
    if (f == Format::q8_0) {
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      put_f16(b, d);
      for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(v[i] * id)));
    } else {
      // The weight of largest magnitude, sign kept (the first of equals), maps to -8.
      float amax = 0.0f, max = 0.0f;
      for (int i = 0; i < 32; ++i) {
        if (amax < std::fabs(v[i])) {
          amax = std::fabs(v[i]);
          max = v[i];
        }
      }
      const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      put_f16(b, d);
      for (int i = 0; i < 16; ++i) {
        const auto q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[i] * id + 8.5f)));
        const auto q1 = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[i + 16] * id + 8.5f)));
        b[2 + i] = static_cast<std::uint8_t>(q0 | (q1 << 4));
      }
    }
  }
  return out;
}

void dequantize(std::span<const std::uint8_t> blocks, Format f, std::span<float> out) {
  check_blocks("dequantize", f, blocks.size(), static_cast<std::int64_t>(out.size()));
  const FormatInfo fi = info(f);
  const std::size_t nb = out.size() / static_cast<std::size_t>(fi.block_elems);
  for (std::size_t i = 0; i < nb; ++i)
    dequantize_block(f, blocks.data() + i * static_cast<std::size_t>(fi.block_bytes),
                     out.data() + i * static_cast<std::size_t>(fi.block_elems));
}

Tensor dequantize(std::span<const std::uint8_t> blocks, Format f, const Shape& shape, DType dtype,
                  std::optional<Device> device) {
  const FormatInfo fi = info(f);
  if (!dtype_is_float(dtype)) {
    throw Error(ErrorCode::dtype_mismatch, std::string("[dequantize] ") + fi.name + " weights dequantize to f32, f16 or bf16, not " +
                                               dtype_name(dtype));
  }
  if (shape.rank() == 0 || shape.dim(-1) % fi.block_elems != 0) {
    throw Error(ErrorCode::invalid_shape, std::string("[dequantize] ") + fi.name + " rows are whole blocks of " +
                                              std::to_string(fi.block_elems) + " weights: shape " + shape.str() +
                                              " has rows of " + (shape.rank() ? std::to_string(shape.dim(-1)) : "none"));
  }
  check_blocks("dequantize", f, blocks.size(), shape.numel());
  const std::size_t per = static_cast<std::size_t>(fi.block_elems), bytes = static_cast<std::size_t>(fi.block_bytes);
  // The chunks start at multiples of 65536 weights: whole blocks.
  return trine::detail::tensor_generated(shape, dtype, device, "dequantize", [&](std::size_t first, std::size_t count, float* y) {
    for (std::size_t i = 0; i < count; i += per) dequantize_block(f, blocks.data() + (first + i) / per * bytes, y + i);
  });
}

}  // namespace trine::quant
