// layernorm and rmsnorm over the last axis: one warp per row. layernorm takes the mean first and
// then the mean of squared deviations (two passes: no cancellation from E[x^2] - E[x]^2).
// gamma and beta are optional: a null pointer means 1 and 0. A row whose squares leave the f32
// range (|x| above ~1.8e19, a sum of squares above FLT_MAX, squares that underflow) is redone
// scaled by a power of two, as the cpu kernels do, so the result is right wherever it is
// representable. One configuration per storage dtype (f32, f16, bf16: x, gamma, beta and y all in
// it; the statistics in f32, the result rounded once); a call mixing dtypes runs between casts.
#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

#include <cfloat>

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

struct NormConfig {
  std::string_view name;
  OpKind op;  // layernorm or rmsnorm
  Elem e;     // how x, gamma, beta and y are stored
};
constexpr NormConfig configs[] = {
    {"layernorm", OpKind::layernorm, Elem::f32}, {"layernorm_f16", OpKind::layernorm, Elem::f16},
    {"layernorm_bf16", OpKind::layernorm, Elem::bf16}, {"rmsnorm", OpKind::rmsnorm, Elem::f32},
    {"rmsnorm_f16", OpKind::rmsnorm, Elem::f16}, {"rmsnorm_bf16", OpKind::rmsnorm, Elem::bf16},
};

std::string generate(std::size_t config, Target target) {
  const NormConfig& cfg = config_at(configs, config, "norm");
  bool layer = cfg.op == OpKind::layernorm;
  Kernel k(kernel_name("norm", cfg.name), target);
  // On sm_90 ptxas budgets layernorm 32 registers for .maxntid 256 (full occupancy) and spills
  // 4-12 bytes with the rescaling path below; 6 blocks an SM (75%) lets it take 40 and spill
  // nothing. The other targets fit in 32-40 registers without the hint (tests/ptx_tests.cpp
  // prints each target's registers and occupancy).
  k.set_max_threads(block_threads, layer && target == Target::sm_90 ? 6 : 0);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> gamma_raw = param<U64>(k, "gamma");
  Reg<U64> beta_raw = param<U64>(k, "beta");
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> rows = param<U64>(k, "rows");
  Reg<U32> n = param<U32>(k, "n");
  Reg<F32> eps = param<F32>(k, "eps");
  Reg<Pred> has_gamma = setp(k, Cmp::ne, gamma_raw, V<U64>(0u));
  Reg<Pred> has_beta = setp(k, Cmp::ne, beta_raw, V<U64>(0u));
  Reg<U64> gamma = global_ptr<U32>(k, gamma_raw).base, beta = global_ptr<U32>(k, beta_raw).base;
  Reg<F32> inv_n = rcp_rn(k, cvt<F32>(k, n, Round::rn));

  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U32> warp = shr(k, tid, 5u);
  Reg<U64> first = add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, warp)));
  Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
  for_range<U64>(k, first, rows, stride, [&](Reg<U64> row) {
    Reg<U64> base = mul(k, row, V<U64>(to_u64(k, n)));
    auto at = [&](Reg<U32> j) { return add(k, base, V<U64>(to_u64(k, j))); };
    // x[j] times `pre`, a power of two (exact), or x[j] itself.
    auto load = [&](Reg<U32> j, std::optional<Reg<F32>> pre) {
      Reg<F32> v = load_f32(k, cfg.e, x, at(j));
      return pre ? mul(k, v, V<F32>(*pre)) : v;
    };
    // The row's mean (0 for rmsnorm) and mean square deviation, of x * pre.
    auto moments = [&](std::optional<Reg<F32>> pre) {
      Reg<F32> mean = mov<F32>(k, 0.0f);
      if (layer) {
        Reg<F32> acc = mov<F32>(k, 0.0f);
        for_range<U32>(k, lane, n, 32u, [&](Reg<U32> j) { assign(k, acc, V<F32>(add(k, acc, V<F32>(load(j, pre))))); });
        mean = mul(k, warp_sum(k, acc), V<F32>(inv_n));
      }
      Reg<F32> sq = mov<F32>(k, 0.0f);
      for_range<U32>(k, lane, n, 32u, [&](Reg<U32> j) {
        Reg<F32> d = sub(k, load(j, pre), V<F32>(mean));
        assign(k, sq, V<F32>(fma(k, d, V<F32>(d), V<F32>(sq))));
      });
      return std::pair{mean, mul(k, warp_sum(k, sq), V<F32>(inv_n))};
    };
    auto [mean, var] = moments(std::nullopt);
    Reg<F32> pre = mov<F32>(k, 1.0f);
    Reg<F32> inv_std = rcp_rn(k, sqrt_rn(k, add(k, var, V<F32>(eps))));

    // Out of range (the warp's sums are the same in every lane: the branches are uniform): a
    // variance that overflowed (inf or NaN) or whose squares may have underflowed (below 2^-100;
    // a constant row too, which gives 0 either way). The row is redone times s = 2^-e, e the
    // exponent of max|x| (s max|x| in [0.5, 1), s a normal float, so the products are exact), and
    // 1/sqrt(var + eps) is 1/sqrt(var_s + eps s^2). A row of zeros, infinities or NaN keeps the
    // plain result, which is right.
    Label done = k.new_label();
    Reg<Pred> in_range =
        and_(k, setp(k, Cmp::ge, var, V<F32>(0x1p-100f)), V<Pred>(setp(k, Cmp::le, var, V<F32>(FLT_MAX))));
    bra_if(k, in_range, done);
    Reg<F32> amax = mov<F32>(k, 0.0f);
    for_range<U32>(k, lane, n, 32u,
                   [&](Reg<U32> j) { assign(k, amax, V<F32>(max_nan(k, amax, abs(k, load(j, std::nullopt))))); });
    amax = warp_max_nan(k, amax);
    Reg<Pred> scalable =
        and_(k, setp(k, Cmp::gt, amax, V<F32>(0.0f)), V<Pred>(setp(k, Cmp::le, amax, V<F32>(FLT_MAX))));
    bra_if(k, scalable, done, true);
    // max|x| = f 2^e, f in [0.5, 1): e = biased exponent - 126 (a subnormal max: 2^126, the largest
    // power of two that keeps s max|x| within [2^-23, 1)); s's biased exponent 253 - biased, at least 1
    // (max|x| >= 2^126: s = 2^-126, s max|x| in [1, 4)).
    Reg<U32> biased = shr(k, bitcast<U32>(k, amax), 23u);
    Reg<U32> s_biased = sub(k, mov<U32>(k, 253u), V<U32>(min(k, biased, V<U32>(252u))));
    Reg<F32> s = bitcast<F32>(k, shl(k, s_biased, 23u));
    auto [smean, svar] = moments(s);
    // eps s^2: two exact power-of-two products while normal. Past FLT_MAX (tiny rows, s up to 2^126)
    // var_s (< 16) no longer counts: 1/sqrt(eps s^2) = (1/s) / sqrt(eps), 1/s exact. Below 2^-126
    // (huge rows) it no longer counts against var_s, or the row is constant and its deviations 0;
    // the factor is held at FLT_MAX so that 0 times it stays 0.
    Reg<F32> eps_s2 = mul(k, mul(k, eps, V<F32>(s)), V<F32>(s));
    // One root and one division for both cases: the radicand is var_s + eps s^2 or eps, the
    // numerator 1 or 1/s = 2^(127 - (s_biased - 127)), made from its bits (exact).
    Reg<Pred> fits = setp(k, Cmp::le, eps_s2, V<F32>(FLT_MAX));
    Reg<F32> radicand = selp<F32>(k, add(k, svar, V<F32>(eps_s2)), V<F32>(eps), fits);
    Reg<F32> inv_s = bitcast<F32>(k, shl(k, sub(k, mov<U32>(k, 254u), V<U32>(s_biased)), 23u));
    Reg<F32> rstd = div(k, selp<F32>(k, mov<F32>(k, 1.0f), V<F32>(inv_s), fits), V<F32>(sqrt_rn(k, radicand)));
    assign(k, pre, V<F32>(s));
    assign(k, mean, V<F32>(smean));
    assign(k, inv_std, V<F32>(min(k, rstd, V<F32>(FLT_MAX))));
    place(k, done);

    for_range<U32>(k, lane, n, 32u, [&](Reg<U32> j) {
      Reg<F32> v = mul(k, sub(k, load(j, pre), V<F32>(mean)), V<F32>(inv_std));
      Reg<F32> g = mov<F32>(k, 1.0f);
      {
        Kernel::Guard guard(k, has_gamma, false);
        assign(k, g, V<F32>(load_f32(k, cfg.e, gamma, to_u64(k, j))));
      }
      Reg<F32> b = mov<F32>(k, 0.0f);
      if (layer) {
        Kernel::Guard guard(k, has_beta, false);
        assign(k, b, V<F32>(load_f32(k, cfg.e, beta, to_u64(k, j))));
      }
      store_f32(k, cfg.e, y, at(j), fma(k, v, V<F32>(g), V<F32>(b)));
    });
  });
  return module_text(k);
}

Launch geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], warps_per_block), 1, 1};
  return l;
}

const Generator& norm_generator() {
  static const Generator g{
      "norm",
      {OpKind::layernorm, OpKind::rmsnorm},
      config_names(configs),
      generate,
      "x: f32* (contiguous [rows, n]; *_f16 / *_bf16: f16* / bf16*), gamma: [n] as x, or 0, beta: [n] as x, or 0 "
      "(rmsnorm ignores it), y: as x, rows: u64, n: u32, eps: f32",
      "sizes = {rows, n}; block 256, one warp per row; grid ceil(rows/8) (max 65535, rows beyond loop)",
      geometry};
  return g;
}

std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  for (const Tensor& t : c.inputs)
    if (t.defined() && t.dtype() != c.output.dtype()) return std::nullopt;  // mixed: between casts
  const i64 n = c.inputs[0].dim(-1), rows = c.output.numel() / n;
  if (n > UINT32_MAX) return std::nullopt;
  Steps steps;
  const Elem e = elem_of(c.output.dtype());
  const std::size_t config =
      config_index(configs, "norm", [&](const NormConfig& cf) { return cf.op == c.op && cf.e == e; });
  Plan& pl = steps.add(norm_generator(), config, {rows, n});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr_or_null(c, 1);
  pl.args.add_ptr_or_null(c, 2);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(rows));
  pl.args.add(static_cast<std::uint32_t>(n));
  pl.args.add(std::get<NormParams>(c.params).eps);
  return steps;
}

}  // namespace

void register_norm(CudaOps& r) {
  r.generators.push_back(&norm_generator());
  for (OpKind op : {OpKind::layernorm, OpKind::rmsnorm}) r.ops.add(op, OpKernel{plan, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
