// Layer norm and RMS norm over the last axis of [rows, n], one row per task; gamma/beta optional.
// Rows whose squares leave the f32 range (|x| above ~1.8e19, or a sum of squares above FLT_MAX,
// or squares that underflow) are redone on the row scaled by a power of two, so the result is
// right wherever it is representable.
#include "backends/cpu_simd/isa.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// Below this mean square the squares of a row's small elements may have underflowed.
constexpr float tiny_mean_square = 0x1p-100f;

// y = ((x * pre - shift) - fine_shift) * scale * gamma + beta over one row: x - shift is exact
// when shift is the float mean and x near it, and fine_shift is the mean's small remainder. pre is
// a power of two (1 unless the row was rescaled), so x * pre is exact.
// `next` (the next row of the task, or null) is prefetched meanwhile: the first pass over a row reads
// it from memory, and without this that read waited for this pass, which reads and writes in L1.
// x and y stored as D (f16 / bf16 rows widened as loaded, rounded once as stored).
template <bool HasGamma, bool HasBeta, DType D = DType::f32>
void affine_row(const elem_t<D>* x, const float* gamma, const float* beta, elem_t<D>* y, i64 n, float pre, float shift,
                float fine_shift, float scale, bool stream, const elem_t<D>* next) {
  const batch_f32 vp(pre), vs(shift), vf(fine_shift), vk(scale);
  auto one = [&](const batch_f32& v, const batch_f32& g, const batch_f32& b) {
    batch_f32 t = ((v * vp - vs) - vf) * vk;
    if constexpr (HasGamma) t *= g;
    if constexpr (HasBeta) t += b;
    return t;
  };
  store_run_blocks_as<1, D>(
      y, n, stream,
      [&](i64 j, batch_f32(&out)[1]) __attribute__((always_inline)) {
        if (next && j % 16 == 0) __builtin_prefetch(next + j, 0, 3);  // each 64-byte line (f32)
        const batch_f32 g = HasGamma ? batch_f32::load_unaligned(gamma + j) : batch_f32(1.0f);
        const batch_f32 b = HasBeta ? batch_f32::load_unaligned(beta + j) : batch_f32(0.0f);
        out[0] = one(load_as<D>(x + j), g, b);
      },
      [&](i64 j, i64 r) {
        const batch_f32 g = HasGamma ? load_partial(gamma + j, r) : batch_f32(1.0f);
        const batch_f32 b = HasBeta ? load_partial(beta + j, r) : batch_f32(0.0f);
        return one(load_partial_as<D>(x + j, r), g, b);
      });
}

// Sums of d = x * pre - shift and of d^2 over one row, in one pass with two chains each.
template <DType D = DType::f32>
std::pair<float, float> deviation_sums(const elem_t<D>* p, i64 n, float pre, float shift) {
  constexpr i64 block = 256 * vec_width;
  const batch_f32 vp(pre), vs(shift);
  batch_f32 td(0.0f), tq(0.0f);
  i64 i = 0;
  while (i + 2 * vec_width <= n) {
    batch_f32 d0(0.0f), d1(0.0f), q0(0.0f), q1(0.0f);
    const i64 end = std::min(n, i + block);
    for (; i + 2 * vec_width <= end; i += 2 * vec_width) {
      const batch_f32 a = load_as<D>(p + i) * vp - vs, b = load_as<D>(p + i + vec_width) * vp - vs;
      d0 += a;
      d1 += b;
      q0 = xsimd::fma(a, a, q0);
      q1 = xsimd::fma(b, b, q1);
    }
    td += d0 + d1;
    tq += q0 + q1;
  }
  for (; i + vec_width <= n; i += vec_width) {
    const batch_f32 a = load_as<D>(p + i) * vp - vs;
    td += a;
    tq = xsimd::fma(a, a, tq);
  }
  if (i < n) {  // padding lanes are zeroed after the shift (a padded value would round when pre != 1)
    alignas(64) float lane[vec_width];
    for (i64 k = 0; k < vec_width; ++k) lane[k] = static_cast<float>(k);
    const auto live = batch_f32::load_aligned(lane) < batch_f32(static_cast<float>(n - i));
    const batch_f32 a = xsimd::select(live, load_partial_as<D>(p + i, n - i) * vp - vs, batch_f32(0.0f));
    td += a;
    tq = xsimd::fma(a, a, tq);
  }
  return {hsum(td), hsum(tq)};
}

// max |x| over one row; NaN if the row holds one.
template <DType D = DType::f32>
float max_abs(const elem_t<D>* p, i64 n) {
  batch_f32 m(0.0f);
  i64 i = 0;
  for (; i + vec_width <= n; i += vec_width) m = max_nan(m, xsimd::abs(load_as<D>(p + i)));
  if (i < n) m = max_nan(m, xsimd::abs(load_partial_as<D>(p + i, n - i)));
  return hmax_nan(m);
}

// A power of two s with max|x| * s in [0.5, 4): the row times s has squares and sums of squares
// far from overflow and underflow. s stays a normal float, so multiplying by it is exact. 1 for
// rows of zeros, infinities or NaN, which the plain computation already gets right.
template <DType D = DType::f32>
float row_scale(const elem_t<D>* p, i64 n) {
  const float m = max_abs<D>(p, n);
  if (!(std::isfinite(m) && m > 0.0f)) return 1.0f;
  int e = 0;
  std::frexp(m, &e);
  return std::ldexp(1.0f, std::clamp(-e, -126, 127));
}

// The factor for a row scaled by s: (x s - mean') / sqrt(var' + eps s^2) = (x - mean) / sqrt(var + eps),
// with eps s^2 formed in double (it leaves the f32 range for s far from 1). Held at FLT_MAX: for a
// constant huge row (var' = 0, s = 2^-126) it is past f32's range, and its deviations, 0, times inf
// would be NaN where the result is 0.
float scaled_rstd(float scaled_mean_square, float s, float eps) {
  const double sd = s;
  const double r = 1.0 / std::sqrt(static_cast<double>(scaled_mean_square) + static_cast<double>(eps) * sd * sd);
  return static_cast<float>(std::min(r, static_cast<double>(FLT_MAX)));
}

// row_fn(r, next): next is whether row r + 1 belongs to the same task (and may be prefetched).
template <class F>
void for_rows(i64 rows, i64 n, F&& row_fn) {
  // Each row is read two or three times, from cache for usual n.
  parallel_for(rows, grain_for(3 * n, grain_cheap), [&](i64 b, i64 e) {
    for (i64 r = b; r < e; ++r) row_fn(r, r + 1 < e);
  });
}

template <bool HasGamma, bool HasBeta, DType D = DType::f32>
void layernorm_typed(const elem_t<D>* x, const float* gamma, const float* beta, elem_t<D>* y, i64 rows, i64 n,
                     float eps) {
  const bool stream = rows * n * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  for_rows(rows, n, [&](i64 r, bool has_next) {
    const elem_t<D>* p = x + r * n;
    const elem_t<D>* next = has_next ? p + n : nullptr;
    const float nf = static_cast<float>(n);
    // Corrected two-pass variance: deviations from the float mean do not cancel the way
    // E[x^2] - mean^2 does, and their sum recovers the mean's rounding error (which matters when
    // |mean| >> std: at mean 600, std 1 it would otherwise cost ~3e-5 relative).
    auto moments = [&](float pre, float& mean, float& fine) {
      const batch_f32 vp(pre);
      mean = sum_mapped<D>(p, n, [&](const batch_f32& v) { return v * vp; }) / nf;
      const auto [sum_d, sum_d2] = deviation_sums<D>(p, n, pre, mean);
      fine = sum_d / nf;
      return std::max(0.0f, sum_d2 / nf - fine * fine);
    };
    float mean = 0.0f, fine = 0.0f;
    const float var = moments(1.0f, mean, fine);
    if (!(std::isfinite(mean) && std::isfinite(var) && var >= tiny_mean_square)) {
      // Overflowed or underflowed (or a constant row, or inf/NaN input): redo it on the row scaled
      // to max|x| ~ 1, which keeps every intermediate in range. Inf/NaN rows keep the plain result.
      const float s = row_scale<D>(p, n);
      if (s != 1.0f) {
        float smean = 0.0f, sfine = 0.0f;
        const float svar = moments(s, smean, sfine);
        affine_row<HasGamma, HasBeta, D>(p, gamma, beta, y + r * n, n, s, smean, sfine, scaled_rstd(svar, s, eps),
                                         stream, next);
        return;
      }
    }
    affine_row<HasGamma, HasBeta, D>(p, gamma, beta, y + r * n, n, 1.0f, mean, fine, 1.0f / std::sqrt(var + eps),
                                     stream, next);
  });
}

template <DType D = DType::f32>
void layernorm(const elem_t<D>* x, const float* gamma, const float* beta, elem_t<D>* y, i64 rows, i64 n, float eps) {
  if (rows <= 0 || n <= 0) return;
  if (gamma && beta)
    layernorm_typed<true, true, D>(x, gamma, beta, y, rows, n, eps);
  else if (gamma)
    layernorm_typed<true, false, D>(x, gamma, beta, y, rows, n, eps);
  else if (beta)
    layernorm_typed<false, true, D>(x, gamma, beta, y, rows, n, eps);
  else
    layernorm_typed<false, false, D>(x, gamma, beta, y, rows, n, eps);
}

template <bool HasGamma, DType D = DType::f32>
void rmsnorm_typed(const elem_t<D>* x, const float* gamma, elem_t<D>* y, i64 rows, i64 n, float eps) {
  const bool stream = rows * n * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  for_rows(rows, n, [&](i64 r, bool has_next) {
    const elem_t<D>* p = x + r * n;
    const elem_t<D>* next = has_next ? p + n : nullptr;
    const float nf = static_cast<float>(n);
    const float ms = sum_mapped<D>(p, n, [](const batch_f32& v) { return v * v; }) / nf;
    if (!(std::isfinite(ms) && ms >= tiny_mean_square)) {
      // x^2 overflows above ~1.8e19 and the sum above FLT_MAX; tiny x^2 underflow. Redo the row
      // scaled to max|x| ~ 1; inf/NaN rows keep the plain result.
      const float s = row_scale<D>(p, n);
      if (s != 1.0f) {
        const batch_f32 vs(s);
        const float sms = sum_mapped<D>(p, n,
                                     [&](const batch_f32& v) {
                                       const batch_f32 t = v * vs;
                                       return t * t;
                                     }) /
                          nf;
        affine_row<HasGamma, false, D>(p, gamma, nullptr, y + r * n, n, s, 0.0f, 0.0f, scaled_rstd(sms, s, eps),
                                       stream, next);
        return;
      }
    }
    affine_row<HasGamma, false, D>(p, gamma, nullptr, y + r * n, n, 1.0f, 0.0f, 0.0f, 1.0f / std::sqrt(ms + eps),
                                   stream, next);
  });
}

template <DType D = DType::f32>
void rmsnorm(const elem_t<D>* x, const float* gamma, elem_t<D>* y, i64 rows, i64 n, float eps) {
  if (rows <= 0 || n <= 0) return;
  if (gamma)
    rmsnorm_typed<true, D>(x, gamma, y, rows, n, eps);
  else
    rmsnorm_typed<false, D>(x, gamma, y, rows, n, eps);
}

// A call whose x and result share a 16-bit dtype D runs the kernels on the rows as stored (widened
// as loaded, rounded once as stored); gamma and beta (one row each) widened to f32 first. f(tag,
// x, gamma, beta, y) runs it; false for the other calls (f32, or mixed dtypes: staged).
template <class F>
bool with_rows_16bit(const KernelTable& k, const trine::detail::OpCall& call, F&& f) {
  const DType xd = call.inputs[0].dtype();
  if (xd == DType::f32 || call.output.dtype() != xd) return false;
  Tensor keep;
  const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
  std::vector<float> params[2];
  const float* gb[2] = {nullptr, nullptr};
  for (std::size_t i = 1; i < call.inputs.size() && i < 3; ++i) {
    const Tensor& t = call.inputs[i];
    if (!t.defined()) continue;
    params[i - 1].resize(static_cast<std::size_t>(t.numel()));
    strided_convert(k, t, reinterpret_cast<std::uint8_t*>(params[i - 1].data()), DType::f32);
    gb[i - 1] = params[i - 1].data();
  }
  auto run = [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    f(tag, reinterpret_cast<const elem_t<D>*>(x), gb[0], gb[1], reinterpret_cast<elem_t<D>*>(base_ptr(call.output)));
  };
  if (xd == DType::f16)
    run(std::integral_constant<DType, DType::f16>{});
  else
    run(std::integral_constant<DType, DType::bf16>{});
  return true;
}

void run_layernorm(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  const i64 n = in[0].dim(-1);
  const float eps = std::get<NormParams>(call.params).eps;
  const i64 rows = call.output.numel() / n;
  if (with_rows_16bit(k, call, [&](auto tag, const auto* x, const float* g, const float* b, auto* y) {
        layernorm<decltype(tag)::value>(x, g, b, y, rows, n, eps);
      }))
    return;
  // staged (execute.hpp) for mixed dtypes: pieces of rows, gamma and beta widened once
  run_staged(k, call, call.output.numel() / n, {n, 0, 0}, n, grain_cheap,
             [&](const float* const* x, float* out, i64 rows) { layernorm(x[0], x[1], x[2], out, rows, n, eps); });
}

void run_rmsnorm(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  const i64 n = in[0].dim(-1);
  const float eps = std::get<NormParams>(call.params).eps;
  const i64 rows = call.output.numel() / n;
  if (with_rows_16bit(k, call, [&](auto tag, const auto* x, const float* g, const float*, auto* y) {
        rmsnorm<decltype(tag)::value>(x, g, y, rows, n, eps);
      }))
    return;
  run_staged(k, call, call.output.numel() / n, {n, 0}, n, grain_cheap,
             [&](const float* const* x, float* out, i64 rows) { rmsnorm(x[0], x[1], out, rows, n, eps); });
}

}  // namespace

void register_norm(KernelTable& t) {
  t.ops.add(OpKind::layernorm, run_layernorm);
  t.ops.add(OpKind::rmsnorm, run_rmsnorm);
}

}  // namespace trine::cpu::TRINE_ISA_NS
