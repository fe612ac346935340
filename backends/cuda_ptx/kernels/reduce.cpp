// sum/mean/max/argmax over one axis of x viewed as [outer, r, inner]: "row" configs (inner == 1)
// give each row to a warp and reduce with shuffles; "col" configs (inner > 1) give each output to a
// thread, whose neighbours read neighbouring addresses. argmax carries the index beside the value.
// One configuration per storage dtype of x (f32, f16, bf16; sum/mean/max write y in it, rounded once
// from the f32 result; the sums accumulate in f32 whatever the storage).
#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

struct ReduceConfig {
  std::string_view name;
  OpKind op;           // sum, mean, max or argmax
  bool row;            // inner == 1: a warp per row
  Elem e = Elem::f32;  // how x (and y, but for argmax's indices) is stored
};
// clang-format off
#define TRINE_REDUCE(op, form, row) \
    {#op "_" form, OpKind::op, row}, {#op "_" form "_f16", OpKind::op, row, Elem::f16}, \
    {#op "_" form "_bf16", OpKind::op, row, Elem::bf16}
constexpr ReduceConfig configs[] = {
    TRINE_REDUCE(sum, "row", true),     TRINE_REDUCE(mean, "row", true),    TRINE_REDUCE(max, "row", true),
    TRINE_REDUCE(sum, "col", false),    TRINE_REDUCE(mean, "col", false),   TRINE_REDUCE(max, "col", false),
    TRINE_REDUCE(argmax, "row", true),  TRINE_REDUCE(argmax, "col", false),
};
#undef TRINE_REDUCE
// clang-format on

Reg<F32> combine(Kernel& k, OpKind op, Reg<F32> a, Reg<F32> b) {
  return op == OpKind::max ? max_nan(k, a, b) : add(k, a, V<F32>(b));
}

// argmax's order: (v, i) beats (w, j) when v > w, when v is NaN and w is not, or when they are the
// same (equal, or both NaN) and i < j. It is total, so its maximum, the first index of the largest
// value (of the first NaN where there is one), is the same whatever order the reduction combines in.
Reg<Pred> beats(Kernel& k, Reg<F32> v, Reg<U32> i, Reg<F32> w, Reg<U32> j) {
  Reg<Pred> v_nan = setp(k, Cmp::nan, v, V<F32>(v));
  Reg<Pred> w_nan = setp(k, Cmp::nan, w, V<F32>(w));
  Reg<Pred> same = or_(k, setp(k, Cmp::eq, v, V<F32>(w)), V<Pred>(and_(k, v_nan, V<Pred>(w_nan))));
  Reg<Pred> first = and_(k, same, V<Pred>(setp(k, Cmp::lt, i, V<U32>(j))));
  Reg<Pred> nan_over_number = and_(k, v_nan, V<Pred>(not_(k, w_nan)));
  return or_(k, or_(k, setp(k, Cmp::gt, v, V<F32>(w)), V<Pred>(nan_over_number)), V<Pred>(first));
}

// (best, at) = the better of itself and (v, i).
void take_better(Kernel& k, Reg<F32> best, Reg<U32> at, Reg<F32> v, Reg<U32> i) {
  Reg<Pred> better = beats(k, v, i, best, at);
  assign(k, best, V<F32>(selp<F32>(k, v, best, better)));
  assign(k, at, V<U32>(selp<U32>(k, i, at, better)));
}

std::string generate_argmax(const ReduceConfig& cfg, Target target) {
  Kernel k(kernel_name("reduce", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Ptr<Global, U32> y = param_ptr<U32>(k, "y");  // i32 indices, all below 2^31
  Reg<U64> outer = param<U64>(k, "outer");
  Reg<U32> r = param<U32>(k, "r");
  Reg<U64> inner = param<U64>(k, "inner");
  // Nothing seen yet: -inf at index r, which every element beats (-inf ones by their index).
  const float none = -std::numeric_limits<float>::infinity();
  if (cfg.row) {
    Reg<U32> tid = special(k, Special::tid_x);
    Reg<U32> lane = and_(k, tid, V<U32>(31u));
    Reg<U64> first =
        add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, shr(k, tid, 5u))));
    Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
    for_range<U64>(k, first, outer, stride, [&](Reg<U64> row) {  // warp-uniform
      Reg<U64> base = mul(k, row, V<U64>(to_u64(k, r)));
      Reg<F32> best = mov<F32>(k, none);
      Reg<U32> at = mov<U32>(k, r);
      for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) {
        take_better(k, best, at, load_f32(k, cfg.e, x, add(k, base, V<U64>(to_u64(k, j)))), j);
      });
      for (std::uint32_t offset = 16; offset >= 1; offset /= 2)
        take_better(k, best, at, shfl(k, Shfl::bfly, best, offset), shfl(k, Shfl::bfly, at, offset));
      Kernel::Guard g(k, setp(k, Cmp::eq, lane, V<U32>(0u)), false);
      st(k, element(k, y, row), V<U32>(at));
    });
  } else {
    Reg<U64> n_out = mul(k, outer, V<U64>(inner));
    grid_stride(k, n_out, [&](Reg<U64> o) {
      Reg<U64> i = rem(k, o, V<U64>(inner));
      Reg<U64> base = fma(k, sub(k, o, V<U64>(i)), V<U64>(to_u64(k, r)), V<U64>(i));  // (o/inner)*r*inner + i
      Reg<F32> best = mov<F32>(k, none);
      Reg<U32> at = mov<U32>(k, r);
      for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) {
        take_better(k, best, at, load_f32(k, cfg.e, x, fma(k, to_u64(k, j), V<U64>(inner), V<U64>(base))), j);
      });
      st(k, element(k, y, o), V<U32>(at));
    });
  }
  return module_text(k);
}

std::string generate(std::size_t config, Target target) {
  const ReduceConfig& cfg = config_at(configs, config, "reduce");
  if (cfg.op == OpKind::argmax) return generate_argmax(cfg, target);
  const OpKind op = cfg.op;
  Kernel k(kernel_name("reduce", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> outer = param<U64>(k, "outer");
  Reg<U32> r = param<U32>(k, "r");
  Reg<U64> inner = param<U64>(k, "inner");
  const float identity = op == OpKind::max ? -std::numeric_limits<float>::infinity() : 0.0f;
  Reg<F32> inv_r = rcp_rn(k, cvt<F32>(k, r, Round::rn));
  auto finish = [&](Reg<F32> acc) { return op == OpKind::mean ? mul(k, acc, V<F32>(inv_r)) : acc; };

  if (cfg.row) {
    Reg<U32> tid = special(k, Special::tid_x);
    Reg<U32> lane = and_(k, tid, V<U32>(31u));
    Reg<U32> warp = shr(k, tid, 5u);
    Reg<U64> first =
        add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, warp)));
    Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
    for_range<U64>(k, first, outer, stride, [&](Reg<U64> row) {  // warp-uniform
      Reg<U64> base = mul(k, row, V<U64>(to_u64(k, r)));
      Reg<F32> acc = mov<F32>(k, identity);
      for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) {
        Reg<F32> v = load_f32(k, cfg.e, x, add(k, base, V<U64>(to_u64(k, j))));
        assign(k, acc, V<F32>(combine(k, op, acc, v)));
      });
      Reg<F32> total = op == OpKind::max ? warp_max_nan(k, acc) : warp_sum(k, acc);
      Kernel::Guard g(k, setp(k, Cmp::eq, lane, V<U32>(0u)), false);
      store_f32(k, cfg.e, y, row, finish(total));
    });
  } else {
    Reg<U64> n_out = mul(k, outer, V<U64>(inner));
    grid_stride(k, n_out, [&](Reg<U64> o) {
      Reg<U64> i = rem(k, o, V<U64>(inner));
      Reg<U64> base = fma(k, sub(k, o, V<U64>(i)), V<U64>(to_u64(k, r)), V<U64>(i));  // (o/inner)*r*inner + i
      Reg<F32> acc = mov<F32>(k, identity);
      for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) {
        Reg<F32> v = load_f32(k, cfg.e, x, fma(k, to_u64(k, j), V<U64>(inner), V<U64>(base)));
        assign(k, acc, V<F32>(combine(k, op, acc, v)));
      });
      store_f32(k, cfg.e, y, o, finish(acc));
    });
  }
  return module_text(k);
}

Launch geometry(std::size_t config, std::span<const std::int64_t> sizes) {
  // sizes = {outer, r, inner}
  Launch l;
  l.block = {block_threads, 1, 1};
  std::int64_t outer = sizes.size() > 0 ? sizes[0] : 1, inner = sizes.size() > 2 ? sizes[2] : 1;
  bool row = config_at(configs, config, "reduce").row;
  l.grid = {row ? blocks_for(outer, warps_per_block) : blocks_for(outer * inner, block_threads, 8192), 1, 1};
  return l;
}

const Generator& reduce_generator() {
  static const Generator g{
      "reduce",
      {OpKind::sum, OpKind::mean, OpKind::max, OpKind::argmax},
      config_names(configs),
      generate,
      "x: f32* (contiguous [outer, r, inner]; *_f16 / *_bf16: f16* / bf16*), y: [outer, inner] as x (argmax: "
      "i32*), outer: u64, r: u32 "
      "(argmax: below 2^31), inner: u64 (_row configs need inner == 1); max propagates NaN; argmax gives the "
      "first index of the largest value, or of the first NaN",
      "sizes = {outer, r, inner}; block 256; _row: one warp per row, grid ceil(outer/8) (max 65535, "
      "rows beyond loop); _col: one thread per output, grid min(ceil(outer*inner/256), 8192)",
      geometry};
  return g;
}

// x viewed as [outer, r, inner] around the axis: the row form when inner == 1.
std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const DType t = c.inputs[0].dtype();
  if (c.op != OpKind::argmax && c.output.dtype() != t) return std::nullopt;
  i64 outer, r, inner;
  split(c.inputs[0].shape(), std::get<ReduceParams>(c.params).axis, outer, r, inner);
  if (r > (c.op == OpKind::argmax ? INT32_MAX : UINT32_MAX)) return std::nullopt;  // argmax's are i32
  Steps steps;
  steps.launches.push_back(reduce_plan(c.op, inner == 1, {outer, r, inner}, elem_of(t)));
  Plan& pl = steps.launches.back();
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(outer));
  pl.args.add(static_cast<std::uint32_t>(r));
  pl.args.add(static_cast<std::uint64_t>(inner));
  return steps;
}

}  // namespace

Plan reduce_plan(OpKind op, bool row, std::vector<i64> sizes, Elem e) {
  const std::size_t config = config_index(
      configs, "reduce", [&](const ReduceConfig& c) { return c.op == op && c.row == row && c.e == e; });
  return Plan{&reduce_generator(), config, std::move(sizes), {}};
}

void register_reduce(CudaOps& r) {
  r.generators.push_back(&reduce_generator());
  for (OpKind op : {OpKind::sum, OpKind::mean, OpKind::max, OpKind::argmax})
    r.ops.add(op, OpKernel{plan, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
