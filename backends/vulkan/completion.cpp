// VulkanCompletion: waits on the timeline semaphore, then runs the host copies, reads what the
// device reported (Recorder::report_words), and frees the submission's command buffer, temporaries
// and storage references, once.
#include "backends/vulkan/completion.hpp"

#include <chrono>

#include "backends/entries.hpp"
#include "backends/vulkan/context.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

VulkanCompletion::~VulkanCompletion() {
  // The backend keeps every in-flight completion until it has finished, so this runs only after
  // the device is done with the state (or at exit, when waiting is right).
  std::unique_lock<std::mutex> lock(mu_);
  if (phase_ == Phase::submitted) {
    try {
      settle_locked(true, UINT64_MAX);
    } catch (...) {  // destructors never throw; the error was for whoever waited
    }
  }
}

void VulkanCompletion::submitted(std::uint64_t value, Recorder::StatePtr state, std::vector<detail::Entry> keep,
                                 std::exception_ptr late_error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    value_ = value;
    state_ = std::move(state);
    keep_ = std::move(keep);
    late_error_ = std::move(late_error);
    phase_ = Phase::submitted;
  }
  cv_.notify_all();
}

void VulkanCompletion::finished(Recorder::StatePtr state, std::exception_ptr error) {
  if (state && !error) complete_state(*state);
  state.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::move(error);
    phase_ = Phase::done;
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool VulkanCompletion::settle_locked(bool block, std::uint64_t timeout_ns) {
  if (phase_ == Phase::done) return true;
  if (phase_ == Phase::pending) return false;
  try {
    const bool reached = block ? ctx_.wait_value(value_, timeout_ns) : ctx_.completed_value() >= value_;
    if (!reached) return false;
    if (state_) complete_state(*state_);
    error_ = late_error_;
    // What the device reported wrong (gather's index outside its table) fails the submission as
    // the entry's error, named as a failure while recording would be (vulkan_backend.cpp's run).
    if (auto r = state_ && !error_ ? reported(*state_) : std::nullopt; r && r->entry < keep_.size()) {
      error_ = std::make_exception_ptr(detail::entry_error(keep_[r->entry], r->entry, keep_.size(), r->error,
                                                           Device{DeviceKind::vulkan, ctx_.index()}));
    }
  } catch (const Error& e) {
    ctx_.mark_lost();
    error_ = std::current_exception();
  }
  // Release before anyone is told: memory of dropped tensors is free when waiters wake.
  state_.reset();
  keep_.clear();
  phase_ = Phase::done;
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
  return true;
}

// Never blocks: a thread inside wait() holds the lock only around bookkeeping, and one that holds
// it now is about to settle the completion anyway.
bool VulkanCompletion::poll() {
  if (done_.load(std::memory_order_acquire)) return true;
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  return lock.owns_lock() && settle_locked(false, 0);
}

// Waits on the timeline without the lock, so poll(), error() and other waiters never queue behind
// the device.
bool VulkanCompletion::wait_until(std::chrono::steady_clock::time_point deadline, bool forever) {
  std::unique_lock<std::mutex> lock(mu_);
  if (forever) {
    cv_.wait(lock, [&] { return phase_ != Phase::pending; });
  } else if (!cv_.wait_until(lock, deadline, [&] { return phase_ != Phase::pending; })) {
    return false;
  }
  if (phase_ == Phase::done) return true;
  const std::uint64_t value = value_;
  lock.unlock();
  bool reached = true;
  try {
    if (forever) {
      ctx_.wait_value(value, UINT64_MAX);
    } else {
      const auto left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now());
      reached = ctx_.wait_value(value, left.count() > 0 ? static_cast<std::uint64_t>(left.count()) : 0);
    }
  } catch (const Error&) {  // device lost: settle_locked asks again and records the error
  }
  lock.lock();
  return reached ? settle_locked(false, 0) || phase_ == Phase::done : phase_ == Phase::done;
}

void VulkanCompletion::wait() {
  while (!wait_until({}, true)) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) std::rethrow_exception(error_);
}

bool VulkanCompletion::wait_for(std::chrono::nanoseconds timeout) {
  return wait_until(std::chrono::steady_clock::now() + timeout, false);
}

std::exception_ptr VulkanCompletion::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return phase_ == Phase::done ? error_ : nullptr;
}

std::uint64_t VulkanCompletion::device_wait_value() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::submitted) return 0;
  if (!state_ || !has_host_steps(*state_)) return value_;
  return 0;
}

}  // namespace trine::vulkan
