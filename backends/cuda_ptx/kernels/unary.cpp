// Element-wise kernels: the unary activations and scale (one config each), and the fused
// bias + activation. Contiguous f32 in and out, grid-stride loops over a u64 element count.
#include <vector>

#include "backends/cuda_ptx/kernels/activation.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr std::int64_t grid_cap = 8192;  // a grid-stride loop covers the rest

// unary: every activation of ops.def (identity is copy's job), then scale.
struct UnaryConfig {
  std::string_view name;
  OpKind op;  // an activation's op, or scale
};
constexpr UnaryConfig unary_configs[] = {
// clang-format off
#define TRINE_ACT(name, flops, formula) {#name, OpKind::name},
#include "trine/ops.def"
    // clang-format on
    {"scale", OpKind::scale},
};

// bias_act: identity, then every activation of ops.def (trine::Activation's order).
struct BiasActConfig {
  std::string_view name;
  Activation act;
};
constexpr BiasActConfig bias_act_configs[] = {
    {"identity", Activation::identity},
// clang-format off
#define TRINE_ACT(name, flops, formula) {#name, Activation::name},
#include "trine/ops.def"
    // clang-format on
};

std::string generate_unary(std::size_t config, Target target) {
  const UnaryConfig& cfg = config_at(unary_configs, config, "unary");
  const std::optional<Activation> act = op_activation(cfg.op);  // none: scale
  Kernel k(kernel_name("unary", cfg.name), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  Reg<F32> alpha = param<F32>(k, "alpha");
  Reg<F32> beta = param<F32>(k, "beta");
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<F32> v = ld(k, element(k, x, i));
    Reg<F32> r = act ? activation(k, *act, v, alpha, beta) : fma(k, v, V<F32>(alpha), V<F32>(beta));
    st(k, element(k, y, i), V<F32>(r));
  });
  return module_text(k);
}

std::string generate_bias_act(std::size_t config, Target target) {
  const BiasActConfig& cfg = config_at(bias_act_configs, config, "bias_act");
  Kernel k(kernel_name("bias_act", cfg.name), target);
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
    st(k, element(k, y, i), V<F32>(activation(k, cfg.act, add(k, v, V<F32>(b)), alpha, beta)));
  });
  return module_text(k);
}

Launch flat_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, grid_cap), 1, 1};
  return l;
}

const Generator& unary_generator() {
  static const Generator g = [] {
    std::vector<OpKind> ops;
    for (const UnaryConfig& c : unary_configs) ops.push_back(c.op);
    return Generator{"unary",
                     ops,
                     config_names(unary_configs),
                     generate_unary,
                     "x: f32* (contiguous), y: f32*, n: u64 elements, alpha: f32, beta: f32 "
                     "(leaky slope / elu alpha / clip low, clip high; scale: y = alpha x + beta)",
                     "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                     flat_geometry,
                     true};
  }();
  return g;
}

const Generator& bias_act_generator() {
  static const Generator g{"bias_act",
                           {OpKind::bias_act},
                           config_names(bias_act_configs),
                           generate_bias_act,
                           "x: f32* (contiguous [rows, cols]), bias: f32* [cols], y: f32*, n: u64 = rows*cols, "
                           "cols: u64, alpha: f32, beta: f32",
                           "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                           flat_geometry,
                           true};
  return g;
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
  const std::size_t config = config_index(unary_configs, "unary", [&](const UnaryConfig& u) { return u.op == c.op; });
  Plan& pl = steps.add(unary_generator(), config, {n_out});
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
  const std::size_t config =
      config_index(bias_act_configs, "bias_act", [&](const BiasActConfig& b) { return b.act == p.act; });
  Plan& pl = steps.add(bias_act_generator(), config, {n_out});
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

void register_unary(CudaOps& r) {
  r.generators.push_back(&unary_generator());
  r.generators.push_back(&bias_act_generator());
  // Every activation of ops.def: its PTX is activation()'s case, its configuration unary_configs'.
  // clang-format off
#define TRINE_ACT(name, flops, formula) r.ops.add(OpKind::name, OpKernel{plan_unary});
#include "trine/ops.def"
  // clang-format on
  r.ops.add(OpKind::scale, OpKernel{plan_unary});
  r.ops.add(OpKind::bias_act, OpKernel{plan_bias_act});
}

}  // namespace trine::cuda::kernels
