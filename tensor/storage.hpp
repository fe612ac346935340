// Storage (memory on one device) and Completion (work that finishes later): how every host read,
// every op and every submission orders itself after the work that writes the memory it touches.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "trine/device.hpp"

namespace trine::detail {

class Backend;
struct BatchRecord;

// The completion of one submission. Every implementation is thread-safe: any number of threads
// may poll, wait and wait_for at once, before and after it finishes.
class Completion {
 public:
  virtual ~Completion() = default;
  // True when the work has finished, successfully or not. Never blocks.
  virtual bool poll() = 0;
  // Blocks until finished; rethrows the trine::Error the work failed with, if any.
  virtual void wait() = 0;
  // Blocks at most `timeout`; true when finished (then wait() returns or throws at once).
  virtual bool wait_for(std::chrono::nanoseconds timeout) = 0;
  // After poll() is true: the error the work failed with, or null.
  virtual std::exception_ptr error() = 0;
};

// A completion finished by a host thread (cpu tasks, emulated devices, host-side steps of other
// backends): finish() once, with or without an error.
class HostCompletion final : public Completion {
 public:
  bool poll() override { return done_.load(std::memory_order_acquire); }
  void wait() override;
  bool wait_for(std::chrono::nanoseconds timeout) override;
  std::exception_ptr error() override;
  void finish(std::exception_ptr error) noexcept;

 private:
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::exception_ptr error_;
};

// The completion of work that is already over: successful (one shared instance, so the sync fast
// path allocates nothing for it) or failed with `error`.
std::shared_ptr<Completion> completed(std::exception_ptr error = nullptr);

// Memory on one device, allocated from its backend. A submission that uses a Storage holds a
// reference to it until the submission completes, so dropping every Tensor of a Storage while work
// on it is in flight neither blocks nor frees memory that work still uses.
//
// Ordering: the Storage remembers its last writer and the readers since, as completions. A new
// submission that reads it waits for the writer; one that writes it waits for the writer and the
// readers. A host read waits for the writer (and rethrows the error it failed with).
class Storage {
 public:
  Storage(Backend* backend, Device device, void* handle, std::size_t bytes) noexcept
      : backend_(backend), device_(device), handle_(handle), bytes_(bytes) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Backend& backend() const noexcept { return *backend_; }  // not before a recorded storage is placed
  Device device() const noexcept { return device_; }
  // Backend-defined (a host pointer on cpu). Null while a batch has recorded but not placed it.
  void* handle() const noexcept { return handle_; }
  std::size_t bytes() const noexcept { return bytes_; }

  // Appends the completions a new submission must wait for to `out`.
  void collect_waits(bool write, std::vector<std::shared_ptr<Completion>>& out);
  // Records a submission that reads (write = false) or writes this storage.
  void add_use(const std::shared_ptr<Completion>& c, bool write);
  // The last writer (null when none is pending or it finished successfully).
  std::shared_ptr<Completion> writer();
  // Blocks until the last writer has finished; rethrows its error.
  void wait_writer();

  // Batches: the batch that recorded this storage and has not placed it yet (see api/batch.cpp).
  std::shared_ptr<BatchRecord> recording() const noexcept { return recording_.lock(); }
  void set_recording(const std::shared_ptr<BatchRecord>& b) noexcept { recording_ = b; }
  // Gives a recorded storage its device and memory when the batch is placed (a batch without a
  // device records storages with no backend yet). Called once; again with a null handle to undo a
  // placement that failed.
  void place(Backend* backend, Device device, void* handle) noexcept {
    backend_ = backend;
    device_ = device;
    handle_ = handle;
    memory_owner_.reset();
  }
  // The same with memory that `owner` holds (a batch reusing the memory of a tensor whose last use
  // is over): this storage keeps `owner` alive and never frees the memory itself.
  void place_in(Backend* backend, Device device, std::shared_ptr<Storage> owner) noexcept {
    backend_ = backend;
    device_ = device;
    handle_ = owner->handle_;
    memory_owner_ = std::move(owner);
  }

 private:
  Backend* backend_;
  Device device_;
  void* handle_;
  std::size_t bytes_;
  std::weak_ptr<BatchRecord> recording_;
  std::shared_ptr<Storage> memory_owner_;  // set when the memory is another storage's (place_in)

  std::mutex mu_;
  std::shared_ptr<Completion> writer_;
  std::vector<std::shared_ptr<Completion>> readers_;
  // False while writer_ and readers_ are empty, so the sync path (all work already finished) skips
  // the lock. Written under mu_.
  std::atomic<bool> pending_{false};
};

}  // namespace trine::detail
