// attention on Vulkan: attention.comp, a workgroup per query row and block of value columns, over
// q, k and v made contiguous on the device first. With the valid input (the keys that count, read
// on the device) the shader's VALID form, which reports a bad count through Recorder::report_words;
// with the mask input its MASK form (spec constant 2), the mask bound as binding 6.
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
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
  std::uint32_t valid_off, valid_min;  // VALID: where n is, and its least good value (1, or Lq causal)
  // MASK: q batch index b's mask rows start at mask_off + b / heads * mask_outer + b % heads * mask_head
  std::uint32_t mask_off, mask_outer, mask_head;
};

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

// The mask's strides along q's batch index b = outer * heads + h (dims above the heads together):
// one for outer, one for h, 0 where the mask broadcasts. ok: its dims above the heads all 1 (or
// absent) or all q's, which two strides can express, and it is indexed within u32.
struct MaskForm {
  std::int64_t outer = 0, head = 0;
  bool ok = false;
};
MaskForm mask_form(const detail::OpCall& call) {
  const std::optional<detail::AttentionMaskStrides> s = detail::attention_mask_strides(call);
  MaskForm f;
  if (s) f.outer = s->outer, f.head = s->head;
  f.ok = s.has_value() && call.inputs[4].numel() <= std::int64_t{UINT32_MAX};
  return f;
}
std::uint64_t groups(std::uint64_t items) { return (items + k_group - 1) / k_group; }

void limits_attention(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  if (detail::attends_masked(call) && !mask_form(call).ok) {
    l.why() =
        "the vulkan attention shader takes a mask whose dims above the heads (dim -3) are all 1 or all q's, "
        "of at most 2^32 elements, got mask " +
        call.inputs[4].shape().str() + " for q " + q.shape().str();
    return;
  }
  const std::uint64_t rq = l.contiguous_f32(q, "q"), rk = l.contiguous_f32(k, "k"), rv = l.contiguous_f32(v, "v");
  const bool masked = detail::attends_masked(call);
  const std::uint64_t rm = masked ? l.contiguous_f32(call.inputs[4], "mask") : 0;
  const auto lk = static_cast<std::uint64_t>(k.shape()[k.rank() - 2]);
  const auto d = static_cast<std::uint64_t>(q.shape()[q.rank() - 1]);
  // Over the keys k_group at a time, D + 1 steps each.
  l.loop(groups(lk) * (d + 1), [&] { return std::to_string(lk) + " keys of dimension " + std::to_string(d); });
  l.bind(rq, "q");
  l.bind(rk, "k");
  l.bind(rv, "v");
  l.bind(call.output, "the output");
  if (detail::attends_valid(call)) {
    l.temporary(8);  // report_words(2)
    l.bind(call.inputs[3], "valid");
    l.bind(8, "the error report");
  }
  if (masked) l.bind(rm, "mask");
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
  AttentionPush p{u32(batch), u32(Lq),    u32(Lk),    u32(D),      u32(Dv), ap.causal, scale, rq.offset, rk.offset,
                  rv.offset,  u32(heads), u32(group), u32(window), 0,       1,         0,     0,         0};
  // The mask (MASK form): contiguous, its strides along q's batch index as b / heads and b % heads.
  const bool masked = detail::attends_masked(call);
  TensorRef rm = rq;  // MASK = 0: binding 6 is any buffer, never read
  if (masked) {
    rm = contiguous_f32(rec, call.inputs[4]);
    const MaskForm f = mask_form(call);
    p.mask_off = rm.offset;
    p.mask_outer = u32(f.outer);
    p.mask_head = u32(f.head);
  }
  const TensorRef ry = ref_of(y);
  // One workgroup per query row and block of k_group value columns: see shaders/attention.comp.
  const std::uint64_t rows = static_cast<std::uint64_t>(batch * Lq);
  const std::uint64_t count = rows * groups(static_cast<std::uint64_t>(Dv));
  if (!detail::attends_valid(call)) {
    // Bindings 4 and 5 are the VALID form's: any buffers, never read nor written.
    rec.dispatch("attention",
                 {bind_in(rq), bind_in(rk), bind_in(rv), bind_out(ry), bind_in(rk), bind_in(rq), bind_in(rm)}, &p,
                 sizeof(p), count, {k_group, 0u, masked ? 1u : 0u});
    return;
  }
  const std::string what = detail::attention_valid_error(0, call);  // "valid 0 is outside ..."
  const std::string rest = what.substr(what.find(" is outside"));
  Allocation* err = rec.report_words(2, [rest](std::span<const std::uint32_t> w) -> std::optional<Error> {
    if (w[0] == 0xFFFFFFFFu) return std::nullopt;
    return Error(ErrorCode::invalid_argument, "valid " + std::to_string(static_cast<std::int32_t>(w[1])) + rest);
  });
  const TensorRef rn = ref_of(call.inputs[3]);
  p.valid_off = rn.offset;
  p.valid_min = u32(detail::attention_valid_min(call));
  rec.dispatch("attention",
               {bind_in(rq), bind_in(rk), bind_in(rv), bind_out(ry), bind_in(rn), Binding{err, true}, bind_in(rm)}, &p,
               sizeof(p), count, {k_group, 1u, masked ? 1u : 0u});
}

// q, k, v, the mask and the result f32 (16-bit ones run between casts: backends/widen.hpp); the valid
// input (the op table checks it is one i32) read by the shader as it is.
bool supports_attention(const detail::OpCall& call) {
  for (std::size_t i = 0; i < call.inputs.size(); ++i)
    if (i != 3 && call.inputs[i].defined() && call.inputs[i].dtype() != DType::f32) return false;
  return call.output.dtype() == DType::f32;
}

}  // namespace

void register_attention(VulkanOps& r) {
  r.add(OpKind::attention, {supports_attention, limits_attention, record_attention});
}

}  // namespace trine::vulkan
