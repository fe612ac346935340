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

// ---- the k-quants' quantizers: ggml's reference algorithm (quantize_row_q4_K_ref and its
// q5_K and q6_K siblings), in the same f32 operations in the same order, so the blocks come out
// the same bit for bit (tests/io/kquants.gguf holds blocks the reference made).

// Round to nearest, ties to even, as ggml's nearest_int: adding 1.5 * 2^23 leaves the rounded
// integer in the mantissa's low bits (|v| < 2^22).
int nearest_int(float v) {
  const float t = v + 12582912.0f;
  std::int32_t i;
  std::memcpy(&i, &t, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// Sets quantized value q of weight p (0..255) of a k-quant block, in the layouts dequantize_block
// reads: q4_k 0..15, q5_k 0..31, q6_k 0..63 (stored, i.e. already offset by 32).
void set_q(Format f, std::uint8_t* b, int p, int q) {
  if (f == Format::q6_k) {
    const int half = p / 128, r = p % 128;
    b[64 * half + r % 64] |= static_cast<std::uint8_t>((q & 0x0F) << (4 * (r / 64)));
    b[128 + 32 * half + r % 32] |= static_cast<std::uint8_t>((q >> 4) << (2 * (r / 32)));
    return;
  }
  const int j = p / 32, i = p % 32;
  std::uint8_t* qs = b + (f == Format::q5_k ? 48 : 16);
  qs[32 * (j / 2) + i] |= static_cast<std::uint8_t>((q & 0x0F) << (4 * (j % 2)));
  if (f == Format::q5_k) b[16 + i] |= static_cast<std::uint8_t>(((q >> 4) & 1) << j);
}

// A scale and a min for n weights into levels 0..nmax, minimizing the weighted squared error over a
// grid of nstep + 1 candidate scales around nmax / (max - min) (ggml's make_qkx2_quants). L gets
// the levels; the min returned is the value subtracted (>= 0).
float scale_min_search(int n, int nmax, const float* x, const float* w, std::uint8_t* L, float* the_min, float rmin,
                       float rdelta, int nstep) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
    L[i] = static_cast<std::uint8_t>(l);
    const float diff = scale * static_cast<float>(l) + min - x[i];
    best += w[i] * (diff * diff);
  }
  std::uint8_t trial[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      trial[i] = static_cast<std::uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
        err += w[i] * (diff * diff);
      }
      if (err < best) {
        std::memcpy(L, trial, static_cast<std::size_t>(n));
        best = err;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// q4_k and q5_k: per sub-block of 32 a scale and a min (scale_min_search, weights |x| + rms(x)),
// both quantized to 6 bits against the block's largest, then every weight requantized with them.
void quantize_k_min(Format f, const float* x, std::uint8_t* b) {
  const int nmax = f == Format::q5_k ? 31 : 15;
  std::uint8_t L[256];
  float scales[8], mins[8], w[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* v = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += v[l] * v[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(v[l]);
    scales[j] = f == Format::q5_k ? scale_min_search(32, nmax, v, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15)
                                  : scale_min_search(32, nmax, v, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::uint8_t* s = b + 4;
  for (int j = 0; j < 8; ++j) {
    const int ls = std::min(63, static_cast<int>(static_cast<std::uint8_t>(nearest_int(inv_scale * scales[j]))));
    const int lm = std::min(63, static_cast<int>(static_cast<std::uint8_t>(nearest_int(inv_min * mins[j]))));
    if (j < 4) {  // the layout scale_min reads
      s[j] = static_cast<std::uint8_t>(s[j] | ls);
      s[j + 4] = static_cast<std::uint8_t>(s[j + 4] | lm);
    } else {
      s[j + 4] = static_cast<std::uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
      s[j - 4] = static_cast<std::uint8_t>(s[j - 4] | ((ls >> 4) << 6));
      s[j] = static_cast<std::uint8_t>(s[j] | ((lm >> 4) << 6));
    }
  }
  put_f16(b, max_scale / 63.0f);
  put_f16(b + 2, max_min / 63.0f);
  const float d_all = f16_at(b), dmin_all = f16_at(b + 2);
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    scale_min(s, j, sc, m);
    const float d = d_all * sc;
    if (d == 0.0f) continue;  // the search's levels stay
    const float dm = dmin_all * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<std::uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + i] + dm) / d))));
  }
  for (int p = 0; p < 256; ++p) set_q(f, b, p, L[p]);
}

// A scale for n weights into levels -nmax..nmax-1 (symmetric), minimizing the error weighted by x^2
// over 18 candidates around nmax / max|x| (ggml's make_qx_quants with rmse_type 1). L gets the
// levels offset by nmax.
float symmetric_search(int n, int nmax, const float* x, std::int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  auto level = [&](float iscale, int i) { return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<std::int8_t>(l + nmax);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], fl = static_cast<float>(level(iscale, i));
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(nmax + level(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// q6_k: per sub-block of 16 a symmetric scale (symmetric_search), quantized to int8 against the
// block's largest in magnitude, then every weight requantized with them.
void quantize_q6_k(const float* x, std::uint8_t* b) {
  std::int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = symmetric_search(16, 32, x + 16 * ib, L + 16 * ib);
    if (std::fabs(scales[ib]) > max_abs) {
      max_abs = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  if (max_abs < 1e-15f) return;  // all zero: the zeroed block, d = 0
  const float iscale = -128.0f / max_scale;
  put_f16(b + 208, 1 / iscale);
  std::int8_t* sc = reinterpret_cast<std::int8_t*>(b + 192);
  for (int ib = 0; ib < 16; ++ib) sc[ib] = static_cast<std::int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  const float d_all = f16_at(b + 208);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<std::int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + i] / d))) + 32);
  }
  for (int p = 0; p < 256; ++p) set_q(Format::q6_k, b, p, L[p]);
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
  const std::size_t n = x.size();
  std::vector<std::uint8_t> out(bytes_for(f, static_cast<std::int64_t>(n)));
  if (f == Format::q4_k || f == Format::q5_k || f == Format::q6_k) {
    for (std::size_t blk = 0; blk < n / 256; ++blk) {
      std::uint8_t* b = out.data() + static_cast<std::size_t>(fi.block_bytes) * blk;
      if (f == Format::q6_k) {
        quantize_q6_k(x.data() + 256 * blk, b);
      } else {
        quantize_k_min(f, x.data() + 256 * blk, b);
      }
    }
    return out;
  }
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
