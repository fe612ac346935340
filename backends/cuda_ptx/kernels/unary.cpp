// Element-wise kernels: the unary activations and scale (one config each), and the fused
// bias + activation. Contiguous f32 in and out, grid-stride loops over a u64 element count.
#include <vector>

#include "backends/cuda_ptx/kernels/activation.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr std::int64_t grid_cap = 8192;  // a grid-stride loop covers the rest

std::vector<std::string> activation_configs() {
  std::vector<std::string> c;
  for (Activation a :
       {Activation::identity, Activation::relu, Activation::leaky_relu, Activation::elu, Activation::sigmoid,
        Activation::tanh, Activation::silu, Activation::gelu, Activation::gelu_tanh, Activation::clip}) {
    c.emplace_back(activation_name(a));
  }
  return c;
}

std::string generate_unary(const std::string& config, Target target) {
  Activation act = Activation::identity;
  bool is_scale = config == "scale";
  if (!is_scale && (!parse_activation(config, act) || act == Activation::identity)) unknown_config("unary", config);
  Kernel k(kernel_name("unary", config), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  Reg<F32> alpha = param<F32>(k, "alpha");
  Reg<F32> beta = param<F32>(k, "beta");
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<F32> v = ld(k, element(k, x, i));
    Reg<F32> r = is_scale ? fma(k, v, V<F32>(alpha), V<F32>(beta)) : activation(k, act, v, alpha, beta);
    st(k, element(k, y, i), V<F32>(r));
  });
  return module_text(k);
}

std::string generate_bias_act(const std::string& config, Target target) {
  Activation act = Activation::identity;
  if (!parse_activation(config, act)) unknown_config("bias_act", config);
  Kernel k(kernel_name("bias_act", config), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Ptr<Global, F32> bias = param_ptr<F32>(k, "bias");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  Reg<U64> cols = param<U64>(k, "cols");
  Reg<F32> alpha = param<F32>(k, "alpha");
  Reg<F32> beta = param<F32>(k, "beta");
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<F32> v = ld(k, element(k, x, i));
    Reg<F32> b = ld(k, element(k, bias, rem(k, i, V<U64>(cols))));
    st(k, element(k, y, i), V<F32>(activation(k, act, add(k, v, V<F32>(b)), alpha, beta)));
  });
  return module_text(k);
}

Launch flat_geometry(const std::string&, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, grid_cap), 1, 1};
  return l;
}

std::optional<Steps> plan_unary(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  float alpha = 0, beta = 0;
  if (c.op == OpKind::scale) {
    alpha = std::get<ScaleParams>(c.params).alpha;
    beta = std::get<ScaleParams>(c.params).beta;
  } else {
    alpha = std::get<ActParams>(c.params).alpha;
    beta = std::get<ActParams>(c.params).beta;
  }
  Plan& pl = steps.add("unary", op_info(c.op).name, {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  pl.args.add(alpha);
  pl.args.add(beta);
  return steps;
}

std::optional<Steps> plan_bias_act(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const auto& p = std::get<BiasActParams>(c.params);
  Plan& pl = steps.add("bias_act", activation_name(p.act), {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.inputs[1]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  pl.args.add(static_cast<std::uint64_t>(c.inputs[0].dim(-1)));
  pl.args.add(p.alpha);
  pl.args.add(p.beta);
  return steps;
}

}  // namespace

Generator unary_generator() {
  std::vector<std::string> configs = activation_configs();
  configs.erase(configs.begin());  // identity is copy's job
  configs.emplace_back("scale");
  return Generator{"unary",
                   "relu leaky_relu elu sigmoid tanh silu gelu gelu_tanh clip scale",
                   configs,
                   generate_unary,
                   "x: f32* (contiguous), y: f32*, n: u64 elements, alpha: f32, beta: f32 "
                   "(leaky slope / elu alpha / clip low, clip high; scale: y = alpha x + beta)",
                   "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                   flat_geometry};
}

Generator bias_act_generator() {
  return Generator{"bias_act",
                   "bias_act",
                   activation_configs(),
                   generate_bias_act,
                   "x: f32* (contiguous [rows, cols]), bias: f32* [cols], y: f32*, n: u64 = rows*cols, "
                   "cols: u64, alpha: f32, beta: f32",
                   "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                   flat_geometry};
}

void register_unary(CudaOps& r) {
  // clang-format off
#define TRINE_ACT(name, flops) r.ops.add(OpKind::name, OpKernel{plan_unary});
#include "trine/ops.def"
  // clang-format on
  r.ops.add(OpKind::scale, OpKernel{plan_unary});
  r.ops.add(OpKind::bias_act, OpKernel{plan_bias_act});
}

}  // namespace trine::cuda::kernels
