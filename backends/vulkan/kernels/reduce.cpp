// sum, mean, max and argmax along an axis on Vulkan: ops.cpp's record_reduction over the input made
// contiguous as [outer, n, inner] (reduce.comp, or reduce_rows.comp with an invocation per row). An
// f16 or bf16 x is read in place and reduced in f32 (their XTYPE), the result rounded once into y of
// x's dtype (YTYPE), or argmax's i32; other 16-bit calls run between casts (backends/widen.hpp).
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// record_reduction's op: 0 sum, 1 mean, 2 max, 4 argmax.
std::uint32_t reduction_op(OpKind op) {
  return op == OpKind::sum ? 0 : op == OpKind::mean ? 1 : op == OpKind::max ? 2 : 4;
}

// f32; or x f16 or bf16 and y of its dtype (argmax: i32).
bool supports_reduce(const detail::OpCall& call) {
  if (inputs_f32(call)) return true;
  const DType t = call.inputs[0].dtype();
  const DType y = call.output.dtype();
  return dtype_is_16bit(t) && inputs_fit_u32(call) && (call.op == OpKind::argmax ? y == DType::i32 : y == t);
}

void limits_reduce(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const RowSplit s = split_rows(x.shape(), std::get<ReduceParams>(call.params).axis);
  limits_reduction(l, l.contiguous(x, "input 0"), 0, call.output, s.outer, s.n, s.inner, reduction_op(call.op));
}

void record_reduce(Recorder& rec, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const TensorRef y = ref_of(call.output);
  const RowSplit s = split_rows(x.shape(), std::get<ReduceParams>(call.params).axis);
  const std::uint32_t y_type = call.output.dtype() == DType::i32 ? 0 : dtype_code(call.output.dtype());
  record_reduction(rec, contiguous(rec, x), nullptr, y, s.outer, s.n, s.inner, reduction_op(call.op),
                   dtype_code(x.dtype()), y_type);
}

}  // namespace

void register_reduce(VulkanOps& r) {
  const VulkanKernel k{supports_reduce, limits_reduce, record_reduce};
  for (OpKind op : {OpKind::sum, OpKind::mean, OpKind::max, OpKind::argmax}) r.add(op, k);
}

}  // namespace trine::vulkan
