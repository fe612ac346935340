// Future and trine::async: a pending result is a tensor whose storage's writer has not finished.
#include "trine/future.hpp"

#include "dispatch/batch_record.hpp"
#include "trine/error.hpp"
#include "tensor/storage.hpp"

namespace trine {
namespace detail {

namespace {
thread_local bool t_async = false;
}

bool async_mode() noexcept { return t_async; }

AsyncScope::AsyncScope() noexcept : previous_(t_async) { t_async = true; }
AsyncScope::~AsyncScope() { t_async = previous_; }

Future<Tensor> future_of(const Tensor& pending) {
  return Future<Tensor>(pending, pending.defined() ? pending.storage()->writer() : nullptr, nullptr);
}

Future<Tensor> future_of_error(std::exception_ptr error) { return Future<Tensor>(Tensor(), nullptr, std::move(error)); }

Future<void> future_of_completion(std::shared_ptr<Completion> done) { return Future<void>(std::move(done)); }

namespace {

void require_valid(bool valid) {
  if (!valid) throw Error(ErrorCode::invalid_argument, "[future] this Future is empty (default-constructed)");
}

bool ready(bool valid, const std::exception_ptr& error, const std::shared_ptr<Completion>& done) {
  require_valid(valid);
  return error || !done || done->poll();
}

void wait(bool valid, const std::exception_ptr& error, const std::shared_ptr<Completion>& done) {
  require_valid(valid);
  if (error) std::rethrow_exception(error);
  if (done) done->wait();
}

bool wait_for(bool valid, const std::exception_ptr& error, const std::shared_ptr<Completion>& done,
              std::chrono::nanoseconds timeout) {
  require_valid(valid);
  return error || !done || done->wait_for(timeout);
}

}  // namespace
}  // namespace detail

bool Future<Tensor>::ready() const { return detail::ready(valid_, error_, done_); }
void Future<Tensor>::wait() const { detail::wait(valid_, error_, done_); }
bool Future<Tensor>::wait_for(std::chrono::nanoseconds timeout) const {
  return detail::wait_for(valid_, error_, done_, timeout);
}
Tensor Future<Tensor>::get() const {
  detail::wait(valid_, error_, done_);
  return value_;
}
Future<Tensor>::operator Tensor() const {
  detail::require_valid(valid_);
  if (error_) std::rethrow_exception(error_);
  return value_;
}

bool Future<void>::ready() const { return detail::ready(valid_, nullptr, done_); }
void Future<void>::wait() const { detail::wait(valid_, nullptr, done_); }
bool Future<void>::wait_for(std::chrono::nanoseconds timeout) const {
  return detail::wait_for(valid_, nullptr, done_, timeout);
}

}  // namespace trine
