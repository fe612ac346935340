// cpu_simd GEMM family: batched strided GEMM on the BLIS-style machinery in gemm/, GEMV, dot.
#include "backends/cpu_simd/isa.hpp"

#include <vector>

#include "backends/cpu_simd/gemm/driver.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

// ---- dot ----

// Four independent accumulators hide the FMA latency; the loop is bound by its two loads.
float dot_serial(const float* x, const float* y, i64 n) {
  batch_f32 s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  i64 i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    s0 = xsimd::fma(batch_f32::load_unaligned(x + i), batch_f32::load_unaligned(y + i), s0);
    s1 = xsimd::fma(batch_f32::load_unaligned(x + i + w), batch_f32::load_unaligned(y + i + w), s1);
    s2 = xsimd::fma(batch_f32::load_unaligned(x + i + 2 * w), batch_f32::load_unaligned(y + i + 2 * w), s2);
    s3 = xsimd::fma(batch_f32::load_unaligned(x + i + 3 * w), batch_f32::load_unaligned(y + i + 3 * w), s3);
  }
  for (; i + w <= n; i += w) s0 = xsimd::fma(batch_f32::load_unaligned(x + i), batch_f32::load_unaligned(y + i), s0);
  float s = xsimd::hadd((s0 + s1) + (s2 + s3));
  for (; i < n; ++i) s += x[i] * y[i];
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

// y[i, i + R) for row-major A: the R rows share each load of x.
template <int R>
void gemv_row_block(const float* r, i64 a_rs, i64 K, const float* x, float* y) {
  batch_f32 s[R];
#pragma GCC unroll 8
  for (int u = 0; u < R; ++u) s[u] = batch_f32(0.0f);
  i64 k = 0;
  for (; k + w <= K; k += w) {
    const batch_f32 xv = batch_f32::load_unaligned(x + k);
#pragma GCC unroll 8
    for (int u = 0; u < R; ++u) s[u] = xsimd::fma(batch_f32::load_unaligned(r + u * a_rs + k), xv, s[u]);
  }
  for (int u = 0; u < R; ++u) {
    float t = xsimd::hadd(s[u]);
    for (i64 kk = k; kk < K; ++kk) t += r[u * a_rs + kk] * x[kk];
    y[u] = t;
  }
}

// Row-major A (a_cs == 1): eight rows at a time, then four, then one. Eight rows keep eight
// streams from memory in flight where four kept four: 4096 x 4096 on the Xeon, against sgemv, 10
// runs of 7 rounds each way, 1 thread: 0.96-1.09 -> 1.01-1.10; 2 threads, 4 runs: 0.94-1.02 ->
// 0.97-1.18. The gain is a few percent; the machine's phases move it as much.
void gemv_rows(const float* a, i64 a_rs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  i64 i = i0;
  for (; i + 8 <= i1; i += 8) gemv_row_block<8>(a + i * a_rs, a_rs, K, x, y + i);
  for (; i + 4 <= i1; i += 4) gemv_row_block<4>(a + i * a_rs, a_rs, K, x, y + i);
  for (; i < i1; ++i) y[i] = dot_serial(a + i * a_rs, x, K);
}

// Column-major A (a_rs == 1): y += x[k] * column k, four columns per pass over a block of y that
// stays in L1, so A is read as contiguous column segments the prefetchers can follow.
void gemv_cols(const float* a, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  // A block of y (16 KB) stays in L1 while eight columns at a time stream past it: fewer passes
  // over y per column, and each column segment long enough for the prefetchers.
  constexpr i64 row_block = 4096;
  for (i64 ib = i0; ib < i1; ib += row_block) {
    const i64 len = std::min(row_block, i1 - ib);
    float* yb = y + ib;
    for (i64 i = 0; i < len; ++i) yb[i] = 0.0f;
    i64 k = 0;
    for (; k + 8 <= K; k += 8) {
      const float* c[8];
      batch_f32 xv[8];
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        c[u] = a + (k + u) * a_cs + ib;
        xv[u] = batch_f32(x[k + u]);
      }
      i64 i = 0;
      for (; i + w <= len; i += w) {
        batch_f32 y0 = batch_f32::load_unaligned(yb + i), y1(0.0f);
        y0 = xsimd::fma(xv[0], batch_f32::load_unaligned(c[0] + i), y0);
        y1 = xsimd::fma(xv[1], batch_f32::load_unaligned(c[1] + i), y1);
        y0 = xsimd::fma(xv[2], batch_f32::load_unaligned(c[2] + i), y0);
        y1 = xsimd::fma(xv[3], batch_f32::load_unaligned(c[3] + i), y1);
        y0 = xsimd::fma(xv[4], batch_f32::load_unaligned(c[4] + i), y0);
        y1 = xsimd::fma(xv[5], batch_f32::load_unaligned(c[5] + i), y1);
        y0 = xsimd::fma(xv[6], batch_f32::load_unaligned(c[6] + i), y0);
        y1 = xsimd::fma(xv[7], batch_f32::load_unaligned(c[7] + i), y1);
        (y0 + y1).store_unaligned(yb + i);
      }
      for (; i < len; ++i) {
        float t = yb[i];
        for (int u = 0; u < 8; ++u) t += x[k + u] * c[u][i];
        yb[i] = t;
      }
    }
    for (; k < K; ++k) {
      const float* c0 = a + k * a_cs + ib;
      const batch_f32 x0(x[k]);
      i64 i = 0;
      for (; i + w <= len; i += w) {
        xsimd::fma(x0, batch_f32::load_unaligned(c0 + i), batch_f32::load_unaligned(yb + i)).store_unaligned(yb + i);
      }
      for (; i < len; ++i) yb[i] += x[k] * c0[i];
    }
  }
}

void gemv_strided(const float* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  for (i64 i = i0; i < i1; ++i) {
    const float* row = a + i * a_rs;
    float s0 = 0.0f, s1 = 0.0f;
    i64 k = 0;
    for (; k + 2 <= K; k += 2) {
      s0 += row[k * a_cs] * x[k];
      s1 += row[(k + 1) * a_cs] * x[k + 1];
    }
    if (k < K) s0 += row[k * a_cs] * x[k];
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

void gemv_rows_any(const float* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1);

void gemv_split_k(i64 M, i64 K, const float* a, i64 a_rs, i64 a_cs, const float* x, float* y, bool threaded) {
  const i64 blocks = (K + gemv_k_block - 1) / gemv_k_block;
  std::vector<float> partial(static_cast<std::size_t>(blocks * M));
  auto run = [&](i64 b0, i64 b1) {
    for (i64 b = b0; b < b1; ++b) {
      const i64 k0 = b * gemv_k_block, len = std::min(gemv_k_block, K - k0);
      gemv_rows_any(a + k0 * a_cs, a_rs, a_cs, len, x + k0, partial.data() + b * M, 0, M);
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

void gemv_rows_any(const float* a, i64 a_rs, i64 a_cs, i64 K, const float* x, float* y, i64 i0, i64 i1) {
  if (a_cs == 1) {
    gemv_rows(a, a_rs, K, x, y, i0, i1);
  } else if (a_rs == 1) {
    gemv_cols(a, a_cs, K, x, y, i0, i1);
  } else {
    gemv_strided(a, a_rs, a_cs, K, x, y, i0, i1);
  }
}

void gemv_impl(i64 M, i64 K, const float* a, i64 a_rs, i64 a_cs, const float* x, float* y, bool threaded) {
  if (M <= 0) return;
  if (K <= 0) {
    for (i64 i = 0; i < M; ++i) y[i] = 0.0f;
    return;
  }
  auto rows = [&](i64 i0, i64 i1) { gemv_rows_any(a, a_rs, a_cs, K, x, y, i0, i1); };
  // Also on one thread, so that y is the same for every thread count; a block of x stays in L1.
  if (M <= gemv_row_unit && K >= 2 * gemv_k_block && M * K >= 2 * gemv_min_work_per_thread) {
    gemv_split_k(M, K, a, a_rs, a_cs, x, y, threaded);
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

void gemv_kernel(const GemvArgs& g) { gemv_impl(g.M, g.K, g.a, g.a_rs, g.a_cs, g.x, g.y, true); }

// ---- gemm ----

// n elements of any dtype at base + offset + i*stride, as contiguous f32.
void gather_f32(const void* base, DType dtype, i64 offset, i64 stride, i64 n, float* dst) {
  switch (dtype) {
    case DType::f32:
      for (i64 i = 0; i < n; ++i) dst[i] = load_as_f32<DType::f32>(base, offset + i * stride);
      return;
    case DType::f16:
      for (i64 i = 0; i < n; ++i) dst[i] = load_as_f32<DType::f16>(base, offset + i * stride);
      return;
    case DType::bf16:
      for (i64 i = 0; i < n; ++i) dst[i] = load_as_f32<DType::bf16>(base, offset + i * stride);
      return;
  }
}

i64 a_offset(const GemmArgs& g, i64 b) { return g.a_batch_offsets ? g.a_batch_offsets[b] : 0; }
i64 b_offset(const GemmArgs& g, i64 b) { return g.b_batch_offsets ? g.b_batch_offsets[b] : 0; }

// Runs item(b, threaded, scratch) for every batch entry: over the batch on the pool when that
// keeps every thread busy, otherwise one entry at a time with the threads inside it.
template <class Item>
void for_each_batch(i64 batch, i64 work_per_item, const Item& item) {
  const i64 threads = thread_count();
  const bool over_batch = threads > 1 && batch >= threads &&
                          (batch % threads == 0 || batch >= 4 * threads || work_per_item < gemm_min_work_per_thread);
  if (over_batch) {
    parallel_for(batch, 1, [&](i64 b0, i64 b1) {
      std::vector<float> scratch;
      for (i64 b = b0; b < b1; ++b) item(b, false, scratch);
    });
  } else {
    std::vector<float> scratch;
    for (i64 b = 0; b < batch; ++b) item(b, true, scratch);
  }
}

// M == 1 (a decode step): row vector times B is B^T x, a GEMV, which sgemm shapes waste.
void gemm_row_vector(const GemmArgs& g) {
  for_each_batch(g.batch, g.N * g.K, [&](i64 b, bool threaded, std::vector<float>& xbuf) {
    const float* x = static_cast<const float*>(g.a) + a_offset(g, b);
    if (g.a_dtype != DType::f32 || g.a_cs != 1) {
      xbuf.resize(static_cast<std::size_t>(g.K));
      gather_f32(g.a, g.a_dtype, a_offset(g, b), g.a_cs, g.K, xbuf.data());
      x = xbuf.data();
    }
    const float* bm = static_cast<const float*>(g.b) + b_offset(g, b);
    gemv_impl(g.N, g.K, bm, g.b_cs, g.b_rs, x, g.c + b * g.c_bs, threaded);
  });
}

// N == 1: A times a column vector.
void gemm_col_vector(const GemmArgs& g) {
  for_each_batch(g.batch, g.M * g.K, [&](i64 b, bool threaded, std::vector<float>& buf) {
    const bool gather_x = g.b_dtype != DType::f32 || g.b_rs != 1;
    buf.resize(static_cast<std::size_t>((gather_x ? g.K : 0) + (g.c_rs != 1 ? g.M : 0)));
    const float* x = static_cast<const float*>(g.b) + b_offset(g, b);
    if (gather_x) {
      gather_f32(g.b, g.b_dtype, b_offset(g, b), g.b_rs, g.K, buf.data());
      x = buf.data();
    }
    float* c = g.c + b * g.c_bs;
    float* y = g.c_rs == 1 ? c : buf.data() + (gather_x ? g.K : 0);
    const float* am = static_cast<const float*>(g.a) + a_offset(g, b);
    gemv_impl(g.M, g.K, am, g.a_rs, g.a_cs, x, y, threaded);
    if (y != c) {
      for (i64 i = 0; i < g.M; ++i) c[i * g.c_rs] = y[i];
    }
  });
}

void gemm_kernel(const GemmArgs& g) {
  if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return;
  if (g.a_dtype == DType::bf16 && g.b_dtype == DType::bf16 && gemm_bf16_native()) {
    gemm_bf16(g);
    return;
  }
  if (g.K > 0 && g.M == 1 && g.b_dtype == DType::f32) {
    gemm_row_vector(g);
    return;
  }
  if (g.K > 0 && g.N == 1 && g.a_dtype == DType::f32) {
    gemm_col_vector(g);
    return;
  }
  for_each_batch(g.batch, g.M * g.N * g.K, [&](i64 b, bool threaded, std::vector<float>&) {
    const StridedMatrix am{g.a, g.a_dtype, a_offset(g, b), g.a_rs, g.a_cs};
    const StridedMatrix bm{g.b, g.b_dtype, b_offset(g, b), g.b_rs, g.b_cs};
    auto pack_a = [&am](auto rows, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
      pack_a_strided<decltype(rows)::value>(am, i0, m, k0, kc, dst);
    };
    auto pack_b = [&bm](i64 k0, i64 kc, i64 j0, i64 n, float* dst) { pack_b_strided(bm, k0, kc, j0, n, dst); };
    gemm_run(g.M, g.N, g.K, pack_a, pack_b, g.c + b * g.c_bs, g.c_rs, threaded ? thread_count() : 1);
  });
}

}  // namespace

void register_gemm(KernelTable& t) {
  t.gemm = gemm_kernel;
  t.gemv = gemv_kernel;
  t.dot = dot_kernel;
  t.bf16_gemm_kind = gemm_bf16_kind;
}

}  // namespace trine::cpu::TRINE_ISA_NS
