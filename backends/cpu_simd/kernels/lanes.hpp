// Lane shuffles the xsimd 8.1 API lacks, per ISA: the even and odd elements of two vectors'
// worth of floats (stride-2 reads in conv2d). Per-ISA kernel files only, after isa.hpp.
#pragma once

#include <immintrin.h>

#include "backends/cpu_simd/isa.hpp"

namespace trine::cpu::TRINE_ISA_NS {

#if defined(TRINE_ISA_AVX512)
inline __m512 lanes_even(const float* p) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_loadu_ps(p + 16));
}
inline __m512 lanes_odd(const float* p) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_loadu_ps(p + 16));
}
// Even elements of the 2 * vec_width floats at p to even[0, vec_width), odd ones to odd[...].
inline void deinterleave(const float* p, float* even, float* odd) {
  _mm512_storeu_ps(even, lanes_even(p));
  _mm512_storeu_ps(odd, lanes_odd(p));
}
inline void store_even(const float* p, float* even) { _mm512_storeu_ps(even, lanes_even(p)); }
#elif defined(TRINE_ISA_AVX2)
// Within 128-bit lanes shuffle gives [a0 a2 b0 b2 | a4 a6 b4 b6]; 64-bit blocks 0, 2, 1, 3 order it.
inline __m256 lanes_pick(const float* p, int imm_odd) {
  const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
  const __m256 s = imm_odd ? _mm256_shuffle_ps(a, b, 0xdd) : _mm256_shuffle_ps(a, b, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xd8));
}
inline void deinterleave(const float* p, float* even, float* odd) {
  _mm256_storeu_ps(even, lanes_pick(p, 0));
  _mm256_storeu_ps(odd, lanes_pick(p, 1));
}
inline void store_even(const float* p, float* even) { _mm256_storeu_ps(even, lanes_pick(p, 0)); }
#else
inline void deinterleave(const float* p, float* even, float* odd) {
  const __m128 a = _mm_loadu_ps(p), b = _mm_loadu_ps(p + 4);
  _mm_storeu_ps(even, _mm_shuffle_ps(a, b, 0x88));
  _mm_storeu_ps(odd, _mm_shuffle_ps(a, b, 0xdd));
}
inline void store_even(const float* p, float* even) {
  _mm_storeu_ps(even, _mm_shuffle_ps(_mm_loadu_ps(p), _mm_loadu_ps(p + 4), 0x88));
}
#endif

}  // namespace trine::cpu::TRINE_ISA_NS
