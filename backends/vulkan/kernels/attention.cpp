// attention on Vulkan: attention.comp, a workgroup per query row and block of value columns, over
// q, k and v made contiguous on the device first.
#include <cmath>
#include <string>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 64;

struct AttentionPush {
  std::uint32_t batch, Lq, Lk, D, Dv, causal;
  float scale;
  std::uint32_t q_off, k_off, v_off;
  std::uint32_t heads, group;  // q's heads and how many share a kv head (grouped-query attention)
  std::uint32_t window;        // causal sliding window, 0: none
};

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }
std::uint64_t groups(std::uint64_t items) { return (items + k_group - 1) / k_group; }

void limits_attention(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const std::uint64_t rq = l.contiguous_f32(q, "q"), rk = l.contiguous_f32(k, "k"), rv = l.contiguous_f32(v, "v");
  const auto lk = static_cast<std::uint64_t>(k.shape()[k.rank() - 2]);
  const auto d = static_cast<std::uint64_t>(q.shape()[q.rank() - 1]);
  // Over the keys k_group at a time, D + 1 steps each.
  l.loop(groups(lk) * (d + 1), [&] { return std::to_string(lk) + " keys of dimension " + std::to_string(d); });
  l.bind(rq, "q");
  l.bind(rk, "k");
  l.bind(rv, "v");
  l.bind(call.output, "the output");
}

void record_attention(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2], &y = call.output;
  const auto& ap = std::get<AttentionParams>(call.params);
  const int r = q.rank();
  const std::int64_t Lq = q.shape()[r - 2], D = q.shape()[r - 1], Lk = k.shape()[r - 2], Dv = v.shape()[r - 1];
  const std::int64_t batch = q.numel() / (Lq * D);
  const float scale = ap.scale != 0.0f ? ap.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const TensorRef rq = contiguous_f32(rec, q), rk = contiguous_f32(rec, k), rv = contiguous_f32(rec, v);
  // Grouped-query attention: q head h reads kv head h / group (the op table checks the heads divide).
  const std::int64_t heads = r >= 3 ? q.shape()[r - 3] : 1, group = r >= 3 ? heads / k.shape()[r - 3] : 1;
  // A window of Lk keys or more hides nothing.
  const std::int64_t window = ap.causal && ap.window < Lk ? ap.window : 0;
  AttentionPush p{u32(batch), u32(Lq),   u32(Lk),   u32(D),     u32(Dv),    ap.causal,  scale,
                  rq.offset,  rk.offset, rv.offset, u32(heads), u32(group), u32(window)};
  const TensorRef ry = ref_of(y);
  // One workgroup per query row and block of k_group value columns: see shaders/attention.comp.
  const std::uint64_t rows = static_cast<std::uint64_t>(batch * Lq);
  rec.dispatch("attention", {bind_in(rq), bind_in(rk), bind_in(rv), bind_out(ry)}, &p, sizeof(p),
               rows * groups(static_cast<std::uint64_t>(Dv)), {k_group});
}

}  // namespace

void register_attention(VulkanOps& r) { r.add(OpKind::attention, {inputs_f32, limits_attention, record_attention}); }

}  // namespace trine::vulkan
