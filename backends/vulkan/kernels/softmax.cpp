// softmax and log_softmax along an axis on Vulkan, over the input made contiguous as
// [outer, n, inner]: a workgroup per row (softmax.comp), or an invocation per row on software
// devices (softmax_rows.comp). x and y f16 or bf16 alike: the same shaders read and write them in
// place (their TYPE); other 16-bit calls run between casts (backends/widen.hpp).
#include <string>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

struct SoftmaxPush {
  std::uint32_t outer, n, inner, x_off, log_form;
};

// f32, or x and y of one 16-bit dtype.
bool supports_softmax(const detail::OpCall& call) {
  return inputs_f32(call) || (all_16bit(call) && inputs_fit_u32(call));
}

void limits_softmax(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const RowSplit s = split_rows(x.shape(), std::get<AxisParams>(call.params).axis);
  l.loop(row_loop(s.n, 3), [&] { return "a row of " + std::to_string(s.n); });
  const std::uint64_t rx = l.contiguous(x, "input 0");
  if (std::uint64_t{s.outer} * s.inner == 0) return;
  l.bind(rx, "input 0");
  l.bind(call.output, "the output");
}

void record_softmax(Recorder& rec, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const TensorRef y = ref_of(call.output);
  const RowSplit s = split_rows(x.shape(), std::get<AxisParams>(call.params).axis);
  const TensorRef rx = contiguous(rec, x);
  SoftmaxPush p{s.outer, s.n, s.inner, rx.offset, call.op == OpKind::log_softmax ? 1u : 0u};
  const std::uint64_t rows = std::uint64_t{s.outer} * s.inner;
  const std::uint32_t type = dtype_code(call.output.dtype());  // x's too
  if (rows_per_invocation(rec.caps(), rows, 3 * std::uint64_t{s.n})) {
    return rec.dispatch("softmax_rows", {bind_in(rx), bind_out(y)}, &p, sizeof(p), (rows + 63) / 64, {type});
  }
  rec.dispatch(reduction_shader(rec.caps(), "softmax", "softmax_subgroup"), {bind_in(rx), bind_out(y)}, &p, sizeof(p),
               rows, {k_reduce_group, type});
}

}  // namespace

void register_softmax(VulkanOps& r) {
  const VulkanKernel k{supports_softmax, limits_softmax, record_softmax};
  r.add(OpKind::softmax, k);
  r.add(OpKind::log_softmax, k);
}

}  // namespace trine::vulkan
