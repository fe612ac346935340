// The one interface every backend implements, and the registry that finds them.
//
// How an op travels (see also docs/design.md):
//   trine::relu(x)                      public free function (ops.hpp, from ops.def's TRINE_FN line)
//   -> run_op(OpKind::relu, {x}, params)
//   -> infer_op(...)                    ops/rules.cpp: every shape/dtype/param check, in one
//                                       place, before any backend is asked; gives the output shape
//   -> place_call(...)                  dispatch/dispatcher.cpp: the pinned device, or the cheapest
//                                       by the cost model; inputs elsewhere are moved there
//   -> Backend::supports(call)          the chosen device's backend; false = Error(unsupported)
//   -> submit_entries(...)              tensor/submit.cpp: collects the completions the call must
//                                       wait for from its storages, Backend::encode + submit, and
//                                       records the new completion on them
//   -> Completion::wait()               only the sync call waits; async returns a Future, a batch
//                                       submits many entries at once: one path
//   -> the backend's kernel             e.g. cpu_simd: the per-ISA KernelTable entry
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tensor/storage.hpp"
#include "trine/debug.hpp"
#include "trine/memory.hpp"
#include "trine/device.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine::detail {

// One op with its inputs and its already-allocated output, shapes checked by the op table.
struct OpCall {
  OpKind op = OpKind::copy;
  std::vector<Tensor> inputs;  // in the op's order; optional ones may be undefined
  Tensor output;               // contiguous, on the same device as the inputs (but see writes_view)
  OpParams params;
  OpCost cost;  // the op table's estimate of its work (flops, bytes)
};

// Whether `call` writes into a view of an existing tensor (trine::copy_into): the copy op, whose
// output is then any view (offset, strides; never one that repeats an element) instead of a fresh
// contiguous tensor. Its input is contiguous, of the output's dtype and shape (copy_into casts,
// broadcasts and copies the source first), so a backend scatters one contiguous range into the
// view. Every other call's output is contiguous.
inline bool writes_view(const OpCall& call) {
  return call.op == OpKind::copy && call.inputs.size() == 1 && !call.output.is_contiguous();
}

// Whether `call` writes at a position read on the device (trine::copy_into with a position tensor):
// the copy op with inputs {src, position} and AxisParams{axis} (axis >= 0). The elements written are
// the output's [p, p + src.dim(axis)) along axis, p the position's one i32 value when the call runs,
// which must lie in [0, output.dim(axis) - src.dim(axis)]: else nothing is written and the call fails
// with write_position_error. src is contiguous, of the output's dtype, with its other dims; the
// output is any view that repeats no element.
inline bool writes_at(const OpCall& call) { return call.op == OpKind::copy && call.inputs.size() == 2; }
inline int write_axis(const OpCall& call) { return std::get<AxisParams>(call.params).axis; }
// The largest position a writes_at call takes.
inline std::int64_t write_position_max(const OpCall& call) {
  return call.output.dim(write_axis(call)) - call.inputs[0].dim(write_axis(call));
}
// The view a writes_at call writes at position p.
inline Tensor written_at(const OpCall& call, std::int64_t p) {
  const Tensor& y = call.output;
  return Tensor(y.storage(), call.inputs[0].shape(), y.strides(),
                y.offset() + p * y.strides()[static_cast<std::size_t>(write_axis(call))], y.dtype(), y.pinned());
}
inline std::string write_position_error(std::int64_t position, const OpCall& call) {
  return "position " + std::to_string(position) + " is outside [0, " + std::to_string(write_position_max(call)) +
         "] for a write of " + std::to_string(call.inputs[0].dim(write_axis(call))) + " along axis " +
         std::to_string(write_axis(call)) + " of " + call.output.str() + " (trine::copy_into)";
}

// Whether `call` is attention over the keys [0, n) of k and v, n the one i32 value of its fourth
// input (`valid`) when the call runs, which must lie in [attention_valid_min, Lk] (Lk: k's dim -2):
// else nothing is written and the call fails with attention_valid_error. Keys j >= n are never read;
// the causal alignment and the window take n for Lk (query i is at position i + n - Lq).
inline bool attends_valid(const OpCall& call) {
  return call.op == OpKind::attention && call.inputs.size() >= 4 && call.inputs[3].defined();
}
// Whether `call` is attention with an additive mask (its fifth input), f32 [..., Lq, Lk] of rank 2
// up to q's, each leading dim 1 or q's: element [.., i, j] is added to query i's scaled score of key j.
inline bool attends_masked(const OpCall& call) {
  return call.op == OpKind::attention && call.inputs.size() >= 5 && call.inputs[4].defined();
}
// The mask's element strides, in elements, along q's batch-and-head index b (its dims above -2 taken
// together, b = ((b0 * d1 + b1) ...) * H + h) broadcast as each of the mask's leading dims has it:
// mask_offset(b) is the offset of [b's index, 0, 0] in a contiguous mask.
inline std::int64_t attention_mask_offset(const OpCall& call, std::int64_t b) {
  const Tensor& q = call.inputs[0];
  const Tensor& m = call.inputs[4];
  std::int64_t off = 0, stride = m.dim(-1) * m.dim(-2);
  for (int d = 1; d <= q.rank() - 2; ++d) {  // q's dim -2 - d, from the innermost leading dim out
    const std::int64_t qd = q.dim(-2 - d);
    const std::int64_t idx = b % qd;
    b /= qd;
    if (d <= m.rank() - 2) {
      const std::int64_t md = m.dim(-2 - d);
      if (md != 1) off += idx * stride;
      stride *= md;
    }
  }
  return off;
}
// The same as two strides, for kernels that take b as outer * H + h (outer: q's dims above the
// heads, dim -3, taken together): offset(b) = b / H * outer + b % H * head, 0 where the mask
// broadcasts. nullopt when two strides cannot say it: the mask's dims above the heads mix 1 and q's.
struct AttentionMaskStrides {
  std::int64_t outer = 0, head = 0;
};
inline std::optional<AttentionMaskStrides> attention_mask_strides(const OpCall& call) {
  const Tensor &q = call.inputs[0], &m = call.inputs[4];
  const int r = q.rank();
  const std::int64_t plane = m.dim(-1) * m.dim(-2), heads = r >= 3 ? q.dim(-3) : 1;
  const bool mask_heads = m.rank() >= 3 && m.dim(-3) != 1;
  bool any_outer = false, all_outer = true;
  for (int d = 4; d <= r; ++d) {
    const bool full = d <= m.rank() && m.dim(-d) != 1;
    any_outer = any_outer || full;
    all_outer = all_outer && (full || q.dim(-d) == 1);
  }
  if (any_outer && !all_outer) return std::nullopt;
  return AttentionMaskStrides{any_outer ? (mask_heads ? heads * plane : plane) : 0, mask_heads ? plane : 0};
}
inline std::int64_t attention_valid_min(const OpCall& call) {
  return std::get<AttentionParams>(call.params).causal ? call.inputs[0].dim(-2) : 1;
}
inline std::int64_t attention_valid_max(const OpCall& call) { return call.inputs[1].dim(-2); }
inline std::string attention_valid_error(std::int64_t n, const OpCall& call) {
  return "valid " + std::to_string(n) + " is outside [" + std::to_string(attention_valid_min(call)) + ", " +
         std::to_string(attention_valid_max(call)) + "]" +
         (std::get<AttentionParams>(call.params).causal ? " (causal: Lq <= valid <= Lk)" : " (1 <= valid <= Lk)") +
         " for q " + call.inputs[0].str() + ", k " + call.inputs[1].str() + ", v " + call.inputs[2].str() +
         " (trine::attention)";
}

// Whether a backend can write `call`'s output: contiguous, or a view written by writes_view's or
// writes_at's rule.
inline bool output_writable(const OpCall& call) {
  if (!call.output.defined()) return false;
  if (writes_at(call)) {
    const Tensor &x = call.inputs[0], &p = call.inputs[1], &y = call.output;
    if (!std::holds_alternative<AxisParams>(call.params) || !x.is_contiguous() || x.dtype() != y.dtype() ||
        x.rank() != y.rank() || p.dtype() != DType::i32 || p.numel() != 1)
      return false;
    const int axis = write_axis(call);
    if (axis < 0 || axis >= y.rank() || x.dim(axis) > y.dim(axis)) return false;
    for (int d = 0; d < y.rank(); ++d)
      if (d != axis && x.dim(d) != y.dim(d)) return false;
    return true;
  }
  if (call.output.is_contiguous()) return true;
  return writes_view(call) && call.inputs[0].is_contiguous() && call.inputs[0].dtype() == call.output.dtype() &&
         call.inputs[0].shape() == call.output.shape();
}

// Whether an input or the output of `call` is f16 or bf16 (for the backends whose kernels for some
// ops read f32 only so far, and run those calls between casts: backends/widen.hpp).
inline bool has_16bit(const OpCall& call) {
  auto sixteen = [](const Tensor& t) { return t.defined() && dtype_is_16bit(t.dtype()); };
  if (sixteen(call.output)) return true;
  for (const Tensor& t : call.inputs)
    if (sixteen(t)) return true;
  return false;
}

// The quantized weight among the call's inputs (matmul's b, gemv's a), or nullptr.
inline const Tensor* quantized_input(const OpCall& call) {
  for (const Tensor& t : call.inputs)
    if (t.defined() && dtype_is_quantized(t.dtype())) return &t;
  return nullptr;
}

// Host memory -> [offset, offset + bytes) of `dst`. `src` stays valid until the submission completes.
struct Upload {
  std::shared_ptr<Storage> dst;
  std::size_t offset = 0;
  const void* src = nullptr;
  std::size_t bytes = 0;
  // Set when `src` is the memory of a host storage (the cpu's, when the dispatcher moves a tensor):
  // the upload is then ordered after that storage's writer and keeps it alive.
  std::shared_ptr<Storage> src_storage;
};

// [offset, offset + bytes) of `src` -> host memory `dst`, valid until the submission completes.
struct Readback {
  std::shared_ptr<Storage> src;
  std::size_t offset = 0;
  void* dst = nullptr;
  std::size_t bytes = 0;
  // Set when `dst` is the memory of a host storage: the readback is its writer and keeps it alive.
  std::shared_ptr<Storage> dst_storage;
};

// Between two storages of the same backend.
struct DeviceCopy {
  std::shared_ptr<Storage> src;
  std::size_t src_offset = 0;
  std::shared_ptr<Storage> dst;
  std::size_t dst_offset = 0;
  std::size_t bytes = 0;
};

// One step of a submission. Entries run in order as far as anyone can observe: a later entry sees
// everything earlier entries wrote (a backend may overlap entries that touch disjoint memory).
using Entry = std::variant<OpCall, Upload, Readback, DeviceCopy>;

// A recorded list of entries in a backend's own form (command buffer, stream launches, tasks).
// The backend owns everything it needs until completion, temporaries included.
//
// Temporaries (a strided input made contiguous, scratch a kernel needs): one way, a tensor from
// detail::empty_tensor(shape, dtype, device, /*pinned=*/false) (tensor/make.hpp), on the call's own
// device, whose memory comes from that device's memory cache and goes back to it when the last
// reference drops; the submission (or the kernel, when it runs synchronously) holds the tensor
// until the work that uses it has completed. Memory that is not a tensor's (Vulkan's staging
// buffers, CUDA's small per-device words) comes from the same cache (tensor/memory_cache.hpp).
class Submission {
 public:
  virtual ~Submission() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const noexcept = 0;

  // The devices of this kind that are present, index order.
  virtual std::vector<DeviceInfo> devices() const = 0;

  // Allocates `bytes` on device `index`; throws Error(out_of_memory) when it cannot. The handle
  // is opaque to everyone but this backend. bytes may be 0. Thread-safe. Called through the memory
  // cache (tensor/memory_cache.hpp), never directly by the layers above.
  virtual void* allocate(int index, std::size_t bytes) = 0;
  // Optional: like allocate, but staging memory: host-visible memory the device copies to and from,
  // for a backend whose storage memory the host cannot map. Asked only by the backend itself (its
  // transfers), through the memory cache like allocate. The default: there is none.
  virtual void* allocate_staging(int index, std::size_t bytes) {
    (void)index;
    (void)bytes;
    throw Error(ErrorCode::unsupported, "[allocate] this backend has no staging memory");
  }
  // Optional: whether one allocation of `bytes` can exist on device `index` at all (its heap, its
  // largest allocation), asked before placing a storage there, so that the dispatcher puts a step
  // that cannot fit elsewhere instead of failing at allocation. The default: no such limit known.
  virtual bool fits(int index, std::size_t bytes) const noexcept {
    (void)index;
    (void)bytes;
    return true;
  }
  // Returns memory from allocate(index, ...) or allocate_staging(index, ...). Never throws. Only
  // called once no submission uses it.
  virtual void deallocate(int index, void* handle) noexcept = 0;

  // Optional: the smallest block the memory cache (tensor/memory_cache.hpp) keeps for reuse on this
  // backend's devices; smaller ones go straight to allocate and deallocate. The default,
  // memory::cache_min_block, suits memory whose small allocations are cheap (malloc); a backend
  // whose every allocation is a driver call returns less. At least 1.
  virtual std::size_t cache_min_block() const noexcept { return memory::cache_min_block; }
  // Optional: the default bound of the memory cache on device `index` when its memory is the
  // device's own (a GPU's): a share of that memory, as a framework's caching allocator holds it. The
  // cache gives everything back and retries when an allocation fails, so a large bound costs no
  // failed calls. 0 (the default): the host-memory default (memory::set_cache_limit's comment).
  virtual std::size_t cache_limit(int index) const noexcept {
    (void)index;
    return 0;
  }

  // Optional: the memory cache hands out `handle` (from allocate(), possibly for a larger size, or
  // used before) to hold `bytes`; a backend that keeps per-allocation bookkeeping (the cpu
  // backend's guards) updates it here. Never throws.
  virtual void prepare(void* handle, std::size_t bytes) noexcept {
    (void)handle;
    (void)bytes;
  }

  // A host pointer to the memory when host access is coherent and ordered: once the storage's last
  // writer has completed, the host may read and write through it with no flush, invalidate or
  // copy (cpu memory, host-visible coherent device memory). Otherwise nullptr: use Upload and
  // Readback entries.
  virtual void* host_pointer(void* handle) const noexcept = 0;

  // Optional: whether the guard regions this backend keeps around an allocation are untouched
  // (tests check them after every op). nullopt when the backend keeps no guards.
  virtual std::optional<bool> guards_intact(const void* handle) const noexcept {
    (void)handle;
    return std::nullopt;
  }

  // Optional: the device memory this backend holds from its driver for device `index` (driver
  // allocations, pooled blocks, bytes), for trine::debug::device_memory. nullopt when the backend
  // keeps no such account.
  virtual std::optional<debug::DeviceMemoryStats> device_memory(int index) const {
    (void)index;
    return std::nullopt;
  }

  // Optional: one empty submission on device `index` (no commands), waited for, so a benchmark can
  // time the driver's floor under a sync call (trine::debug::bare_submit). False when the backend
  // has no submissions of its own to time.
  virtual bool bare_submit(int index) {
    (void)index;
    return false;
  }

  // Optional: drops what the backend keeps between submissions to replay them (recorded command
  // buffers and the temporaries they use), so their memory goes back. Called by
  // trine::memory::clear_cache, before an allocation that failed is retried, and at exit. True
  // when something was dropped.
  virtual bool drop_recordings() noexcept { return false; }

  // Whether this backend runs this (already validated) call. False routes the call elsewhere or,
  // when the device was pinned, fails with Error(unsupported) naming the op. The call's tensors may
  // be phantoms (a storage with its size but no memory): answer from shapes, dtypes and sizes. A
  // call accepted here should never fail as unsupported in encode() or submit(): the dispatcher
  // relies on this answer to place calls that are not pinned.
  virtual bool supports(const OpCall& call) const = 0;

  // Optional: whether this backend runs `call` (one supports() accepts) as its f32 form between
  // casts of its f16/bf16 tensors (backends/widen.hpp) rather than in a kernel that reads them. For
  // trine::debug::runs_between_casts.
  virtual bool widens(const OpCall& call) const {
    (void)call;
    return false;
  }

  // Optional: why supports(call) is false, in words for the error a pinned call gets ("input 0
  // binds 180 MB, over ..."; no leading "[op]"), or empty when there is nothing to add to "not
  // supported". Only asked on that error path, and for the dispatcher's log.
  virtual std::string unsupported_reason(const OpCall& call) const {
    (void)call;
    return {};
  }

  // Records entries (in order; later entries may read what earlier ones wrote) into a submission.
  // Every storage the entries touch stays referenced by the submission until it completes. Taken
  // by value: a single op moves its one entry in, a batch that replays keeps its own copy.
  virtual std::unique_ptr<Submission> encode(std::vector<Entry> entries) = 0;

  // Starts a submission after every completion in `waits` has finished. A backend waits on its own
  // completions on the device (timeline value, event, queue order) and on other backends' by
  // whatever means it has, without blocking the submitting thread unless `caller_waits` (the caller
  // is about to wait for the result anyway, so the backend may run the work on the calling
  // thread). If a completion in `waits` failed, this submission fails with an error naming it.
  // An entry that fails fails the submission: its error names the entry's op and, when there are
  // several entries, its position. Thread-safe: many threads may submit at once.
  virtual std::shared_ptr<Completion> submit(std::unique_ptr<Submission> submission,
                                             std::span<const std::shared_ptr<Completion>> waits, bool caller_waits) = 0;

  // Blocks until every submission made before the call has finished (failures are not rethrown
  // here: they are raised where the results are read).
  virtual void synchronize() = 0;

  // Transfers this backend has performed since the process started (Upload, Readback and
  // DeviceCopy entries, and their bytes), for tests and trine-bench.
  virtual TransferStats transfer_stats() const noexcept = 0;
};

// Registry (backends/registry.cpp). Each backend folder has one factory that returns nullptr, and
// a reason, when that backend is not built or not usable on this machine.
struct BackendSlot {
  DeviceKind kind;
  bool built = false;
  Backend* backend = nullptr;       // null when unavailable
  std::string reason;               // why unavailable, or a short description when available
  std::vector<DeviceInfo> devices;  // enumerated once, when the backend is made
};

const std::vector<BackendSlot>& backend_slots();
// The backend for `device`, or Error(device_unavailable) naming `op` (e.g. "relu") and the reason.
// Called for every op and allocation: it builds no strings unless it throws.
Backend& backend_for(Device device, const char* op);

// Factories, one per backend folder. A backend compiled out links a stub returning nullptr.
std::unique_ptr<Backend> make_cpu_backend(std::string& reason, bool& built);
std::unique_ptr<Backend> make_vulkan_backend(std::string& reason, bool& built);
std::unique_ptr<Backend> make_cuda_backend(std::string& reason, bool& built);

}  // namespace trine::detail
