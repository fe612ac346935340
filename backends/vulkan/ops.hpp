// The ops on Vulkan: which calls each op family runs (supports), what they need of the device's
// limits, and how they record them. One file per op family (ops_elementwise.cpp, ops_reduce.cpp,
// ops_linalg.cpp, ops_nn.cpp); ops.cpp switches over OpKind.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "backends/vulkan/limits.hpp"
#include "backends/vulkan/recorder.hpp"

namespace trine::vulkan {

// Whether the op families run the call's op and dtypes at all (the device's limits aside).
bool supports_op(const detail::OpCall& call);
// Empty when vulkan:`index` (with `caps`) runs `call` within its limits, else why not, in words for
// an error message (no leading "[op] "). Shapes and storage sizes only: the call's tensors may be
// the dispatcher's phantoms, with no memory behind them.
std::string refusal(const DeviceCaps& caps, int index, const detail::OpCall& call);
// Records the call; Error(unsupported) with refusal()'s reason first when the call is over a limit.
void record_op(Recorder& rec, const detail::OpCall& call);

// A tensor's memory as a shader sees it: the allocation, the first element, and the bytes a
// binding of it spans (its storage's, which may be less than the allocation's in a batch that
// reuses memory).
struct TensorRef {
  Allocation* alloc;
  std::uint32_t offset;  // in elements
  std::size_t range;     // bound_bytes(the storage's bytes)
};
TensorRef ref_of(const Tensor& t);
inline Binding bind_in(const TensorRef& r) { return {r.alloc, false, 0, r.range}; }
inline Binding bind_out(const TensorRef& r) { return {r.alloc, true, 0, r.range}; }
// `t` as a contiguous f32 tensor: itself when it already is, else a strided copy into a temporary
// of the submission, recorded here (the one named step that makes inputs contiguous on the device).
TensorRef contiguous_f32(Recorder& rec, const Tensor& t);

// y[o] = the reduction over k of x viewed as a contiguous [outer, n, inner] (o runs over outer x
// inner): op 0 sum, 1 mean, 2 max, 3 sum of x * v[k] (dot, gemv). ops_reduce.cpp.
void record_reduction(Recorder& rec, const TensorRef& x, const TensorRef* v, const TensorRef& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op);

// What record_reduction binds and loops, for the same arguments (x_range and v_range: the bytes of
// the bindings of x and v, v_range 0 when there is no v).
void limits_reduction(Limits& l, std::uint64_t x_range, std::uint64_t v_range, const Tensor& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner);

// ---- families ----
// limits_<family> gathers what record_<family> binds and loops, in the same order and under the
// same conditions: a change to one is a change to the other.
bool supports_elementwise(const detail::OpCall& call);
void limits_elementwise(Limits& l, const detail::OpCall& call);
void record_elementwise(Recorder& rec, const detail::OpCall& call);
bool supports_reduce(const detail::OpCall& call);  // sum, mean, max, softmax, log_softmax, norms
void limits_reduce(Limits& l, const detail::OpCall& call);
void record_reduce(Recorder& rec, const detail::OpCall& call);
bool supports_linalg(const detail::OpCall& call);  // matmul, gemv, dot
void limits_linalg(Limits& l, const detail::OpCall& call);
void record_linalg(Recorder& rec, const detail::OpCall& call);
bool supports_nn(const detail::OpCall& call);  // conv2d, attention, rope
void limits_nn(Limits& l, const detail::OpCall& call);
void record_nn(Recorder& rec, const detail::OpCall& call);

}  // namespace trine::vulkan
