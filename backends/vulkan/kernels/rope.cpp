// rope on Vulkan: rope.comp rotates each pair by a cos/sin table computed on the host in double
// (the angles reach thousands of radians, past what f32 sin/cos reduce accurately). Both pair forms
// share the shader: where pair i starts (step * i) and how far its second element is (partner).
#include <cmath>
#include <vector>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 64;

struct RopePush {
  std::uint32_t pairs, half_d, L, x_off;
  std::uint32_t step, partner;  // interleaved: 2, 1; halves: 1, D/2
};

void limits_rope(Limits& l, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &y = call.output;
  if (y.numel() == 0) return;
  const std::int64_t L = x.shape()[x.rank() - 2], D = x.shape()[x.rank() - 1];
  const auto table = static_cast<std::uint64_t>(L * (D / 2) * 2 * 4);
  l.temporary(table);
  l.bind(l.contiguous_f32(x, "input 0"), "input 0");
  l.bind(bound_bytes(table), "the cos/sin table");
  l.bind(y, "the output");
}

void record_rope(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor& x = call.inputs[0];
  const auto& rp = std::get<RopeParams>(call.params);
  const std::int64_t L = x.shape()[x.rank() - 2], D = x.shape()[x.rank() - 1];
  const std::int64_t half = D / 2;
  // cos and sin per (position, pair) in double on the host: the angles reach thousands of radians,
  // past what f32 sin/cos reduce accurately.
  std::vector<float> tab(static_cast<std::size_t>(L * half * 2));
  for (std::int64_t l = 0; l < L; ++l) {
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
  const TensorRef rx = contiguous_f32(rec, x), ry = ref_of(call.output);
  const std::uint64_t pairs = static_cast<std::uint64_t>(x.numel() / 2);
  const bool halves = rp.pairs == RopePairs::halves;
  RopePush p{static_cast<std::uint32_t>(pairs),
             static_cast<std::uint32_t>(half),
             static_cast<std::uint32_t>(L),
             rx.offset,
             halves ? 1u : 2u,
             halves ? static_cast<std::uint32_t>(half) : 1u};
  rec.dispatch("rope", {bind_in(rx), {t, false}, bind_out(ry)}, &p, sizeof(p), (pairs + k_group - 1) / k_group,
               {k_group});
}

}  // namespace

void register_rope(VulkanOps& r) { r.add(OpKind::rope, {inputs_f32, limits_rope, record_rope}); }

}  // namespace trine::vulkan
