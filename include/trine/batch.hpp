// Batch: record uploads, ops and reads, then run them as one submission per device.
//
//   trine::Batch batch;                                   // placed at run(); Batch(device) pins it
//   trine::Tensor x = batch.upload(host, {64, 256});      // recorded, not yet copied
//   trine::Tensor y = trine::softmax(trine::relu(trine::matmul(x, w)));  // the usual functions
//   trine::BatchRead out = batch.read(y);
//   batch.run();                                          // one upload, three ops, one readback
//   std::vector<float> result = out.get();
//   batch.run({new_host});                                // again with new input data
//
// Ops whose inputs come from a batch record into it (eager tensors such as weights may be mixed
// in; one on another device is moved to the batch's device once, unless pinned elsewhere, which is
// an error). The first run() or submit() places the batch: its
// tensors get memory and the recording closes; later runs replay it with new inputs. After a run,
// the batch's tensors hold that run's results and are ordinary tensors for anything else.
// A Batch is used from one thread at a time; the work it submits is ordered like any other.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "trine/future.hpp"
#include "trine/tensor.hpp"

namespace trine {

namespace detail {
struct BatchRecord;
struct ReadState;
}  // namespace detail

// A host copy of a batch tensor, filled by each run.
class BatchRead {
 public:
  // The values from the last finished run, row-major f32. Throws if no run has finished, or the
  // run failed (with its error).
  std::vector<float> get() const;
  const Shape& shape() const;

  explicit BatchRead(std::shared_ptr<detail::ReadState> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<detail::ReadState> state_;
};

class Batch {
 public:
  // Without a device the batch is placed automatically when it first runs, op by op, where the
  // whole batch's predicted time is lowest, every transfer between devices counted (a chain stays
  // on one device unless a step or a run of steps gains more than its moves cost; docs/dispatch.md);
  // one that writes (trine::copy_into) runs on one device, the destination's. With a device (or
  // inside a DeviceScope, or with TRINE_DEVICE set) it is pinned there.
  explicit Batch(std::optional<Device> device = std::nullopt);
  ~Batch();
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;

  // Records an input: `data` (shape.numel() floats, converted to dtype) is copied now and uploaded
  // once per run.
  Tensor upload(std::span<const float> data, const Shape& shape, DType dtype = DType::f32);
  // Records a read of `t` (a tensor of this batch): one readback per run.
  BatchRead read(const Tensor& t);

  // Places the batch (first time), uploads, runs every op, reads back; returns when done. An error
  // names the failing op and its position; the device stays usable.
  void run();
  // The same with new data for the uploads, in the order they were recorded (same sizes).
  void run(std::initializer_list<std::span<const float>> inputs);
  // The same from any contiguous range of spans (a std::vector<std::span<const float>>).
  void run(std::span<const std::span<const float>> inputs);
  // Like run(), returning at once.
  Future<void> submit();
  Future<void> submit(std::initializer_list<std::span<const float>> inputs);
  Future<void> submit(std::span<const std::span<const float>> inputs);

  // The device it runs on: the pinned one, or for an automatic batch the one chosen at its first
  // run (cpu before that); for a batch placed across devices, the device of its first step.
  Device device() const;
  // Every device its placement uses, in order of first use (one for a pinned batch).
  std::vector<Device> devices() const;
  // Entries recorded: uploads, ops and reads.
  std::size_t size() const;

 private:
  std::shared_ptr<detail::BatchRecord> record_;
};

}  // namespace trine
