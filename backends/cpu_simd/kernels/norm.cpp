// Layer norm and RMS norm over the last axis of [rows, n], one row per task; gamma/beta optional.
#include "backends/cpu_simd/isa.hpp"

#include <cmath>
#include <utility>

#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// y = ((x - shift) - fine_shift) * scale * gamma + beta over one row: x - shift is exact when
// shift is the float mean and x near it, and fine_shift is the mean's small remainder.
template <bool HasGamma, bool HasBeta>
void affine_row(const float* x, const float* gamma, const float* beta, float* y, i64 n, float shift, float fine_shift,
                float scale) {
  const batch_f32 vs(shift), vf(fine_shift), vk(scale);
  auto one = [&](const batch_f32& v, const batch_f32& g, const batch_f32& b) {
    batch_f32 t = ((v - vs) - vf) * vk;
    if constexpr (HasGamma) t *= g;
    if constexpr (HasBeta) t += b;
    return t;
  };
  i64 j = 0;
  for (; j + vec_width <= n; j += vec_width) {
    const batch_f32 g = HasGamma ? batch_f32::load_unaligned(gamma + j) : batch_f32(1.0f);
    const batch_f32 b = HasBeta ? batch_f32::load_unaligned(beta + j) : batch_f32(0.0f);
    one(batch_f32::load_unaligned(x + j), g, b).store_unaligned(y + j);
  }
  if (j < n) {
    const i64 r = n - j;
    const batch_f32 g = HasGamma ? load_partial(gamma + j, r) : batch_f32(1.0f);
    const batch_f32 b = HasBeta ? load_partial(beta + j, r) : batch_f32(0.0f);
    store_partial(y + j, r, one(load_partial(x + j, r), g, b));
  }
}

// Sums of d = x - shift and of d^2 over one row, in one pass with two chains each.
std::pair<float, float> deviation_sums(const float* p, i64 n, float shift) {
  constexpr i64 block = 256 * vec_width;
  const batch_f32 vs(shift);
  batch_f32 td(0.0f), tq(0.0f);
  i64 i = 0;
  while (i + 2 * vec_width <= n) {
    batch_f32 d0(0.0f), d1(0.0f), q0(0.0f), q1(0.0f);
    const i64 end = std::min(n, i + block);
    for (; i + 2 * vec_width <= end; i += 2 * vec_width) {
      const batch_f32 a = batch_f32::load_unaligned(p + i) - vs, b = batch_f32::load_unaligned(p + i + vec_width) - vs;
      d0 += a;
      d1 += b;
      q0 = xsimd::fma(a, a, q0);
      q1 = xsimd::fma(b, b, q1);
    }
    td += d0 + d1;
    tq += q0 + q1;
  }
  for (; i < n; i += vec_width) {  // the tail is filled with shift, so its padding adds 0
    const batch_f32 a =
        (i + vec_width <= n ? batch_f32::load_unaligned(p + i) : load_partial(p + i, n - i, shift)) - vs;
    td += a;
    tq = xsimd::fma(a, a, tq);
  }
  return {hsum(td), hsum(tq)};
}

template <class F>
void for_rows(i64 rows, i64 n, F&& row_fn) {
  // Each row is read two or three times, from cache for usual n.
  parallel_for(rows, grain_for(3 * n, grain_cheap), [&](i64 b, i64 e) {
    for (i64 r = b; r < e; ++r) row_fn(r);
  });
}

template <bool HasGamma, bool HasBeta>
void layernorm_typed(const float* x, const float* gamma, const float* beta, float* y, i64 rows, i64 n, float eps) {
  for_rows(rows, n, [&](i64 r) {
    const float* p = x + r * n;
    const float nf = static_cast<float>(n);
    const float mean = sum_mapped(p, n, [](const batch_f32& v) { return v; }) / nf;
    // Corrected two-pass variance: deviations from the float mean do not cancel the way
    // E[x^2] - mean^2 does, and their sum recovers the mean's rounding error (which matters when
    // |mean| >> std: at mean 600, std 1 it would otherwise cost ~3e-5 relative).
    const auto [sum_d, sum_d2] = deviation_sums(p, n, mean);
    const float fine = sum_d / nf;
    const float var = std::max(0.0f, sum_d2 / nf - fine * fine);
    const float rstd = 1.0f / std::sqrt(var + eps);
    affine_row<HasGamma, HasBeta>(p, gamma, beta, y + r * n, n, mean, fine, rstd);
  });
}

void layernorm(const float* x, const float* gamma, const float* beta, float* y, i64 rows, i64 n, float eps) {
  if (rows <= 0 || n <= 0) return;
  if (gamma && beta)
    layernorm_typed<true, true>(x, gamma, beta, y, rows, n, eps);
  else if (gamma)
    layernorm_typed<true, false>(x, gamma, beta, y, rows, n, eps);
  else if (beta)
    layernorm_typed<false, true>(x, gamma, beta, y, rows, n, eps);
  else
    layernorm_typed<false, false>(x, gamma, beta, y, rows, n, eps);
}

template <bool HasGamma>
void rmsnorm_typed(const float* x, const float* gamma, float* y, i64 rows, i64 n, float eps) {
  for_rows(rows, n, [&](i64 r) {
    const float* p = x + r * n;
    const float ms = sum_mapped(p, n, [](const batch_f32& v) { return v * v; }) / static_cast<float>(n);
    affine_row<HasGamma, false>(p, gamma, nullptr, y + r * n, n, 0.0f, 0.0f, 1.0f / std::sqrt(ms + eps));
  });
}

void rmsnorm(const float* x, const float* gamma, float* y, i64 rows, i64 n, float eps) {
  if (rows <= 0 || n <= 0) return;
  if (gamma)
    rmsnorm_typed<true>(x, gamma, y, rows, n, eps);
  else
    rmsnorm_typed<false>(x, gamma, y, rows, n, eps);
}

}  // namespace

void register_norm(KernelTable& t) {
  t.layernorm = layernorm;
  t.rmsnorm = rmsnorm;
}

}  // namespace trine::cpu::TRINE_ISA_NS
