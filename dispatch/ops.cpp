// The public op functions: each builds an OpCall and submits it as one entry (waiting unless async),
// or records it when an input belongs to a batch.
#include <array>

#include "backends/backend.hpp"
#include "dispatch/batch_record.hpp"
#include "dispatch/op_table.hpp"
#include "dispatch/dispatcher.hpp"
#include "tensor/make.hpp"
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

namespace {

// The call on `device`, whose inputs are all there: output allocated, supports() asked, submitted.
Tensor run_on(const detail::Placement& at, OpKind op, std::span<const Tensor> inputs, const OpParams& params,
              const detail::InferredOutput& shape) {
  const char* name = op_info(op).name;
  detail::Backend& backend = detail::backend_for(at.device, name);
  std::vector<detail::Entry> entries;
  entries.reserve(1);
  auto& call = std::get<detail::OpCall>(entries.emplace_back(std::in_place_type<detail::OpCall>));
  call.op = op;
  call.inputs.assign(inputs.begin(), inputs.end());
  call.params = params;
  call.output = detail::empty_tensor(shape.shape, shape.dtype, at.device, at.pinned);
  call.cost = detail::op_cost(op, inputs, params, shape);
  if (!backend.supports(call)) {
    const std::string why = backend.unsupported_reason(call);
    throw Error(ErrorCode::unsupported, std::string("[") + name + "] is not supported on " + at.device.str() + " for " +
                                            detail::describe_call(op, inputs) +
                                            (at.pinned ? " (the device is pinned: nothing falls back)" : "") +
                                            (why.empty() ? "" : ": " + why));
  }
  Tensor out = call.output;
  // Sync and async are one path: async just does not wait (the Future waits later).
  const bool wait = !detail::async_mode();
  auto done = detail::submit_entries(backend, std::move(entries), wait, name);
  if (wait) done->wait();
  return out;
}

std::size_t byte_size(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()); }

unsigned char* host_memory(const Tensor& t) {
  auto& s = *t.storage();
  return static_cast<unsigned char*>(s.backend().host_pointer(s.handle()));
}

}  // namespace

namespace detail {

Tensor move_tensor(const Tensor& t, Device device, bool pinned, const char* op) {
  if (!t.defined() || t.device() == device) return t;
  Tensor src = t;
  if (!src.is_contiguous()) {  // made contiguous where it lives, then moved as one range
    std::array<Tensor, 1> in{t};
    InferredOutput shape = infer_op(OpKind::copy, in, NoParams{});
    src = run_on({t.device(), false}, OpKind::copy, in, NoParams{}, shape);
  }
  if (src.device().kind != DeviceKind::cpu && device.kind != DeviceKind::cpu) {  // through the host
    return move_tensor(move_tensor(src, Device::cpu(), false, op), device, pinned, op);
  }
  Tensor dst = empty_tensor(src.shape(), src.dtype(), device, pinned);
  const std::size_t bytes = byte_size(src);
  if (bytes == 0) return dst;
  const std::size_t at = static_cast<std::size_t>(src.offset()) * dtype_size(src.dtype());
  std::vector<Entry> entries;
  if (src.device().kind == DeviceKind::cpu) {
    entries.emplace_back(Upload{dst.storage(), 0, host_memory(src) + at, bytes, src.storage()});
    submit_entries(backend_for(device, op), std::move(entries), false, op);
  } else {
    entries.emplace_back(Readback{src.storage(), at, host_memory(dst), bytes, dst.storage()});
    submit_entries(backend_for(src.device(), op), std::move(entries), false, op);
  }
  return dst;
}

}  // namespace detail

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
  const detail::Placement at = detail::place_call(op, inputs, params, shape);
  bool here = true;
  for (const auto& t : inputs) here = here && (!t.defined() || t.storage()->device() == at.device);
  if (here) return run_on(at, op, inputs, params, shape);
  // Inputs elsewhere are moved to the chosen device (not pinned there: they are the call's copies).
  std::array<Tensor, 3> moved;
  for (std::size_t i = 0; i < inputs.size(); ++i) moved[i] = detail::move_tensor(inputs[i], at.device, false, name);
  return run_on(at, op, std::span<const Tensor>(moved.data(), inputs.size()), params, shape);
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

// A copy on `target`, pinned there: one Upload from host memory or one Readback into it (device to
// device through the host), submitted without waiting; whatever reads the result waits for it.
Tensor Tensor::to(Device target) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[to] undefined tensor");
  if (device() == target) return Tensor(storage_, shape_, strides_, offset_, dtype_, true);
  detail::backend_for(target, "to");  // an unavailable device fails here, naming it
  return detail::move_tensor(*this, target, true, "to");
}

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
