// What one call asks of a Vulkan device beyond its op and dtypes: every shader binding within
// maxStorageBufferRange, every shader loop within the driver's budget. supports() and the recorder
// both take their answer from refusal() (ops.hpp), so a call supports() accepts is never refused
// at submit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/backend.hpp"

namespace trine::vulkan {

struct DeviceCaps;

// The bytes a shader binding of `bytes` of data spans: whole 32-bit words, and never 0 (Vulkan
// has no empty ranges). Tensors are bound by their storage's bytes, temporaries by theirs.
constexpr std::uint64_t bound_bytes(std::uint64_t bytes) noexcept { return bytes ? (bytes + 3) / 4 * 4 : 4; }

// One call's needs against one device's limits, gathered by the op's kernel's limits function
// (ops.hpp's VulkanKernel) in the order its record function binds and loops; the first need over a
// limit is the refusal.
class Limits {
 public:
  Limits(const DeviceCaps& caps, int index) noexcept : caps_(caps), index_(index) {}

  const DeviceCaps& caps() const noexcept { return caps_; }
  // A temporary of `bytes` allocated by the recorder. One too large for the device's heap fails
  // recording with out_of_memory, not as unsupported: the check stops there and refuses nothing
  // (the recorder would never reach the rest).
  void temporary(std::uint64_t bytes);
  // A shader binding of `bytes` (as bound_bytes() counts them); `what` names it in a refusal.
  void bind(std::uint64_t bytes, const char* what);
  // `t`'s storage bound whole, as the op files bind a tensor (ref_of).
  void bind(const Tensor& t, const char* what);
  // What contiguous_f32(t) records (a strided t is copied into a temporary): returns the bytes of
  // the binding the op then makes of the result.
  std::uint64_t contiguous_f32(const Tensor& t, const char* what);
  // What contiguous(t) records: contiguous_f32's, in t's own dtype (f32, f16 or bf16).
  std::uint64_t contiguous(const Tensor& t, const char* what);
  // The call's shaders compute in double, which the device must have (shaderFloat64); `what` names
  // the op in a refusal.
  void float64(const char* what);
  // One shader invocation looping `iterations` times; `what` describes the case in a refusal
  // ("a row of 8388608"). Only read on refusal, so callers pass a lambda returning the string.
  template <class Describe>
  void loop(std::uint64_t iterations, Describe&& what) {
    if (!done_ && over_loop_budget(iterations)) refuse_loop(iterations, what());
  }

  bool ok() const noexcept { return why_.empty(); }
  // Why the call is refused (no leading "[op] "), or empty.
  std::string& why() noexcept { return why_; }

 private:
  bool over_loop_budget(std::uint64_t iterations) const noexcept;
  void refuse_loop(std::uint64_t iterations, const std::string& what);

  const DeviceCaps& caps_;
  int index_;
  bool done_ = false;  // refused, or recording would stop at out_of_memory: nothing more to check
  std::string why_;
};

}  // namespace trine::vulkan
