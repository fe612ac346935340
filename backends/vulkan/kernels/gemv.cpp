// gemv and dot on Vulkan: reductions (reduce.comp, ops.cpp's record_reduction) with a vector along
// the reduced axis, on inputs made contiguous on the device first.
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

void limits_gemv(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor& a = call.inputs[0];
  const std::uint64_t ra = l.contiguous_f32(a, "input 0"), rx = l.contiguous_f32(call.inputs[1], "input 1");
  const auto rows = static_cast<std::uint32_t>(a.shape()[0]), cols = static_cast<std::uint32_t>(a.shape()[1]);
  if (std::get<GemvParams>(call.params).trans) return limits_reduction(l, ra, rx, call.output, 1, rows, cols, 3);
  limits_reduction(l, ra, rx, call.output, rows, cols, 1, 3);
}

void record_gemv(Recorder& rec, const detail::OpCall& call) {
  const TensorRef y = ref_of(call.output);
  const Tensor& a = call.inputs[0];
  const bool trans = std::get<GemvParams>(call.params).trans;
  const auto rows = static_cast<std::uint32_t>(a.shape()[0]), cols = static_cast<std::uint32_t>(a.shape()[1]);
  if (call.output.numel() == 0) return;
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

void register_gemv(VulkanOps& r) {
  r.add(OpKind::gemv, {inputs_f32, limits_gemv, record_gemv});
  r.add(OpKind::dot, {inputs_f32, limits_dot, record_dot});
}

}  // namespace trine::vulkan
