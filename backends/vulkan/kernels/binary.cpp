// add, sub, mul and div on Vulkan, with numpy broadcasting: binary.comp reads both inputs through
// their (broadcast) strides, so views and broadcasts cost no copies.
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

bool supports_binary(const detail::OpCall& call) { return inputs_fit_u32(call) && inputs_f32(call); }

void limits_binary(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "input 0");
  l.bind(call.inputs[1], "input 1");
  l.bind(call.output, "the output");
}

void record_binary(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  // binary.comp's operation is the op's code (OP_add ... OP_div), with no activation after it.
  record_strided(rec, call.inputs[0], call.inputs[1], ref_of(y), y.shape(), call.op, OpKind::copy, 0, 0);
}

}  // namespace

void register_binary(VulkanOps& r) {
  const VulkanKernel k{supports_binary, limits_binary, record_binary};
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) r.add(op, k);
}

}  // namespace trine::vulkan
