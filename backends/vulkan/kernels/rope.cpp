// rope on Vulkan: rope.comp rotates each pair by a cos/sin table computed on the host in double
// (the angles reach thousands of radians, past what f32 sin/cos reduce accurately). Both pair forms
// share the shader: where pair i starts (step * i) and how far its second element is (partner).
// With a position tensor (read on the device when the op runs, so no table of angles can be made
// while recording) the shader's AT form computes each angle itself: the table then holds each
// pair's frequency as two floats (hi + lo, from the host's double), the angle is formed and reduced
// in float-float arithmetic, and its sine and cosine come from series on [-pi/4, pi/4].
// x and y f16 or bf16 alike: rope.comp reads and writes them in place (its TYPE), each invocation
// whole words of y.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 64;

struct RopePush {
  std::uint32_t pairs, half_d, L, x_off;
  std::uint32_t step, partner;  // interleaved: 2, 1; halves: 1, D/2
  std::uint32_t p_off;          // AT: the position's element
  std::int32_t offset;          // AT: position_offset
};

bool at_position(const detail::OpCall& call) { return call.inputs.size() > 1; }

// x f32, or x and y of one 16-bit dtype (other 16-bit calls run between casts: backends/widen.hpp);
// a position an i32 of one element.
bool supports_rope(const detail::OpCall& call) {
  const DType t = call.inputs[0].dtype();
  if (!(t == DType::f32 && call.output.dtype() == DType::f32) && !(all_16bit(call, {1}) && inputs_fit_u32(call)))
    return false;
  if (!at_position(call)) return true;
  const Tensor& pos = call.inputs[1];
  return pos.dtype() == DType::i32 && pos.numel() == 1;
}

// With a position tensor the shader adds position_offset + l in 32 bits (the position's own value
// may be any int32): where they do not fit, why not.
std::string offset_refusal(const detail::OpCall& call) {
  const std::int64_t off = std::get<RopeParams>(call.params).position_offset, L = call.inputs[0].dim(-2);
  if (off >= std::numeric_limits<std::int32_t>::min() && off <= std::numeric_limits<std::int32_t>::max() - L) return {};
  return "with a position tensor, position_offset + l must fit 32 bits on Vulkan, got position_offset " +
         std::to_string(off) + " and " + std::to_string(L) + " rows (add it to the position tensor instead)";
}

// The table: cos/sin per (row, pair), or with a position the pairs' frequencies (hi, lo).
std::uint64_t table_bytes(const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const std::int64_t L = x.shape()[x.rank() - 2], D = x.shape()[x.rank() - 1];
  return static_cast<std::uint64_t>((at_position(call) ? 1 : L) * (D / 2) * 2 * 4);
}

void limits_rope(Limits& l, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  if (y.numel() == 0) return;
  if (at_position(call)) {
    if (std::string why = offset_refusal(call); !why.empty()) {
      l.why() = std::move(why);  // the first need not met; nothing more is checked
      return;
    }
  }
  const std::uint64_t table = table_bytes(call);
  l.temporary(table);
  l.bind(l.contiguous(x, "input 0"), "input 0");
  l.bind(bound_bytes(table), at_position(call) ? "the frequency table" : "the cos/sin table");
  l.bind(y, "the output");
  if (at_position(call))
    l.bind(call.inputs[1], "the position");
  else
    l.bind(bound_bytes(table), "the cos/sin table (bound again where a position would be)");
}

void record_rope(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor& x = call.inputs[0];
  const auto& rp = std::get<RopeParams>(call.params);
  const std::int64_t L = x.shape()[x.rank() - 2], D = x.shape()[x.rank() - 1];
  const std::int64_t half = D / 2;
  const bool at = at_position(call);
  // cos and sin per (position, pair) in double on the host: the angles reach thousands of radians,
  // past what f32 sin/cos reduce accurately. With a position read on the device: each pair's
  // frequency base^(-2i/D) as hi + lo, two floats that carry the double's 48 leading bits.
  std::vector<float> tab(static_cast<std::size_t>((at ? 1 : L) * half * 2));
  for (std::int64_t i = 0; at && i < half; ++i) {
    const double f = std::pow(static_cast<double>(rp.base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const float hi = static_cast<float>(f);
    tab[static_cast<std::size_t>(i * 2)] = hi;
    tab[static_cast<std::size_t>(i * 2 + 1)] = static_cast<float>(f - static_cast<double>(hi));
  }
  for (std::int64_t l = 0; !at && l < L; ++l) {
    const double pos = static_cast<double>(rp.position_offset + l);
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle =
          pos * std::pow(static_cast<double>(rp.base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
      tab[static_cast<std::size_t>((l * half + i) * 2)] = static_cast<float>(std::cos(angle));
      tab[static_cast<std::size_t>((l * half + i) * 2 + 1)] = static_cast<float>(std::sin(angle));
    }
  }
  Allocation* t = rec.temporary(tab.size() * 4);
  rec.upload_constant(tab.data(), t, 0, tab.size() * 4);
  const TensorRef rx = contiguous(rec, x), ry = ref_of(call.output);
  const TensorRef rp_ = at ? ref_of(call.inputs[1]) : TensorRef{};
  const std::uint64_t pairs = static_cast<std::uint64_t>(x.numel() / 2);
  const bool halves = rp.pairs == RopePairs::halves;
  RopePush p{static_cast<std::uint32_t>(pairs),
             static_cast<std::uint32_t>(half),
             static_cast<std::uint32_t>(L),
             rx.offset,
             halves ? 1u : 2u,
             halves ? static_cast<std::uint32_t>(half) : 1u,
             at ? rp_.offset : 0u,
             static_cast<std::int32_t>(rp.position_offset)};
  // 16-bit: an invocation per word of y (a pair interleaved), or per two pairs in halves when D/2
  // is even (a word in each half)
  const std::uint32_t type = dtype_code(call.output.dtype());
  const std::uint32_t form = !halves ? 0 : half % 2 == 0 ? 1 : 2;  // rope.comp's FORM
  const std::uint64_t items = type != 0 && form == 1 ? pairs / 2 : pairs;
  // binding 3 is the position, or (unread) the table again: one layout for both forms
  rec.dispatch("rope", {bind_in(rx), {t, false}, bind_out(ry), at ? bind_in(rp_) : Binding{t, false}}, &p, sizeof(p),
               (items + k_group - 1) / k_group, {k_group, at ? 1u : 0u, type, type ? form : 0u});
}

}  // namespace

void register_rope(VulkanOps& r) { r.add(OpKind::rope, {supports_rope, limits_rope, record_rope}); }

}  // namespace trine::vulkan
