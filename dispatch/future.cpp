// Future and trine::async: a pending result is a tensor whose storage's writer has not finished.
#include "trine/future.hpp"

#include "dispatch/batch_record.hpp"
#include "trine/error.hpp"
#include "tensor/storage.hpp"

namespace trine {
namespace detail {

struct FutureState {
  Tensor value;                      // the result, possibly still being computed
  std::shared_ptr<Completion> done;  // the work that computes it; null when there is none
  std::exception_ptr error;          // the op failed before it was submitted
};

namespace {
thread_local bool t_async = false;
}

bool async_mode() noexcept { return t_async; }

AsyncScope::AsyncScope() noexcept : previous_(t_async) { t_async = true; }
AsyncScope::~AsyncScope() { t_async = previous_; }

Future<Tensor> future_of(const Tensor& pending) {
  auto s = std::make_shared<FutureState>();
  s->value = pending;
  if (pending.defined()) s->done = pending.storage()->writer();
  return Future<Tensor>(std::move(s));
}

Future<Tensor> future_of_error(std::exception_ptr error) {
  auto s = std::make_shared<FutureState>();
  s->error = std::move(error);
  return Future<Tensor>(std::move(s));
}

Future<void> future_of_completion(std::shared_ptr<Completion> done) {
  auto s = std::make_shared<FutureState>();
  s->done = std::move(done);
  return Future<void>(std::move(s));
}

namespace {

const FutureState& state_of(const std::shared_ptr<FutureState>& s) {
  if (!s) throw Error(ErrorCode::invalid_argument, "[future] this Future is empty (default-constructed)");
  return *s;
}

bool ready(const std::shared_ptr<FutureState>& p) {
  const auto& s = state_of(p);
  return s.error || !s.done || s.done->poll();
}

void wait(const std::shared_ptr<FutureState>& p) {
  const auto& s = state_of(p);
  if (s.error) std::rethrow_exception(s.error);
  if (s.done) s.done->wait();
}

bool wait_for(const std::shared_ptr<FutureState>& p, std::chrono::nanoseconds timeout) {
  const auto& s = state_of(p);
  return s.error || !s.done || s.done->wait_for(timeout);
}

}  // namespace
}  // namespace detail

bool Future<Tensor>::ready() const { return detail::ready(state_); }
void Future<Tensor>::wait() const { detail::wait(state_); }
bool Future<Tensor>::wait_for(std::chrono::nanoseconds timeout) const { return detail::wait_for(state_, timeout); }
Tensor Future<Tensor>::get() const {
  detail::wait(state_);
  return state_->value;
}
Future<Tensor>::operator Tensor() const {
  const auto& s = detail::state_of(state_);
  if (s.error) std::rethrow_exception(s.error);
  return s.value;
}

bool Future<void>::ready() const { return detail::ready(state_); }
void Future<void>::wait() const { detail::wait(state_); }
bool Future<void>::wait_for(std::chrono::nanoseconds timeout) const { return detail::wait_for(state_, timeout); }

}  // namespace trine
