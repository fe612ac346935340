// add, sub, mul, div, minimum and maximum on Vulkan, with numpy broadcasting: binary.comp reads both
// inputs through their (broadcast) strides, so views and broadcasts cost no copies. where, the one op
// of three inputs: binary_where.comp, the same way, moving f16 and bf16 values as their 16-bit halves.
#include <algorithm>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// f32, or a, b and y all f16 or all bf16 (binary_b16).
bool supports_binary(const detail::OpCall& call) {
  if (!inputs_fit_u32(call)) return false;
  const DType t = call.output.dtype();
  return inputs_f32(call) || (dtype_is_16bit(t) && call.inputs[0].dtype() == t && call.inputs[1].dtype() == t);
}

void limits_binary(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "input 0");
  l.bind(call.inputs[1], "input 1");
  l.bind(call.output, "the output");
}

void record_binary(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  // binary.comp's operation is the op's code (OP_add ... OP_maximum), with no activation after it.
  record_strided(rec, call.inputs[0], call.inputs[1], ref_of(y), y.shape(), call.op, OpKind::copy, 0, 0, y.dtype());
}

// ---- where ----

constexpr int k_where_dims = 6;  // what binary_where.comp's push constants hold
constexpr std::uint32_t k_where_elems = 4;

struct WherePush {
  std::uint32_t n, rank, c_mask, c_off, a_off, b_off, y_off;
  std::uint32_t dims[k_where_dims], c_str[k_where_dims], a_str[k_where_dims], b_str[k_where_dims];
};
static_assert(sizeof(WherePush) <= 128, "binary_where.comp's push constants fit in 128 bytes");

// The output's dims, outermost first, with each input's strides through them (0 where it
// broadcasts): dims of 1 dropped, and neighbours merged where every input steps through the pair as
// through one dim, so that most calls fit binary_where.comp's dims whatever their rank.
struct Walk {
  int rank = 0;
  std::int64_t dims[8] = {};
  std::int64_t str[3][8] = {};
};

Walk walk_of(const Shape& out, const std::vector<Tensor>& in) {
  Walk w;
  for (int i = 0; i < out.rank(); ++i) {
    if (out[i] == 1) continue;
    std::int64_t s[3];
    for (int k = 0; k < 3; ++k) {
      const Tensor& t = in[static_cast<std::size_t>(k)];
      const int j = i - (out.rank() - t.rank());
      s[k] = j < 0 || t.shape()[j] == 1 ? 0 : t.strides()[j];
    }
    const int r = w.rank - 1;
    if (r >= 0 && w.str[0][r] == s[0] * out[i] && w.str[1][r] == s[1] * out[i] && w.str[2][r] == s[2] * out[i]) {
      w.dims[r] *= out[i];
      for (int k = 0; k < 3; ++k) w.str[k][r] = s[k];
      continue;
    }
    w.dims[w.rank] = out[i];
    for (int k = 0; k < 3; ++k) w.str[k][w.rank] = s[k];
    ++w.rank;
  }
  return w;
}

// cond of any dtype (f32, i32, f16, bf16); a, b and y f32, or all of one 16-bit dtype (a mix runs
// between casts: backends/widen.hpp).
bool supports_where(const detail::OpCall& call) {
  const DType t = call.output.dtype();
  const bool same = call.inputs[1].dtype() == t && call.inputs[2].dtype() == t;
  return inputs_fit_u32(call) && same && (t == DType::f32 || dtype_is_16bit(t));
}

void limits_where(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  l.bind(call.inputs[0], "cond");
  l.bind(call.inputs[1], "input 1");
  l.bind(call.inputs[2], "input 2");
  l.bind(call.output, "the output");
}

void record_where(Recorder& rec, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  const Tensor& c = call.inputs[0];
  const Walk w = walk_of(y.shape(), call.inputs);
  const TensorRef rc = ref_of(c), ra = ref_of(call.inputs[1]), rb = ref_of(call.inputs[2]), ry = ref_of(y);
  // Dims past what the shader holds (the outermost, left after merging: rare) are walked here, one
  // dispatch per index of theirs.
  const int outer = std::max(0, w.rank - k_where_dims);
  WherePush p{};
  p.rank = static_cast<std::uint32_t>(w.rank - outer);
  p.c_mask = c.dtype() == DType::i32 ? 0xFFFFFFFFu : 0x7FFFFFFFu;  // f32: -0 is zero, NaN is not
  const std::uint32_t type = dtype_is_16bit(y.dtype()) ? 1 : 0, ctype = dtype_is_16bit(c.dtype()) ? 1 : 0;
  std::uint64_t inner = 1;
  for (int d = 0; d < static_cast<int>(p.rank); ++d) {
    p.dims[d] = static_cast<std::uint32_t>(w.dims[outer + d]);
    p.c_str[d] = static_cast<std::uint32_t>(w.str[0][outer + d]);
    p.a_str[d] = static_cast<std::uint32_t>(w.str[1][outer + d]);
    p.b_str[d] = static_cast<std::uint32_t>(w.str[2][outer + d]);
    inner *= static_cast<std::uint64_t>(w.dims[outer + d]);
  }
  p.n = static_cast<std::uint32_t>(inner);
  const std::uint64_t count = static_cast<std::uint64_t>(y.numel()) / inner;
  for (std::uint64_t o = 0; o < count; ++o) {
    std::uint64_t rem = o;
    std::int64_t off[3] = {rc.offset, ra.offset, rb.offset};
    for (int d = outer - 1; d >= 0; --d) {
      const auto q = static_cast<std::int64_t>(rem % static_cast<std::uint64_t>(w.dims[d]));
      rem /= static_cast<std::uint64_t>(w.dims[d]);
      for (int k = 0; k < 3; ++k) off[k] += q * w.str[k][d];
    }
    p.c_off = static_cast<std::uint32_t>(off[0]);
    p.a_off = static_cast<std::uint32_t>(off[1]);
    p.b_off = static_cast<std::uint32_t>(off[2]);
    p.y_off = static_cast<std::uint32_t>(o * inner);
    // 16-bit: the words holding [y_off, y_off + inner), the first and last perhaps shared with the
    // dispatch before or after (which the recorder's barriers keep apart)
    const std::uint64_t items = type ? (p.y_off + inner - 1) / 2 - p.y_off / 2 + 1 : inner;
    rec.dispatch("binary_where", {bind_in(rc), bind_in(ra), bind_in(rb), bind_out(ry)}, &p, sizeof(p),
                 elementwise_groups(items, k_where_elems), {k_elementwise_group, k_where_elems, type, ctype});
  }
}

}  // namespace

void register_binary(VulkanOps& r) {
  const VulkanKernel k{supports_binary, limits_binary, record_binary};
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::minimum, OpKind::maximum}) r.add(op, k);
  r.add(OpKind::where, {supports_where, limits_where, record_where});
}

}  // namespace trine::vulkan
