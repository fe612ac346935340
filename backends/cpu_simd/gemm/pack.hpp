// GEMM packing: strided f32/f16/bf16 operands into the zero-padded MR-row / NR-column panels the
// micro-kernel reads, plus the per-thread aligned scratch the packed blocks live in.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "backends/cpu_simd/gemm/config.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"
#include "trine/dtype.hpp"
#include "trine/error.hpp"

namespace trine::cpu::TRINE_ISA_NS {

// Grows on demand and is kept between calls: re-faulting megabytes of fresh pages on every GEMM
// costs a measurable share of a mid-size product.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  float* get(i64 n) {
    if (n > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      const std::size_t bytes = (static_cast<std::size_t>(n) * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      // "[gemm]": execute() renames it after the op that ran out (matmul, conv2d, ...).
      if (!data_)
        throw Error(ErrorCode::out_of_memory,
                    "[gemm] could not allocate " + std::to_string(bytes) + " bytes of packing scratch");
      capacity_ = n;
    }
#if defined(TRINE_POISON_SCRATCH)
    std::fill_n(data_, n, std::numeric_limits<float>::quiet_NaN());  // CMakeLists.txt says why
#endif
    return data_;
  }

 private:
  float* data_ = nullptr;
  i64 capacity_ = 0;
};

struct GemmScratch {
  AlignedBuffer a_, b_;
};

// One per thread: a slot of a parallel GEMM runs on one thread at a time and never nests.
inline GemmScratch& gemm_scratch() {
  thread_local GemmScratch s;
  return s;
}

template <DType D>
inline float load_as_f32(const void* base, i64 idx) {
  if constexpr (D == DType::f32) {
    return static_cast<const float*>(base)[idx];
  } else if constexpr (D == DType::bf16) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(base)[idx]) << 16);
  } else {
    return f16_to_f32(static_cast<const std::uint16_t*>(base)[idx]);
  }
}

// dst[0, n) = src[0, n) (D f16 or bf16) as f32, with the convert kernel's vector conversions
// (kernels/copy.cpp). Exact: every f16 and bf16 value is an f32.
template <DType D>
inline void widen_run(const std::uint16_t* src, float* dst, i64 n) {
  static_assert(D != DType::f32);
  widen_to_f32(D, src, dst, n);
}

// A strided matrix view: element (r, c) at base + offset + r*rs + c*cs, in elements of dtype.
struct StridedMatrix {
  const void* base = nullptr;
  DType dtype = DType::f32;
  i64 offset = 0, rs = 0, cs = 0;
};

#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
// mr row-major f32 rows (row stride rs) into the k-major panel p, eight k at a time through 8x8
// transposes of eight rows at a time; returns how many k it packed, the caller packs the rest.
// When mr is not a multiple of 8 (6, 12), the last eight-row group's spare lanes spill into the
// next column's slot, which the next store overwrites, so the last block stops one short of the
// panel's end.
template <int mr>
i64 pack_a_rows_f32(const float* src, i64 rs, i64 kc, float* __restrict p) {
  static_assert(mr == 6 || mr == 8 || mr == 12);
  constexpr int groups = (mr + 7) / 8;
  i64 k = 0;
  for (; k + 8 < kc || (mr % 8 == 0 && k + 8 <= kc); k += 8) {
    __m256 r[groups][8];
#pragma GCC unroll 2
    for (int g = 0; g < groups; ++g) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        r[g][i] = 8 * g + i < mr ? _mm256_loadu_ps(src + (8 * g + i) * rs + k) : _mm256_setzero_ps();
      transpose8x8(r[g]);
    }
    float* q = p + k * mr;
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
#pragma GCC unroll 2
      for (int g = 0; g < groups; ++g) _mm256_storeu_ps(q + c * mr + 8 * g, r[g][c]);
    }
  }
  return k;
}
#endif

// Rows [i0, i0+m) x cols [k0, k0+kc) of A into ceil(m/mr) panels of kc x mr (k-major), zero rows
// padding the last panel; mr is GemmConfig::mr or mr_tall, or a tail tile's 3-5 rows (driver.hpp).
template <DType D, int mr>
void pack_a_typed(const StridedMatrix& a, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
  for (i64 ip = 0; ip < m; ip += mr) {
    const i64 mm = std::min<i64>(mr, m - ip);
    float* p = dst + ip * kc;
    const i64 origin = a.offset + (i0 + ip) * a.rs + k0 * a.cs;
    if constexpr (D != DType::f32) {
      if (a.cs == 1 && mm == mr) {
        // Row-major 16-bit A: widen the mr rows' runs of k to f32 first, in chunks of 256 k, then
        // interleave them as the f32 path does.
        alignas(64) float rows[mr * 256];
        const auto* base = static_cast<const std::uint16_t*>(a.base);
        for (i64 k0c = 0; k0c < kc; k0c += 256) {
          const i64 kn = std::min<i64>(256, kc - k0c);
          for (int i = 0; i < mr; ++i) widen_run<D>(base + origin + i * a.rs + k0c, rows + i * 256, kn);
          for (i64 k = 0; k < kn; ++k) {
#pragma GCC unroll 16
            for (int i = 0; i < mr; ++i) p[(k0c + k) * mr + i] = rows[i * 256 + k];
          }
        }
        continue;
      }
      if (a.rs == 1 && mm == mr) {
        // Column-major 16-bit A: each k is mr contiguous elements.
        const auto* base = static_cast<const std::uint16_t*>(a.base);
        for (i64 k = 0; k < kc; ++k) widen_run<D>(base + origin + k * a.cs, p + k * mr, mr);
        continue;
      }
    }
    if (a.cs == 1 && mm == mr) {
      // Row-major A: read mr rows side by side, each contiguous in k.
      const i64 rs = a.rs;
      i64 k = 0;
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
      if constexpr (D == DType::f32 && (mr == 6 || mr == 8 || mr == 12)) {
        k = pack_a_rows_f32<mr>(static_cast<const float*>(a.base) + origin, rs, kc, p);
      }
#endif
      for (; k < kc; ++k) {
#pragma GCC unroll 16
        for (int i = 0; i < mr; ++i) p[k * mr + i] = load_as_f32<D>(a.base, origin + i * rs + k);
      }
    } else if (a.rs == 1 && mm == mr) {
      // Column-major A (a transposed operand): each k is mr contiguous elements.
      for (i64 k = 0; k < kc; ++k) {
        const i64 col = origin + k * a.cs;
#pragma GCC unroll 16
        for (int i = 0; i < mr; ++i) p[k * mr + i] = load_as_f32<D>(a.base, col + i);
      }
    } else {
      for (i64 k = 0; k < kc; ++k) {
        for (i64 i = 0; i < mm; ++i) p[k * mr + i] = load_as_f32<D>(a.base, origin + i * a.rs + k * a.cs);
        for (i64 i = mm; i < mr; ++i) p[k * mr + i] = 0.0f;
      }
    }
  }
}

// Rows [k0, k0+kc) x cols [j0, j0+n) of B into ceil(n/nr) panels of kc x nr (k-major), zero
// columns padding the last panel.
template <DType D>
void pack_b_typed(const StridedMatrix& b, i64 k0, i64 kc, i64 j0, i64 n, float* dst) {
  constexpr i64 nr = GemmConfig::nr;
  i64 jp = 0;
  if constexpr (D == DType::f32) {
    if (b.cs == 1) {
      // Row-major f32 B, the full panels: eight rows at a time across every panel, then the next
      // eight. Walking one panel down all kc rows instead reads one line per row at the row
      // stride, which the prefetchers follow badly when that stride is a multiple of 4 KiB
      // (sgemm n=1024: 7-10 GB/s that way, 18 GB/s this way).
      constexpr i64 rows = 8;
      const i64 full = n / nr * nr;
      const float* src = static_cast<const float*>(b.base) + b.offset + k0 * b.rs + j0;
      // Each row's line one panel past these columns is requested into L2 as well: a GEMM with few
      // rows (conv2d 1x1) packs one panel just before its micro-kernels, and the call after next
      // then finds its kc lines, one per row at the row stride, which the hardware prefetchers do
      // not fetch (conv2d 1x1 C=256 K=64 56x56, one thread on Zen 3: this function was 35% of the
      // time, waiting on memory, and is 22% with the next panel's lines requested, less with the
      // one after, which leaves the request a whole panel's micro-kernels to arrive).
      for (i64 kb = 0; kb < kc; kb += rows) {
        const i64 ke = std::min(kc, kb + rows);
        for (i64 k = kb; k < ke; ++k) __builtin_prefetch(src + k * b.rs + full + nr, 0, 2);
        for (i64 j = 0; j < full; j += nr) {
          float* p = dst + j * kc;
          for (i64 k = kb; k < ke; ++k) {
            const float* row = src + k * b.rs + j;
#pragma GCC unroll 4
            for (int v = 0; v < GemmConfig::nv; ++v) {
              batch_f32::load_unaligned(row + v * vec_width).store_aligned(p + k * nr + v * vec_width);
            }
          }
        }
      }
      jp = full;
    }
  }
  for (; jp < n; jp += nr) {
    const i64 nn = std::min<i64>(nr, n - jp);
    float* p = dst + jp * kc;
    const i64 origin = b.offset + k0 * b.rs + (j0 + jp) * b.cs;
    if constexpr (D != DType::f32) {
      if (b.cs == 1 && nn == nr) {  // rows contiguous in n: widen each row's nr elements
        const auto* src = static_cast<const std::uint16_t*>(b.base) + origin;
        for (i64 k = 0; k < kc; ++k) widen_run<D>(src + k * b.rs, p + k * nr, nr);
        continue;
      }
    }
    if (b.rs == 1) {
      // Transposed B (weights in PyTorch's [out, in] layout): the transpose kernel moves (and widens)
      // vector blocks through registers. Element by element, with a call to f16_to_f32 each for
      // f16, matmul with few rows spent its time here: [2, 512] x [512, 512]^T took 205 us in f32 and
      // 824 in f16 on the Zen 4, against 6 for one row through gemv.
      table().transpose(D, DType::f32, static_cast<const elem_t<D>*>(b.base) + origin, b.cs, p, nr, kc, nn, false);
      for (i64 k = 0; k < kc; ++k) {
        for (i64 j = nn; j < nr; ++j) p[k * nr + j] = 0.0f;
      }
      continue;
    }
    for (i64 k = 0; k < kc; ++k) {
      const i64 row = origin + k * b.rs;
      for (i64 j = 0; j < nn; ++j) p[k * nr + j] = load_as_f32<D>(b.base, row + j * b.cs);
      for (i64 j = nn; j < nr; ++j) p[k * nr + j] = 0.0f;
    }
  }
}

template <int mr>
void pack_a_strided(const StridedMatrix& a, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
  switch (a.dtype) {
    case DType::f32: pack_a_typed<DType::f32, mr>(a, i0, m, k0, kc, dst); return;
    case DType::f16: pack_a_typed<DType::f16, mr>(a, i0, m, k0, kc, dst); return;
    case DType::bf16: pack_a_typed<DType::bf16, mr>(a, i0, m, k0, kc, dst); return;
    default: break;  // the op table refuses i32 operands; quantized weights pack in matmul_quant.cpp
  }
  TRINE_ASSERT(!"an i32 or quantized operand", "[matmul] the packing was handed an i32 or quantized operand");
}

inline void pack_b_strided(const StridedMatrix& b, i64 k0, i64 kc, i64 j0, i64 n, float* dst) {
  switch (b.dtype) {
    case DType::f32: pack_b_typed<DType::f32>(b, k0, kc, j0, n, dst); return;
    case DType::f16: pack_b_typed<DType::f16>(b, k0, kc, j0, n, dst); return;
    case DType::bf16: pack_b_typed<DType::bf16>(b, k0, kc, j0, n, dst); return;
    default: break;  // the op table refuses i32 operands; quantized weights pack in matmul_quant.cpp
  }
  TRINE_ASSERT(!"an i32 or quantized operand", "[matmul] the packing was handed an i32 or quantized operand");
}

}  // namespace trine::cpu::TRINE_ISA_NS
