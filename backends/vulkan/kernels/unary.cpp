// Element-wise ops of one input on Vulkan: the activations and scale (unary.comp and unary_vec4.comp
// on contiguous input, binary.comp's a-alone operation on strided input), and bias_act (binary.comp:
// x + bias broadcast, then the activation). An activation's kernel is its formula in ops.def, a case
// of activate() in shaders/common.glsl switched on the op's own code: a new TRINE_ACT row whose
// formula calls existing primitives needs nothing here.
// pow runs the shaders' _f64 variants (act_shader), where the device has shaderFloat64. f16 and bf16
// activations and scale (x contiguous, of the result's dtype) run unary_b16.comp; other 16-bit calls
// run between casts (backends/widen.hpp).
#include <algorithm>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_unary_elems = 16;  // per invocation: lavapipe pays per invocation
constexpr std::uint32_t k_vec4_elems = 4;    // vec4s per invocation
constexpr std::uint32_t k_b16_words = 8;     // 32-bit words (two elements) per invocation

struct UnaryPush {
  std::uint32_t n, x_off, y_off;
  float alpha, beta;
};
struct Unary4Push {
  std::uint32_t n4, x_off4, y_off4;
  float alpha, beta;
};

// f32, or x, bias and y of one 16-bit dtype and no pow (binary_b16).
bool supports_bias_act(const detail::OpCall& call) {
  if (!inputs_fit_u32(call)) return false;
  const DType t = call.output.dtype();
  return inputs_f32(call) || (dtype_is_16bit(t) && call.inputs[0].dtype() == t && call.inputs[1].dtype() == t &&
                              std::get<BiasActParams>(call.params).act != Activation::pow);
}

// f32, or x in the result's 16-bit dtype: unary_b16.comp, or binary_b16 for a view (whose pow would
// not compute in double: such a call runs between casts).
bool supports_unary(const detail::OpCall& call) {
  if (!inputs_fit_u32(call)) return false;
  const Tensor& x = call.inputs[0];
  return inputs_f32(call) || (dtype_is_16bit(x.dtype()) && x.dtype() == call.output.dtype() &&
                              (x.is_contiguous() || call.op != OpKind::pow));
}

// The alpha and beta activate() takes for an activation or scale.
void unary_params(const detail::OpCall& call, float& alpha, float& beta) {
  alpha = beta = 0;
  if (const auto* a = std::get_if<ActParams>(&call.params)) alpha = a->alpha, beta = a->beta;
  if (const auto* s = std::get_if<ScaleParams>(&call.params)) alpha = s->alpha, beta = s->beta;
}

// y[i] = act(x[x_off + i]) for i < n over the bound ranges: whole vec4s when x_off allows, the
// last n % 4 (or everything) one by one.
void record_unary_piece(Recorder& rec, const Binding& x, const Binding& y, std::uint32_t x_off, std::uint64_t n,
                        OpKind act, float alpha, float beta) {
  std::uint64_t done = 0;
  if (x_off % 4 == 0 && n >= 4) {
    Unary4Push p4{static_cast<std::uint32_t>(n / 4), x_off / 4, 0, alpha, beta};
    rec.dispatch(act_shader(act, "unary_vec4", "unary_vec4_f64"), {x, y}, &p4, sizeof(p4),
                 elementwise_groups(n / 4, k_vec4_elems), {k_elementwise_group, k_vec4_elems, op_code(act)});
    done = n / 4 * 4;
  }
  if (done == n) return;
  UnaryPush p{static_cast<std::uint32_t>(n - done), x_off + static_cast<std::uint32_t>(done),
              static_cast<std::uint32_t>(done), alpha, beta};
  rec.dispatch(act_shader(act, "unary", "unary_f64"), {x, y}, &p, sizeof(p),
               elementwise_groups(n - done, k_unary_elems), {k_elementwise_group, k_unary_elems, op_code(act)});
}

// An activation or scale.
void limits_act(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  if (call.op == OpKind::pow) l.float64("pow");
  // Contiguous input binds in pieces: nothing to refuse.
  if (call.output.numel() == 0 || x.is_contiguous()) return;
  l.bind(x, "input 0");
  l.bind(call.output, "the output");
}

// f16 or bf16 x (contiguous) and y of one dtype: unary_b16.comp, in pieces of at most
// maxStorageBufferRange as record_act's f32 pieces.
void record_act_b16(Recorder& rec, const Tensor& x, const Tensor& y, OpKind act, float alpha, float beta) {
  const TensorRef rx = ref_of(x), ry = ref_of(y);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  const std::uint32_t type = dtype_code(y.dtype());
  auto words = [](std::uint64_t elems) { return (elems + 1) / 2 * 4; };  // bytes of whole words
  const std::uint64_t piece = (rec.caps().max_storage_buffer_range / 2 - 16) / 4096 * 4096;
  for (std::uint64_t s = 0; s < n; s += piece) {
    const std::uint64_t len = std::min(piece, n - s);
    const std::uint64_t first = rx.offset + s;
    const std::uint64_t x_byte = first * 2 / 16 * 16;
    const std::uint64_t shift = first - x_byte / 2;
    const bool whole = s == 0 && len == n && rx.range <= rec.caps().max_storage_buffer_range &&
                       ry.range <= rec.caps().max_storage_buffer_range;
    const Binding bx = whole ? bind_in(rx) : Binding{rx.alloc, false, x_byte, words(shift + len)};
    const Binding by = whole ? bind_out(ry) : Binding{ry.alloc, true, s * 2, words(len)};
    UnaryPush p{static_cast<std::uint32_t>(len), whole ? rx.offset : static_cast<std::uint32_t>(shift), 0, alpha, beta};
    rec.dispatch(act_shader(act, "unary_b16", "unary_b16_f64"), {bx, by}, &p, sizeof(p),
                 elementwise_groups((len + 1) / 2, k_b16_words), {k_elementwise_group, k_b16_words, op_code(act), type});
  }
}

void record_act(Recorder& rec, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  const TensorRef ry = ref_of(y);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  if (n == 0) return;
  const OpKind act = call.op;  // activate()'s code is the op's own
  float alpha, beta;
  unary_params(call, alpha, beta);
  if (dtype_is_16bit(y.dtype()) && x.is_contiguous()) return record_act_b16(rec, x, y, act, alpha, beta);
  if (!x.is_contiguous()) return record_strided(rec, x, x, ry, y.shape(), OpKind::copy, act, alpha, beta, y.dtype());
  const TensorRef rx = ref_of(x);
  // Pieces of at most maxStorageBufferRange per binding (one piece unless the tensor is larger);
  // each piece starts at an element multiple of 4096, so its binding offsets stay aligned.
  const std::uint64_t piece = (rec.caps().max_storage_buffer_range / 4 - 4) / 4096 * 4096;
  for (std::uint64_t s = 0; s < n; s += piece) {
    const std::uint64_t len = std::min(piece, n - s);
    const std::uint64_t first = rx.offset + s;         // x's first element of the piece
    const std::uint64_t x_byte = first * 4 / 16 * 16;  // bound from here (16: covers any alignment
    const std::uint64_t shift = first - x_byte / 4;    // lavapipe and real GPUs ask for)
    // Whole tensors when both fit one binding (x may be a view into a larger storage).
    const bool whole = s == 0 && len == n && rx.range <= rec.caps().max_storage_buffer_range &&
                       ry.range <= rec.caps().max_storage_buffer_range;
    const Binding bx = whole ? bind_in(rx) : Binding{rx.alloc, false, x_byte, (shift + len) * 4};
    const Binding by = whole ? bind_out(ry) : Binding{ry.alloc, true, s * 4, len * 4};
    record_unary_piece(rec, bx, by, whole ? rx.offset : static_cast<std::uint32_t>(shift), len, act, alpha, beta);
  }
}

void limits_bias_act(Limits& l, const detail::OpCall& call) {
  if (std::get<BiasActParams>(call.params).act == Activation::pow) l.float64("bias_act with pow");
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "input 0");
  l.bind(call.inputs[1], "input 1");
  l.bind(call.output, "the output");
}

void record_bias_act(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  const auto& p = std::get<BiasActParams>(call.params);
  // The identity is OP_copy's code: activate() passes x through.
  record_strided(rec, call.inputs[0], call.inputs[1], ref_of(y), y.shape(), OpKind::add,
                 activation_op(p.act).value_or(OpKind::copy), p.alpha, p.beta, y.dtype());
}

}  // namespace

void register_unary(VulkanOps& r) {
  const VulkanKernel act{supports_unary, limits_act, record_act};
  // every activation of ops.def: its formula, expanded in activate() (shaders/common.glsl), is its kernel
  // clang-format off
#define TRINE_ACT(name, flops, formula) r.add(OpKind::name, act);
#include "trine/ops.def"
  // clang-format on
  r.add(OpKind::scale, act);  // activate()'s OP_scale: alpha * x + beta
  r.add(OpKind::bias_act, {supports_bias_act, limits_bias_act, record_bias_act});
}

}  // namespace trine::vulkan
