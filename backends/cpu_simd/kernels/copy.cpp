// Copies and dtype conversions: contiguous runs and transposed tiles, f32 / f16 / bf16 / i32 in any
// pair, rounding exactly as trine's scalar f32_to_f16 / f32_to_bf16 / f32_to_i32 (round to nearest
// even, NaN kept quiet, f16 overflow to inf; to i32 toward zero, saturating, NaN to 0; from i32
// through f32). Eight elements at a time through 256-bit registers (four on
// SSE4.2): the work is bound by memory, not by the width of the conversion.
#include "backends/cpu_simd/isa.hpp"

#include <immintrin.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"
#include "trine/dtype.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

template <DType D>
using Storage = std::conditional_t<D == DType::f32, float, std::conditional_t<D == DType::i32, std::int32_t, std::uint16_t>>;

template <DType D>
float load_one(const void* p, i64 i) {
  if constexpr (D == DType::f32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (D == DType::i32) {
    return static_cast<float>(static_cast<const std::int32_t*>(p)[i]);
  } else if constexpr (D == DType::f16) {
    return f16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  } else {
    return bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  }
}

template <DType D>
void store_one(void* p, i64 i, float v) {
  if constexpr (D == DType::f32) {
    static_cast<float*>(p)[i] = v;
  } else if constexpr (D == DType::i32) {
    static_cast<std::int32_t*>(p)[i] = f32_to_i32(v);
  } else if constexpr (D == DType::f16) {
    static_cast<std::uint16_t*>(p)[i] = f32_to_f16(v);
  } else {
    static_cast<std::uint16_t*>(p)[i] = f32_to_bf16(v);
  }
}

#if defined(TRINE_ISA_SSE4_2)
// ---- four lanes (SSE4.2; no F16C, so f16 goes through the scalar conversions) ----
constexpr i64 lanes = 4;
using Vec = __m128;

template <DType D>
Vec load_vec(const void* p) {
  if constexpr (D == DType::f32) {
    return _mm_loadu_ps(static_cast<const float*>(p));
  } else if constexpr (D == DType::i32) {
    return _mm_cvtepi32_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  } else if constexpr (D == DType::f16) {
    alignas(16) float t[4];
    for (int i = 0; i < 4; ++i) t[i] = load_one<D>(p, i);
    return _mm_load_ps(t);
  } else {
    const __m128i h = _mm_loadl_epi64(static_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16));
  }
}

template <DType D>
void store_vec(void* p, Vec v) {
  if constexpr (D == DType::f32) {
    _mm_storeu_ps(static_cast<float*>(p), v);
  } else if constexpr (D == DType::i32) {
    // toward zero; 2^31 and up saturate (cvtt gives INT_MIN there, right only below -2^31), NaN is 0
    __m128i r = _mm_cvttps_epi32(v);
    r = _mm_blendv_epi8(r, _mm_set1_epi32(0x7fffffff), _mm_castps_si128(_mm_cmpge_ps(v, _mm_set1_ps(2147483648.0f))));
    r = _mm_andnot_si128(_mm_castps_si128(_mm_cmpunord_ps(v, v)), r);
    _mm_storeu_si128(static_cast<__m128i*>(p), r);
  } else if constexpr (D == DType::f16) {
    alignas(16) float t[4];
    _mm_store_ps(t, v);
    for (int i = 0; i < 4; ++i) store_one<D>(p, i, t[i]);
  } else {
    const __m128i x = _mm_castps_si128(v);
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(1));
    const __m128i rounded = _mm_srli_epi32(_mm_add_epi32(x, _mm_add_epi32(_mm_set1_epi32(0x7fff), lsb)), 16);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(x, _mm_set1_epi32(0x7fffffff)), _mm_set1_epi32(0x7f800000));
    const __m128i quiet = _mm_or_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(0x40));
    const __m128i r = _mm_blendv_epi8(rounded, quiet, nan);
    _mm_storel_epi64(static_cast<__m128i*>(p), _mm_packus_epi32(r, r));
  }
}

// v[i] = row i of a 4x4 block; afterwards v[j] = column j.
void transpose_block(Vec* v) { _MM_TRANSPOSE4_PS(v[0], v[1], v[2], v[3]); }

void stream_vec(float* p, Vec v) { _mm_stream_ps(p, v); }

#else
// ---- eight lanes (AVX2 and AVX-512, both with F16C) ----
constexpr i64 lanes = 8;
using Vec = __m256;

template <DType D>
Vec load_vec(const void* p) {
  if constexpr (D == DType::f32) {
    return _mm256_loadu_ps(static_cast<const float*>(p));
  } else if constexpr (D == DType::i32) {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  } else if constexpr (D == DType::f16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  } else {
    const __m128i h = _mm_loadu_si128(static_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <DType D>
void store_vec(void* p, Vec v) {
  if constexpr (D == DType::f32) {
    _mm256_storeu_ps(static_cast<float*>(p), v);
  } else if constexpr (D == DType::i32) {
    // toward zero; 2^31 and up saturate (cvtt gives INT_MIN there, right only below -2^31), NaN is 0
    __m256i r = _mm256_cvttps_epi32(v);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fffffff),
                           _mm256_castps_si256(_mm256_cmp_ps(v, _mm256_set1_ps(2147483648.0f), _CMP_GE_OQ)));
    r = _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)), r);
    _mm256_storeu_si256(static_cast<__m256i*>(p), r);
  } else if constexpr (D == DType::f16) {
    // Round to nearest even; NaN stays NaN with its top payload bits, as f32_to_f16 does.
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    _mm_storeu_si128(static_cast<__m128i*>(p), bf16_from_f32x8(v));
  }
}

void transpose_block(Vec* v) { transpose8x8(v); }

void stream_vec(float* p, Vec v) { _mm256_stream_ps(p, v); }
#endif

// Floats in a 64-byte line, and lanes x lanes blocks side by side across one.
constexpr i64 line_floats = 16;
constexpr i64 line_blocks = line_floats / lanes;

template <DType From, DType To>
void convert_run(const void* src, i64 stride, void* dst, i64 n) {
  const auto* s = static_cast<const Storage<From>*>(src);
  auto* d = static_cast<Storage<To>*>(dst);
  if (stride == 1) {
    if constexpr (From == To) {
      std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(Storage<From>));
    } else {
      i64 i = 0;
      for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const Vec a = load_vec<From>(s + i), b = load_vec<From>(s + i + lanes);
        store_vec<To>(d + i, a);
        store_vec<To>(d + i + lanes, b);
      }
      if (i + lanes <= n) {  // short runs (GEMM packing widens rows of 8-32)
        store_vec<To>(d + i, load_vec<From>(s + i));
        i += lanes;
      }
      for (; i < n; ++i) store_one<To>(d, i, load_one<From>(s, i));
    }
    return;
  }
  if constexpr (From == To) {
    for (i64 i = 0; i < n; ++i) d[i] = s[i * stride];
  } else {
    for (i64 i = 0; i < n; ++i) store_one<To>(d, i, load_one<From>(s, i * stride));
  }
}

// dst[r * dst_ld + c] = src[c * src_ld + r] for r < rows, c < cols: lanes x lanes blocks go
// through registers, column strip by column strip, so each source row is read in whole vectors and
// the destination rows of the tile stay in L1 between strips.
//
// With `stream`, an f32 destination whose rows are 64-byte aligned is written non-temporally, in
// strips one line wide, so that each line leaves whole: a normal store first reads the line, and
// a transposed destination's lines (one per row, rows a power-of-two stride apart) also evicted
// each other from L1 between the two strips that wrote their halves. On the Xeon, one thread,
// 2048 x 2048: 4.9 -> 14.5 GB/s; 4096 x 4096, 3.5 -> 8.5.
template <DType From, DType To>
void transpose_tile(const void* src, i64 src_ld, void* dst, i64 dst_ld, i64 rows, i64 cols, bool stream) {
  const auto* s = static_cast<const Storage<From>*>(src);
  auto* d = static_cast<Storage<To>*>(dst);
  const i64 rows_v = rows / lanes * lanes, cols_v = cols / lanes * lanes;
  i64 c0 = 0;
  if constexpr (To == DType::f32) {
    const bool nt = stream && reinterpret_cast<std::uintptr_t>(d) % 64 == 0 && dst_ld % line_floats == 0;
    for (; nt && c0 + line_floats <= cols; c0 += line_floats) {
      for (i64 r0 = 0; r0 < rows_v; r0 += lanes) {
        Vec v[line_blocks][lanes];
        for (i64 b = 0; b < line_blocks; ++b) {
          for (i64 i = 0; i < lanes; ++i) v[b][i] = load_vec<From>(s + (c0 + b * lanes + i) * src_ld + r0);
          transpose_block(v[b]);
        }
        for (i64 j = 0; j < lanes; ++j)
          for (i64 b = 0; b < line_blocks; ++b) stream_vec(d + (r0 + j) * dst_ld + c0 + b * lanes, v[b][j]);
      }
      for (i64 r = rows_v; r < rows; ++r) {  // whole other lines, stored normally
        for (i64 c = c0; c < c0 + line_floats; ++c) store_one<To>(d, r * dst_ld + c, load_one<From>(s, c * src_ld + r));
      }
    }
    if (nt) _mm_sfence();
  }
  for (; c0 < cols_v; c0 += lanes) {
    for (i64 r0 = 0; r0 < rows_v; r0 += lanes) {
      Vec v[lanes];
      for (i64 i = 0; i < lanes; ++i) v[i] = load_vec<From>(s + (c0 + i) * src_ld + r0);
      transpose_block(v);
      for (i64 j = 0; j < lanes; ++j) store_vec<To>(d + (r0 + j) * dst_ld + c0, v[j]);
    }
    for (i64 r = rows_v; r < rows; ++r) {
      for (i64 c = c0; c < c0 + lanes; ++c) store_one<To>(d, r * dst_ld + c, load_one<From>(s, c * src_ld + r));
    }
  }
  for (i64 r = 0; r < rows; ++r) {
    for (i64 c = cols_v; c < cols; ++c) store_one<To>(d, r * dst_ld + c, load_one<From>(s, c * src_ld + r));
  }
}

template <DType From, class F>
void with_to(DType to, const F& f) {
  switch (to) {
    case DType::f32: return f(std::integral_constant<DType, From>{}, std::integral_constant<DType, DType::f32>{});
    case DType::f16: return f(std::integral_constant<DType, From>{}, std::integral_constant<DType, DType::f16>{});
    case DType::bf16: return f(std::integral_constant<DType, From>{}, std::integral_constant<DType, DType::bf16>{});
    case DType::i32: return f(std::integral_constant<DType, From>{}, std::integral_constant<DType, DType::i32>{});
    default: break;  // the op table refuses quantized tensors in copies and casts
  }
  TRINE_ASSERT(!"a quantized dtype", "[copy] the kernel was handed a quantized tensor");
}

// Calls f(integral_constant<DType, from>, integral_constant<DType, to>). An i32 copy moves its
// bits as f32 does (no conversion touches them).
template <class F>
void with_dtypes(DType from, DType to, const F& f) {
  if (from == DType::i32 && to == DType::i32) from = to = DType::f32;
  switch (from) {
    case DType::f32: return with_to<DType::f32>(to, f);
    case DType::f16: return with_to<DType::f16>(to, f);
    case DType::bf16: return with_to<DType::bf16>(to, f);
    case DType::i32: return with_to<DType::i32>(to, f);
    default: break;  // the op table refuses quantized tensors in copies and casts
  }
  TRINE_ASSERT(!"a quantized dtype", "[copy] the kernel was handed a quantized tensor");
}

void convert_kernel(DType from, DType to, const void* src, i64 stride, void* dst, i64 n) {
  with_dtypes(from, to,
              [&](auto f, auto t) { convert_run<decltype(f)::value, decltype(t)::value>(src, stride, dst, n); });
}

void transpose_kernel(DType from, DType to, const void* src, i64 src_ld, void* dst, i64 dst_ld, i64 rows, i64 cols,
                      bool stream) {
  with_dtypes(from, to, [&](auto f, auto t) {
    transpose_tile<decltype(f)::value, decltype(t)::value>(src, src_ld, dst, dst_ld, rows, cols, stream);
  });
}

}  // namespace

void widen_to_f32(DType from, const std::uint16_t* src, float* dst, i64 n) {
  if (from == DType::f16) {
    convert_run<DType::f16, DType::f32>(src, 1, dst, n);
  } else {
    convert_run<DType::bf16, DType::f32>(src, 1, dst, n);
  }
}

namespace {

// A write into a view (trine::copy_into, detail::writes_view): the contiguous input scattered
// through the output's strides, one row of the output's last dim at a time (a memcpy where that dim
// is contiguous). The view repeats no element, so the rows are disjoint and split over threads.
void scatter_into(const Tensor& x, const Tensor& y) {
  const i64 n = y.numel();
  if (n == 0) return;
  const int rank = y.rank();  // >= 1: a rank-0 view is contiguous
  const Shape& shape = y.shape();
  const Strides& strides = y.strides();
  const i64 inner = shape[rank - 1], step = strides[rank - 1];
  const auto esz = static_cast<i64>(dtype_size(y.dtype()));
  const std::uint8_t* src = base_ptr(x);
  std::uint8_t* dst = base_ptr(y);
  parallel_for(n / inner, grain_for(inner, grain_cheap), [&](i64 r0, i64 r1) {
    for (i64 r = r0; r < r1; ++r) {
      i64 off = 0, rest = r;
      for (int d = rank - 2; d >= 0; --d) {
        off += (rest % shape[d]) * strides[d];
        rest /= shape[d];
      }
      std::uint8_t* out = dst + off * esz;
      const std::uint8_t* in = src + r * inner * esz;
      if (step == 1) {
        std::memcpy(out, in, static_cast<std::size_t>(inner * esz));
      } else {
        for (i64 c = 0; c < inner; ++c)
          std::memcpy(out + c * step * esz, in + c * esz, static_cast<std::size_t>(esz));
      }
    }
  });
}

// copy and cast: the strided conversion of the input into the output; a write into a view scatters.
// A write at a position (detail::writes_at) reads the position when it runs, here.
void run_copy(const KernelTable& k, const trine::detail::OpCall& call) {
  if (trine::detail::writes_at(call)) {
    const std::int64_t p = *reinterpret_cast<const std::int32_t*>(base_ptr(call.inputs[1]));
    if (p < 0 || p > trine::detail::write_position_max(call))
      throw Error(ErrorCode::invalid_argument, "[copy_into] " + trine::detail::write_position_error(p, call));
    return scatter_into(call.inputs[0], trine::detail::written_at(call, p));
  }
  if (trine::detail::writes_view(call)) return scatter_into(call.inputs[0], call.output);
  strided_convert(k, call.inputs[0], base_ptr(call.output), call.output.dtype());
}

// Rows of the table in the order of the indices. Every index is checked before any row is read:
// one outside the table is an invalid_argument naming the first such position.
void run_gather(const KernelTable& k, const trine::detail::OpCall& call) {
  const Tensor& table = call.inputs[0];
  const i64 rows = table.dim(0), n = call.inputs[1].numel();
  Tensor keep_idx, keep_table;
  const auto* idx = reinterpret_cast<const std::int32_t*>(contiguous_bytes(k, call.inputs[1], keep_idx));
  for (i64 i = 0; i < n; ++i) {
    if (idx[i] < 0 || idx[i] >= rows) {
      throw Error(ErrorCode::invalid_argument, "[gather] index " + std::to_string(idx[i]) + " at position " +
                                                   std::to_string(i) + " is outside the table's rows [0, " +
                                                   std::to_string(rows) + ")");
    }
  }
  if (call.output.numel() == 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(table.dim(1)) * dtype_size(table.dtype());
  const std::uint8_t* src = contiguous_bytes(k, table, keep_table);
  std::uint8_t* dst = base_ptr(call.output);
  parallel_for(n, grain_for(static_cast<i64>(row_bytes) / 4, grain_cheap), [&](i64 i0, i64 i1) {
    for (i64 i = i0; i < i1; ++i) std::memcpy(dst + i * row_bytes, src + idx[i] * row_bytes, row_bytes);
  });
}

// Each input's slab of every outer row, one after another: a memcpy per (outer row, input), the
// inputs made contiguous first where they are views.
void run_concat(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  const Shape& os = call.output.shape();
  int axis = std::get<AxisParams>(call.params).axis;
  if (axis < 0) axis += os.rank();
  i64 outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= os[d];
  for (int d = axis + 1; d < os.rank(); ++d) inner *= os[d];
  const std::size_t esz = dtype_size(call.output.dtype());
  const std::size_t out_row = static_cast<std::size_t>(os[axis] * inner) * esz;
  std::vector<Tensor> keep(in.size());
  std::vector<const std::uint8_t*> src(in.size());
  std::vector<std::size_t> slab(in.size()), at(in.size());
  std::size_t offset = 0;
  for (std::size_t j = 0; j < in.size(); ++j) {
    src[j] = contiguous_bytes(k, in[j], keep[j]);
    slab[j] = static_cast<std::size_t>(in[j].dim(axis) * inner) * esz;
    at[j] = offset;
    offset += slab[j];
  }
  if (call.output.numel() == 0) return;
  std::uint8_t* dst = base_ptr(call.output);
  const i64 items = outer * static_cast<i64>(in.size());
  parallel_for(items, grain_for(static_cast<i64>(out_row / in.size() / 4) + 1, grain_cheap), [&](i64 t0, i64 t1) {
    for (i64 t = t0; t < t1; ++t) {
      const auto o = static_cast<std::size_t>(t) / in.size(), j = static_cast<std::size_t>(t) % in.size();
      if (slab[j]) std::memcpy(dst + o * out_row + at[j], src[j] + o * slab[j], slab[j]);
    }
  });
}

}  // namespace

void register_copy(KernelTable& t) {
  t.convert = convert_kernel;
  t.transpose = transpose_kernel;
  t.ops.add(OpKind::copy, run_copy);
  t.ops.add(OpKind::cast, run_copy);
  t.ops.add(OpKind::gather, run_gather);
  t.ops.add(OpKind::concat, run_concat);
}

}  // namespace trine::cpu::TRINE_ISA_NS
