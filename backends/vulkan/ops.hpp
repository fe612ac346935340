// The ops on Vulkan: one kernel per op of the table, registered by kernels/<family>.cpp (one file
// per TRINE_FAMILY of ops.def) and looked up here, and the helpers several families share (ops.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "backends/backend.hpp"
#include "backends/op_registry.hpp"
#include "backends/vulkan/limits.hpp"
#include "backends/vulkan/recorder.hpp"

namespace trine::vulkan {

// One op's kernel. supports: whether it runs the call's dtypes at all (the device's limits aside).
// limits: what recording the call needs of the device's limits; it gathers exactly what record
// binds and loops, in the same order and under the same conditions (a change to one is a change
// to the other). record: records the call, which refusal() has found within the limits.
struct VulkanKernel {
  bool (*supports)(const detail::OpCall& call);
  void (*limits)(Limits& l, const detail::OpCall& call);
  void (*record)(Recorder& rec, const detail::OpCall& call);
};
using VulkanOps = detail::OpRegistry<VulkanKernel>;

// kernels/<family>.cpp registers a kernel, or a refusal, for every op of its family: a family of
// ops.def without its file fails the link here.
#define TRINE_FAMILY(name) void register_##name(VulkanOps& r);
#include "trine/ops.def"

// Every op's kernel, from every register_<family>, made on first use. Throws Error(internal)
// naming each op with neither a kernel nor a refusal and the file to register it in;
// make_vulkan_backend asks first, so a build missing one fails as the backends start.
const VulkanOps& vulkan_ops();

// Whether the op's kernel runs the call's op and dtypes at all (the device's limits aside); false
// for an op the backend refuses.
bool supports_op(const detail::OpCall& call);
// Empty when vulkan:`index` (with `caps`) runs `call` within its limits, else why not, in words for
// an error message (no leading "[op] "): the refusal of an op the backend refuses, or the first
// limit the call is over. Shapes and storage sizes only: the call's tensors may be the dispatcher's
// phantoms, with no memory behind them.
std::string refusal(const DeviceCaps& caps, int index, const detail::OpCall& call);
// Records the call; Error(unsupported) with refusal()'s reason first when there is one.
void record_op(Recorder& rec, const detail::OpCall& call);

// ---- shared by the families ----

// The shaders' code for an op (OP_<name> of the generated shaders/ops.glsl): its OpKind value.
inline std::uint32_t op_code(OpKind op) { return static_cast<std::uint32_t>(op); }

// Every defined input is f32 / fits the shaders' 32-bit element indices.
bool inputs_f32(const detail::OpCall& call);
bool inputs_fit_u32(const detail::OpCall& call);

// The shaders' dtype codes (matmul.comp, copy.comp): 0 f32, 1 f16, 2 bf16, 3 i32 (copy.comp only).
std::uint32_t dtype_code(DType t);

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
// `t` (f32, f16 or bf16) as a contiguous tensor of its own dtype: itself when it already is, else a
// strided copy into a temporary (binary.comp, or binary_b16 for a 16-bit t: whole words from 0).
// Limits::contiguous mirrors it.
TensorRef contiguous(Recorder& rec, const Tensor& t);
// Whether every floating tensor of the call, the defined inputs but those at the indices in `skip`
// and the output, is of the output's dtype, f16 or bf16: the calls the families' 16-bit shaders take.
bool all_16bit(const detail::OpCall& call, std::initializer_list<std::size_t> skip = {});

// The element-wise shaders' workgroup (binary.comp, unary.comp, unary_vec4.comp), and the
// workgroups for n items of `elems` per invocation.
constexpr std::uint32_t k_elementwise_group = 256;
inline std::uint64_t elementwise_groups(std::uint64_t n, std::uint32_t elems) {
  return (n + k_elementwise_group * elems - 1) / (k_elementwise_group * elems);
}
// The shaders that call activate() (binary, unary, unary_vec4) are built twice: `plain`, and
// `plain`_f64, whose pow computes in double (shaders/common.glsl). pow dispatches the variant only
// (its limits ask for shaderFloat64: Limits::float64), every other activation the plain shader,
// which asks nothing of the device.
inline const char* act_shader(OpKind act, const char* plain, const char* f64) {
  return act == OpKind::pow ? f64 : plain;
}

// y (contiguous, numel of out) = act(a op b) with a and b read through broadcast strides
// (binary.comp). op: add, sub, mul, div, minimum, maximum, or copy for a alone; act: an activation,
// scale, or copy for the identity. `storage` f16 or bf16: a, b and y all stored so (binary_b16;
// act must not be pow, which that variant does not compute in double).
void record_strided(Recorder& rec, const Tensor& a, const Tensor& b, const TensorRef& y, const Shape& out, OpKind op,
                    OpKind act, float alpha, float beta, DType storage = DType::f32);

// ---- quantized weights (matmul and gemv; kernels/matmul_quant.cpp, shaders/matmul_quant.comp) ----

// matmul and gemv with a quantized weight (detail::quantized_input: the op table lets only matmul's
// input 1 and gemv's input 0 be one). Whether matmul_quant.comp runs the call: an f32 x (any
// strides: made contiguous first) and an f32 contiguous result; a 16-bit x or result runs between
// casts (backends/widen.hpp).
bool supports_quantized(const detail::OpCall& call);
void limits_quantized(Limits& l, const detail::OpCall& call);
void record_quantized(Recorder& rec, const detail::OpCall& call);

// ---- gemv with 16-bit weights (kernels/gemv.cpp, shaders/gemv_b16.comp; matmul's single rows) ----

// y[r] = sum over k of a[r, k] x[k] with a f16 or bf16 and contiguous (its last dim k, every other
// dim rows), read in place: whether gemv_b16.comp takes these tensors (x f32 with any strides, or
// contiguous in a's dtype; y f32, or contiguous at an even offset in a's dtype), what it binds and
// loops, and its recording.
bool gemv_b16_takes(const Tensor& a, const Tensor& x, const Tensor& y);
void limits_gemv_b16(Limits& l, const Tensor& a, const Tensor& x, const Tensor& y);
void record_gemv_b16(Recorder& rec, const Tensor& a, const Tensor& x, const Tensor& y);

// ---- the row reductions (reduce, gemv, softmax, norm) ----

// The workgroup of reduce.comp, softmax.comp and norm.comp.
constexpr std::uint32_t k_reduce_group = 128;

// A shape as [outer, n, inner] around `axis` (negative from the end).
struct RowSplit {
  std::uint32_t outer = 1, n = 1, inner = 1;
};
RowSplit split_rows(const Shape& s, int axis);

// A workgroup-reduction shader (reduce, softmax, norm), or its subgroup variant where the device
// uses those.
const char* reduction_shader(const DeviceCaps& caps, const char* plain, const char* subgroup);

// Whether a row op runs one invocation per row (reduce_rows.comp, softmax_rows.comp) rather than a
// workgroup per row: on software devices (lavapipe runs a barrier as a coroutine switch, and
// invocations walking their own rows read memory a CPU caches well; on a GPU those reads would not
// coalesce), from 256 rows (enough 64-row workgroups for every thread), and where the loop over
// the row (`loop` iterations) fits the device's loop budget.
bool rows_per_invocation(const DeviceCaps& caps, std::uint64_t rows, std::uint64_t loop);

// softmax.comp and norm.comp pass over a row `passes` times, k_reduce_group elements per step: the
// iterations of their loops over a row of n (the loop budget counts a shader's loops together).
inline std::uint64_t row_loop(std::uint32_t n, std::uint32_t passes) {
  return passes * ((std::uint64_t{n} + k_reduce_group - 1) / k_reduce_group);
}

// y[o] = the reduction over k of x viewed as a contiguous [outer, n, inner] (o runs over outer x
// inner): op 0 sum, 1 mean, 2 max, 3 sum of x * v[k] (dot, gemv), 4 argmax (y i32: the first index
// of the largest, or of the first NaN). x_type and y_type: dtype_code's f32, f16 or bf16 (argmax's
// y 0, its i32 words): a 16-bit x is read in place and summed in f32, a 16-bit y rounded once.
void record_reduction(Recorder& rec, const TensorRef& x, const TensorRef* v, const TensorRef& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op, std::uint32_t x_type = 0,
                      std::uint32_t y_type = 0);

// What record_reduction binds and loops, for the same arguments (x_range and v_range: the bytes of
// the bindings of x and v, v_range 0 when there is no v).
void limits_reduction(Limits& l, std::uint64_t x_range, std::uint64_t v_range, const Tensor& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op);

}  // namespace trine::vulkan
