// gemv and dot on Vulkan: reductions (reduce.comp, ops.cpp's record_reduction) with a vector along
// the reduced axis, on inputs made contiguous on the device first; gemv with 16-bit weights and an
// f32 vector reads the weights in place (gemv_b16.comp), quantized weights likewise
// (matmul_quant.comp).
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// gemv_b16.comp's case: A f16 or bf16 contiguous (any offset), not transposed; x f32 (any
// strides: made contiguous) or contiguous in A's dtype; y f32, or contiguous at an even offset in
// A's dtype (dtype_promoted gives that when x is). The rest of gemv's 16-bit calls run between casts
// (backends/widen.hpp).
bool b16_weights(const detail::OpCall& call) {
  return !std::get<GemvParams>(call.params).trans && gemv_b16_takes(call.inputs[0], call.inputs[1], call.output);
}

std::uint32_t type_code(DType d) { return d == DType::f16 ? 1 : d == DType::bf16 ? 2 : 0; }

// Quantized weights: matmul_quant.comp (kernels/matmul_quant.cpp).
bool inputs_gemv(const detail::OpCall& call) {
  if (detail::quantized_input(call)) return supports_quantized(call);
  return inputs_f32(call) || b16_weights(call);
}

constexpr std::uint32_t k_gemv_group = 128;

struct GemvPush {
  std::uint32_t rows, k, a_off, x_off, y_off;
};

// The words of a row one invocation reads: ceil(K / 2) + 1 (a row may straddle one more), a
// workgroup's width apart.
std::uint64_t gemv_b16_loop(std::uint64_t k) { return (k / 2 + 2 + k_gemv_group - 1) / k_gemv_group; }

void limits_gemv(Limits& l, const detail::OpCall& call) {
  if (detail::quantized_input(call)) return limits_quantized(l, call);
  if (call.output.numel() == 0) return;
  const Tensor& a = call.inputs[0];
  if (b16_weights(call)) return limits_gemv_b16(l, a, call.inputs[1], call.output);
  const std::uint64_t ra = l.contiguous_f32(a, "input 0"), rx = l.contiguous_f32(call.inputs[1], "input 1");
  const auto rows = static_cast<std::uint32_t>(a.shape()[0]), cols = static_cast<std::uint32_t>(a.shape()[1]);
  if (std::get<GemvParams>(call.params).trans) return limits_reduction(l, ra, rx, call.output, 1, rows, cols, 3);
  limits_reduction(l, ra, rx, call.output, rows, cols, 1, 3);
}

void record_gemv(Recorder& rec, const detail::OpCall& call) {
  if (detail::quantized_input(call)) return record_quantized(rec, call);
  const TensorRef y = ref_of(call.output);
  const Tensor& a = call.inputs[0];
  const bool trans = std::get<GemvParams>(call.params).trans;
  const auto rows = static_cast<std::uint32_t>(a.shape()[0]), cols = static_cast<std::uint32_t>(a.shape()[1]);
  if (call.output.numel() == 0) return;
  if (b16_weights(call)) return record_gemv_b16(rec, a, call.inputs[1], call.output);
  const TensorRef ra = contiguous_f32(rec, a), rx = contiguous_f32(rec, call.inputs[1]);
  // y[m] = sum_k A[m, k] x[k]: rows of [M, K, 1]; transposed, the columns of [1, K, M].
  if (trans) return record_reduction(rec, ra, &rx, y, 1, rows, cols, 3);
  record_reduction(rec, ra, &rx, y, rows, cols, 1, 3);
}

void limits_dot(Limits& l, const detail::OpCall& call) {
  const std::uint64_t rx = l.contiguous_f32(call.inputs[0], "input 0");
  const std::uint64_t rv = l.contiguous_f32(call.inputs[1], "input 1");
  limits_reduction(l, rx, rv, call.output, 1, static_cast<std::uint32_t>(call.inputs[0].numel()), 1, 3);
}

void record_dot(Recorder& rec, const detail::OpCall& call) {
  const TensorRef y = ref_of(call.output);
  const TensorRef rx = contiguous_f32(rec, call.inputs[0]), rv = contiguous_f32(rec, call.inputs[1]);
  record_reduction(rec, rx, &rv, y, 1, static_cast<std::uint32_t>(call.inputs[0].numel()), 1, 3);
}

}  // namespace

bool gemv_b16_takes(const Tensor& a, const Tensor& x, const Tensor& y) {
  if (!dtype_is_16bit(a.dtype()) || !a.is_contiguous()) return false;
  const bool x_ok = x.dtype() == DType::f32 || (x.dtype() == a.dtype() && x.is_contiguous());
  const bool y_ok = y.dtype() == DType::f32 || (y.dtype() == a.dtype() && y.is_contiguous() && y.offset() % 2 == 0);
  return x_ok && y_ok;
}

void limits_gemv_b16(Limits& l, const Tensor& a, const Tensor& x, const Tensor& y) {
  l.bind(a, "input 0");
  if (x.dtype() == DType::f32)
    l.bind(l.contiguous_f32(x, "input 1"), "input 1");
  else
    l.bind(x, "input 1");
  l.bind(y, "the output");
  const std::uint64_t k = static_cast<std::uint64_t>(a.shape()[a.rank() - 1]);
  l.loop(gemv_b16_loop(k), [&] { return "a row of " + std::to_string(k) + " 16-bit weights"; });
}

void record_gemv_b16(Recorder& rec, const Tensor& a, const Tensor& x, const Tensor& y) {
  std::int64_t r = 1;  // every dim but the last (K may be 0)
  for (int d = 0; d + 1 < a.rank(); ++d) r *= a.shape()[d];
  const auto rows = static_cast<std::uint32_t>(r), cols = static_cast<std::uint32_t>(a.shape()[a.rank() - 1]);
  const TensorRef ra = ref_of(a), rx = x.dtype() == DType::f32 ? contiguous_f32(rec, x) : ref_of(x), ry = ref_of(y);
  const GemvPush p{rows, cols, ra.offset, rx.offset, ry.offset};
  const std::uint32_t yt = type_code(y.dtype());
  // a 16-bit y: a workgroup per two rows, the two halves of one word
  rec.dispatch("gemv_b16", {bind_in(ra), bind_in(rx), bind_out(ry)}, &p, sizeof(p), yt ? (rows + 1) / 2 : rows,
               {k_gemv_group, type_code(a.dtype()), type_code(x.dtype()), yt});
}

void register_gemv(VulkanOps& r) {
  r.add(OpKind::gemv, {inputs_gemv, limits_gemv, record_gemv});
  r.add(OpKind::dot, {inputs_f32, limits_dot, record_dot});
}

}  // namespace trine::vulkan
