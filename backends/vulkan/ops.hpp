// The ops on Vulkan: which calls each op family runs (supports) and how it records them. One file
// per op family (ops_elementwise.cpp, ops_reduce.cpp, ops_linalg.cpp, ops_nn.cpp); ops.cpp switches over OpKind.
#pragma once

#include <cstdint>

#include "backends/backend.hpp"
#include "backends/vulkan/recorder.hpp"

namespace trine::vulkan {

bool supports_op(const detail::OpCall& call);
void record_op(Recorder& rec, const detail::OpCall& call);

// A tensor's memory as a shader sees it: the allocation and the first element.
struct TensorRef {
  Allocation* alloc;
  std::uint32_t offset;  // in elements
};
TensorRef ref_of(const Tensor& t);
// `t` as a contiguous f32 tensor: itself when it already is, else a strided copy into a temporary
// of the submission, recorded here (the one named step that makes inputs contiguous on the device).
TensorRef contiguous_f32(Recorder& rec, const Tensor& t);

// y[o] = the reduction over k of x viewed as a contiguous [outer, n, inner] (o runs over outer x
// inner): op 0 sum, 1 mean, 2 max, 3 sum of x * v[k] (dot, gemv). ops_reduce.cpp.
void record_reduction(Recorder& rec, const TensorRef& x, const TensorRef* v, const TensorRef& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op);

// Throws Error(unsupported) naming `what` when one invocation would loop `iterations` times on a
// device that cuts long shader loops short (DeviceCaps::loop_budget): a refusal, never a wrong answer.
void require_loop_budget(Recorder& rec, std::uint64_t iterations, const char* what);

// ---- families ----
bool supports_elementwise(const detail::OpCall& call);
void record_elementwise(Recorder& rec, const detail::OpCall& call);
bool supports_reduce(const detail::OpCall& call);  // sum, mean, max, softmax, log_softmax, norms
void record_reduce(Recorder& rec, const detail::OpCall& call);
bool supports_linalg(const detail::OpCall& call);  // matmul, gemv, dot
void record_linalg(Recorder& rec, const detail::OpCall& call);
bool supports_nn(const detail::OpCall& call);  // conv2d, attention, rope
void record_nn(Recorder& rec, const detail::OpCall& call);

}  // namespace trine::vulkan
