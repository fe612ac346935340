// Element-wise ops on Vulkan: activations and scale (unary.comp on contiguous input), add/sub/mul/div
// with broadcasting, bias_act, strided inputs and copy (binary.comp over any strides), cast
// between f32, f16 and bf16 (copy.comp).
#include <algorithm>
#include <cstring>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/ops.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 256;
constexpr std::uint32_t k_unary_elems = 16;  // per invocation: lavapipe pays per invocation
constexpr std::uint32_t k_vec4_elems = 4;    // vec4s per invocation
constexpr std::uint32_t k_strided_elems = 4;

struct UnaryPush {
  std::uint32_t n, x_off, y_off;
  float alpha, beta;
};
struct Unary4Push {
  std::uint32_t n4, x_off4, y_off4;
  float alpha, beta;
};

struct StridedPush {
  std::uint32_t n, rank, pad0, pad1;
  float alpha, beta;
  std::uint32_t a_off, b_off;
  std::uint32_t dims[8], a_str[8], b_str[8];
};
static_assert(sizeof(StridedPush) == 128, "binary.comp's push constants are 128 bytes");

struct CastPush {
  std::uint32_t n, rank, in_type, out_type, x_off;
  std::uint32_t dims[8], str[8];
};

std::uint32_t dtype_code(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
  }
  return 0;
}

// y (contiguous, `to`) = x converted element by element, x read through its strides (copy.comp).
void record_cast(Recorder& rec, const Tensor& x, const TensorRef& y, DType to) {
  const std::uint64_t n = static_cast<std::uint64_t>(x.numel());
  if (n == 0) return;
  CastPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(x.rank());
  p.in_type = dtype_code(x.dtype());
  p.out_type = dtype_code(to);
  const TensorRef rx = ref_of(x);
  p.x_off = rx.offset;
  for (int i = 0; i < x.rank(); ++i) {
    p.dims[i] = static_cast<std::uint32_t>(x.shape()[i]);
    p.str[i] = static_cast<std::uint32_t>(x.strides()[i]);
  }
  constexpr std::uint32_t group = 256;
  rec.dispatch("copy", {bind_in(rx), bind_out(y)}, &p, sizeof(p), ((n + 1) / 2 + group - 1) / group, {group});
}

std::uint64_t groups_for(std::uint64_t n, std::uint32_t elems) { return (n + k_group * elems - 1) / (k_group * elems); }

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

// The shaders' code for an op (shaders/ops.glsl's OP_<name>): its OpKind value.
std::uint32_t code(OpKind op) { return static_cast<std::uint32_t>(op); }

// The alpha and beta activate() takes for an activation or scale (the op itself is the code).
void unary_params(const detail::OpCall& call, float& alpha, float& beta) {
  alpha = beta = 0;
  if (const auto* a = std::get_if<ActParams>(&call.params)) alpha = a->alpha, beta = a->beta;
  if (const auto* s = std::get_if<ScaleParams>(&call.params)) alpha = s->alpha, beta = s->beta;
}

// y (contiguous, numel of out) = act(a op b) with a and b read through broadcast strides. op: add,
// sub, mul, div, or copy for a alone; act: an activation, scale, or copy for the identity.
void record_strided(Recorder& rec, const Tensor& a, const Tensor& b, const TensorRef& y, const Shape& out, OpKind op,
                    OpKind act, float alpha, float beta) {
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
  rec.dispatch("binary", {bind_in(ra), bind_in(rb), bind_out(y)}, &p, sizeof(p), groups_for(n, k_strided_elems),
               {k_group, k_strided_elems, code(op), code(act)});
}

bool fits_u32(const Tensor& t) {
  // Offsets and element indices are 32-bit in the shaders; maxStorageBufferRange keeps real
  // bindings far below 2^32 elements anyway.
  return t.storage()->bytes() / 4 < (std::uint64_t{1} << 32);
}

// y[i] = act(x[x_off + i]) for i < n over the bound ranges: whole vec4s when x_off allows, the
// last n % 4 (or everything) one by one.
void record_unary_piece(Recorder& rec, const Binding& x, const Binding& y, std::uint32_t x_off, std::uint64_t n,
                        OpKind act, float alpha, float beta) {
  std::uint64_t done = 0;
  if (x_off % 4 == 0 && n >= 4) {
    Unary4Push p4{static_cast<std::uint32_t>(n / 4), x_off / 4, 0, alpha, beta};
    rec.dispatch("unary_vec4", {x, y}, &p4, sizeof(p4), groups_for(n / 4, k_vec4_elems),
                 {k_group, k_vec4_elems, code(act)});
    done = n / 4 * 4;
  }
  if (done == n) return;
  UnaryPush p{static_cast<std::uint32_t>(n - done), x_off + static_cast<std::uint32_t>(done),
              static_cast<std::uint32_t>(done), alpha, beta};
  rec.dispatch("unary", {x, y}, &p, sizeof(p), groups_for(n - done, k_unary_elems),
               {k_group, k_unary_elems, code(act)});
}

}  // namespace

TensorRef contiguous_f32(Recorder& rec, const Tensor& t) {  // Limits::contiguous_f32 mirrors it
  if (t.is_contiguous()) return ref_of(t);
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * 4;
  Allocation* tmp = rec.temporary(bytes);
  const TensorRef r{tmp, 0, static_cast<std::size_t>(bound_bytes(bytes))};
  record_strided(rec, t, t, r, t.shape(), OpKind::copy, OpKind::copy, 0, 0);
  return r;
}

bool supports_elementwise(const detail::OpCall& call) {
  for (const auto& t : call.inputs) {
    if (!t.defined()) continue;
    if (!fits_u32(t)) return false;
    // copy and cast take every dtype; the rest compute in f32
    if (t.dtype() != DType::f32 && call.op != OpKind::copy && call.op != OpKind::cast) return false;
  }
  return true;
}

void limits_elementwise(Limits& l, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  const Tensor& x = call.inputs[0];
  switch (call.op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::bias_act:
      l.bind(x, "input 0");
      l.bind(call.inputs[1], "input 1");
      l.bind(y, "the output");
      return;
    case OpKind::copy:
      if (x.is_contiguous()) return;  // a buffer copy: no shader binding
      break;
    default: break;
  }
  // Contiguous activations and scale bind in pieces: nothing to refuse.
  if (x.is_contiguous() && call.op != OpKind::cast) return;
  l.bind(x, "input 0");
  l.bind(y, "the output");
}

void record_elementwise(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  const TensorRef ry = ref_of(y);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  if (n == 0) return;
  const Tensor& x = call.inputs[0];
  switch (call.op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div: return record_strided(rec, x, call.inputs[1], ry, y.shape(), call.op, OpKind::copy, 0, 0);
    case OpKind::bias_act: {
      const auto& p = std::get<BiasActParams>(call.params);
      return record_strided(rec, x, call.inputs[1], ry, y.shape(), OpKind::add,
                            activation_op(p.act).value_or(OpKind::copy), p.alpha, p.beta);
    }
    case OpKind::copy: {
      if (x.is_contiguous()) {
        const std::size_t esz = dtype_size(x.dtype());
        return rec.copy(ref_of(x).alloc, static_cast<std::size_t>(x.offset()) * esz, ry.alloc, 0, n * esz);
      }
      if (x.dtype() != DType::f32) return record_cast(rec, x, ry, x.dtype());
      return record_strided(rec, x, x, ry, y.shape(), OpKind::copy, OpKind::copy, 0, 0);
    }
    case OpKind::cast: return record_cast(rec, x, ry, std::get<CastParams>(call.params).dtype);
    default: break;
  }
  const OpKind act = call.op;  // an activation or scale: activate()'s code is the op's
  float alpha, beta;
  unary_params(call, alpha, beta);
  if (!x.is_contiguous()) return record_strided(rec, x, x, ry, y.shape(), OpKind::copy, act, alpha, beta);
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

}  // namespace trine::vulkan
