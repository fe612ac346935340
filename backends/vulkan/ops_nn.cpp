// conv2d, attention and rope on Vulkan (inputs made contiguous on the device first).
#include <cmath>
#include <string>
#include <vector>

#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/ops.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 64;

struct RopePush {
  std::uint32_t pairs, half_d, L, x_off;
};
struct ConvPush {
  std::uint32_t N, C, H, W, K, P, Q, R, S;
  std::int32_t sh, sw, ph, pw, dh, dw;
  std::uint32_t groups, has_bias, x_off, w_off, b_off;
};
struct AttentionPush {
  std::uint32_t batch, Lq, Lk, D, Dv, causal;
  float scale;
  std::uint32_t q_off, k_off, v_off;
};

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }
std::uint64_t groups(std::uint64_t items) { return (items + k_group - 1) / k_group; }

void record_rope(Recorder& rec, const detail::OpCall& call) {
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
  RopePush p{static_cast<std::uint32_t>(pairs), u32(half), u32(L), rx.offset};
  rec.dispatch("rope", {bind_in(rx), {t, false}, bind_out(ry)}, &p, sizeof(p), groups(pairs), {k_group});
}

void record_conv2d(Recorder& rec, const detail::OpCall& call) {
  const Tensor &x = call.inputs[0], &w = call.inputs[1], &y = call.output;
  const bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  const auto& cp = std::get<Conv2dParams>(call.params);
  const TensorRef rx = contiguous_f32(rec, x), rw = contiguous_f32(rec, w);
  const TensorRef rb = has_bias ? contiguous_f32(rec, call.inputs[2]) : rx;
  ConvPush p{u32(x.shape()[0]),
             u32(x.shape()[1]),
             u32(x.shape()[2]),
             u32(x.shape()[3]),
             u32(w.shape()[0]),
             u32(y.shape()[2]),
             u32(y.shape()[3]),
             u32(w.shape()[2]),
             u32(w.shape()[3]),
             static_cast<std::int32_t>(cp.stride.h),
             static_cast<std::int32_t>(cp.stride.w),
             static_cast<std::int32_t>(cp.padding.h),
             static_cast<std::int32_t>(cp.padding.w),
             static_cast<std::int32_t>(cp.dilation.h),
             static_cast<std::int32_t>(cp.dilation.w),
             u32(cp.groups),
             has_bias,
             rx.offset,
             rw.offset,
             rb.offset};
  const TensorRef ry = ref_of(y);
  rec.dispatch("conv2d", {bind_in(rx), bind_in(rw), bind_in(rb), bind_out(ry)}, &p, sizeof(p),
               groups(static_cast<std::uint64_t>(y.numel())), {k_group});
}

void record_attention(Recorder& rec, const detail::OpCall& call) {
  const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2], &y = call.output;
  const auto& ap = std::get<AttentionParams>(call.params);
  const int r = q.rank();
  const std::int64_t Lq = q.shape()[r - 2], D = q.shape()[r - 1], Lk = k.shape()[r - 2], Dv = v.shape()[r - 1];
  const std::int64_t batch = q.numel() / (Lq * D);
  const float scale = ap.scale != 0.0f ? ap.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const TensorRef rq = contiguous_f32(rec, q), rk = contiguous_f32(rec, k), rv = contiguous_f32(rec, v);
  AttentionPush p{u32(batch), u32(Lq), u32(Lk), u32(D), u32(Dv), ap.causal, scale, rq.offset, rk.offset, rv.offset};
  const TensorRef ry = ref_of(y);
  // One workgroup per query row and block of k_group value columns: see shaders/attention.comp.
  const std::uint64_t rows = static_cast<std::uint64_t>(batch * Lq);
  rec.dispatch("attention", {bind_in(rq), bind_in(rk), bind_in(rv), bind_out(ry)}, &p, sizeof(p),
               rows * groups(static_cast<std::uint64_t>(Dv)), {k_group});
}

}  // namespace

bool supports_nn(const detail::OpCall& call) {
  for (const auto& t : call.inputs)
    if (t.defined() && t.dtype() != DType::f32) return false;
  return true;
}

void limits_nn(Limits& l, const detail::OpCall& call) {
  const Tensor& y = call.output;
  if (y.numel() == 0) return;
  switch (call.op) {
    case OpKind::rope: {
      const Tensor& x = call.inputs[0];
      const std::int64_t L = x.shape()[x.rank() - 2], D = x.shape()[x.rank() - 1];
      const auto table = static_cast<std::uint64_t>(L * (D / 2) * 2 * 4);
      l.temporary(table);
      l.bind(l.contiguous_f32(x, "input 0"), "input 0");
      l.bind(bound_bytes(table), "the cos/sin table");
      return l.bind(y, "the output");
    }
    case OpKind::conv2d: {
      const Tensor &x = call.inputs[0], &w = call.inputs[1];
      const bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
      const std::uint64_t rx = l.contiguous_f32(x, "input 0"), rw = l.contiguous_f32(w, "the weights");
      const std::uint64_t rb = has_bias ? l.contiguous_f32(call.inputs[2], "the bias") : rx;
      const std::uint64_t channels =
          static_cast<std::uint64_t>(x.shape()[1] / std::get<Conv2dParams>(call.params).groups);
      const std::uint64_t r = static_cast<std::uint64_t>(w.shape()[2]), s = static_cast<std::uint64_t>(w.shape()[3]);
      // lavapipe counts the iterations of nested loops together: channels x (rows x (columns + 1) + 2).
      l.loop(channels * (r * (s + 2) + 2), [&] {
        return "a window of " + std::to_string(channels) + "x" + std::to_string(r) + "x" + std::to_string(s);
      });
      l.bind(rx, "input 0");
      l.bind(rw, "the weights");
      l.bind(rb, "the bias");
      return l.bind(y, "the output");
    }
    case OpKind::attention: {
      const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
      const std::uint64_t rq = l.contiguous_f32(q, "q"), rk = l.contiguous_f32(k, "k"), rv = l.contiguous_f32(v, "v");
      const auto lk = static_cast<std::uint64_t>(k.shape()[k.rank() - 2]);
      const auto d = static_cast<std::uint64_t>(q.shape()[q.rank() - 1]);
      // Over the keys k_group at a time, D + 1 steps each.
      l.loop((lk + k_group - 1) / k_group * (d + 1),
             [&] { return std::to_string(lk) + " keys of dimension " + std::to_string(d); });
      l.bind(rq, "q");
      l.bind(rk, "k");
      l.bind(rv, "v");
      return l.bind(y, "the output");
    }
    default: return;
  }
}

void record_nn(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  switch (call.op) {
    case OpKind::rope: return record_rope(rec, call);
    case OpKind::conv2d: return record_conv2d(rec, call);
    case OpKind::attention: return record_attention(rec, call);
    default: break;
  }
  throw Error(ErrorCode::internal, std::string("[") + op_info(call.op).name + "] routed to the nn family");
}

}  // namespace trine::vulkan
