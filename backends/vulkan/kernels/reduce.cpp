// sum, mean, max and argmax along an axis on Vulkan: ops.cpp's record_reduction over the input made
// contiguous as [outer, n, inner] (reduce.comp, or reduce_rows.comp with an invocation per row).
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// record_reduction's op: 0 sum, 1 mean, 2 max, 4 argmax.
std::uint32_t reduction_op(OpKind op) {
  return op == OpKind::sum ? 0 : op == OpKind::mean ? 1 : op == OpKind::max ? 2 : 4;
}

void limits_reduce(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const RowSplit s = split_rows(x.shape(), std::get<ReduceParams>(call.params).axis);
  limits_reduction(l, l.contiguous_f32(x, "input 0"), 0, call.output, s.outer, s.n, s.inner, reduction_op(call.op));
}

void record_reduce(Recorder& rec, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const TensorRef y = ref_of(call.output);
  const RowSplit s = split_rows(x.shape(), std::get<ReduceParams>(call.params).axis);
  record_reduction(rec, contiguous_f32(rec, x), nullptr, y, s.outer, s.n, s.inner, reduction_op(call.op));
}

}  // namespace

void register_reduce(VulkanOps& r) {
  const VulkanKernel k{inputs_f32, limits_reduce, record_reduce};
  for (OpKind op : {OpKind::sum, OpKind::mean, OpKind::max, OpKind::argmax}) r.add(op, k);
}

}  // namespace trine::vulkan
