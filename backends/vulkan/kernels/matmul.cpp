// matmul on Vulkan: reads its inputs through their strides (transposes and views cost nothing),
// f32, f16 or bf16 each; matmul_rows.comp for row-contiguous f32 inputs (its _b16 variant where B
// is 16-bit, A any), the tiled matmul.comp for the rest.
#include <string>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// Every batch dim of the output (up to Shape::max_rank - 2 = 6), right-aligned in bdims: the
// shaders walk all six, so any rank runs without merging or splitting dims (112 bytes, within the
// 128 every Vulkan device gives push constants).
constexpr int k_max_batch_rank = Shape::max_rank - 2;
struct MatmulPush {
  std::uint32_t M, N, K, batch, a_off, b_off, a_rs, a_cs, b_rs, b_cs;
  std::uint32_t bdims[k_max_batch_rank], a_bs[k_max_batch_rank], b_bs[k_max_batch_rank];
};
static_assert(sizeof(MatmulPush) <= 128, "matmul.comp's push constants fit in 128 bytes");
constexpr std::uint32_t k_tile = 32;        // matmul.comp's output tile
constexpr std::uint32_t k_rows_rm = 16;     // matmul_rows.comp: rows per workgroup (at most),
constexpr std::uint32_t k_rows_lanes = 64;  // and its invocations (its local_size_x)

// t's stride for output batch dim i of `rank` batch dims (0 where t broadcasts).
std::uint32_t batch_stride(const Tensor& t, int i, int rank) {
  const int tb = t.rank() - 2, j = i - (rank - tb);
  if (j < 0 || t.shape()[j] == 1) return 0;
  return static_cast<std::uint32_t>(t.strides()[j]);
}

// A transposed operand (trans_b on a weight stored [N, K], PyTorch's layout, or a transposed view;
// trans_a) has strided rows, which kept the call off matmul_rows.comp and on the tiled shader: on
// lavapipe 1x512x512 with trans_b took 28.4 ms against 2.5 untransposed, 1x4096x4096 1.81 s against
// 95 ms, 64x512x512 59 ms against 13. So one row of A against a B with strided rows (a decode
// step's projection) runs as the gemv it is, reduce.comp (f32) or gemv_b16.comp (16-bit weights:
// 1.79 s -> 0.16 at 1x4096x4096 f16, 0.07 untransposed) over the weight's rows read once; more
// rows, where the rows shader takes the dtypes and N is whole vec4s, first copy the transposed
// operand contiguous into a temporary (one pass over it, f32 or 16-bit as stored) and run
// matmul_rows.
struct Plan {
  bool gemv = false;      // y[n] = sum over k of W[n, k] A[k], W = b_view: reduce.comp, gemv_b16.comp
  bool copy_a = false;    // A's [.., M, K] view copied contiguous first
  bool copy_b = false;    // B's [.., K, N] view copied contiguous first
  Tensor a_view, b_view;  // the logical [.., M, K] and [.., K, N] views (copy_a, copy_b); gemv's W
};

Plan plan_of(const detail::OpCall& call) {
  Plan pl;
  const Tensor &a = call.inputs[0], &b = call.inputs[1], &y = call.output;
  const auto& mp = std::get<MatmulParams>(call.params);
  if (y.numel() == 0) return pl;
  const int ar = a.rank(), br = b.rank(), yr = y.rank();
  const std::int64_t M = y.shape()[yr - 2], N = y.shape()[yr - 1];
  if ((mp.trans_a ? a.shape()[ar - 2] : a.shape()[ar - 1]) == 0) return pl;  // K = 0: zeros, nothing to copy
  const bool f32 = a.dtype() == DType::f32 && b.dtype() == DType::f32;
  const bool a_rows = (mp.trans_a ? a.strides()[ar - 2] : a.strides()[ar - 1]) == 1;
  const bool b_rows = (mp.trans_b ? b.strides()[br - 2] : b.strides()[br - 1]) == 1;
  if (a_rows && b_rows) return pl;  // matmul_rows or the tiled shader, as before
  if (M == 1 && !b_rows && y.numel() == N && y.is_contiguous()) {  // (a strided row of A alone: copy_a)
    const Tensor w = mp.trans_b ? b : b.transpose(-2, -1);  // [.., N, K]: w itself for x w^T as either spelling
    if (f32 || gemv_b16_takes(w, a, y)) {
      pl.gemv = true;
      pl.b_view = w;
      return pl;
    }
  }
  const bool b16 = dtype_is_16bit(b.dtype());
  if (!(b16 || f32) || N % 4 != 0 || y.offset() != 0) return pl;
  pl.copy_a = !a_rows;
  pl.copy_b = !b_rows;
  pl.a_view = mp.trans_a ? a.transpose(-2, -1) : a;
  pl.b_view = mp.trans_b ? b.transpose(-2, -1) : b;
  return pl;
}

// The batch stride, for output batch dim i of `rank`, of a contiguous tensor of `shape` (0 where it
// broadcasts).
std::uint32_t contiguous_batch_stride(const Shape& shape, int i, int rank) {
  const int tb = shape.rank() - 2, j = i - (rank - tb);
  if (j < 0 || shape[j] == 1) return 0;
  std::uint64_t st = 1;
  for (int d = j + 1; d < shape.rank(); ++d) st *= static_cast<std::uint64_t>(shape[d]);
  return static_cast<std::uint32_t>(st);
}

// Any input dtypes, any rank; an f32 result (a 16-bit one is written through an f32 temporary and a
// cast: backends/widen.hpp).
// Quantized weights: matmul_quant.comp (kernels/matmul_quant.cpp).
bool supports_matmul(const detail::OpCall& call) {
  if (detail::quantized_input(call)) return supports_quantized(call);
  return call.output.dtype() == DType::f32;
}

void limits_matmul(Limits& l, const detail::OpCall& call) {
  if (detail::quantized_input(call)) return limits_quantized(l, call);
  const Tensor& y = call.output;
  if (y.numel() == 0) return;  // M, N or a batch dim is 0
  const Tensor& a = call.inputs[0];
  const std::int64_t k =
      std::get<MatmulParams>(call.params).trans_a ? a.shape()[a.rank() - 2] : a.shape()[a.rank() - 1];
  const Plan pl = plan_of(call);
  if (pl.gemv) {
    if (dtype_is_16bit(pl.b_view.dtype())) return limits_gemv_b16(l, pl.b_view, a, y);
    const std::uint64_t rb = l.contiguous_f32(pl.b_view, "input 1"), ra = l.contiguous_f32(a, "input 0");
    const auto n = static_cast<std::uint32_t>(y.shape()[y.rank() - 1]);
    return limits_reduction(l, rb, ra, y, n, static_cast<std::uint32_t>(k), 1, 3);
  }
  // matmul.comp loops over K once per output element.
  l.loop(static_cast<std::uint64_t>(k), [&] { return "an inner dimension K of " + std::to_string(k); });
  if (pl.copy_a)
    l.bind(l.contiguous(pl.a_view, "input 0"), "input 0");
  else
    l.bind(a, "input 0");
  if (pl.copy_b)
    l.bind(l.contiguous(pl.b_view, "input 1"), "input 1");
  else
    l.bind(call.inputs[1], "input 1");
  l.bind(y, "the output");
}

void record_matmul(Recorder& rec, const detail::OpCall& call) {
  if (detail::quantized_input(call)) return record_quantized(rec, call);
  const Tensor &a = call.inputs[0], &b = call.inputs[1], &y = call.output;
  const auto& mp = std::get<MatmulParams>(call.params);
  const int ar = a.rank(), br = b.rank();
  MatmulPush p{};
  p.M = static_cast<std::uint32_t>(y.shape()[y.rank() - 2]);
  p.N = static_cast<std::uint32_t>(y.shape()[y.rank() - 1]);
  p.K = static_cast<std::uint32_t>(mp.trans_a ? a.shape()[ar - 2] : a.shape()[ar - 1]);
  const auto as = a.strides(), bs = b.strides();
  p.a_rs = static_cast<std::uint32_t>(mp.trans_a ? as[ar - 1] : as[ar - 2]);
  p.a_cs = static_cast<std::uint32_t>(mp.trans_a ? as[ar - 2] : as[ar - 1]);
  p.b_rs = static_cast<std::uint32_t>(mp.trans_b ? bs[br - 1] : bs[br - 2]);
  p.b_cs = static_cast<std::uint32_t>(mp.trans_b ? bs[br - 2] : bs[br - 1]);
  TensorRef ra = ref_of(a), rb = ref_of(b);
  const TensorRef ry = ref_of(y);
  p.a_off = ra.offset, p.b_off = rb.offset;
  const Plan pl = plan_of(call);
  if (pl.gemv) {
    if (dtype_is_16bit(pl.b_view.dtype())) return record_gemv_b16(rec, pl.b_view, a, y);
    const TensorRef w = contiguous_f32(rec, pl.b_view), x = contiguous_f32(rec, a);
    return record_reduction(rec, w, &x, ry, p.N, p.K, 1, 3);
  }
  const int rank = y.rank() - 2;
  p.batch = 1;
  for (int i = 0; i < k_max_batch_rank; ++i) p.bdims[i] = 1;
  for (int i = 0; i < rank; ++i) {
    const int slot = k_max_batch_rank - rank + i;
    p.bdims[slot] = static_cast<std::uint32_t>(y.shape()[i]);
    p.a_bs[slot] = batch_stride(a, i, rank);
    p.b_bs[slot] = batch_stride(b, i, rank);
    p.batch *= p.bdims[slot];
  }
  if (pl.copy_a) {
    ra = contiguous(rec, pl.a_view);
    p.a_off = ra.offset, p.a_rs = p.K, p.a_cs = 1;
    for (int i = 0; i < rank; ++i)
      p.a_bs[k_max_batch_rank - rank + i] = contiguous_batch_stride(pl.a_view.shape(), i, rank);
  }
  if (pl.copy_b) {
    rb = contiguous(rec, pl.b_view);
    p.b_off = rb.offset, p.b_rs = p.N, p.b_cs = 1;
    for (int i = 0; i < rank; ++i)
      p.b_bs[k_max_batch_rank - rank + i] = contiguous_batch_stride(pl.b_view.shape(), i, rank);
  }
  if (p.M == 0 || p.N == 0 || p.batch == 0) return;
  // Row-contiguous f32 A and B whose rows are whole vec4s (the common case: no transposes or column
  // views): matmul_rows.comp, without shared memory or barriers. RM rows per workgroup (fewer when
  // M is small: rows past M would be computed and thrown away), CN vec4 columns per invocation.
  // A 16-bit B (a decode's weights) takes the same path as matmul_rows_b16, reading four columns
  // in two words, A of any dtype.
  const bool b16 = dtype_is_16bit(b.dtype());
  bool rows = (b16 || (a.dtype() == DType::f32 && b.dtype() == DType::f32)) && p.a_cs == 1 && p.b_cs == 1 &&
              p.N % 4 == 0 && p.b_off % 4 == 0 && p.b_rs % 4 == 0 && ry.offset == 0;
  for (int i = 0; i < k_max_batch_rank; ++i) rows = rows && p.b_bs[i] % 4 == 0;
  if (rows) {
    std::uint32_t rm = 1;
    while (rm < k_rows_rm && rm < p.M) rm *= 2;
    const std::uint32_t cols4 = p.N / 4, cn = cols4 > k_rows_lanes ? 2 : 1;
    const std::uint64_t tiles =
        std::uint64_t{(p.M + rm - 1) / rm} * ((cols4 + k_rows_lanes * cn - 1) / (k_rows_lanes * cn));
    if (b16)
      rec.dispatch("matmul_rows_b16", {bind_in(ra), bind_in(rb), bind_out(ry)}, &p, sizeof(p), tiles * p.batch,
                   {rm, cn, dtype_code(a.dtype()), dtype_code(b.dtype())});
    else
      rec.dispatch("matmul_rows", {bind_in(ra), bind_in(rb), bind_out(ry)}, &p, sizeof(p), tiles * p.batch, {rm, cn});
    return;
  }
  const std::uint64_t tiles = std::uint64_t{(p.M + k_tile - 1) / k_tile} * ((p.N + k_tile - 1) / k_tile);
  rec.dispatch("matmul", {bind_in(ra), bind_in(rb), bind_out(ry)}, &p, sizeof(p), tiles * p.batch,
               {dtype_code(a.dtype()), dtype_code(b.dtype())});
}

}  // namespace

void register_matmul(VulkanOps& r) { r.add(OpKind::matmul, {supports_matmul, limits_matmul, record_matmul}); }

}  // namespace trine::vulkan
