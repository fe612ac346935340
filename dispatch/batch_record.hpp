// What a trine::Batch records (api/batch.cpp), how run_op records into it, and what the batch's
// placement reads (dispatch/batch_place.cpp).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backends/backend.hpp"
#include "trine/batch.hpp"

namespace trine::detail {

struct ReadState {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<unsigned char> host;   // filled by the readback of each run
  std::shared_ptr<Completion> done;  // the last run that fills it; null before the first
};

struct BatchRecord {
  Device device;                // pinned: from the start; automatic: chosen when placed
  bool pinned = false;          // Batch(device), or a DeviceScope / TRINE_DEVICE when it was made
  Backend* backend = nullptr;   // null until an automatic batch is placed
  std::vector<Entry> entries;                          // uploads, ops and readbacks, in record order
  // Made when placed: the entries (plus the transfers between devices that a placement across
  // devices needs) cut into runs on one device, each submitted as one submission per run.
  struct Segment {
    Device device;
    Backend* backend = nullptr;
    std::vector<Entry> entries;
    // For each of `entries`, its index in the batch's `entries`, or k_not_recorded for a transfer
    // between devices the placement added: a failing entry's error names its place in the batch.
    std::vector<std::size_t> positions;
  };
  std::vector<Segment> segments;
  std::vector<std::shared_ptr<Storage>> storages;      // placed (given memory) by the first run
  struct Input {
    std::vector<unsigned char> host;  // the data each run uploads, in the input's dtype
    DType dtype = DType::f32;
    std::size_t entry = 0;  // index of its Upload in entries
    std::size_t segment = 0, at = 0;  // where that Upload is once placed
  };
  std::vector<Input> inputs;  // in record order
  std::vector<std::shared_ptr<ReadState>> reads;
  std::shared_ptr<Completion> last;                    // the last run submitted
  bool placed = false;
};

// Places the batch (dispatch/batch_place.cpp): a pinned batch on its device, an automatic one op by
// op where the profile predicts the whole batch fastest, counting every transfer the placement
// implies; gives every recorded storage its memory, cuts `segments`, closes the recording. On
// failure nothing stays placed and the batch can be run again.
void place_batch(BatchRecord& b);

// "batch entry 3" (1-based) for messages.
std::string entry_label(std::size_t i);

// The batch an op with these inputs records into (one of them was recorded and not yet placed),
// or null: the op runs now.
std::shared_ptr<BatchRecord> recording_batch(OpKind op, std::span<const Tensor> inputs);

// Records `op` into `batch` and returns its (not yet computed) output. `owner` is the batch's own
// pointer, found through the inputs when null (it must be given when every input is eager).
Tensor record_op(BatchRecord& batch, OpKind op, std::span<const Tensor> inputs, const OpParams& params,
                 std::shared_ptr<BatchRecord> owner = nullptr);

// trine::copy_into's checks (api/ops.cpp), which give the part of dst written, and its recording
// into `batch` (api/batch.cpp): the entries that bring src to dst's dtype, that part's shape and
// contiguity, then the write. Returns dst.
struct WriteAt {
  int axis = -1;
  Tensor position;  // i32, one element, read when the write runs
  bool position_given = false;
};
struct Written {
  int axis = -1;  // non-negative with a position
  Shape part;     // dst's shape, or with a position that shape with src.dim(axis) along axis
};
Written check_write(const Tensor& dst, const Tensor& src, const WriteAt& at);
Tensor record_write(const std::shared_ptr<BatchRecord>& batch, const Tensor& dst, const Tensor& src,
                    const WriteAt& at, const Written& part);

// A Future<void> that is ready when `done` is (api/future.cpp).
Future<void> future_of_completion(std::shared_ptr<Completion> done);

// Whether this thread is inside trine::async (ops submit without waiting).
bool async_mode() noexcept;

}  // namespace trine::detail
