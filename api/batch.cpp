// trine::Batch: recording (through run_op), placement on the first run, and replay.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "backends/entries.hpp"
#include "dispatch/batch_record.hpp"
#include "dispatch/dispatcher.hpp"
#include "ops/rules.hpp"
#include "tensor/make.hpp"
#include "tensor/memory_cache.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"
#include "trine/quant.hpp"

namespace trine {
namespace detail {
namespace {

std::size_t bytes_of(const Shape& s, DType t) { return dtype_bytes(t, s.numel()); }

// A storage with no memory yet, recorded in `batch`; the first run places it.
std::shared_ptr<Storage> recorded_storage(const std::shared_ptr<BatchRecord>& batch, std::size_t bytes) {
  auto s = std::make_shared<Storage>(batch->pinned ? batch->backend : nullptr, batch->device, nullptr, bytes);
  s->set_recording(batch);
  batch->storages.push_back(s);
  return s;
}

void encode_floats(std::span<const float> data, DType dtype, std::vector<unsigned char>& out) {
  out.resize(data.size() * dtype_size(dtype));
  encode_host(data.data(), data.size(), dtype, out.data());
}

// Finished when every segment's submission is (a batch placed across devices submits several). A
// failure names the failing entry by its place in the whole batch, not in its segment.
class AllDone final : public Completion {
 public:
  struct Part {
    std::shared_ptr<Completion> done;
    std::vector<std::size_t> positions;  // the segment's
  };
  AllDone(std::vector<Part> parts, std::size_t total) : parts_(std::move(parts)), total_(total) {}
  bool poll() override {
    for (auto& p : parts_)
      if (!p.done->poll()) return false;
    return true;
  }
  void wait() override {
    for (auto& p : parts_) {
      try {
        p.done->wait();
      } catch (...) {  // raised below, with the failing entry's place in the batch
      }
    }
    if (auto e = error()) std::rethrow_exception(e);
  }
  bool wait_for(std::chrono::nanoseconds timeout) override {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (auto& p : parts_)
      if (!p.done->wait_for(until - std::chrono::steady_clock::now())) return false;
    return true;
  }
  std::exception_ptr error() override {
    for (auto& p : parts_) {
      if (auto e = p.done->error()) {
        try {
          std::rethrow_exception(e);
        } catch (const Error& err) {
          return std::make_exception_ptr(with_batch_position(err, p.positions, total_));
        } catch (...) {
          return e;
        }
      }
    }
    return nullptr;
  }

 private:
  std::vector<Part> parts_;
  std::size_t total_;
};

std::shared_ptr<Completion> start(BatchRecord& b, std::span<const std::span<const float>> inputs,
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
  if (!b.placed) place_batch(b);
  for (auto& in : b.inputs) std::get<Upload>(b.segments[in.segment].entries[in.at]).src = in.host.data();
  if (b.segments.size() == 1) {
    auto done = submit_entries(*b.segments[0].backend, b.segments[0].entries, caller_waits, "batch");
    b.last = done;
    for (auto& r : b.reads) r->done = done;
    return done;
  }
  // Across devices: one submission per segment, ordered by the storages they share. Every read
  // waits for all of them (its own segment is enough for its data, but a run is one unit).
  std::vector<AllDone::Part> parts;
  for (std::size_t i = 0; i < b.segments.size(); ++i) {
    auto& seg = b.segments[i];
    const bool last = i + 1 == b.segments.size();
    parts.push_back({submit_entries(*seg.backend, seg.entries, caller_waits && last, "batch"), seg.positions});
  }
  auto done = std::make_shared<AllDone>(std::move(parts), b.entries.size());
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

Tensor record_op(BatchRecord& batch, OpKind op, std::span<const Tensor> inputs, const OpParams& params,
                 std::shared_ptr<BatchRecord> owner) {
  const std::size_t position = batch.entries.size();
  try {
    InferredOutput shape = infer_op(op, inputs, params);
    OpCall call{op, {inputs.begin(), inputs.end()}, {}, params, op_cost(op, inputs, params, shape)};
    // The output's storage belongs to the batch of the inputs; find that shared_ptr through them.
    if (!owner) owner = recording_batch(op, inputs);
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
        const std::string why = batch.backend->unsupported_reason(call);
        throw Error(ErrorCode::unsupported, std::string("[") + op_info(op).name + "] is not supported on " +
                                                batch.device.str() + " for " + describe_call(inputs) +
                                                " (the batch is pinned there)" + (why.empty() ? "" : ": " + why));
      }
    }
    Tensor out = call.output;
    batch.entries.emplace_back(std::move(call));
    return out;
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (recording " + entry_label(position) + ")",
                ErrorEntry{std::string("[") + op_info(op).name + "]", position, position + 1, e.what()});
  }
}

// The source made what the write takes (cast, broadcast, contiguous, apart from dst: as copy_into
// does eagerly) by recorded ops, so that every run repeats them, from an eager source too; then the
// write, a copy op whose output is dst (backends/backend.hpp, writes_view).
Tensor record_write(const std::shared_ptr<BatchRecord>& owner, const Tensor& dst, const Tensor& src,
                    const WriteAt& where, const Written& written) {
  BatchRecord& batch = *owner;
  const std::size_t position = batch.entries.size();
  try {
    // A batch placed automatically runs on the destination's device when it writes (batch_place.cpp).
    if (batch.pinned && dst.storage()->handle() && dst.device() != batch.device) {
      throw Error(ErrorCode::invalid_argument, "[copy_into] the destination " + dst.str() +
                                                   " is not on the batch's device " + batch.device.str() +
                                                   ": a batch writes only into tensors on its device");
    }
    if (written.part.numel() == 0) return dst;  // nothing to write (nor a position to check)
    auto here = [&](const Tensor& t) {  // eager elsewhere: moved once, as ops do (placed: by the placement)
      if (!batch.pinned || !t.storage()->handle() || t.device() == batch.device) return t;
      if (t.pinned()) {
        throw Error(ErrorCode::invalid_argument, "[copy_into] uses " + t.str() + ", pinned there, in a batch pinned to " +
                                                     batch.device.str());
      }
      return move_tensor(t, batch.device, false, "copy_into");
    };
    auto record = [&](OpKind op, const Tensor& x, const OpParams& params) {
      std::array<Tensor, 1> in{x};
      return record_op(batch, op, in, params, owner);
    };
    Tensor s = here(src);
    if (s.dtype() != dst.dtype()) s = record(OpKind::cast, s, CastParams{dst.dtype()});
    if (s.shape() != written.part) s = s.broadcast_to(written.part);
    if (!s.is_contiguous() || s.shares_storage(dst)) s = record(OpKind::copy, s, NoParams{});
    std::vector<Tensor> inputs{s};
    OpParams params = NoParams{};
    if (where.position_given) {
      Tensor p = here(where.position);
      if (p.shares_storage(dst)) p = record(OpKind::copy, p, NoParams{});
      inputs.push_back(p);
      params = AxisParams{written.axis};
    }
    const std::size_t at = batch.entries.size();
    try {
      std::array<Tensor, 1> in{s};
      OpCall call{OpKind::copy, inputs, dst, params, op_cost(OpKind::copy, in, NoParams{}, {dst.shape(), dst.dtype()})};
      if (batch.pinned && !batch.backend->supports(call)) {
        const std::string why = batch.backend->unsupported_reason(call);
        throw Error(ErrorCode::unsupported, "[copy_into] is not supported on " + batch.device.str() + " for " +
                                                describe_call(in) + " into " + dst.str() + " (the batch is pinned there)" +
                                                (why.empty() ? "" : ": " + why));
      }
      batch.entries.emplace_back(std::move(call));
    } catch (const Error& e) {
      throw Error(e.code(), std::string(e.what()) + " (recording " + entry_label(at) + ")",
                  ErrorEntry{"[copy_into]", at, at + 1, e.what()});
    }
    return dst;
  } catch (const Error& e) {
    if (e.entry()) throw;  // already names its entry
    throw Error(e.code(), std::string(e.what()) + " (recording " + entry_label(position) + ")",
                ErrorEntry{"[copy_into]", position, position + 1, e.what()});
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
std::vector<Device> Batch::devices() const {
  std::vector<Device> out;
  if (!record_->placed) return {record_->device};
  for (const auto& seg : record_->segments)
    if (std::find(out.begin(), out.end(), seg.device) == out.end()) out.push_back(seg.device);
  return out;
}
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
  b.entries.emplace_back(
      detail::Readback{src.storage(), dtype_bytes(src.dtype(), src.offset()), r->host.data(), r->host.size(), {}});
  b.reads.push_back(r);
  return BatchRead(r);
}

void Batch::run() { detail::start(*record_, {}, true)->wait(); }
void Batch::run(std::initializer_list<std::span<const float>> inputs) {
  detail::start(*record_, {inputs.begin(), inputs.size()}, true)->wait();
}
void Batch::run(std::span<const std::span<const float>> inputs) { detail::start(*record_, inputs, true)->wait(); }
Future<void> Batch::submit() { return detail::future_of_completion(detail::start(*record_, {}, false)); }
Future<void> Batch::submit(std::initializer_list<std::span<const float>> inputs) {
  return detail::future_of_completion(detail::start(*record_, {inputs.begin(), inputs.size()}, false));
}
Future<void> Batch::submit(std::span<const std::span<const float>> inputs) {
  return detail::future_of_completion(detail::start(*record_, inputs, false));
}

std::vector<float> BatchRead::get() const {
  const auto& r = *state_;
  if (!r.done) throw Error(ErrorCode::invalid_argument, "[batch] read before the batch has run");
  r.done->wait();
  const std::size_t n = static_cast<std::size_t>(r.shape.numel());
  std::vector<float> out(n);
  if (dtype_is_quantized(r.dtype)) {  // quantized weights read back dequantized, as to_vector() does
    quant::dequantize(r.host, quant::format_of(r.dtype), out);
    return out;
  }
  detail::decode_host(r.host.data(), r.dtype, n, out.data());
  return out;
}

const Shape& BatchRead::shape() const { return state_->shape; }

}  // namespace trine
