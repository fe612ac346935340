// conv2d on Vulkan: conv2d.comp computes each output element directly (an invocation each), any
// stride, padding, dilation and groups, on inputs made contiguous on the device first.
#include <string>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_group = 64;

struct ConvPush {
  std::uint32_t N, C, H, W, K, P, Q, R, S;
  std::int32_t sh, sw, ph, pw, dh, dw;
  std::uint32_t groups, has_bias, x_off, w_off, b_off;
};

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }
bool has_bias(const detail::OpCall& call) { return call.inputs.size() > 2 && call.inputs[2].defined(); }

void limits_conv2d(Limits& l, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor &x = call.inputs[0], &w = call.inputs[1];
  const std::uint64_t rx = l.contiguous_f32(x, "input 0"), rw = l.contiguous_f32(w, "the weights");
  const std::uint64_t rb = has_bias(call) ? l.contiguous_f32(call.inputs[2], "the bias") : rx;
  const std::uint64_t channels = static_cast<std::uint64_t>(x.shape()[1] / std::get<Conv2dParams>(call.params).groups);
  const std::uint64_t r = static_cast<std::uint64_t>(w.shape()[2]), s = static_cast<std::uint64_t>(w.shape()[3]);
  // lavapipe counts the iterations of nested loops together: channels x (rows x (columns + 1) + 2).
  l.loop(channels * (r * (s + 2) + 2),
         [&] { return "a window of " + std::to_string(channels) + "x" + std::to_string(r) + "x" + std::to_string(s); });
  l.bind(rx, "input 0");
  l.bind(rw, "the weights");
  l.bind(rb, "the bias");
  l.bind(call.output, "the output");
}

void record_conv2d(Recorder& rec, const detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  const Tensor &x = call.inputs[0], &w = call.inputs[1], &y = call.output;
  const bool bias = has_bias(call);
  const auto& cp = std::get<Conv2dParams>(call.params);
  const TensorRef rx = contiguous_f32(rec, x), rw = contiguous_f32(rec, w);
  const TensorRef rb = bias ? contiguous_f32(rec, call.inputs[2]) : rx;
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
             bias,
             rx.offset,
             rw.offset,
             rb.offset};
  const TensorRef ry = ref_of(y);
  rec.dispatch("conv2d", {bind_in(rx), bind_in(rw), bind_in(rb), bind_out(ry)}, &p, sizeof(p),
               (static_cast<std::uint64_t>(y.numel()) + k_group - 1) / k_group, {k_group});
}

}  // namespace

void register_conv2d(VulkanOps& r) { r.add(OpKind::conv2d, {inputs_f32, limits_conv2d, record_conv2d}); }

}  // namespace trine::vulkan
