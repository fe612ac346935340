// trine::Batch: recording (through run_op), placement on the first run, and replay.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "dispatch/batch_record.hpp"
#include "dispatch/dispatcher.hpp"
#include "dispatch/op_table.hpp"
#include "tensor/memory_cache.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"

namespace trine {
namespace detail {
namespace {

std::size_t bytes_of(const Shape& s, DType t) { return static_cast<std::size_t>(s.numel()) * dtype_size(t); }

// A storage with no memory yet, recorded in `batch`; the first run places it.
std::shared_ptr<Storage> recorded_storage(const std::shared_ptr<BatchRecord>& batch, std::size_t bytes) {
  auto s = std::make_shared<Storage>(batch->pinned ? batch->backend : nullptr, batch->device, nullptr, bytes);
  s->set_recording(batch);
  batch->storages.push_back(s);
  return s;
}

void encode_floats(std::span<const float> data, DType dtype, std::vector<unsigned char>& out) {
  out.resize(data.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < data.size(); ++i) {
    switch (dtype) {
      case DType::f32: std::memcpy(out.data() + 4 * i, &data[i], 4); break;
      case DType::f16: {
        const std::uint16_t h = f32_to_f16(data[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
        break;
      }
      case DType::bf16: {
        const std::uint16_t h = f32_to_bf16(data[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
        break;
      }
    }
  }
}

std::string entry_label(std::size_t i) { return "batch entry " + std::to_string(i + 1); }

// A batch's own storage (recorded by it) as opposed to an eager tensor mixed in.
bool recorded_here(const BatchRecord& b, const Tensor& t) {
  if (!t.defined()) return false;
  for (const auto& s : b.storages)
    if (s == t.storage()) return true;
  return false;
}

// The device an automatic batch runs on: a device its eager inputs are pinned to, else the device
// with the lowest predicted time for the whole batch (every upload, op, read, and each eager input
// moved once), among the candidates that run every op.
Device choose_device(BatchRecord& b) {
  std::optional<Device> pin;
  for (const auto& e : b.entries) {
    const auto* call = std::get_if<OpCall>(&e);
    if (!call) continue;
    for (const auto& t : call->inputs) {
      if (!t.defined() || !t.pinned() || recorded_here(b, t)) continue;
      if (pin && !(*pin == t.device())) {
        throw Error(ErrorCode::invalid_argument, "[batch] its ops use tensors pinned to " + pin->str() + " and to " +
                                                     t.device().str() + "; a batch runs on one device");
      }
      pin = t.device();
    }
  }
  if (pin) return *pin;
  const dispatch::Profile& profile = dispatch::active_profile();
  std::optional<Device> best;
  double best_s = 0;
  std::string log;
  for (const auto& slot : backend_slots()) {
    for (const auto& info : slot.devices) {
      const Device d = info.device;
      std::string why_not;
      if (!slot.backend) {
        why_not = "backend unavailable";
      } else if (!dispatch::software_allowed(d)) {
        why_not = "software device; opt in with TRINE_ALLOW_SOFTWARE=1";
      }
      double total = 0;
      for (std::size_t i = 0; i < b.entries.size() && why_not.empty(); ++i) {
        std::visit(
            [&](const auto& x) {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, OpCall>) {
                if (!runs_on(*slot.backend, d, x)) {
                  why_not = std::string("does not run ") + op_info(x.op).name + " (" + entry_label(i) + ")";
                  return;
                }
                total += dispatch::predict_compute(profile, d, x.op, x.cost);
                for (const auto& t : x.inputs) {
                  if (!t.defined() || recorded_here(b, t)) continue;
                  total += dispatch::predict_transfer(profile, t.device(), d,
                                                      static_cast<double>(t.numel()) * dtype_size(t.dtype()));
                }
              } else if constexpr (std::is_same_v<T, Upload>) {
                total += dispatch::predict_transfer(profile, Device::cpu(), d, static_cast<double>(x.bytes));
              } else if constexpr (std::is_same_v<T, Readback>) {
                total += dispatch::predict_transfer(profile, d, Device::cpu(), static_cast<double>(x.bytes));
              }
            },
            b.entries[i]);
      }
      log += " | " + d.str() + ": " + (why_not.empty() ? format_seconds(total) : "not a candidate (" + why_not + ")");
      if (why_not.empty() && (!best || total < best_s)) {
        best = d;
        best_s = total;
      }
    }
  }
  if (!best) throw Error(ErrorCode::unsupported, "[batch] no device runs every op of this batch:" + log);
  if (log_dispatch()) {
    std::fprintf(stderr, "trine dispatch: [batch] %zu entries -> %s (cheapest for the whole batch)%s\n",
                 b.entries.size(), best->str().c_str(), log.c_str());
  }
  return *best;
}

// Gives every recorded storage its device and memory (an automatic batch chooses its device first,
// and moves the eager tensors it uses there once); on failure frees what this attempt placed, so
// the batch can be run again (with less memory in use elsewhere).
void place(BatchRecord& b) {
  if (!b.pinned) {
    b.device = choose_device(b);
    b.backend = &backend_for(b.device, "batch");
  }
  std::size_t done = 0;
  try {
    for (; done < b.storages.size(); ++done) {
      auto& s = *b.storages[done];
      s.place(b.backend, b.device, cached_allocate(*b.backend, b.device, s.bytes()));
    }
    for (auto& e : b.entries) {
      auto* call = std::get_if<OpCall>(&e);
      if (!call) continue;
      for (auto& t : call->inputs) {
        if (t.defined() && !(t.device() == b.device)) t = move_tensor(t, b.device, false, "batch");
      }
    }
  } catch (const Error& e) {
    for (std::size_t i = 0; i < done; ++i) {
      auto& s = *b.storages[i];
      cached_deallocate(*b.backend, b.device, s.handle(), s.bytes());
      s.place(b.pinned ? b.backend : nullptr, b.device, nullptr);
    }
    throw Error(e.code(), std::string("[batch] placing its tensors on ") + b.device.str() + ": " + e.what());
  }
  for (auto& s : b.storages) s->set_recording(nullptr);  // the recording is closed
  b.storages.clear();
  b.placed = true;
}

std::shared_ptr<Completion> start(BatchRecord& b, std::initializer_list<std::span<const float>> inputs,
                                  bool caller_waits) {
  if (inputs.size() != 0) {
    if (inputs.size() != b.inputs.size()) {
      throw Error(ErrorCode::invalid_argument, "[batch] run with " + std::to_string(inputs.size()) +
                                                   " inputs, but the batch recorded " +
                                                   std::to_string(b.inputs.size()) + " uploads");
    }
    std::size_t k = 0;
    for (auto data : inputs) {
      const auto& in = b.inputs[k];
      if (data.size() * dtype_size(in.dtype) != in.host.size()) {
        throw Error(ErrorCode::invalid_shape, "[batch] input " + std::to_string(k) + " has " +
                                                  std::to_string(data.size()) + " values; upload " + std::to_string(k) +
                                                  " was recorded with " +
                                                  std::to_string(in.host.size() / dtype_size(in.dtype)));
      }
      ++k;
    }
    // The previous run may still be reading the host copies overwritten here.
    if (b.last) b.last->wait_for(std::chrono::hours(24 * 365));
    k = 0;
    for (auto data : inputs) {
      auto& in = b.inputs[k++];
      encode_floats(data, in.dtype, in.host);
    }
  }
  for (auto& in : b.inputs) std::get<Upload>(b.entries[in.entry]).src = in.host.data();
  if (!b.placed) place(b);
  auto done = submit_entries(*b.backend, b.entries, caller_waits, "batch");
  b.last = done;
  for (auto& r : b.reads) r->done = done;
  return done;
}

}  // namespace

std::shared_ptr<BatchRecord> recording_batch(OpKind op, std::span<const Tensor> inputs) {
  std::shared_ptr<BatchRecord> found;
  for (const auto& t : inputs) {
    if (!t.defined() || t.storage()->handle()) continue;
    auto b = t.storage()->recording();
    if (!b) continue;
    if (found && found != b) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[") + op_info(op).name + "] inputs come from two different batches");
    }
    found = std::move(b);
  }
  return found;
}

Tensor record_op(BatchRecord& batch, OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  const std::size_t position = batch.entries.size();
  try {
    InferredOutput shape = infer_op(op, inputs, params);
    OpCall call{op, {inputs.begin(), inputs.end()}, {}, params, op_cost(op, inputs, params, shape)};
    // The output's storage belongs to the batch of the inputs; find that shared_ptr through them.
    std::shared_ptr<BatchRecord> owner = recording_batch(op, inputs);
    auto storage = recorded_storage(owner, bytes_of(shape.shape, shape.dtype));
    call.output = Tensor(storage, shape.shape, contiguous_strides(shape.shape), 0, shape.dtype, batch.pinned);
    if (batch.pinned) {
      // Eager tensors from elsewhere: pinned ones conflict, the others are moved here once.
      for (auto& t : call.inputs) {
        if (!t.defined() || t.device() == batch.device || !t.storage()->handle()) continue;
        if (t.pinned()) {
          throw Error(ErrorCode::invalid_argument, std::string("[") + op_info(op).name + "] uses " + t.str() +
                                                       ", pinned there, in a batch pinned to " + batch.device.str());
        }
        t = move_tensor(t, batch.device, false, op_info(op).name);
      }
      if (!batch.backend->supports(call)) {
        throw Error(ErrorCode::unsupported, std::string("[") + op_info(op).name + "] is not supported on " +
                                                batch.device.str() + " for " + describe_call(op, inputs) +
                                                " (the batch is pinned there)");
      }
    }
    Tensor out = call.output;
    batch.entries.emplace_back(std::move(call));
    return out;
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (recording " + entry_label(position) + ")");
  }
}

}  // namespace detail

Batch::Batch(std::optional<Device> device) : record_(std::make_shared<detail::BatchRecord>()) {
  if (!device) device = detail::pinned_by_scope();  // a DeviceScope or TRINE_DEVICE pins it too
  record_->pinned = device.has_value();
  record_->device = device.value_or(Device::cpu());
  if (record_->pinned) record_->backend = &detail::backend_for(*device, "batch");
}
Batch::~Batch() = default;
Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;

Device Batch::device() const { return record_->device; }
std::size_t Batch::size() const { return record_->entries.size(); }

Tensor Batch::upload(std::span<const float> data, const Shape& shape, DType dtype) {
  auto& b = *record_;
  if (b.placed) throw Error(ErrorCode::invalid_argument, "[batch] upload after the batch has run: record first");
  if (static_cast<std::int64_t>(data.size()) != shape.numel()) {
    throw Error(ErrorCode::invalid_shape, "[batch] upload of " + std::to_string(data.size()) + " values for shape " +
                                              shape.str() + " (" + std::to_string(shape.numel()) + " elements)");
  }
  for (auto d : shape.dims())
    if (d < 0) throw Error(ErrorCode::invalid_shape, "[batch] upload: negative dimension in " + shape.str());
  auto storage = detail::recorded_storage(record_, detail::bytes_of(shape, dtype));
  b.inputs.push_back({{}, dtype, b.entries.size()});
  detail::encode_floats(data, dtype, b.inputs.back().host);
  b.entries.emplace_back(detail::Upload{storage, 0, nullptr, storage->bytes(), {}});
  return Tensor(storage, shape, contiguous_strides(shape), 0, dtype, b.pinned);
}

BatchRead Batch::read(const Tensor& t) {
  auto& b = *record_;
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "[batch] read of an undefined tensor");
  if (b.placed) throw Error(ErrorCode::invalid_argument, "[batch] read after the batch has run: record first");
  if (t.storage()->recording() != record_) {
    throw Error(ErrorCode::invalid_argument, "[batch] read of " + t.str() + ", which this batch did not record");
  }
  // A view is made contiguous by a recorded copy, so the readback is one range.
  Tensor src = t.is_contiguous() ? t : trine::copy(t);
  auto r = std::make_shared<detail::ReadState>();
  r->shape = t.shape();
  r->dtype = t.dtype();
  r->host.resize(detail::bytes_of(t.shape(), t.dtype()));
  b.entries.emplace_back(detail::Readback{src.storage(), static_cast<std::size_t>(src.offset()) * dtype_size(src.dtype()),
                                          r->host.data(), r->host.size(), {}});
  b.reads.push_back(r);
  return BatchRead(r);
}

void Batch::run() { detail::start(*record_, {}, true)->wait(); }
void Batch::run(std::initializer_list<std::span<const float>> inputs) { detail::start(*record_, inputs, true)->wait(); }
Future<void> Batch::submit() { return detail::future_of_completion(detail::start(*record_, {}, false)); }
Future<void> Batch::submit(std::initializer_list<std::span<const float>> inputs) {
  return detail::future_of_completion(detail::start(*record_, inputs, false));
}

std::vector<float> BatchRead::get() const {
  const auto& r = *state_;
  if (!r.done) throw Error(ErrorCode::invalid_argument, "[batch] read before the batch has run");
  r.done->wait();
  const std::size_t n = static_cast<std::size_t>(r.shape.numel());
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h = 0;
    switch (r.dtype) {
      case DType::f32: std::memcpy(&out[i], r.host.data() + 4 * i, 4); break;
      case DType::f16:
        std::memcpy(&h, r.host.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      case DType::bf16:
        std::memcpy(&h, r.host.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
    }
  }
  return out;
}

const Shape& BatchRead::shape() const { return state_->shape; }

}  // namespace trine
