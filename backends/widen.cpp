#include "backends/widen.hpp"

#include <memory>

#include "ops/rules.hpp"
#include "tensor/make.hpp"
#include "trine/debug.hpp"

namespace trine::detail {
namespace {

// An f32 tensor shaped like `like`, contiguous: a phantom of `backend`, or fresh device memory.
Tensor f32_like(const Tensor& like, Backend* phantom_of) {
  const Device device = like.device();
  if (!phantom_of) return empty_tensor(like.shape(), DType::f32, device, false);
  const auto bytes = static_cast<std::size_t>(like.numel()) * dtype_size(DType::f32);
  auto s = std::make_shared<Storage>(phantom_of, device, nullptr, bytes);
  return Tensor(std::move(s), like.shape(), contiguous_strides(like.shape()), 0, DType::f32);
}

}  // namespace

OpCall widened_call(const OpCall& call, Backend* phantom_of, WidenForm form) {
  OpCall wide = call;
  if (form == WidenForm::all)
    for (Tensor& t : wide.inputs)
      if (t.defined() && dtype_is_16bit(t.dtype())) t = f32_like(t, phantom_of);
  if (dtype_is_16bit(call.output.dtype())) wide.output = f32_like(call.output, phantom_of);
  return wide;
}

OpCall cast_call(const Tensor& from, const Tensor& to) {
  OpCall c;
  c.op = OpKind::cast;
  c.inputs = {from};
  c.output = to;
  c.params = CastParams{to.dtype()};
  const auto n = static_cast<double>(to.numel());
  c.cost = OpCost{0, n * static_cast<double>(dtype_size(from.dtype()) + dtype_size(to.dtype()))};
  return c;
}

Widened widen(const OpCall& call, WidenForm form) {
  Widened w;
  w.call = widened_call(call, nullptr, form);
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (t.defined() && t.dtype() != w.call.inputs[i].dtype()) w.before.push_back(cast_call(t, w.call.inputs[i]));
  }
  if (dtype_is_16bit(call.output.dtype())) w.after.push_back(cast_call(w.call.output, call.output));
  return w;
}

}  // namespace trine::detail

namespace trine::debug {

bool runs_between_casts(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  const char* name = op_info(op).name;
  if (inputs.empty() || !inputs[0].defined())
    throw Error(ErrorCode::invalid_argument, std::string("[runs_between_casts] ") + name + " needs its inputs");
  const detail::InferredOutput out = detail::infer_op(op, inputs, params);
  const Device device = inputs[0].device();
  detail::Backend& backend = detail::backend_for(device, name);
  detail::OpCall call;
  call.op = op;
  call.inputs.assign(inputs.begin(), inputs.end());
  call.params = params;
  const auto bytes = static_cast<std::size_t>(out.shape.numel()) * dtype_size(out.dtype);
  call.output = Tensor(std::make_shared<detail::Storage>(&backend, device, nullptr, bytes), out.shape,
                       contiguous_strides(out.shape), 0, out.dtype);
  if (!backend.supports(call)) {
    const std::string why = backend.unsupported_reason(call);
    throw Error(ErrorCode::unsupported, std::string("[runs_between_casts] ") + device.str() + " does not run " + name +
                                            " for these inputs" + (why.empty() ? "" : ": " + why));
  }
  return backend.widens(call);
}

}  // namespace trine::debug
