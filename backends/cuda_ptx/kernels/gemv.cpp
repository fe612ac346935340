// dot and gemv. dot: each CTA writes one partial sum (a fixed order, so results repeat exactly);
// reduce.sum_row over the partials finishes it. gemv: one warp per row of A (vector loads in the
// _v4 config), or, transposed, one thread per output column so a warp reads one row segment. A and x
// each f32, f16 or bf16 (16-bit weights against an f32 or 16-bit vector: a decode step), summed in
// f32; y in their shared dtype, or f32 when they differ, rounded once.
#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;
constexpr std::int64_t dot_max_blocks = 1024;

// The CTA's sum of v, left in lane 0 of warp 0 (other threads hold partial values).
Reg<F32> block_sum(Kernel& k, Reg<F32> v, Reg<U32> lane, Reg<U32> warp) {
  Ptr<Shared, F32> partial = shared_array<F32>(k, "warp_sums", warps_per_block);
  Reg<F32> w = warp_sum(k, v);
  {
    Kernel::Guard g(k, setp(k, Cmp::eq, lane, V<U32>(0u)), false);
    st(k, element(k, partial, warp), V<F32>(w));
  }
  bar_sync(k);
  Reg<F32> t = mov<F32>(k, 0.0f);
  {
    Kernel::Guard g(k, setp(k, Cmp::lt, lane, V<U32>(warps_per_block)), false);
    ld_to(k, t, element(k, partial, lane));
  }
  return warp_sum(k, t);
}

struct DotConfig {
  std::string_view name;
};
constexpr DotConfig dot_configs[] = {{"partial"}};

struct GemvConfig {
  std::string_view name;
  bool transposed;      // A is [k, m]: y = A^T x, a thread per output
  bool vec4;            // four columns per lane per step (a, x 16-byte aligned, lda % 4 == 0)
  Elem a = Elem::f32;   // how A is stored
  Elem x = Elem::f32;   // how x is stored (y: as both when they agree, else f32)
};
// n_v4 ships (ptxas compiles it for every target) but no plan picks it yet.
// clang-format off
#define TRINE_GEMV_DTYPES(form, t) \
    {form "_f16_f16", t, false, Elem::f16, Elem::f16},   {form "_bf16_bf16", t, false, Elem::bf16, Elem::bf16}, \
    {form "_f16_f32", t, false, Elem::f16, Elem::f32},   {form "_bf16_f32", t, false, Elem::bf16, Elem::f32}, \
    {form "_f32_f16", t, false, Elem::f32, Elem::f16},   {form "_f32_bf16", t, false, Elem::f32, Elem::bf16}, \
    {form "_f16_bf16", t, false, Elem::f16, Elem::bf16}, {form "_bf16_f16", t, false, Elem::bf16, Elem::f16}
constexpr GemvConfig gemv_configs[] = {
    {"n", false, false}, {"n_v4", false, true}, {"t", true, false},
    TRINE_GEMV_DTYPES("n", false), TRINE_GEMV_DTYPES("t", true),
};
#undef TRINE_GEMV_DTYPES
// clang-format on

Elem gemv_out(const GemvConfig& cfg) { return cfg.a == cfg.x ? cfg.a : Elem::f32; }

std::string generate_dot(std::size_t config, Target target) {
  const DotConfig& cfg = config_at(dot_configs, config, "dot");
  Kernel k(kernel_name("dot", cfg.name), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Ptr<Global, F32> partial = param_ptr<F32>(k, "partial");
  Reg<U64> n = param<U64>(k, "n");
  Reg<F32> acc = mov<F32>(k, 0.0f);
  grid_stride(k, n, [&](Reg<U64> i) {
    assign(k, acc, V<F32>(fma(k, ld(k, element(k, x, i)), V<F32>(ld(k, element(k, y, i))), V<F32>(acc))));
  });
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<F32> total = block_sum(k, acc, and_(k, tid, V<U32>(31u)), shr(k, tid, 5u));
  Kernel::Guard g(k, setp(k, Cmp::eq, tid, V<U32>(0u)), false);
  st(k, element(k, partial, special(k, Special::ctaid_x)), V<F32>(total));
  return module_text(k);
}

std::string generate_gemv(std::size_t config, Target target) {
  const GemvConfig& cfg = config_at(gemv_configs, config, "gemv");
  Kernel k(kernel_name("gemv", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> a_base = global_ptr<U32>(k, param<U64>(k, "a")).base;
  Reg<U64> x_base = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y_base = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Ptr<Global, F32> a{a_base, 0}, x{x_base, 0};
  Reg<U64> m = param<U64>(k, "m");
  Reg<U32> kk = param<U32>(k, "k");
  Reg<U64> lda = param<U64>(k, "lda");
  const Elem out = gemv_out(cfg);
  if (cfg.transposed) {
    // y[col] = sum_r A[r*lda + col] x[r]: neighbouring threads read neighbouring columns.
    grid_stride(k, m, [&](Reg<U64> col) {
      Reg<F32> acc = mov<F32>(k, 0.0f);
      for_range<U32>(k, 0u, kk, 1u, [&](Reg<U32> r) {
        Reg<F32> av = load_f32(k, cfg.a, a_base, fma(k, to_u64(k, r), V<U64>(lda), V<U64>(col)));
        assign(k, acc, V<F32>(fma(k, av, V<F32>(load_f32(k, cfg.x, x_base, to_u64(k, r))), V<F32>(acc))));
      });
      store_f32(k, out, y_base, col, acc);
    });
    return module_text(k);
  }
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U32> warp = shr(k, tid, 5u);
  Reg<U64> first = add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, warp)));
  Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
  for_range<U64>(k, first, m, stride, [&](Reg<U64> row) {
    Reg<U64> row_start = mul(k, row, V<U64>(lda));
    Ptr<Global, F32> arow = element(k, a, row_start);
    Reg<F32> acc = mov<F32>(k, 0.0f);
    Reg<U32> tail_start = mov<U32>(k, 0u);
    if (cfg.vec4) {
      // Four columns per lane per step; needs a, x 16-byte aligned and lda % 4 == 0.
      Reg<U32> k4 = and_(k, kk, V<U32>(~3u));
      for_range<U32>(k, shl(k, lane, 2u), k4, 128u, [&](Reg<U32> c) {
        auto av = ld_v<4>(k, element(k, arow, c));
        auto xv = ld_v<4>(k, element(k, x, c));
        for (int e = 0; e < 4; ++e) assign(k, acc, V<F32>(fma(k, av[e], V<F32>(xv[e]), V<F32>(acc))));
      });
      assign(k, tail_start, V<U32>(k4));
    }
    for_range<U32>(k, add(k, tail_start, V<U32>(lane)), kk, 32u, [&](Reg<U32> c) {
      Reg<F32> av = load_f32(k, cfg.a, a_base, add(k, row_start, V<U64>(to_u64(k, c))));
      assign(k, acc, V<F32>(fma(k, av, V<F32>(load_f32(k, cfg.x, x_base, to_u64(k, c))), V<F32>(acc))));
    });
    Reg<F32> total = warp_sum(k, acc);
    Kernel::Guard g(k, setp(k, Cmp::eq, lane, V<U32>(0u)), false);
    store_f32(k, out, y_base, row, total);
  });
  return module_text(k);
}

Launch dot_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads * 8, dot_max_blocks), 1, 1};
  return l;
}

Launch gemv_geometry(std::size_t config, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  std::int64_t m = sizes.empty() ? 1 : sizes[0];
  bool transposed = config_at(gemv_configs, config, "gemv").transposed;
  l.grid = {transposed ? blocks_for(m, block_threads, 8192) : blocks_for(m, warps_per_block), 1, 1};
  return l;
}

const Generator& dot_generator() {
  static const Generator g{"dot",
                           {OpKind::dot},
                           config_names(dot_configs),
                           generate_dot,
                           "x: f32*, y: f32*, partial: f32* [grid.x], n: u64; then reduce.sum_row with outer 1, "
                           "r = grid.x, inner 1 sums the partials into the rank-0 result",
                           "sizes = {n}; block 256; grid min(ceil(n/2048), 1024)",
                           dot_geometry};
  return g;
}

const Generator& gemv_generator() {
  static const Generator g{"gemv",
                           {OpKind::gemv},
                           config_names(gemv_configs),
                           generate_gemv,
                           "a: f32*, x: f32*, y: f32* [m] (_<a>_<x>: A and x stored so, y in their dtype when they "
                           "agree, else f32), m: u64 outputs, k: u32 reduced length, lda: u64 (elements); "
                           "n: A is [m, k] row stride lda; n_v4: same, a and x 16-byte aligned and lda % 4 == 0; "
                           "t: A is [k, m] row stride lda, y = A^T x",
                           "sizes = {m, k}; block 256; n/n_v4: one warp per row, grid ceil(m/8) (max 65535); "
                           "t: one thread per output, grid min(ceil(m/256), 8192)",
                           gemv_geometry};
  return g;
}

std::optional<Steps> plan_gemv(const OpCall& c, int, const Resources&, bool gathered) {
  if (dtype_is_quantized(c.inputs[0].dtype())) return plan_quantized(c, gathered);
  const auto& p = std::get<GemvParams>(c.params);
  const Tensor& a = c.inputs[0];
  const i64 m = c.output.numel(), k = c.inputs[1].numel();
  // y is written in A's and x's dtype when they agree, else f32: another out_dtype goes through an
  // f32 temporary and a cast (widen.hpp).
  if (c.output.dtype() != dtype_promote(a.dtype(), c.inputs[1].dtype())) return std::nullopt;
  Steps steps;
  if (m == 0) return steps;
  if (k == 0) {  // an empty sum: y is zeros, as the op defines it
    steps.zero_output = true;
    return steps;
  }
  if (!contiguous_inputs(c, gathered) || k > UINT32_MAX) return std::nullopt;
  const Elem ea = elem_of(a.dtype()), ex = elem_of(c.inputs[1].dtype());
  const std::size_t config = config_index(gemv_configs, "gemv", [&](const GemvConfig& g) {
    return g.transposed == p.trans && !g.vec4 && g.a == ea && g.x == ex;
  });
  Plan& pl = steps.add(gemv_generator(), config, {m, k});
  pl.args.add_ptr(a);
  pl.args.add_ptr(c.inputs[1]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(m));
  pl.args.add(static_cast<std::uint32_t>(k));
  pl.args.add(static_cast<std::uint64_t>(a.dim(1)));
  return steps;
}

// Each CTA writes one partial sum; reduce.sum_row adds them in a fixed order.
std::optional<Steps> plan_dot(const OpCall& c, int, const Resources& res, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const i64 n = c.inputs[0].numel();
  Steps steps;
  if (n == 0) {
    steps.zero_output = true;
    return steps;
  }
  const std::uint32_t blocks = dot_geometry(0, std::vector<i64>{n}).grid[0];
  // One buffer for the largest grid serves every dot: launches on the device's stream run in order.
  const CUdeviceptr partials = res.kernels ? res.kernels->dot_partials(*res.api, dot_max_blocks) : 0;
  {
    Plan& pl = steps.add(dot_generator(), 0, {n});
    pl.args.add_ptr(c.inputs[0]);
    pl.args.add_ptr(c.inputs[1]);
    pl.args.add(partials);
    pl.args.add(static_cast<std::uint64_t>(n));
  }
  steps.launches.push_back(reduce_plan(OpKind::sum, true, {1, blocks, 1}));
  Plan& sum = steps.launches.back();
  sum.args.add(partials);
  sum.args.add_ptr(c.output);
  sum.args.add(std::uint64_t{1});
  sum.args.add(blocks);
  sum.args.add(std::uint64_t{1});
  return steps;
}

}  // namespace

void register_gemv(CudaOps& r) {
  r.generators.push_back(&dot_generator());
  r.generators.push_back(&gemv_generator());
  r.ops.add(OpKind::gemv, OpKernel{plan_gemv, nullptr, false, true});
  r.ops.add(OpKind::dot, OpKernel{plan_dot});
}

}  // namespace trine::cuda::kernels
