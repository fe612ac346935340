// layernorm and rmsnorm over the last axis on Vulkan: a workgroup per row (norm.comp), inputs made
// contiguous on the device first. Rows whose squares leave the f32 range are redone by norm.comp on
// the row scaled by a power of two. x, gamma, beta and y f16 or bf16 alike: norm.comp reads and
// writes them in place (its TYPE); other 16-bit calls run between casts (backends/widen.hpp).
#include <cmath>
#include <string>

#include "backends/vulkan/ops.hpp"

namespace trine::vulkan {
namespace {

// eps also as eps_m 2^eps_e (eps_m in [1, 2)) and sqrt(eps), for the redo of a row scaled by s,
// which needs eps s^2 and sqrt(eps) s: the smallest eps, 1.4e-45, is subnormal, and a device may
// flush it to zero in arithmetic.
struct NormPush {
  std::uint32_t rows, n, x_off, g_off, b_off, has_gamma, has_beta, rms;
  float eps, eps_m;
  std::int32_t eps_e;
  float sqrt_eps;
};

// norm.comp's passes over a row at most: layernorm's mean, variance and output, and for a row it
// redoes scaled, its largest |x| and the scaled variance; rmsnorm has no mean.
std::uint32_t norm_passes(OpKind op) { return op == OpKind::layernorm ? 5 : 4; }

bool has_gamma(const detail::OpCall& call) { return call.inputs.size() > 1 && call.inputs[1].defined(); }
bool has_beta(const detail::OpCall& call) {
  return call.op == OpKind::layernorm && call.inputs.size() > 2 && call.inputs[2].defined();
}

// f32, or every tensor of one 16-bit dtype.
bool supports_norm(const detail::OpCall& call) { return inputs_f32(call) || (all_16bit(call) && inputs_fit_u32(call)); }

void limits_norm(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const RowSplit s = split_rows(x.shape(), -1);
  l.loop(row_loop(s.n, norm_passes(call.op)), [&] { return "a row of " + std::to_string(s.n); });
  const std::uint64_t rx = l.contiguous(x, "input 0");
  const std::uint64_t rg = has_gamma(call) ? l.contiguous(call.inputs[1], "gamma") : rx;
  const std::uint64_t rb = has_beta(call) ? l.contiguous(call.inputs[2], "beta") : rx;
  if (s.outer == 0) return;
  l.bind(rx, "input 0");
  l.bind(rg, "gamma");
  l.bind(rb, "beta");
  l.bind(call.output, "the output");
}

void record_norm(Recorder& rec, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const TensorRef y = ref_of(call.output);
  const RowSplit s = split_rows(x.shape(), -1);
  const TensorRef rx = contiguous(rec, x);
  const bool has_g = has_gamma(call), has_b = has_beta(call);
  const TensorRef rg = has_g ? contiguous(rec, call.inputs[1]) : rx;
  const TensorRef rb = has_b ? contiguous(rec, call.inputs[2]) : rx;
  const float eps = std::get<NormParams>(call.params).eps;
  int eps_e = 0;
  const float eps_m = 2.0f * std::frexp(eps, &eps_e);  // exact: a power-of-two scaling
  NormPush p{s.outer,   s.n,   rx.offset, rg.offset,
             rb.offset, has_g, has_b,     call.op == OpKind::rmsnorm,
             eps,       eps_m, eps_e - 1, static_cast<float>(std::sqrt(static_cast<double>(eps)))};
  rec.dispatch(reduction_shader(rec.caps(), "norm", "norm_subgroup"),
               {bind_in(rx), bind_in(rg), bind_in(rb), bind_out(y)}, &p, sizeof(p), s.outer,
               {k_reduce_group, dtype_code(call.output.dtype())});
}

}  // namespace

void register_norm(VulkanOps& r) {
  const VulkanKernel k{supports_norm, limits_norm, record_norm};
  r.add(OpKind::layernorm, k);
  r.add(OpKind::rmsnorm, k);
}

}  // namespace trine::vulkan
