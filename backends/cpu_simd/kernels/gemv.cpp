// Matrix-vector and vector-vector products: gemv (row-major, column-major and strided A, K split
// over the threads for a few long rows) and dot, both summed in fixed blocks so results do not
// depend on the thread count.
#include "backends/cpu_simd/isa.hpp"

#include <cstring>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

// ---- dot ----

// Four independent accumulators hide the FMA latency; the loop is bound by its two loads. x is
// stored as D (gemv's matrix rows: f32, f16 or bf16, widened as loaded), y as DY (f32 for gemv;
// dot's vectors any of the three).
template <DType D = DType::f32, DType DY = DType::f32>
float dot_serial(const elem_t<D>* x, const elem_t<DY>* y, i64 n) {
  batch_f32 s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  i64 i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    s0 = xsimd::fma(load_as<D>(x + i), load_as<DY>(y + i), s0);
    s1 = xsimd::fma(load_as<D>(x + i + w), load_as<DY>(y + i + w), s1);
    s2 = xsimd::fma(load_as<D>(x + i + 2 * w), load_as<DY>(y + i + 2 * w), s2);
    s3 = xsimd::fma(load_as<D>(x + i + 3 * w), load_as<DY>(y + i + 3 * w), s3);
  }
  for (; i + w <= n; i += w) s0 = xsimd::fma(load_as<D>(x + i), load_as<DY>(y + i), s0);
  float s = xsimd::hadd((s0 + s1) + (s2 + s3));
  for (; i < n; ++i) s += scalar_f32<D>(x[i]) * scalar_f32<DY>(y[i]);
  return s;
}

// Long dots are cut into fixed blocks whose partial sums are added in order, so the result does
// not depend on the thread count.
constexpr i64 dot_block = i64{1} << 16;

float dot_kernel(const float* x, const float* y, i64 n) {
  if (n <= 2 * dot_block) return dot_serial(x, y, n);
  const i64 blocks = (n + dot_block - 1) / dot_block;
  std::vector<float> partial(static_cast<std::size_t>(blocks));
  parallel_for(blocks, 4, [&](i64 b0, i64 b1) {
    for (i64 b = b0; b < b1; ++b) {
      const i64 i = b * dot_block;
      partial[static_cast<std::size_t>(b)] = dot_serial(x + i, y + i, std::min(dot_block, n - i));
    }
  });
  double s = 0.0;
  for (float p : partial) s += p;
  return static_cast<float>(s);
}

// ---- gemv ----
//
// A is stored as D (f32, f16 or bf16: 16-bit weights widened as loaded, so memory sees their bytes
// only); x and y are f32.

// y[i, i + R) for row-major A: the R rows share each load of x.
template <int R, DType D>
void gemv_row_block(const elem_t<D>* r, i64 a_rs, i64 K, const float* x, float* y) {
  batch_f32 s[R];
#pragma GCC unroll 8
  for (int u = 0; u < R; ++u) s[u] = batch_f32(0.0f);
  i64 k = 0;
  for (; k + w <= K; k += w) {
    const batch_f32 xv = batch_f32::load_unaligned(x + k);
#pragma GCC unroll 8
    for (int u = 0; u < R; ++u) s[u] = xsimd::fma(load_as<D>(r + u * a_rs + k), xv, s[u]);
  }
  for (int u = 0; u < R; ++u) {
    float t = xsimd::hadd(s[u]);
    for (i64 kk = k; kk < K; ++kk) t += scalar_f32<D>(r[u * a_rs + kk]) * x[kk];
    y[u] = t;
  }
}

// Row-major A (a_cs == 1): eight rows at a time, then four, then one. Eight rows keep eight
// streams from memory in flight where four kept four: 4096 x 4096 on the Xeon, against sgemv, 10
// runs of 7 rounds each way, 1 thread: 0.96-1.09 -> 1.01-1.10; 2 threads, 4 runs: 0.94-1.02 ->
// 0.97-1.18. The gain is a few percent; the machine's phases move it as much.
template <DType D>
void gemv_rows(const elem_t<D>* a, i64 a_rs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  i64 i = i0;
  for (; i + 8 <= i1; i += 8) gemv_row_block<8, D>(a + i * a_rs, a_rs, K, x, y + i);
  for (; i + 4 <= i1; i += 4) gemv_row_block<4, D>(a + i * a_rs, a_rs, K, x, y + i);
  for (; i < i1; ++i) y[i] = dot_serial<D>(a + i * a_rs, x, K);
}

// Column-major A (a_rs == 1): y += x[k] * column k, four columns per pass over a block of y that
// stays in L1, so A is read as contiguous column segments the prefetchers can follow.
template <DType D>
void gemv_cols(const elem_t<D>* a, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  // A block of y (16 KB) stays in L1 while eight columns at a time stream past it: fewer passes
  // over y per column, and each column segment long enough for the prefetchers.
  constexpr i64 row_block = 4096;
  for (i64 ib = i0; ib < i1; ib += row_block) {
    const i64 len = std::min(row_block, i1 - ib);
    float* yb = y + ib;
    for (i64 i = 0; i < len; ++i) yb[i] = 0.0f;
    i64 k = 0;
    for (; k + 8 <= K; k += 8) {
      const elem_t<D>* c[8];
      batch_f32 xv[8];
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        c[u] = a + (k + u) * a_cs + ib;
        xv[u] = batch_f32(x[k + u]);
      }
      i64 i = 0;
      for (; i + w <= len; i += w) {
        batch_f32 y0 = batch_f32::load_unaligned(yb + i), y1(0.0f);
        y0 = xsimd::fma(xv[0], load_as<D>(c[0] + i), y0);
        y1 = xsimd::fma(xv[1], load_as<D>(c[1] + i), y1);
        y0 = xsimd::fma(xv[2], load_as<D>(c[2] + i), y0);
        y1 = xsimd::fma(xv[3], load_as<D>(c[3] + i), y1);
        y0 = xsimd::fma(xv[4], load_as<D>(c[4] + i), y0);
        y1 = xsimd::fma(xv[5], load_as<D>(c[5] + i), y1);
        y0 = xsimd::fma(xv[6], load_as<D>(c[6] + i), y0);
        y1 = xsimd::fma(xv[7], load_as<D>(c[7] + i), y1);
        (y0 + y1).store_unaligned(yb + i);
      }
      for (; i < len; ++i) {
        float t = yb[i];
        for (int u = 0; u < 8; ++u) t += x[k + u] * scalar_f32<D>(c[u][i]);
        yb[i] = t;
      }
    }
    for (; k < K; ++k) {
      const elem_t<D>* c0 = a + k * a_cs + ib;
      const batch_f32 x0(x[k]);
      i64 i = 0;
      for (; i + w <= len; i += w) {
        xsimd::fma(x0, load_as<D>(c0 + i), batch_f32::load_unaligned(yb + i)).store_unaligned(yb + i);
      }
      for (; i < len; ++i) yb[i] += x[k] * scalar_f32<D>(c0[i]);
    }
  }
}

template <DType D>
void gemv_strided(const elem_t<D>* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  for (i64 i = i0; i < i1; ++i) {
    const elem_t<D>* row = a + i * a_rs;
    float s0 = 0.0f, s1 = 0.0f;
    i64 k = 0;
    for (; k + 2 <= K; k += 2) {
      s0 += scalar_f32<D>(row[k * a_cs]) * x[k];
      s1 += scalar_f32<D>(row[(k + 1) * a_cs]) * x[k + 1];
    }
    if (k < K) s0 += scalar_f32<D>(row[k * a_cs]) * x[k];
    y[i] = s0 + s1;
  }
}

// Rows are handed out in units of this many, a multiple of every vector width.
constexpr i64 gemv_row_unit = 64;
// Below this many elements of A per thread the pool's wake-up costs more than it saves.
constexpr i64 gemv_min_work_per_thread = i64{1} << 16;

// Too few rows to share (a handful of long rows): the threads split K instead, in fixed blocks whose
// partial results are added in block order, so y does not depend on the thread count.
constexpr i64 gemv_k_block = 8192;

template <DType D>
void gemv_rows_any(const elem_t<D>* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1);

template <DType D>
void gemv_split_k(i64 M, i64 K, const elem_t<D>* a, i64 a_rs, i64 a_cs, const float* x, float* y, bool threaded) {
  const i64 blocks = (K + gemv_k_block - 1) / gemv_k_block;
  std::vector<float> partial(static_cast<std::size_t>(blocks * M));
  auto run = [&](i64 b0, i64 b1) {
    for (i64 b = b0; b < b1; ++b) {
      const i64 k0 = b * gemv_k_block, len = std::min(gemv_k_block, K - k0);
      gemv_rows_any<D>(a + k0 * a_cs, a_rs, a_cs, len, x + k0, partial.data() + b * M, 0, M);
    }
  };
  if (threaded) {
    parallel_for(blocks, 1, run);
  } else {
    run(0, blocks);
  }
  for (i64 i = 0; i < M; ++i) {
    float s = 0.0f;
    for (i64 b = 0; b < blocks; ++b) s += partial[static_cast<std::size_t>(b * M + i)];
    y[i] = s;
  }
}

template <DType D>
void gemv_rows_any(const elem_t<D>* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  if (a_cs == 1) {
    gemv_rows<D>(a, a_rs, K, x, y, i0, i1);
  } else if (a_rs == 1) {
    gemv_cols<D>(a, a_cs, K, x, y, i0, i1);
  } else {
    gemv_strided<D>(a, a_rs, a_cs, K, x, y, i0, i1);
  }
}

template <DType D>
void gemv_typed(i64 M, i64 K, const elem_t<D>* a, i64 a_rs, i64 a_cs, const float* x, float* y, bool threaded) {
  if (M <= 0) return;
  if (K <= 0) {
    for (i64 i = 0; i < M; ++i) y[i] = 0.0f;
    return;
  }
  auto rows = [&](i64 i0, i64 i1) { gemv_rows_any<D>(a, a_rs, a_cs, K, x, y, i0, i1); };
  // Also on one thread, so that y is the same for every thread count; a block of x stays in L1.
  if (M <= gemv_row_unit && K >= 2 * gemv_k_block && M * K >= 2 * gemv_min_work_per_thread) {
    gemv_split_k<D>(M, K, a, a_rs, a_cs, x, y, threaded);
    return;
  }
  if (!threaded || M * K < 2 * gemv_min_work_per_thread) {
    rows(0, M);
    return;
  }
  if (M <= gemv_row_unit) {
    rows(0, M);
    return;
  }
  const i64 units = (M + gemv_row_unit - 1) / gemv_row_unit;
  const i64 grain = std::max<i64>(1, gemv_min_work_per_thread / (gemv_row_unit * K));
  parallel_for(units, grain, [&](i64 u0, i64 u1) { rows(u0 * gemv_row_unit, std::min(M, u1 * gemv_row_unit)); });
}

}  // namespace

void gemv_impl(i64 M, i64 K, const void* a, DType a_dtype, i64 a_rs, i64 a_cs, const float* x, float* y,
               bool threaded) {
  switch (a_dtype) {
    case DType::f16:
      return gemv_typed<DType::f16>(M, K, static_cast<const half_bits*>(a), a_rs, a_cs, x, y, threaded);
    case DType::bf16:
      return gemv_typed<DType::bf16>(M, K, static_cast<const half_bits*>(a), a_rs, a_cs, x, y, threaded);
    default: return gemv_typed<DType::f32>(M, K, static_cast<const float*>(a), a_rs, a_cs, x, y, threaded);
  }
}

namespace {

void run_gemv(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& p = std::get<GemvParams>(call.params);
  const Tensor& a = call.inputs[0];
  if (dtype_is_quantized(a.dtype())) {
    gemv_quantized(k, call);
    return;
  }
  const i64 M = call.output.numel(), K = call.inputs[1].numel();
  if (M == 0) return;
  // A of any float dtype read in place (16-bit weights widened as loaded); a 16-bit x is widened
  // first (K elements); a 16-bit y is computed in f32 (M elements) and rounded once into place.
  const DType yd = call.output.dtype();
  std::vector<float> xw, yw(yd == DType::f32 ? 0 : static_cast<std::size_t>(M));
  float* y = yd == DType::f32 ? out_f32(call) : yw.data();
  Tensor keep;
  const float* x = nullptr;
  if (call.inputs[1].dtype() == DType::f32) {
    x = contiguous_f32(k, call.inputs[1], keep);
  } else {
    xw.resize(static_cast<std::size_t>(K));
    strided_convert(k, call.inputs[1], reinterpret_cast<std::uint8_t*>(xw.data()), DType::f32);
    x = xw.data();
  }
  gemv_impl(M, K, base_ptr(a), a.dtype(), p.trans ? a.strides()[1] : a.strides()[0],
            p.trans ? a.strides()[0] : a.strides()[1], x, y, true);
  if (yd != DType::f32) k.convert(DType::f32, yd, yw.data(), 1, base_ptr(call.output), M);
}

// 16-bit x or y: read in place, widened as loaded (dot_serial's loads), in the f32 kernel's blocks.
template <DType DX, DType DY>
float dot_typed(const std::uint8_t* xb, const std::uint8_t* yb, i64 n) {
  const auto* x = reinterpret_cast<const elem_t<DX>*>(xb);
  const auto* y = reinterpret_cast<const elem_t<DY>*>(yb);
  if (n <= 2 * dot_block) return dot_serial<DX, DY>(x, y, n);
  const i64 blocks = (n + dot_block - 1) / dot_block;
  std::vector<float> partial(static_cast<std::size_t>(blocks));
  parallel_for(blocks, 4, [&](i64 b0, i64 b1) {
    for (i64 b = b0; b < b1; ++b) {
      const i64 i = b * dot_block;
      partial[static_cast<std::size_t>(b)] = dot_serial<DX, DY>(x + i, y + i, std::min(dot_block, n - i));
    }
  });
  double s = 0.0;
  for (float p : partial) s += p;
  return static_cast<float>(s);
}

template <DType DX>
float dot_typed_x(DType yd, const std::uint8_t* x, const std::uint8_t* y, i64 n) {
  switch (yd) {
    case DType::f16: return dot_typed<DX, DType::f16>(x, y, n);
    case DType::bf16: return dot_typed<DX, DType::bf16>(x, y, n);
    default: return dot_typed<DX, DType::f32>(x, y, n);
  }
}

float dot_16bit(const KernelTable& k, const Tensor& x, const Tensor& y, i64 n) {
  Tensor keep0, keep1;
  const std::uint8_t* xb = contiguous_bytes(k, x, keep0);
  const std::uint8_t* yb = contiguous_bytes(k, y, keep1);
  switch (x.dtype()) {
    case DType::f16: return dot_typed_x<DType::f16>(y.dtype(), xb, yb, n);
    case DType::bf16: return dot_typed_x<DType::bf16>(y.dtype(), xb, yb, n);
    default: return dot_typed_x<DType::f32>(y.dtype(), xb, yb, n);
  }
}

void run_dot(const KernelTable& k, const trine::detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.inputs[1];
  const i64 n = x.numel();
  Tensor keep0, keep1;
  float r = 0.0f;
  if (n > 0 && x.dtype() == DType::f32 && y.dtype() == DType::f32)
    r = dot_kernel(contiguous_f32(k, x, keep0), contiguous_f32(k, y, keep1), n);
  else if (n > 0)
    r = dot_16bit(k, x, y, n);
  if (call.output.dtype() == DType::f32)
    *out_f32(call) = r;
  else
    k.convert(DType::f32, call.output.dtype(), &r, 1, base_ptr(call.output), 1);
}

}  // namespace

void register_gemv(KernelTable& t) {
  t.ops.add(OpKind::gemv, run_gemv);
  t.ops.add(OpKind::dot, run_dot);
}

}  // namespace trine::cpu::TRINE_ISA_NS
