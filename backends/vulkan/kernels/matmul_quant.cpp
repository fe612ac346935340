// Quantized weights on Vulkan (issue 29): matmul(x, w) with w [N, K] in q8_0, q4_0, q4_k, q5_k or
// q6_k blocks, and gemv(w, x), through matmul_quant.comp (a workgroup per weight row and one or
// four rows of x: gemv, decode steps), or from 8 rows of x through matmul_quant_tiles.comp (32 x 32
// tiles of the result, the weights dequantized into shared memory once per 32 rows of x). Both
// read the blocks in place. kernels/matmul.cpp and kernels/gemv.cpp route their quantized calls here.
#include <limits>
#include <string>

#include "backends/vulkan/ops.hpp"
#include "trine/quant.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_quant_group = 64;  // matmul_quant.comp's invocations
constexpr std::uint32_t k_quant_rows = 4;    // rows of x per workgroup, when there are that many
constexpr std::uint64_t k_tiles_from = 8;    // rows of x from which matmul_quant_tiles.comp runs the call
constexpr std::uint64_t k_tile = 32;         // its tile: rows of x, rows of w, weights per step

// The call's pieces: x (its logical [rows, K] through the strides below once contiguous), w, y.
struct QuantCall {
  const Tensor* x;
  const Tensor* w;
  bool trans_a = false;
  std::uint64_t n = 0, k = 0, rows = 0, m = 1;
};

QuantCall pieces(const detail::OpCall& call) {
  QuantCall q{};
  if (call.op == OpKind::gemv) {
    q.w = &call.inputs[0];
    q.x = &call.inputs[1];
    q.rows = 1;
  } else {
    q.x = &call.inputs[0];
    q.w = &call.inputs[1];
    q.trans_a = std::get<MatmulParams>(call.params).trans_a;
  }
  q.n = static_cast<std::uint64_t>(q.w->shape()[0]);
  q.k = static_cast<std::uint64_t>(q.w->shape()[1]);
  if (call.op == OpKind::matmul) {
    const Tensor& x = *q.x;
    q.m = static_cast<std::uint64_t>(q.trans_a ? x.shape()[x.rank() - 1] : x.shape()[x.rank() - 2]);
    q.rows = q.k ? static_cast<std::uint64_t>(x.numel()) / q.k : 0;
  }
  return q;
}

std::uint32_t format_code(DType t) { return static_cast<std::uint32_t>(quant::format_of(t)); }

std::uint32_t rows_per_group(std::uint64_t rows) { return rows >= k_quant_rows ? k_quant_rows : 1; }

bool tiled(const QuantCall& q) { return q.rows >= k_tiles_from; }

std::uint64_t groups(const QuantCall& q) {
  if (tiled(q)) return ((q.n + k_tile - 1) / k_tile) * ((q.rows + k_tile - 1) / k_tile);
  const std::uint32_t r = rows_per_group(q.rows);
  return q.n * ((q.rows + r - 1) / r);
}

// Each invocation's loop along K: units of 32 weights a workgroup's width apart, or (tiles) every
// unit, each with its 32 steps of the tile's products.
std::uint64_t unit_loop(const QuantCall& q) {
  if (tiled(q)) return q.k / k_tile * (k_tile + 1);
  return (q.k / 32 + k_quant_group - 1) / k_quant_group;
}

std::uint64_t weight_bytes_before(const Tensor& w) {
  const quant::FormatInfo fi = quant::info(quant::format_of(w.dtype()));
  return static_cast<std::uint64_t>(w.offset()) / fi.block_elems * fi.block_bytes;
}

struct QuantPush {
  std::uint32_t n, k, rows, m, w_off, row_bytes, x_off, x_batch, x_row, x_col, y_off;
};

}  // namespace

bool supports_quantized(const detail::OpCall& call) {
  if (!detail::quantized_input(call)) return false;
  const QuantCall q = pieces(call);
  const Tensor& y = call.output;
  if (q.x->dtype() != DType::f32 || y.dtype() != DType::f32 || !y.is_contiguous() || !q.w->is_contiguous())
    return false;
  // the shader's indices are 32-bit
  constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
  return q.rows * q.n <= u32 - static_cast<std::uint64_t>(y.offset()) && q.rows * q.k <= u32 &&
         weight_bytes_before(*q.w) + dtype_bytes(q.w->dtype(), static_cast<std::int64_t>(q.n * q.k)) <= u32;
}

void limits_quantized(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const QuantCall q = pieces(call);
  const std::uint64_t rx = l.contiguous_f32(*q.x, "the activations");
  l.bind(*q.w, "the quantized weights");
  l.bind(rx, "the activations");
  l.bind(call.output, "the output");
  l.loop(unit_loop(q), [&] { return "a row of " + std::to_string(q.k) + " quantized weights"; });
}

void record_quantized(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const QuantCall q = pieces(call);
  const TensorRef rx = contiguous_f32(rec, *q.x), rw = ref_of(*q.w), ry = ref_of(call.output);
  QuantPush p{};
  p.n = static_cast<std::uint32_t>(q.n);
  p.k = static_cast<std::uint32_t>(q.k);
  p.rows = static_cast<std::uint32_t>(q.rows);
  p.m = static_cast<std::uint32_t>(q.m);
  p.w_off = static_cast<std::uint32_t>(weight_bytes_before(*q.w));
  p.row_bytes = static_cast<std::uint32_t>(dtype_bytes(q.w->dtype(), static_cast<std::int64_t>(q.k)));
  p.x_off = rx.offset;
  // x contiguous: [..., M, K] rows K apart; transposed ([..., K, M]) a row is a column, M apart
  p.x_batch = static_cast<std::uint32_t>(q.m * q.k);
  p.x_row = static_cast<std::uint32_t>(q.trans_a ? 1 : q.k);
  p.x_col = static_cast<std::uint32_t>(q.trans_a ? q.m : 1);
  p.y_off = ry.offset;
  if (tiled(q)) {
    rec.dispatch("matmul_quant_tiles", {bind_in(rw), bind_in(rx), bind_out(ry)}, &p, sizeof(p), groups(q),
                 {format_code(q.w->dtype())});
  } else {
    rec.dispatch("matmul_quant", {bind_in(rw), bind_in(rx), bind_out(ry)}, &p, sizeof(p), groups(q),
                 {k_quant_group, format_code(q.w->dtype()), rows_per_group(q.rows)});
  }
}

}  // namespace trine::vulkan
