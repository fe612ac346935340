// The Vulkan ops' registry, filled once from every kernels/<family>.cpp and checked complete, the
// lookups of supports_op, refusal and record_op in it, and the helpers several families share: the
// strided element-wise record (binary.comp) that makes inputs contiguous, and the row reductions.
#include "backends/vulkan/ops.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

// The shaders' op codes (the generated ops.glsl, read as C++: its lines are valid declarations)
// are OpKind's values: vulkan.cmake numbers ops.def's rows as ops.hpp's X-macro does, and this
// fails the build where the two disagree.
namespace glsl {
using uint = std::uint32_t;
#include "ops.glsl"
}  // namespace glsl
#define TRINE_OP(name, ...)                                                  \
  static_assert(glsl::OP_##name == static_cast<std::uint32_t>(OpKind::name), \
                "shaders/ops.glsl's OP_" #name " is not OpKind::" #name "'s value");
#include "trine/ops.def"

const VulkanOps& vulkan_ops() {
  static const VulkanOps ops = [] {
    VulkanOps r;
    // clang-format off
#define TRINE_FAMILY(name) register_##name(r);
#include "trine/ops.def"
    // clang-format on
    r.require_complete("vulkan", "backends/vulkan");  // a family file that forgot an op fails here
    return r;
  }();
  return ops;
}

bool supports_op(const detail::OpCall& call) {
  const VulkanKernel* k = vulkan_ops().find(call.op);
  return k && k->supports(call);
}

std::string refusal(const DeviceCaps& caps, int index, const detail::OpCall& call) {
  const VulkanKernel* k = vulkan_ops().find(call.op);
  if (!k) return vulkan_ops().refusal(call.op);  // complete: refused when it has no kernel
  Limits l(caps, index);
  k->limits(l, call);
  return std::move(l.why());
}

void record_op(Recorder& rec, const detail::OpCall& call) {
  if (std::string why = refusal(rec.caps(), rec.context().index(), call); !why.empty())
    throw Error(ErrorCode::unsupported, std::string("[") + op_info(call.op).name + "] " + why);
  vulkan_ops().find(call.op)->record(rec, call);
}

bool inputs_f32(const detail::OpCall& call) {
  for (const auto& t : call.inputs)
    if (t.defined() && t.dtype() != DType::f32) return false;
  return !dtype_is_16bit(call.output.dtype());
}

bool all_16bit(const detail::OpCall& call, std::initializer_list<std::size_t> skip) {
  const DType t = call.output.dtype();
  if (!dtype_is_16bit(t)) return false;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    if (call.inputs[i].defined() && call.inputs[i].dtype() != t) return false;
  }
  return true;
}

bool inputs_fit_u32(const detail::OpCall& call) {
  // Offsets and element indices are 32-bit in the shaders; maxStorageBufferRange keeps real
  // bindings far below 2^32 elements anyway.
  for (const auto& t : call.inputs)
    if (t.defined() && t.storage()->bytes() / 4 >= (std::uint64_t{1} << 32)) return false;
  return true;
}

std::uint32_t dtype_code(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
    case DType::i32: return 3;
    default: break;  // quantized weights: supports() refuses them before a shader is chosen
  }
  return 0;
}

TensorRef ref_of(const Tensor& t) {
  return {static_cast<Allocation*>(t.storage()->handle()), static_cast<std::uint32_t>(t.offset()),
          static_cast<std::size_t>(bound_bytes(t.storage()->bytes()))};
}

// ---- the strided element-wise record ----
namespace {

constexpr std::uint32_t k_strided_elems = 4;

struct StridedPush {
  std::uint32_t n, rank, pad0, pad1;
  float alpha, beta;
  std::uint32_t a_off, b_off;
  std::uint32_t dims[8], a_str[8], b_str[8];
};
static_assert(sizeof(StridedPush) == 128, "binary.comp's push constants are 128 bytes");

// `t`'s strides as seen from an output of shape `out` (numpy broadcasting: missing and size-1 dims
// read with stride 0).
void broadcast_strides(const Tensor& t, const Shape& out, std::uint32_t* str) {
  const int off = out.rank() - t.rank();
  for (int i = 0; i < out.rank(); ++i) {
    str[i] = 0;
    if (i < off) continue;
    const std::int64_t d = t.shape()[i - off];
    str[i] = d == 1 ? 0 : static_cast<std::uint32_t>(t.strides()[i - off]);
  }
}

}  // namespace

void record_strided(Recorder& rec, const Tensor& a, const Tensor& b, const TensorRef& y, const Shape& out, OpKind op,
                    OpKind act, float alpha, float beta, DType storage) {
  const std::uint64_t n = static_cast<std::uint64_t>(out.numel());
  if (n == 0) return;
  StridedPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(out.rank());
  p.alpha = alpha, p.beta = beta;
  for (int i = 0; i < out.rank(); ++i) p.dims[i] = static_cast<std::uint32_t>(out[i]);
  broadcast_strides(a, out, p.a_str);
  broadcast_strides(b, out, p.b_str);
  const TensorRef ra = ref_of(a), rb = ref_of(b);
  p.a_off = ra.offset, p.b_off = rb.offset;
  // y's offset is 0: outputs and temporaries are fresh allocations.
  if (dtype_is_16bit(storage)) {
    if (act == OpKind::pow)
      throw Error(ErrorCode::internal, "[pow] binary_b16 has no double-precision pow (its callers run it in f32)");
    rec.dispatch("binary_b16", {bind_in(ra), bind_in(rb), bind_out(y)}, &p, sizeof(p),
                 elementwise_groups((n + 1) / 2, k_strided_elems),
                 {k_elementwise_group, k_strided_elems, op_code(op), op_code(act), dtype_code(storage)});
    return;
  }
  rec.dispatch(act_shader(act, "binary", "binary_f64"), {bind_in(ra), bind_in(rb), bind_out(y)}, &p, sizeof(p),
               elementwise_groups(n, k_strided_elems),
               {k_elementwise_group, k_strided_elems, op_code(op), op_code(act)});
}

TensorRef contiguous_f32(Recorder& rec, const Tensor& t) {  // Limits::contiguous_f32 mirrors it
  if (t.is_contiguous()) return ref_of(t);
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * 4;
  Allocation* tmp = rec.temporary(bytes);
  const TensorRef r{tmp, 0, static_cast<std::size_t>(bound_bytes(bytes))};
  record_strided(rec, t, t, r, t.shape(), OpKind::copy, OpKind::copy, 0, 0);
  return r;
}

TensorRef contiguous(Recorder& rec, const Tensor& t) {  // Limits::contiguous mirrors it
  if (!dtype_is_16bit(t.dtype())) return contiguous_f32(rec, t);
  if (t.is_contiguous()) return ref_of(t);
  const std::size_t bytes = static_cast<std::size_t>(bound_bytes(static_cast<std::uint64_t>(t.numel()) * 2));
  Allocation* tmp = rec.temporary(bytes);
  const TensorRef r{tmp, 0, bytes};
  record_strided(rec, t, t, r, t.shape(), OpKind::copy, OpKind::copy, 0, 0, t.dtype());
  return r;
}

// ---- the row reductions ----
namespace {

struct ReducePush {
  std::uint32_t outer, n, inner, x_off, v_off, pad, y_off, chunks, chunk_len;
  float scale;
};

// The longest stretch of the reduced axis one workgroup reduces: past it, the axis is cut into
// chunks (record_reduction).
std::uint64_t chunk_len_for(const DeviceCaps& caps, std::uint32_t n) {
  return caps.loop_budget ? std::uint64_t{k_reduce_group} * (caps.loop_budget / 2) : std::uint64_t{n} + 1;
}

}  // namespace

RowSplit split_rows(const Shape& s, int axis) {
  const int a = axis < 0 ? axis + s.rank() : axis;
  RowSplit r;
  std::uint64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= static_cast<std::uint64_t>(s[i]);
  for (int i = a + 1; i < s.rank(); ++i) inner *= static_cast<std::uint64_t>(s[i]);
  r.outer = static_cast<std::uint32_t>(outer);
  r.inner = static_cast<std::uint32_t>(inner);
  r.n = s.rank() ? static_cast<std::uint32_t>(s[a]) : 1;
  return r;
}

const char* reduction_shader(const DeviceCaps& caps, const char* plain, const char* subgroup) {
  return caps.subgroup_reductions ? subgroup : plain;
}

bool rows_per_invocation(const DeviceCaps& caps, std::uint64_t rows, std::uint64_t loop) {
  return caps.software && rows >= 256 && (caps.loop_budget == 0 || loop <= caps.loop_budget);
}

// The bytes of one chunk's partial result: a value, and for argmax its index too.
std::uint64_t partial_bytes(std::uint32_t op) { return op == 4 ? 8 : 4; }

void limits_reduction(Limits& l, std::uint64_t x_range, std::uint64_t v_range, const Tensor& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op) {
  const std::uint64_t outputs = std::uint64_t{outer} * inner;
  if (outputs == 0) return;  // no dispatch
  const std::uint64_t chunk_len = chunk_len_for(l.caps(), n);
  const std::uint64_t partial = n > chunk_len ? outputs * ((n + chunk_len - 1) / chunk_len) * partial_bytes(op) : 0;
  if (partial) l.temporary(partial);  // allocated before the dispatches
  l.bind(x_range, "input 0");
  if (v_range) l.bind(v_range, "input 1");
  if (partial) l.bind(bound_bytes(partial), "the partial results");
  l.bind(y, "the output");
}

// Records y[o] = reduce over k of x[o, k] (times v[k] for op 3); x contiguous as [outer, n, inner].
// An axis longer than one workgroup may loop over (the device's loop budget) is cut into chunks,
// each reduced into a temporary, and the partial results reduced by a second dispatch (argmax's:
// the chunks' values, then their indices, reduced as pairs by reduce.comp's op 5).
void record_reduction(Recorder& rec, const TensorRef& x, const TensorRef* v, const TensorRef& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op, std::uint32_t x_type,
                      std::uint32_t y_type) {
  const std::uint64_t chunk_len = chunk_len_for(rec.caps(), n);
  const std::uint32_t first_op = op == 1 ? 0 : op;  // mean: sums, divided once at the end
  const float scale = op == 1 ? 1.0f / static_cast<float>(n) : 1.0f;
  const std::uint64_t outputs = std::uint64_t{outer} * inner;
  if (n <= chunk_len) {
    ReducePush p{outer, n, inner, x.offset, v ? v->offset : 0, first_op, y.offset, 1, n, scale};
    if (rows_per_invocation(rec.caps(), outputs, n)) {
      rec.dispatch("reduce_rows", {bind_in(x), bind_in(v ? *v : x), bind_out(y)}, &p, sizeof(p), (outputs + 63) / 64,
                   {first_op, x_type, y_type});
      return;
    }
    rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
                 {bind_in(x), bind_in(v ? *v : x), bind_out(y)}, &p, sizeof(p), outputs,
                 {k_reduce_group, first_op, x_type, y_type});
    return;
  }
  const auto chunks = static_cast<std::uint32_t>((n + chunk_len - 1) / chunk_len);
  Allocation* partial = rec.temporary(static_cast<std::size_t>(outputs * chunks * partial_bytes(op)));  // bound whole
  ReducePush p1{
      outer, n, inner, x.offset, v ? v->offset : 0, first_op, 0, chunks, static_cast<std::uint32_t>(chunk_len), 1.0f};
  rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
               {bind_in(x), bind_in(v ? *v : x), {partial, true}}, &p1, sizeof(p1), outputs * chunks,
               {k_reduce_group, first_op, x_type, 0});  // f32 partial results (argmax's: and i32 indices)
  const std::uint32_t second_op = op == 2 ? 2 : op == 4 ? 5 : 0;
  const auto indices_at = static_cast<std::uint32_t>(op == 4 ? outputs * chunks : 0);  // op 5 reads them as v
  ReducePush p2{static_cast<std::uint32_t>(outputs), chunks, 1, 0, indices_at, second_op, y.offset, 1, chunks, scale};
  rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
               {{partial, false}, {partial, false}, bind_out(y)}, &p2, sizeof(p2), outputs,
               {k_reduce_group, second_op, 0, y_type});
}

}  // namespace trine::vulkan
