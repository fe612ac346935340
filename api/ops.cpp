// run_op, which every public op function calls (ops.hpp): builds an OpCall and submits it as one
// entry (waiting unless async), or records it when an input belongs to a batch.
#include <array>

#include "backends/backend.hpp"
#include "dispatch/batch_record.hpp"
#include "dispatch/dispatcher.hpp"
#include "ops/rules.hpp"
#include "tensor/make.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine {
OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  if (inputs.empty()) {
    throw Error(ErrorCode::invalid_argument, std::string("[") + op_info(op).name + "] called with no inputs");
  }
  return detail::op_cost(op, inputs, params, detail::infer_op(op, inputs, params));
}

namespace {

// The call on `device`, whose inputs are all there: output allocated (or `into`, a view that
// trine::copy_into writes), supports() asked, submitted. `name` is what errors call it.
Tensor run_on(const detail::Placement& at, OpKind op, std::span<const Tensor> inputs, const OpParams& params,
              const detail::InferredOutput& shape, const Tensor& into = {}, const char* name = nullptr) {
  if (!name) name = op_info(op).name;
  detail::Backend& backend = detail::backend_for(at.device, name);
  std::vector<detail::Entry> entries;
  entries.reserve(1);
  auto& call = std::get<detail::OpCall>(entries.emplace_back(std::in_place_type<detail::OpCall>));
  call.op = op;
  call.inputs.assign(inputs.begin(), inputs.end());
  call.params = params;
  call.output = into.defined() ? into : detail::empty_tensor(shape.shape, shape.dtype, at.device, at.pinned);
  call.cost = detail::op_cost(op, inputs, params, shape);
  if (!backend.supports(call)) {
    const std::string why = backend.unsupported_reason(call);
    throw Error(ErrorCode::unsupported, std::string("[") + name + "] is not supported on " + at.device.str() + " for " +
                                            detail::describe_call(inputs) +
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

std::size_t byte_size(const Tensor& t) { return dtype_bytes(t.dtype(), t.numel()); }

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
  const std::size_t at = dtype_bytes(src.dtype(), src.offset());
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
                  std::string("[") + name +
                      "] inputs recorded in a trine::Batch take the sync spelling (the batch "
                      "runs them all at once); trine::async does not record");
    }
    return detail::record_op(*batch, op, inputs, params);
  }
  detail::InferredOutput shape = detail::infer_op(op, inputs, params);
  const detail::Placement at = detail::place_call(op, inputs, params, shape);
  if (at.source == detail::PinSource::scope || at.source == detail::PinSource::environment) {
    // The device may be unavailable: say so as this op, naming what chose it, before any input
    // moves there (an upload would fail as "[empty]").
    try {
      detail::backend_for(at.device, name);
    } catch (const Error& e) {
      throw Error(e.code(), std::string(e.what()) + " (chosen by " + detail::pin_source(at) + ")");
    }
  }
  bool here = true;
  for (const auto& t : inputs) here = here && (!t.defined() || t.storage()->device() == at.device);
  if (here) return run_on(at, op, inputs, params, shape);
  // Inputs elsewhere are moved to the chosen device (not pinned there: they are the call's copies).
  std::vector<Tensor> moved(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) moved[i] = detail::move_tensor(inputs[i], at.device, false, name);
  return run_on(at, op, moved, params, shape);
}

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

namespace detail {

// copy_into's checks, which a batch's recording shares: all defined, a destination that repeats no
// element, a source that broadcasts to the part of it written (its shape, or with a position its
// shape with src.dim(axis) along axis), an i32 position of one element.
Written check_write(const Tensor& dst, const Tensor& src, const WriteAt& at) {
  if (!dst.defined() || !src.defined() || (at.position_given && !at.position.defined())) {
    throw Error(ErrorCode::invalid_argument,
                std::string("[copy_into] ") +
                    (!dst.defined() ? "the destination" : !src.defined() ? "the source" : "the position") +
                    " is undefined");
  }
  const std::string both = " (destination " + dst.str() + ", source " + src.str() + ")";
  if (dtype_is_quantized(dst.dtype()) || dtype_is_quantized(src.dtype())) {
    throw Error(ErrorCode::dtype_mismatch,
                "[copy_into] quantized weights are not written element by element: make "
                "new blocks (trine::quant::quantize, Tensor::from_blocks)" +
                    both);
  }
  for (int d = 0; d < dst.rank(); ++d) {
    if (dst.strides()[static_cast<std::size_t>(d)] == 0 && dst.dim(d) > 1) {
      throw Error(ErrorCode::invalid_argument, "[copy_into] the destination repeats its elements along dim " +
                                                   std::to_string(d) +
                                                   " (a broadcast view): a write would land on one element several "
                                                   "times" + both);
    }
  }
  int axis = -1;
  Shape part = dst.shape();
  if (at.position_given) {
    if (at.position.dtype() != DType::i32 || at.position.numel() != 1) {
      throw Error(at.position.dtype() != DType::i32 ? ErrorCode::dtype_mismatch : ErrorCode::invalid_shape,
                  "[copy_into] the position must be an i32 tensor of one element, got " + at.position.str() + both);
    }
    if (src.rank() != dst.rank()) {
      throw Error(ErrorCode::invalid_shape, "[copy_into] a write at a position takes a source of the destination's "
                                            "rank" + both);
    }
    axis = at.axis < 0 ? at.axis + dst.rank() : at.axis;
    if (axis < 0 || axis >= dst.rank()) {
      throw Error(ErrorCode::invalid_argument,
                  "[copy_into] axis " + std::to_string(at.axis) + " is out of range" + both);
    }
    if (src.dim(axis) > dst.dim(axis)) {
      throw Error(ErrorCode::invalid_shape, "[copy_into] the source is longer than the destination along axis " +
                                                std::to_string(axis) + both);
    }
    std::vector<std::int64_t> dims(dst.shape().dims().begin(), dst.shape().dims().end());
    dims[static_cast<std::size_t>(axis)] = src.dim(axis);
    part = Shape(dims);
  }
  if (src.shape() != part && broadcast_shapes("copy_into", src.shape(), part, both) != part) {
    throw Error(ErrorCode::invalid_shape, "[copy_into] the source's shape " + src.shape().str() +
                                              " does not broadcast to " +
                                              (at.position_given ? "the part written, " : "the destination's ") +
                                              part.str() + both);
  }
  return {axis, part};
}

}  // namespace detail

namespace {

// Both forms of copy_into. The source as the write takes it on the destination's device: cast to its
// dtype, broadcast to the part written, contiguous, and in memory of its own when it shares the
// destination's (an overlap then reads the values from before the write, as numpy's assignment does).
Tensor write(const Tensor& dst, const Tensor& src, const detail::WriteAt& where) {
  const detail::Written written = detail::check_write(dst, src, where);
  if (auto batch = detail::recording_batch(OpKind::copy, std::array<Tensor, 3>{dst, src, where.position})) {
    if (detail::async_mode()) {
      throw Error(ErrorCode::invalid_argument,
                  "[copy_into] tensors recorded in a trine::Batch take the sync spelling; trine::async does not record");
    }
    return detail::record_write(batch, dst, src, where, written);
  }
  if (written.part.numel() == 0) return dst;  // nothing to write (nor a position to check)
  const detail::Placement at{dst.device(), dst.pinned()};
  detail::backend_for(at.device, "copy_into");  // an unavailable device fails here, naming it
  auto run = [&](OpKind op, const Tensor& x, const OpParams& params) {
    std::array<Tensor, 1> in{x};
    return run_on({at.device, false}, op, in, params, detail::infer_op(op, in, params));
  };
  Tensor s = detail::move_tensor(src, at.device, false, "copy_into");
  if (s.dtype() != dst.dtype()) s = run(OpKind::cast, s, CastParams{dst.dtype()});
  if (s.shape() != written.part) s = s.broadcast_to(written.part);
  if (!s.is_contiguous() || s.shares_storage(dst)) s = run(OpKind::copy, s, NoParams{});
  if (!where.position_given) {
    std::array<Tensor, 1> in{s};
    run_on(at, OpKind::copy, in, NoParams{}, {dst.shape(), dst.dtype()}, dst, "copy_into");
    return dst;
  }
  Tensor p = detail::move_tensor(where.position, at.device, false, "copy_into");
  if (p.shares_storage(dst)) p = run(OpKind::copy, p, NoParams{});
  std::array<Tensor, 2> in{s, p};
  run_on(at, OpKind::copy, in, AxisParams{written.axis}, {dst.shape(), dst.dtype()}, dst, "copy_into");
  return dst;
}

}  // namespace

Tensor copy_into(const Tensor& dst, const Tensor& src) { return write(dst, src, {}); }
Tensor copy_into(const Tensor& dst, const Tensor& src, int axis, const Tensor& position) {
  return write(dst, src, {axis, position, true});
}

Tensor Tensor::copy_(const Tensor& src) const { return copy_into(*this, src); }

Tensor Tensor::contiguous() const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[contiguous] undefined tensor");
  if (is_contiguous()) return *this;
  return trine::copy(*this);
}

}  // namespace trine
