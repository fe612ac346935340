// Storage's ordering (last writer, readers since) and the host-side completions.
#include "tensor/storage.hpp"

#include <algorithm>

#include "backends/backend.hpp"
#include "tensor/memory_cache.hpp"

namespace trine::detail {

void HostCompletion::wait() {
  if (!done_.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_.load(std::memory_order_acquire); });
  }
  if (error_) std::rethrow_exception(error_);
}

bool HostCompletion::wait_for(std::chrono::nanoseconds timeout) {
  if (done_.load(std::memory_order_acquire)) return true;
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return done_.load(std::memory_order_acquire); });
}

std::exception_ptr HostCompletion::error() { return done_.load(std::memory_order_acquire) ? error_ : nullptr; }

void HostCompletion::finish(std::exception_ptr error) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

namespace {

class DoneCompletion final : public Completion {
 public:
  explicit DoneCompletion(std::exception_ptr e) : error_(std::move(e)) {}
  bool poll() override { return true; }
  void wait() override {
    if (error_) std::rethrow_exception(error_);
  }
  bool wait_for(std::chrono::nanoseconds) override { return true; }
  std::exception_ptr error() override { return error_; }

 private:
  std::exception_ptr error_;
};

// Finished successfully: nothing left to order after.
bool settled(const std::shared_ptr<Completion>& c) { return c->poll() && !c->error(); }

}  // namespace

std::shared_ptr<Completion> completed(std::exception_ptr error) {
  if (error) return std::make_shared<DoneCompletion>(std::move(error));
  static const std::shared_ptr<Completion> ok = std::make_shared<DoneCompletion>(nullptr);
  return ok;
}

Storage::~Storage() {
  if (backend_ && handle_ && !memory_owner_) cached_deallocate(*backend_, device_, handle_, bytes_);
}

void Storage::collect_waits(bool write, std::vector<std::shared_ptr<Completion>>& out) {
  if (!pending_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_ && settled(writer_)) writer_.reset();
  // A writer that failed and is over orders nothing, and a use that writes the storage anew does
  // not inherit its failure: most writes cover the whole storage (an op's output, an upload of a
  // batch input), and a write into part of it (trine::copy_into) is the caller saying what the
  // storage holds from now on. A read inherits it: a tensor whose last write failed raises that
  // failure when read, until a write succeeds. (Without this a batch whose run failed, a gather
  // with a bad index, could never run again.)
  if (writer_ && !(write && writer_->poll())) out.push_back(writer_);
  if (write) {
    for (const auto& r : readers_)
      if (!r->poll()) out.push_back(r);
  }
}

void Storage::add_use(const std::shared_ptr<Completion>& c, bool write) {
  const bool done = settled(c);
  if (done && !pending_.load(std::memory_order_acquire)) return;  // nothing to remember or forget
  std::lock_guard<std::mutex> lock(mu_);
  if (write) {
    // The new writer ran after every earlier use, so they need no remembering.
    readers_.clear();
    writer_ = done ? nullptr : c;
  } else if (!c->poll()) {  // a finished reader orders nothing
    std::erase_if(readers_, [](const std::shared_ptr<Completion>& r) { return r->poll(); });
    readers_.push_back(c);
  }
  pending_.store(writer_ || !readers_.empty(), std::memory_order_release);
}

std::shared_ptr<Completion> Storage::writer() {
  if (!pending_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_ && settled(writer_)) writer_.reset();
  return writer_;
}

void Storage::wait_writer() {
  if (auto w = writer()) w->wait();
}

}  // namespace trine::detail
