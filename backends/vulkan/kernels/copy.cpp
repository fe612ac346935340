// copy and cast on Vulkan: a contiguous copy is a buffer copy; a strided f32 one goes through
// binary.comp (as its a-alone operation), and casts and strided copies of the other dtypes through
// copy.comp, which converts between f32, f16, bf16 and i32 bit-exactly over any input strides (an
// i32 copy moves its words as f32 bits: no conversion touches them).
#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

struct CastPush {
  std::uint32_t n, rank, x_off;
  std::uint32_t dims[8], str[8];
};

// y (contiguous) = x converted element by element from dtype code `from` to `to` (dtype_code's),
// x read through its strides (copy.comp).
void record_cast(Recorder& rec, const Tensor& x, const TensorRef& y, std::uint32_t from, std::uint32_t to) {
  const std::uint64_t n = static_cast<std::uint64_t>(x.numel());
  if (n == 0) return;
  CastPush p{};
  p.n = static_cast<std::uint32_t>(n);
  p.rank = static_cast<std::uint32_t>(x.rank());
  const TensorRef rx = ref_of(x);
  p.x_off = rx.offset;
  for (int i = 0; i < x.rank(); ++i) {
    p.dims[i] = static_cast<std::uint32_t>(x.shape()[i]);
    p.str[i] = static_cast<std::uint32_t>(x.strides()[i]);
  }
  constexpr std::uint32_t group = 256;
  rec.dispatch("copy", {bind_in(rx), bind_out(y)}, &p, sizeof(p), ((n + 1) / 2 + group - 1) / group, {group, from, to});
}

// Every dtype: both move the data as it is or convert it exactly.
bool supports_copy(const detail::OpCall& call) { return inputs_fit_u32(call); }

void limits_copy(Limits& l, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  if (y.numel() == 0 || x.is_contiguous()) return;  // nothing, or a buffer copy: no shader binding
  l.bind(x, "input 0");
  l.bind(y, "the output");
}

void record_copy(Recorder& rec, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  const TensorRef ry = ref_of(y);
  const std::uint64_t n = static_cast<std::uint64_t>(y.numel());
  if (n == 0) return;
  if (x.is_contiguous()) {
    const std::size_t esz = dtype_size(x.dtype());
    return rec.copy(ref_of(x).alloc, static_cast<std::size_t>(x.offset()) * esz, ry.alloc, 0, n * esz);
  }
  if (x.dtype() == DType::f32) return record_strided(rec, x, x, ry, y.shape(), OpKind::copy, OpKind::copy, 0, 0);
  // 16-bit values round-trip through f32 exactly; i32 words move as f32 bits (code 0), untouched.
  const std::uint32_t code = x.dtype() == DType::i32 ? dtype_code(DType::f32) : dtype_code(x.dtype());
  record_cast(rec, x, ry, code, code);
}

void limits_cast(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "input 0");
  l.bind(call.output, "the output");
}

void record_cast_op(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor& x = call.inputs[0];
  record_cast(rec, x, ref_of(call.output), dtype_code(x.dtype()), dtype_code(std::get<CastParams>(call.params).dtype));
}

}  // namespace

void register_copy(VulkanOps& r) {
  r.add(OpKind::copy, {supports_copy, limits_copy, record_copy});
  r.add(OpKind::cast, {supports_copy, limits_cast, record_cast_op});
}

}  // namespace trine::vulkan
