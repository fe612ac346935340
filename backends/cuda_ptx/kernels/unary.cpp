// Element-wise kernels: the unary activations and scale, and the fused bias + activation, one
// configuration per op and storage dtype (f32, f16, bf16: every tensor of the call in it, computed
// in f32 and rounded once as stored). Contiguous in and out, grid-stride loops over a u64 element
// count. A call mixing dtypes runs in f32 between casts (backends/widen.hpp).
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
  Elem e;     // how x and y are stored
};
constexpr UnaryConfig unary_configs[] = {
// clang-format off
#define TRINE_ACT(name, flops, formula) \
    {#name, OpKind::name, Elem::f32}, {#name "_f16", OpKind::name, Elem::f16}, {#name "_bf16", OpKind::name, Elem::bf16},
#include "trine/ops.def"
    // clang-format on
    {"scale", OpKind::scale, Elem::f32},
    {"scale_f16", OpKind::scale, Elem::f16},
    {"scale_bf16", OpKind::scale, Elem::bf16},
};

// bias_act: identity, then every activation of ops.def (trine::Activation's order).
struct BiasActConfig {
  std::string_view name;
  Activation act;
  Elem e;  // how x, bias and y are stored
};
constexpr BiasActConfig bias_act_configs[] = {
    {"identity", Activation::identity, Elem::f32},
    {"identity_f16", Activation::identity, Elem::f16},
    {"identity_bf16", Activation::identity, Elem::bf16},
// clang-format off
#define TRINE_ACT(name, flops, formula) \
    {#name, Activation::name, Elem::f32}, {#name "_f16", Activation::name, Elem::f16}, \
    {#name "_bf16", Activation::name, Elem::bf16},
#include "trine/ops.def"
    // clang-format on
};

std::string generate_unary(std::size_t config, Target target) {
  const UnaryConfig& cfg = config_at(unary_configs, config, "unary");
  const std::optional<Activation> act = op_activation(cfg.op);  // none: scale
  Kernel k(kernel_name("unary", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> n = param<U64>(k, "n");
  Reg<F32> alpha = param<F32>(k, "alpha");
  Reg<F32> beta = param<F32>(k, "beta");
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<F32> v = load_f32(k, cfg.e, x, i);
    Reg<F32> r = act ? activation(k, *act, v, alpha, beta) : fma(k, v, V<F32>(alpha), V<F32>(beta));
    store_f32(k, cfg.e, y, i, r);
  });
  return module_text(k);
}

std::string generate_bias_act(std::size_t config, Target target) {
  const BiasActConfig& cfg = config_at(bias_act_configs, config, "bias_act");
  Kernel k(kernel_name("bias_act", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> bias = global_ptr<U32>(k, param<U64>(k, "bias")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> n = param<U64>(k, "n");
  Reg<U64> cols = param<U64>(k, "cols");
  Reg<F32> alpha = param<F32>(k, "alpha");
  Reg<F32> beta = param<F32>(k, "beta");
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<F32> v = load_f32(k, cfg.e, x, i);
    Reg<F32> b = load_f32(k, cfg.e, bias, rem(k, i, V<U64>(cols)));
    store_f32(k, cfg.e, y, i, activation(k, cfg.act, add(k, v, V<F32>(b)), alpha, beta));
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
                     "x: f32* (contiguous; *_f16 / *_bf16: f16* / bf16*), y: as x, n: u64 elements, alpha: f32, "
                     "beta: f32 (leaky slope / elu alpha / clip low, clip high; scale: y = alpha x + beta)",
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
                           "x: f32* (contiguous [rows, cols]; *_f16 / *_bf16: f16* / bf16*), bias: [cols] as x, y: "
                           "as x, n: u64 = rows*cols, cols: u64, alpha: f32, beta: f32",
                           "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                           flat_geometry,
                           true};
  return g;
}

std::optional<Steps> plan_unary(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered) || c.inputs[0].dtype() != c.output.dtype()) return std::nullopt;
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
  const Elem e = elem_of(c.output.dtype());
  const std::size_t config =
      config_index(unary_configs, "unary", [&](const UnaryConfig& u) { return u.op == c.op && u.e == e; });
  Plan& pl = steps.add(unary_generator(), config, {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  pl.args.add(alpha);
  pl.args.add(beta);
  return steps;
}

std::optional<Steps> plan_bias_act(const OpCall& c, int, const Resources&, bool gathered) {
  const DType t = c.output.dtype();
  if (!contiguous_inputs(c, gathered) || c.inputs[0].dtype() != t || c.inputs[1].dtype() != t) return std::nullopt;
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const auto& p = std::get<BiasActParams>(c.params);
  const Elem e = elem_of(t);
  const std::size_t config =
      config_index(bias_act_configs, "bias_act", [&](const BiasActConfig& b) { return b.act == p.act && b.e == e; });
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
#define TRINE_ACT(name, flops, formula) r.ops.add(OpKind::name, OpKernel{plan_unary, nullptr, false, true});
#include "trine/ops.def"
  // clang-format on
  r.ops.add(OpKind::scale, OpKernel{plan_unary, nullptr, false, true});
  r.ops.add(OpKind::bias_act, OpKernel{plan_bias_act, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
