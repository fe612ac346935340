// Quantized weights (GGUF's q8_0, q4_0, q4_k, q5_k and q6_k blocks, trine/quant.hpp) in matmul and
// gemv, dequantized inside the kernel: gemv expands one block at a time into an L1 buffer and
// multiplies it with x at once; matmul's GEMM expands the blocks of the kc x nr panels it packs
// anyway (the f32 panel is the packing buffer the f32 GEMM fills too). The f32 weights never exist
// in memory beyond one block or one panel. Each weight is computed as trine::quant::dequantize
// computes it (the formats' f32 formulas), so the products are those of the dequantized matrix up to
// the order of the sums.
//
// One row of activations (gemv, and matmul with M = 1: a decode step, bound by reading the weights)
// takes another path in the avx2 and avx512 builds, as ggml's does: x is quantized once to 8 bits
// per block of 32 (scale max|x|/127, rounded to nearest), and each block of weights is multiplied
// with it in integers (maddubs: 32 products in two instructions, against a dequantized block's 32
// conversions and FMAs), then scaled by the two blocks' scales in f32. Its error against the f32
// product is that of x's rounding, at most sum |w| max|x_block| / 254 (documented in docs/ops.md and
// the bound tests/quant_ops_tests.cpp checks); TRINE_CPU_QUANT_DOT=f32 selects the f32 path.
#include "backends/cpu_simd/isa.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512) || defined(__F16C__)
#include <immintrin.h>
#endif
#if defined(TRINE_ISA_AVX2) || defined(TRINE_ISA_AVX512)
#define TRINE_QUANT_INT_DOT 1
#endif

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/gemm/driver.hpp"
#include "trine/dtype.hpp"
#include "trine/error.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

// A block's f16 scale (F16C's conversion where the build has it: exact, as f16_to_f32, and inline).
inline float f16_at(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
#if defined(__F16C__)
  return _cvtsh_ss(bits);
#else
  return f16_to_f32(bits);
#endif
}

// One block at b into y[0, dtype_block_elems(Q)), in the formats' f32 arithmetic.
template <DType Q>
inline void dequant_block(const std::uint8_t* b, float* y) {
  if constexpr (Q == DType::q8_0) {
    const float d = f16_at(b);
    for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<std::int8_t>(b[2 + i])) * d;
  } else if constexpr (Q == DType::q4_0) {
    const float d = f16_at(b);
    for (int i = 0; i < 16; ++i) {
      y[i] = d * static_cast<float>((b[2 + i] & 0x0F) - 8);
      y[i + 16] = d * static_cast<float>((b[2 + i] >> 4) - 8);
    }
  } else if constexpr (Q == DType::q4_k || Q == DType::q5_k) {
    constexpr bool five = Q == DType::q5_k;
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* s = b + 4;                  // eight 6-bit scales and mins in 12 bytes
    const std::uint8_t* qh = b + 16;                // q5_k: bit j of byte i is the fifth bit of weight i of sub-block j
    const std::uint8_t* qs = b + (five ? 48 : 16);  // sub-blocks 2g and 2g+1: low and high nibbles of 32 bytes
    for (int j = 0; j < 8; ++j) {
      const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
      const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      const float a = d * static_cast<float>(sc), c = dmin * static_cast<float>(m);
      const std::uint8_t* q = qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      float* out = y + 32 * j;
      for (int i = 0; i < 32; ++i) {
        int v = (q[i] >> shift) & 0x0F;
        if constexpr (five) v |= ((qh[i] >> j) & 1) << 4;
        out[i] = a * static_cast<float>(v) - c;
      }
    }
  } else {
    static_assert(Q == DType::q6_k);
    const std::uint8_t* ql = b;        // 128 bytes of low nibbles
    const std::uint8_t* qh = b + 128;  // 64 bytes of high bit pairs
    const std::uint8_t* sc = b + 192;  // 16 int8 scales, one per 16 weights
    const float d = f16_at(b + 208);
    for (int half = 0; half < 2; ++half) {
      for (int part = 0; part < 4; ++part) {  // 32 weights: r = 32 part + i of this half's 128
        const int shift_lo = 4 * (part / 2), shift_hi = 2 * part;
        const std::uint8_t* lo = ql + 64 * half + 32 * (part % 2);
        const std::uint8_t* hi = qh + 32 * half;
        float* out = y + 128 * half + 32 * part;
        const float d0 = d * static_cast<float>(static_cast<std::int8_t>(sc[8 * half + 2 * part]));
        const float d1 = d * static_cast<float>(static_cast<std::int8_t>(sc[8 * half + 2 * part + 1]));
        for (int i = 0; i < 32; ++i) {
          const int v = ((lo[i] >> shift_lo) & 0x0F) | (((hi[i] >> shift_hi) & 0x03) << 4);
          out[i] = (i < 16 ? d0 : d1) * static_cast<float>(v - 32);
        }
      }
    }
  }
}

// Calls f(integral_constant<DType, q>) for a quantized dtype.
template <class F>
void with_format(DType q, const F& f) {
  switch (q) {
    case DType::q8_0: return f(std::integral_constant<DType, DType::q8_0>{});
    case DType::q4_0: return f(std::integral_constant<DType, DType::q4_0>{});
    case DType::q4_k: return f(std::integral_constant<DType, DType::q4_k>{});
    case DType::q5_k: return f(std::integral_constant<DType, DType::q5_k>{});
    case DType::q6_k: return f(std::integral_constant<DType, DType::q6_k>{});
    default: break;
  }
  TRINE_ASSERT(!"not quantized", "[matmul] the quantized kernels were handed an unquantized weight");
}

// y[r] = row r of the weights . x, rows [r0, r1).
template <DType Q>
void gemv_rows(i64 r0, i64 r1, i64 K, const std::uint8_t* wq, i64 row_bytes, const float* x, float* y) {
  constexpr i64 be = dtype_block_elems(Q);
  constexpr i64 bb = static_cast<i64>(dtype_block_bytes(Q));
  alignas(64) float buf[be];
  for (i64 r = r0; r < r1; ++r) {
    const std::uint8_t* row = wq + r * row_bytes;
    batch_f32 s0(0.0f), s1(0.0f);
    for (i64 kb = 0; kb < K / be; ++kb) {
      dequant_block<Q>(row + kb * bb, buf);
      const float* xb = x + kb * be;
      for (i64 i = 0; i < be; i += 2 * w) {
        s0 = xsimd::fma(batch_f32::load_aligned(buf + i), batch_f32::load_unaligned(xb + i), s0);
        s1 = xsimd::fma(batch_f32::load_aligned(buf + i + w), batch_f32::load_unaligned(xb + i + w), s1);
      }
    }
    y[r] = xsimd::hadd(s0 + s1);
  }
}

#if TRINE_QUANT_INT_DOT
// x quantized per block of 32: q = round(x / d), d = max|x| / 127, and d times the sum of the q.
struct XBlocks {
  std::vector<float> d;
  std::vector<float> dsum;  // q4_k's and q5_k's min terms take it
  std::vector<std::int8_t> q;
};

// False when x holds an infinity or a NaN, which 8 bits cannot carry: the f32 path takes that row.
bool quantize_x(const float* x, i64 K, XBlocks& out) {
  const i64 nb = K / 32;
  out.d.resize(static_cast<std::size_t>(nb));
  out.dsum.resize(static_cast<std::size_t>(nb));
  out.q.resize(static_cast<std::size_t>(K));
  for (i64 b = 0; b < nb; ++b) {
    const float* v = x + 32 * b;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
    bool finite = amax <= 3.4e38f;
    for (int i = 0; i < 32; ++i) finite &= v[i] == v[i];
    if (!finite) return false;
    const float d = amax / 127.0f, inv = d > 0.0f ? 1.0f / d : 0.0f;
    std::int32_t s = 0;
    for (int i = 0; i < 32; ++i) {
      const auto q = static_cast<std::int8_t>(std::nearbyint(v[i] * inv));
      out.q[static_cast<std::size_t>(32 * b + i)] = q;
      s += q;
    }
    out.d[static_cast<std::size_t>(b)] = d;
    out.dsum[static_cast<std::size_t>(b)] = d * static_cast<float>(s);
  }
  return true;
}

// The 8 int32 partial sums of 32 products: u unsigned bytes (< 128) times s signed bytes.
inline __m256i dot_us(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
// The same for signed w: |w| times x with w's sign.
inline __m256i dot_ss(__m256i w, __m256i x) { return dot_us(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Row `row` (K weights of Q) . x, in integers per block of 32.
template <DType Q>
float dot_row_int(const std::uint8_t* row, i64 K, const XBlocks& x) {
  constexpr i64 be = dtype_block_elems(Q);
  constexpr i64 bb = static_cast<i64>(dtype_block_bytes(Q));
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
  __m256 corr_v = _mm256_setzero_ps();  // the k-quants' min terms
  for (i64 kb = 0; kb < K / be; ++kb) {
    const std::uint8_t* b = row + kb * bb;
    const std::int8_t* xq = x.q.data() + kb * be;
    const float* xd = x.d.data() + kb * (be / 32);
    if constexpr (Q == DType::q8_0) {
      const __m256i p = dot_ss(load32(b + 2), load32(xq));
      acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_at(b) * xd[0]), _mm256_cvtepi32_ps(p), acc);
    } else if constexpr (Q == DType::q4_0) {
      const __m128i n = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
      const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(n, 4), n), low4);
      const __m256i p = dot_ss(_mm256_sub_epi8(q, _mm256_set1_epi8(8)), load32(xq));
      acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_at(b) * xd[0]), _mm256_cvtepi32_ps(p), acc);
    } else if constexpr (Q == DType::q4_k || Q == DType::q5_k) {
      constexpr bool five = Q == DType::q5_k;
      const std::uint8_t* qs = b + (five ? 48 : 16);
      // The eight 6-bit scales and mins in vectors: three 32-bit words of 12 bytes unpacked with masks
      // into the eight scale bytes and the eight min bytes (see dequant_block for the layout).
      std::uint32_t u[3];
      std::memcpy(u, b + 4, 12);
      const std::uint64_t sc =
          (u[0] & 0x3f3f3f3fu) | static_cast<std::uint64_t>((u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u)) << 32;
      const std::uint64_t mn =
          (u[1] & 0x3f3f3f3fu) | static_cast<std::uint64_t>(((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u))
                                     << 32;
      const __m256 scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc))));
      const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(mn))));
      // Sub-block j's weights times x's: d sc_j xd_j (q . xq) - dmin m_j xd_j sum(xq).
      alignas(32) float f[8];
      _mm256_store_ps(f, _mm256_mul_ps(_mm256_mul_ps(scales, _mm256_loadu_ps(xd)), _mm256_set1_ps(f16_at(b))));
      corr_v = _mm256_fmadd_ps(_mm256_set1_ps(f16_at(b + 2)),
                               _mm256_mul_ps(mins, _mm256_loadu_ps(x.dsum.data() + kb * 8)), corr_v);
      __m256i qh;
      if constexpr (five) qh = load32(b + 16);
      for (int j = 0; j < 8; j += 2) {
        const __m256i bytes = load32(qs + 16 * j);
        __m256i q0 = _mm256_and_si256(bytes, low4), q1 = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
        if constexpr (five) {  // bit j of each qh byte to bit 4 (16-bit shifts by at most 4 stay in their byte there)
          const __m256i bit4 = _mm256_set1_epi8(0x10);
          const __m256i h0 = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
          const __m256i h1 = j + 1 <= 4 ? _mm256_slli_epi16(qh, 3 - j) : _mm256_srli_epi16(qh, j - 3);
          q0 = _mm256_or_si256(q0, _mm256_and_si256(h0, bit4));
          q1 = _mm256_or_si256(q1, _mm256_and_si256(h1, bit4));
        }
        const __m256i p0 = dot_us(q0, load32(xq + 32 * j)), p1 = dot_us(q1, load32(xq + 32 * j + 32));
        // two chains: eight dependent FMAs a super-block would wait on each other's latency
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f[j]), _mm256_cvtepi32_ps(p0), acc);
        acc2 = _mm256_fmadd_ps(_mm256_set1_ps(f[j + 1]), _mm256_cvtepi32_ps(p1), acc2);
      }
    } else {
      static_assert(Q == DType::q6_k);
      const std::uint8_t* ql = b;
      const std::uint8_t* qh = b + 128;
      const std::uint8_t* sc = b + 192;  // 16 int8 scales, one per 16 weights
      // d times x's eight block scales, broadcast from memory per 32 weights.
      alignas(32) float f[8];
      _mm256_store_ps(f, _mm256_mul_ps(_mm256_loadu_ps(xd), _mm256_set1_ps(f16_at(b + 208))));
      for (int half = 0; half < 2; ++half) {
        const __m256i hb = load32(qh + 32 * half);
        const __m256i l0 = load32(ql + 64 * half), l1 = load32(ql + 64 * half + 32);
        // This half's eight int8 scales as int16 in both 128-bit lanes: part p's pair (2p, 2p + 1)
        // is one pshufb away (the low lane's eight int16 take scale 2p, the high lane's 2p + 1).
        const __m256i sc16 = _mm256_broadcastsi128_si256(
            _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * half))));
        for (int part = 0; part < 4; ++part) {
          const __m256i lo = part < 2 ? (part ? l1 : l0) : (part == 3 ? l1 : l0);
          const __m256i lon = _mm256_and_si256(part < 2 ? lo : _mm256_srli_epi16(lo, 4), low4);
          // bits 2 part and 2 part + 1 of each qh byte to bits 4 and 5 (16-bit shifts that stay in the byte there)
          const __m256i hi = _mm256_and_si256(part < 3 ? _mm256_slli_epi16(hb, 4 - 2 * part) : _mm256_srli_epi16(hb, 2),
                                              _mm256_set1_epi8(0x30));
          const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lon, hi), _mm256_set1_epi8(32));
          // int16 pair sums, each 16-weight half times its own scale
          const __m256i pairs =
              _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(load32(xq + 128 * half + 32 * part), q));
          const char a0 = static_cast<char>(4 * part), a1 = static_cast<char>(4 * part + 1);
          const char b0 = static_cast<char>(4 * part + 2), b1 = static_cast<char>(4 * part + 3);
          const __m256i pick = _mm256_setr_epi8(a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, b0, b1,
                                                b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1);
          const __m256i p = _mm256_madd_epi16(pairs, _mm256_shuffle_epi8(sc16, pick));
          __m256& a = part % 2 ? acc2 : acc;  // two chains, as the k-quants above
          a = _mm256_fmadd_ps(_mm256_set1_ps(f[4 * half + part]), _mm256_cvtepi32_ps(p), a);
        }
      }
    }
  }
  return hsum(_mm256_add_ps(acc, acc2)) - hsum(corr_v);
}

// The integer path's switch: on unless TRINE_CPU_QUANT_DOT=f32 (read once).
bool int_dot_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("TRINE_CPU_QUANT_DOT");
    if (!env || !*env || std::string(env) == "int8") return true;
    if (std::string(env) == "f32") return false;
    throw Error(ErrorCode::invalid_argument,
                std::string("[cpu] TRINE_CPU_QUANT_DOT must be int8 or f32, got '") + env + "'");
  }();
  return on;
}
#endif

// The GEMM's B panels from the weights: columns [j0, j0 + n) of B = W^T are rows of W, k in
// [k0, k0 + kc), packed as pack_b_strided packs them (nr-wide panels, k-major, zero columns past n).
template <DType Q>
void pack_b_quant(const std::uint8_t* wq, i64 row_bytes, i64 k0, i64 kc, i64 j0, i64 n, float* dst) {
  constexpr i64 nr = GemmConfig::nr;
  constexpr i64 be = dtype_block_elems(Q);
  constexpr i64 bb = static_cast<i64>(dtype_block_bytes(Q));
  const i64 kb0 = k0 / be, kb1 = (k0 + kc + be - 1) / be;
  thread_local std::vector<float> row;
  row.resize(static_cast<std::size_t>((kb1 - kb0) * be));
  for (i64 j = 0; j < n; ++j) {
    const std::uint8_t* src = wq + (j0 + j) * row_bytes;
    for (i64 kb = kb0; kb < kb1; ++kb) dequant_block<Q>(src + kb * bb, row.data() + (kb - kb0) * be);
    const float* v = row.data() + (k0 - kb0 * be);
    float* p = dst + (j - j % nr) * kc + j % nr;
    for (i64 k = 0; k < kc; ++k) p[k * nr] = v[k];
  }
  const i64 end = (n + nr - 1) / nr * nr;
  for (i64 j = n; j < end; ++j) {
    float* p = dst + (j - j % nr) * kc + j % nr;
    for (i64 k = 0; k < kc; ++k) p[k * nr] = 0.0f;
  }
}

// C [..., M, N] = A [..., M, K] W^T (A^T's when trans_a), W [N, K] quantized.
void run_quant(const KernelTable& k, const trine::detail::OpCall& call, const Tensor& x_in, const Tensor& wt,
               bool trans_a, i64 M) {
  const DType q = wt.dtype();
  const i64 N = wt.dim(0), K = wt.dim(1);
  const i64 row_bytes = static_cast<i64>(dtype_bytes(q, wt.strides()[0]));
  const auto* wq = base_ptr(wt);
  if (call.output.numel() == 0) return;
  const F32Result result(k, call);
  float* c = result.data();
  if (K == 0) {
    std::fill_n(c, call.output.numel(), 0.0f);
    result.round();
    return;
  }
  Tensor keep;
  const float* a = widened_f32(k, x_in, keep);  // the activations: contiguous f32, small beside W
  const i64 batch = call.output.numel() / (M * N);
  // Without trans_a, every batch entry's rows follow one another: one [batch M, K] product.
  const i64 rows = trans_a ? M : batch * M;
  for (i64 bi = 0; bi < (trans_a ? batch : 1); ++bi) {
    const float* ab = a + bi * M * K;
    float* cb = c + bi * M * N;
    with_format(q, [&](auto fmt) {
      constexpr DType Q = decltype(fmt)::value;
      if (rows == 1) {
#if TRINE_QUANT_INT_DOT
        if (int_dot_enabled()) {
          XBlocks xb;  // (a local: the pool's threads read it)
          if (quantize_x(ab, K, xb)) {
            parallel_for(N, 64, [&](i64 r0, i64 r1) {
              for (i64 r = r0; r < r1; ++r) cb[r] = dot_row_int<Q>(wq + r * row_bytes, K, xb);
            });
            return;
          }
        }
#endif
        parallel_for(N, 64, [&](i64 r0, i64 r1) { gemv_rows<Q>(r0, r1, K, wq, row_bytes, ab, cb); });
        return;
      }
      const StridedMatrix am{ab, DType::f32, 0, trans_a ? 1 : K, trans_a ? M : 1};
      auto pack_a = [&am](auto r, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
        pack_a_strided<decltype(r)::value>(am, i0, m, k0, kc, dst);
      };
      auto pack_b = [&](i64 k0, i64 kc, i64 j0, i64 n, float* dst) {
        pack_b_quant<Q>(wq, row_bytes, k0, kc, j0, n, dst);
      };
      gemm_run(rows, N, K, pack_a, pack_b, cb, N, thread_count(), true);
    });
  }
  result.round();
}

}  // namespace

void matmul_quantized(const KernelTable& k, const trine::detail::OpCall& call, bool trans_a) {
  const Tensor& a = call.inputs[0];
  run_quant(k, call, a, call.inputs[1], trans_a, trans_a ? a.dim(-1) : a.dim(-2));
}

void gemv_quantized(const KernelTable& k, const trine::detail::OpCall& call) {
  // y [N] = W [N, K] x [K]: as matmul's one row.
  run_quant(k, call, call.inputs[1], call.inputs[0], false, 1);
}

}  // namespace trine::cpu::TRINE_ISA_NS
