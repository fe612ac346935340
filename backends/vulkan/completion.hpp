// The completion of one Vulkan submission: a value of the device's timeline semaphore, plus the
// host copies that run once the device reaches it and the errors the device reported
// (Recorder::report_words: an entry's error, named as entry_error names it). It may start out
// pending (the submission waits in the submit thread for work of another backend) and gets its
// value when submitted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "backends/vulkan/recorder.hpp"

namespace trine::vulkan {

class VulkanCompletion final : public detail::Completion {
 public:
  explicit VulkanCompletion(DeviceContext& ctx) : ctx_(ctx) {}
  ~VulkanCompletion() override;

  // Submitted as timeline `value`; `state` and `keep` (the entries: storage references) are
  // released when the device has finished; `late_error` (validation messages) is its error then,
  // else the first error the device reported, as the entry of `keep` that recorded it.
  void submitted(std::uint64_t value, Recorder::StatePtr state, std::vector<detail::Entry> keep,
                 std::exception_ptr late_error);
  // Finished without device work: the host steps in `state` run now.
  void finished(Recorder::StatePtr state, std::exception_ptr error);

  bool poll() override;
  void wait() override;
  bool wait_for(std::chrono::nanoseconds timeout) override;
  std::exception_ptr error() override;

  DeviceContext& context() const noexcept { return ctx_; }
  // For a later submission on the same device: the value to wait for on the device, or 0 when
  // that is not enough (still pending, or host copies still to run after it).
  std::uint64_t device_wait_value();

 private:
  enum class Phase { pending, submitted, done };
  // Under mu_: if the device reached value_, run the host copies and release; true when done.
  bool settle_locked(bool block, std::uint64_t timeout_ns);
  // Until done or `deadline` (unless `forever`); true when done.
  bool wait_until(std::chrono::steady_clock::time_point deadline, bool forever);

  DeviceContext& ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  Phase phase_ = Phase::pending;
  std::atomic<bool> done_{false};
  std::uint64_t value_ = 0;
  Recorder::StatePtr state_;
  std::vector<detail::Entry> keep_;
  std::exception_ptr error_;
  std::exception_ptr late_error_;
};

}  // namespace trine::vulkan
