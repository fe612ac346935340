// The public op functions: each builds an OpCall and submits it as one entry (waiting unless async),
// or records it when an input belongs to a batch.
#include <array>

#include "backends/backend.hpp"
#include "dispatch/batch_record.hpp"
#include "dispatch/op_table.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine {
namespace {

constexpr std::array<OpInfo, TRINE_OP_COUNT> k_op_infos = {{
#define TRINE_OP(name, min_in, max_in, Params) {OpKind::name, #name, min_in, max_in},
#include "trine/ops.def"
#undef TRINE_OP
}};

}  // namespace

const OpInfo& op_info(OpKind op) noexcept { return k_op_infos[static_cast<std::size_t>(op)]; }

const char* activation_name(Activation a) noexcept {
  switch (a) {
    case Activation::identity: return "identity";
    case Activation::relu: return "relu";
    case Activation::leaky_relu: return "leaky_relu";
    case Activation::elu: return "elu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::clip: return "clip";
  }
  return "?";
}

OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  if (inputs.empty()) {
    throw Error(ErrorCode::invalid_argument, std::string("[") + op_info(op).name + "] called with no inputs");
  }
  return detail::op_cost(op, inputs, params, detail::infer_op(op, inputs, params));
}

Tensor run_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  const char* name = op_info(op).name;
  if (inputs.empty()) throw Error(ErrorCode::invalid_argument, std::string("[") + name + "] called with no inputs");
  if (auto batch = detail::recording_batch(op, inputs)) {
    if (detail::async_mode()) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[") + name + "] inputs recorded in a trine::Batch take the sync spelling (the batch "
                                            "runs them all at once); trine::async does not record");
    }
    return detail::record_op(*batch, op, inputs, params);
  }
  detail::InferredOutput shape = detail::infer_op(op, inputs, params);
  const Device device = inputs[0].device();
  detail::Backend& backend = detail::backend_for(device, name);

  std::vector<detail::Entry> entries;
  entries.reserve(1);
  auto& call = std::get<detail::OpCall>(entries.emplace_back(std::in_place_type<detail::OpCall>));
  call.op = op;
  call.inputs.assign(inputs.begin(), inputs.end());
  call.params = params;
  call.output = Tensor::empty(shape.shape, shape.dtype, device);
  call.cost = detail::op_cost(op, inputs, params, shape);
  if (!backend.supports(call)) {
    throw Error(ErrorCode::unsupported,
                std::string("[") + name + "] is not supported on " + device.str() + " for " + detail::describe_call(op, inputs));
  }
  Tensor out = call.output;
  // Sync and async are one path: async just does not wait (the Future waits later).
  const bool wait = !detail::async_mode();
  auto done = detail::submit_entries(backend, std::move(entries), wait, name);
  if (wait) done->wait();
  return out;
}

namespace {
Tensor run1(OpKind op, const Tensor& x, const OpParams& p) {
  std::array<Tensor, 1> in{x};
  return run_op(op, in, p);
}
Tensor run2(OpKind op, const Tensor& a, const Tensor& b, const OpParams& p) {
  std::array<Tensor, 2> in{a, b};
  return run_op(op, in, p);
}
}  // namespace

// The Tensor members that are ops.
Tensor Tensor::astype(DType dtype) const { return trine::cast(*this, dtype); }

Tensor Tensor::contiguous() const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[contiguous] undefined tensor");
  if (is_contiguous()) return *this;
  return trine::copy(*this);
}

Tensor matmul(const Tensor& a, const Tensor& b, MatmulParams p) { return run2(OpKind::matmul, a, b, p); }
Tensor gemv(const Tensor& a, const Tensor& x, bool trans) { return run2(OpKind::gemv, a, x, GemvParams{trans}); }
Tensor dot(const Tensor& x, const Tensor& y) { return run2(OpKind::dot, x, y, NoParams{}); }
Tensor add(const Tensor& a, const Tensor& b) { return run2(OpKind::add, a, b, NoParams{}); }
Tensor sub(const Tensor& a, const Tensor& b) { return run2(OpKind::sub, a, b, NoParams{}); }
Tensor mul(const Tensor& a, const Tensor& b) { return run2(OpKind::mul, a, b, NoParams{}); }
Tensor div(const Tensor& a, const Tensor& b) { return run2(OpKind::div, a, b, NoParams{}); }
Tensor scale(const Tensor& x, float alpha, float beta) { return run1(OpKind::scale, x, ScaleParams{alpha, beta}); }
Tensor bias_act(const Tensor& x, const Tensor& bias, Activation act, float alpha, float beta) {
  return run2(OpKind::bias_act, x, bias, BiasActParams{act, alpha, beta});
}
Tensor relu(const Tensor& x) { return run1(OpKind::relu, x, ActParams{}); }
Tensor leaky_relu(const Tensor& x, float slope) { return run1(OpKind::leaky_relu, x, ActParams{slope, 0.0f}); }
Tensor elu(const Tensor& x, float alpha) { return run1(OpKind::elu, x, ActParams{alpha, 0.0f}); }
Tensor sigmoid(const Tensor& x) { return run1(OpKind::sigmoid, x, ActParams{}); }
Tensor tanh(const Tensor& x) { return run1(OpKind::tanh, x, ActParams{}); }
Tensor silu(const Tensor& x) { return run1(OpKind::silu, x, ActParams{}); }
Tensor gelu(const Tensor& x, GeluForm form) {
  return run1(form == GeluForm::erf ? OpKind::gelu : OpKind::gelu_tanh, x, ActParams{});
}
Tensor clip(const Tensor& x, float low, float high) { return run1(OpKind::clip, x, ActParams{low, high}); }
Tensor softmax(const Tensor& x, int axis) { return run1(OpKind::softmax, x, AxisParams{axis}); }
Tensor log_softmax(const Tensor& x, int axis) { return run1(OpKind::log_softmax, x, AxisParams{axis}); }
Tensor layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  std::array<Tensor, 3> in{x, gamma, beta};
  return run_op(OpKind::layernorm, in, NormParams{eps});
}
Tensor rmsnorm(const Tensor& x, const Tensor& gamma, float eps) {
  return run2(OpKind::rmsnorm, x, gamma, NormParams{eps});
}
Tensor conv2d(const Tensor& x, const Tensor& w, Conv2dParams p, const Tensor& bias) {
  std::array<Tensor, 3> in{x, w, bias};
  return run_op(OpKind::conv2d, in, p);
}
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, AttentionParams p) {
  std::array<Tensor, 3> in{q, k, v};
  return run_op(OpKind::attention, in, p);
}
Tensor rope(const Tensor& x, RopeParams p) { return run1(OpKind::rope, x, p); }
Tensor sum(const Tensor& x, int axis, bool keepdims) { return run1(OpKind::sum, x, ReduceParams{axis, keepdims}); }
Tensor mean(const Tensor& x, int axis, bool keepdims) { return run1(OpKind::mean, x, ReduceParams{axis, keepdims}); }
Tensor max(const Tensor& x, int axis, bool keepdims) { return run1(OpKind::max, x, ReduceParams{axis, keepdims}); }
Tensor copy(const Tensor& x) { return run1(OpKind::copy, x, NoParams{}); }
Tensor cast(const Tensor& x, DType dtype) { return run1(OpKind::cast, x, CastParams{dtype}); }

}  // namespace trine
