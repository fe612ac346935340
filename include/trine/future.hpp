// Future: the result of an async op or a submitted batch, which finishes later.
//
// Every function here is thread-safe. A Future is a shared handle: copies see the same result.
#pragma once

#include <chrono>
#include <exception>
#include <memory>

#include "trine/tensor.hpp"

namespace trine {

namespace detail {
class Completion;
}

template <class T>
class Future;

// The result of trine::async::<op>(...). The op's error (bad input or a failure while running) is
// raised by get() and wait(), naming the op.
template <>
class Future<Tensor> {
 public:
  Future() = default;  // not valid()
  bool valid() const noexcept { return valid_; }
  // True once the op has finished (successfully or not). Never blocks.
  bool ready() const;
  // Blocks until finished; throws the op's error.
  void wait() const;
  // Blocks at most `timeout`; true when finished. A timeout loses nothing: the result is still
  // there for a later wait or get.
  bool wait_for(std::chrono::nanoseconds timeout) const;
  // wait(), then the result. May be called any number of times.
  Tensor get() const;
  // The result without waiting, to hand to further ops (async or sync): they order themselves after
  // this op on the device; reading it on the host (to_vector, item, to) waits for it. If the op
  // already failed, this throws its error.
  operator Tensor() const;  // NOLINT: implicit by design, so a Future can be passed where a Tensor is

  // Internal (trine::async): the pending result and the work computing it, or the error that stopped
  // it before it was submitted. Every member is a shared handle, so copies see the same result.
  Future(Tensor value, std::shared_ptr<detail::Completion> done, std::exception_ptr error) noexcept
      : value_(std::move(value)), done_(std::move(done)), error_(std::move(error)), valid_(true) {}

 private:
  Tensor value_;
  std::shared_ptr<detail::Completion> done_;  // null: nothing pending
  std::exception_ptr error_;
  bool valid_ = false;
};

// The completion of a submitted Batch: its read handles have their data once it is ready.
template <>
class Future<void> {
 public:
  Future() = default;
  bool valid() const noexcept { return valid_; }
  bool ready() const;
  void wait() const;
  bool wait_for(std::chrono::nanoseconds timeout) const;
  void get() const { wait(); }

  explicit Future(std::shared_ptr<detail::Completion> done) noexcept : done_(std::move(done)), valid_(true) {}

 private:
  std::shared_ptr<detail::Completion> done_;
  bool valid_ = false;
};

namespace detail {

// While one is alive on a thread, ops on that thread submit without waiting (trine::async).
class AsyncScope {
 public:
  AsyncScope() noexcept;
  ~AsyncScope();
  AsyncScope(const AsyncScope&) = delete;
  AsyncScope& operator=(const AsyncScope&) = delete;

 private:
  bool previous_;
};

Future<Tensor> future_of(const Tensor& pending);
Future<Tensor> future_of_error(std::exception_ptr error);

// Runs `f` (one sync op call) in async mode; an error becomes the Future's error.
template <class F>
Future<Tensor> launch_async(F&& f) {
  try {
    AsyncScope scope;
    return future_of(f());
  } catch (...) {
    return future_of_error(std::current_exception());
  }
}

}  // namespace detail
}  // namespace trine
