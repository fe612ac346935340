// Matrix products: batched strided GEMM on the BLIS-style machinery in gemm/, with f16 and bf16
// operands widened while packing (bf16 pairs on the CPU's bf16 dot products: matmul_bf16.cpp), and
// the M = 1 and N = 1 shapes through gemv (gemv.cpp).
#include "backends/cpu_simd/isa.hpp"

#include <cstring>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/gemm/driver.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

constexpr i64 w = vec_width;

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
    default: break;  // the op table refuses i32 operands; quantized weights go to matmul_quant.cpp
  }
  TRINE_ASSERT(!"an i32 or quantized operand", "[matmul] the kernel was handed an i32 or quantized operand");
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
    const auto* bm = static_cast<const std::uint8_t*>(g.b) + b_offset(g, b) * static_cast<i64>(dtype_size(g.b_dtype));
    gemv_impl(g.N, g.K, bm, g.b_dtype, g.b_cs, g.b_rs, x, g.c + b * g.c_bs, threaded);
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
    const auto* am = static_cast<const std::uint8_t*>(g.a) + a_offset(g, b) * static_cast<i64>(dtype_size(g.a_dtype));
    gemv_impl(g.M, g.K, am, g.a_dtype, g.a_rs, g.a_cs, x, y, threaded);
    if (y != c) {
      for (i64 i = 0; i < g.M; ++i) c[i * g.c_rs] = y[i];
    }
  });
}

void gemm_kernel(const GemmArgs& g) {
  if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return;
  // One row or one column (a decode step's x times the weights): a GEMV, memory-bound, which reads
  // 16-bit weights in place (widened as loaded) rather than packing them to f32 first, which made
  // them 15-135x slower than f32 weights (Zen 4, M = 1 with PyTorch's [out, in] layout).
  if (g.K > 0 && g.M == 1) {
    gemm_row_vector(g);
    return;
  }
  if (g.K > 0 && g.N == 1) {
    gemm_col_vector(g);
    return;
  }
  if (g.a_dtype == DType::bf16 && g.b_dtype == DType::bf16 && gemm_bf16_native()) {
    gemm_bf16(g);
    return;
  }
  for_each_batch(g.batch, g.M * g.N * g.K, [&](i64 b, bool threaded, std::vector<float>&) {
    const StridedMatrix am{g.a, g.a_dtype, a_offset(g, b), g.a_rs, g.a_cs};
    const StridedMatrix bm{g.b, g.b_dtype, b_offset(g, b), g.b_rs, g.b_cs};
    auto pack_a = [&am](auto rows, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
      pack_a_strided<decltype(rows)::value>(am, i0, m, k0, kc, dst);
    };
    auto pack_b = [&bm](i64 k0, i64 kc, i64 j0, i64 n, float* dst) { pack_b_strided(bm, k0, kc, j0, n, dst); };
    gemm_run(g.M, g.N, g.K, pack_a, pack_b, g.c + b * g.c_bs, g.c_rs, threaded ? thread_count() : 1, true);
  });
}

void run_matmul(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& p = std::get<MatmulParams>(call.params);
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  if (dtype_is_quantized(b.dtype())) {
    matmul_quantized(k, call, p.trans_a);
    return;
  }
  const Shape& os = call.output.shape();
  const int orank = os.rank();
  GemmArgs g;
  g.M = os[orank - 2];
  g.N = os[orank - 1];
  g.K = p.trans_a ? a.dim(-2) : a.dim(-1);
  g.batch = 1;
  for (int i = 0; i < orank - 2; ++i) g.batch *= os[i];
  if (call.output.numel() == 0) return;
  if (g.K == 0) {  // zeros: all bits clear in every float dtype
    std::memset(base_ptr(call.output), 0,
                static_cast<std::size_t>(call.output.numel()) * dtype_size(call.output.dtype()));
    return;
  }
  // A 16-bit result: C computed in f32 and rounded once after (M N elements against M N K work).
  const F32Result result(k, call);
  float* c = result.data();
  // Batch offsets: each operand's batch dims broadcast against the output's.
  std::vector<i64> a_off(static_cast<std::size_t>(g.batch)), b_off(static_cast<std::size_t>(g.batch));
  const int nb = orank - 2;
  for (i64 bi = 0; bi < g.batch; ++bi) {
    i64 rem = bi, ao = 0, bo = 0;
    for (int d = nb - 1; d >= 0; --d) {
      i64 idx = rem % os[d];
      rem /= os[d];
      int da = d - (nb - (a.rank() - 2));
      int db = d - (nb - (b.rank() - 2));
      if (da >= 0 && a.shape()[da] != 1) ao += idx * a.strides()[da];
      if (db >= 0 && b.shape()[db] != 1) bo += idx * b.strides()[db];
    }
    a_off[static_cast<std::size_t>(bi)] = ao;
    b_off[static_cast<std::size_t>(bi)] = bo;
  }
  g.a = base_ptr(a);
  g.a_dtype = a.dtype();
  g.a_rs = p.trans_a ? a.strides()[a.rank() - 1] : a.strides()[a.rank() - 2];
  g.a_cs = p.trans_a ? a.strides()[a.rank() - 2] : a.strides()[a.rank() - 1];
  g.a_batch_offsets = a_off.data();
  g.b = base_ptr(b);
  g.b_dtype = b.dtype();
  g.b_rs = p.trans_b ? b.strides()[b.rank() - 1] : b.strides()[b.rank() - 2];
  g.b_cs = p.trans_b ? b.strides()[b.rank() - 2] : b.strides()[b.rank() - 1];
  g.b_batch_offsets = b_off.data();
  g.c = c;
  g.c_rs = g.N;
  g.c_bs = g.M * g.N;
  gemm_kernel(g);
  result.round();
}

}  // namespace

void register_matmul(KernelTable& t) {
  t.ops.add(OpKind::matmul, run_matmul);
  t.bf16_gemm_kind = gemm_bf16_kind;
}

}  // namespace trine::cpu::TRINE_ISA_NS
