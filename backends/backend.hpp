// The one interface every backend implements, and the registry that finds them.
//
// How an op travels (see also docs/design.md):
//   trine::relu(x)                      public free function (dispatch/ops.cpp)
//   -> run_op(OpKind::relu, {x}, params)
//   -> infer_op(...)                    dispatch/op_table.cpp: every shape/dtype/param check, in one
//                                       place, before any backend is asked; gives the output shape
//   -> Backend::supports(call)          the backend of the inputs' device; false = Error(unsupported)
//   -> Backend::encode({call})          a Submission holding the op list (one op is a list of one)
//   -> Backend::submit(...)->wait()     the sync call is submit + wait; async and batches reuse it
//   -> the backend's kernel             e.g. cpu_simd: the per-ISA KernelTable entry
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trine/device.hpp"
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine::detail {

class Backend;

// Memory on one device, owned by its backend's allocator. Destroying it returns the memory.
class Storage {
 public:
  Storage(Backend* backend, Device device, void* handle, std::size_t bytes) noexcept
      : backend_(backend), device_(device), handle_(handle), bytes_(bytes) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Backend& backend() const noexcept { return *backend_; }
  Device device() const noexcept { return device_; }
  void* handle() const noexcept { return handle_; }  // backend-defined (host pointer on cpu)
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  Backend* backend_;
  Device device_;
  void* handle_;
  std::size_t bytes_;
};

// One op with its inputs and its already-allocated output, shapes checked by the op table.
struct OpCall {
  OpKind op = OpKind::copy;
  std::vector<Tensor> inputs;  // in the op's order; optional ones may be undefined
  Tensor output;               // contiguous, on the same device as the inputs
  OpParams params;
};

// A recorded list of op calls in a backend's own form (command buffer, stream launches, tasks).
// The backend owns everything it needs until completion, temporaries included.
class Submission {
 public:
  virtual ~Submission() = default;
};

// Completion of a submitted Submission.
class Completion {
 public:
  virtual ~Completion() = default;
  // True when finished (successfully or not). Never blocks.
  virtual bool poll() = 0;
  // Blocks until finished; throws the Error the work failed with, if any.
  virtual void wait() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const noexcept = 0;

  // The devices of this kind that are present, index order.
  virtual std::vector<DeviceInfo> devices() const = 0;

  // Allocates `bytes` on device `index`; throws Error(out_of_memory) when it cannot. The handle
  // is opaque to everyone but this backend. bytes may be 0.
  virtual void* allocate(int index, std::size_t bytes) = 0;
  // Returns memory from allocate(). Never throws.
  virtual void deallocate(void* handle) noexcept = 0;

  // Host pointer to the memory, or nullptr when it is not host-visible (then use the copies).
  virtual void* host_pointer(void* handle) const noexcept = 0;
  // Blocking copies between host memory and [offset, offset + bytes) of a device allocation.
  virtual void copy_from_host(void* handle, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(const void* handle, std::size_t offset, void* dst, std::size_t bytes) = 0;

  // Optional: whether the guard regions this backend keeps around an allocation are untouched
  // (tests check them after every op). nullopt when the backend keeps no guards.
  virtual std::optional<bool> guards_intact(const void* handle) const noexcept {
    (void)handle;
    return std::nullopt;
  }

  // Whether this backend runs this (already validated) call. False routes the call elsewhere or,
  // when the device was pinned, fails with Error(unsupported) naming the op.
  virtual bool supports(const OpCall& call) const = 0;

  // Records calls (in order; later calls may read earlier calls' outputs) into a submission.
  virtual std::unique_ptr<Submission> encode(std::span<const OpCall> calls) = 0;

  // Starts a submission. The returned completion keeps the submission alive until it finishes.
  virtual std::shared_ptr<Completion> submit(std::unique_ptr<Submission> submission) = 0;
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
