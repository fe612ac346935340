// softmax and log_softmax over one axis of x viewed as [outer, r, inner]: one pass keeps an online
// (max, sum of exp) pair, merged across lanes with shuffles, then a second pass writes.
// Special rows follow docs/ops.md: -inf entries give 0 (log: -inf) while one entry is finite; a row
// of all -inf, or one holding +inf or NaN, gives NaN everywhere.
#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/math.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

// e^-|a - b|, taken as 1 when a == b so that a = b = -inf does not make NaN. Within 2.07u of the
// exact value, the difference carried exactly (exp_neg_dist: IEEE operations only, the same bits
// on every GPU; the ex2.approx form it replaced could err by 5u, and the rounded difference had
// cost |a - b| u more: 65 ulps at the far tail); normal results are never flushed.
Reg<F32> rel_exp(Kernel& k, Reg<F32> a, Reg<F32> b) {
  Reg<F32> e = exp_neg_dist(k, a, b);
  return selp<F32>(k, 1.0f, e, setp(k, Cmp::eq, a, V<F32>(b)));
}

// A row's running max m and its sum of e^(x - m), kept as s = sum - off: log_softmax (off = 1) sums
// the row less one e^0 = 1 of the max, so that log(1 + s) keeps its accuracy where s is tiny
// (log(sum) of the rounded sum loses everything below ulp(1): the max's own log-probability,
// -log(1 + 1e-9) = -1e-9, would come out 0); softmax keeps the whole sum (off = 0). Empty: m = -inf,
// s = -off.
struct Online {
  Reg<F32> m, s;
  float off;
};

// Folds x into (m, s) in place with one exponential: x above the max rescales the sum to x
// (sum e^(m - x) + 1: s' = (s + off) e + 1 - off), anything else adds e^(x - m) (x = m adds 1 to
// s: log_softmax's s then counts the other maxima). Each rescale multiplies the sum by one
// exponential (1.82u): a lane's sum errs by 1.82u per increase of its running max, on top of the
// additions' roundings.
void online_add(Kernel& k, Online& o, Reg<F32> x) {
  Reg<F32> e = rel_exp(k, x, o.m);
  Reg<Pred> above = setp(k, Cmp::gt, x, V<F32>(o.m));
  Reg<F32> rescaled = o.off == 0.0f ? fma(k, o.s, V<F32>(e), V<F32>(1.0f)) : fma(k, o.s, V<F32>(e), V<F32>(e));
  Reg<F32> s_new = selp<F32>(k, rescaled, add(k, o.s, V<F32>(e)), above);
  assign(k, o.m, V<F32>(max_nan(k, o.m, x)));
  assign(k, o.s, V<F32>(s_new));
}

// sum_a e^(m_a - m) + sum_b e^(m_b - m), m the larger max: with off = 1, (s_a + 1) e + s_b for
// b above (each side's one counted once, the larger's left out); equal maxima give s_a + 1 + s_b.
Online merge(Kernel& k, Online a, Online b) {
  Reg<F32> e = rel_exp(k, a.m, b.m);
  Reg<Pred> b_above = setp(k, Cmp::gt, b.m, V<F32>(a.m));
  auto scaled_plus = [&](Reg<F32> lower, Reg<F32> upper) {
    return a.off == 0.0f ? fma(k, lower, V<F32>(e), V<F32>(upper))
                         : add(k, fma(k, lower, V<F32>(e), V<F32>(e)), V<F32>(upper));
  };
  Reg<F32> s = selp<F32>(k, scaled_plus(a.s, b.s), scaled_plus(b.s, a.s), b_above);
  return Online{max_nan(k, a.m, b.m), s, a.off};
}

// After the row is seen: a maximum of +inf, -inf (every entry -inf) or NaN makes the whole row NaN.
Reg<F32> final_sum(Kernel& k, Online o) {
  Reg<Pred> special = setp(k, Cmp::geu, abs(k, o.m), V<F32>(std::numeric_limits<float>::infinity()));
  return selp<F32>(k, std::numeric_limits<float>::quiet_NaN(), o.s, special);
}

struct SoftmaxConfig {
  std::string_view name;
  OpKind op;  // softmax or log_softmax
  bool row;   // inner == 1: a warp per row
};
constexpr SoftmaxConfig configs[] = {
    {"softmax_row", OpKind::softmax, true},
    {"log_softmax_row", OpKind::log_softmax, true},
    {"softmax_col", OpKind::softmax, false},
    {"log_softmax_col", OpKind::log_softmax, false},
};

std::string generate(std::size_t config, Target target) {
  const SoftmaxConfig& cfg = config_at(configs, config, "softmax");
  const bool is_log = cfg.op == OpKind::log_softmax;
  Kernel k(kernel_name("softmax", cfg.name), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> outer = param<U64>(k, "outer");
  Reg<U32> r = param<U32>(k, "r");
  Reg<U64> inner = param<U64>(k, "inner");
  const float neg_inf = -std::numeric_limits<float>::infinity();

  // Writes one element given the row's max and 1 / sum (log_softmax: log(1 + s), the log of the sum).
  // log_softmax: (x - m) - log_sum with x - m exact (TwoSum: hi + lo) and the subtraction's own
  // error (TwoSum again) joining lo, so that one rounding remains beyond log_sum's error; x = -inf
  // (lo NaN) gives -inf.
  auto write = [&](Reg<U64> index, Reg<F32> m, Reg<F32> scale) {
    Reg<F32> v = ld(k, element(k, x, index));
    Reg<F32> out;
    if (is_log) {
      const TwoF32 d = two_sum(k, v, neg(k, m));
      const TwoF32 r = two_sum(k, d.hi, neg(k, scale));
      Reg<F32> refined = add(k, r.hi, V<F32>(add(k, r.lo, V<F32>(d.lo))));
      Reg<Pred> finite = setp(k, Cmp::lt, abs(k, d.hi), V<F32>(std::numeric_limits<float>::infinity()));
      out = selp<F32>(k, refined, r.hi, finite);
    } else {
      out = mul(k, exp_neg_dist(k, v, m), V<F32>(scale));
    }
    st(k, element(k, y, index), V<F32>(out));
  };
  auto row_scale = [&](Reg<F32> s) { return is_log ? log1p_accurate(k, s) : rcp_rn(k, s); };
  const float off = is_log ? 1.0f : 0.0f;

  if (cfg.row) {
    Reg<U32> tid = special(k, Special::tid_x);
    Reg<U32> lane = and_(k, tid, V<U32>(31u));
    Reg<U32> warp = shr(k, tid, 5u);
    Reg<U64> first =
        add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, warp)));
    Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
    for_range<U64>(k, first, outer, stride, [&](Reg<U64> row) {
      Reg<U64> base = mul(k, row, V<U64>(to_u64(k, r)));
      Online o{mov<F32>(k, neg_inf), mov<F32>(k, 0.0f - off), off};
      for_range<U32>(k, lane, r, 32u,
                     [&](Reg<U32> j) { online_add(k, o, ld(k, element(k, x, add(k, base, V<U64>(to_u64(k, j)))))); });
      Online all = o;
      for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
        all = merge(k, all, Online{shfl(k, Shfl::bfly, all.m, offset), shfl(k, Shfl::bfly, all.s, offset), off});
      }
      Reg<F32> scale = row_scale(final_sum(k, all));
      for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) { write(add(k, base, V<U64>(to_u64(k, j))), all.m, scale); });
    });
  } else {
    Reg<U64> n_out = mul(k, outer, V<U64>(inner));
    grid_stride(k, n_out, [&](Reg<U64> o) {
      Reg<U64> i = rem(k, o, V<U64>(inner));
      Reg<U64> base = fma(k, sub(k, o, V<U64>(i)), V<U64>(to_u64(k, r)), V<U64>(i));
      Online on{mov<F32>(k, neg_inf), mov<F32>(k, 0.0f - off), off};
      for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) {
        online_add(k, on, ld(k, element(k, x, fma(k, to_u64(k, j), V<U64>(inner), V<U64>(base)))));
      });
      Reg<F32> scale = row_scale(final_sum(k, on));
      for_range<U32>(k, 0u, r, 1u,
                     [&](Reg<U32> j) { write(fma(k, to_u64(k, j), V<U64>(inner), V<U64>(base)), on.m, scale); });
    });
  }
  return module_text(k);
}

Launch geometry(std::size_t config, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  std::int64_t outer = sizes.size() > 0 ? sizes[0] : 1, inner = sizes.size() > 2 ? sizes[2] : 1;
  bool row = config_at(configs, config, "softmax").row;
  l.grid = {row ? blocks_for(outer, warps_per_block) : blocks_for(outer * inner, block_threads, 8192), 1, 1};
  return l;
}

const Generator& softmax_generator() {
  static const Generator g{
      "softmax",
      {OpKind::softmax, OpKind::log_softmax},
      config_names(configs),
      generate,
      "x: f32* (contiguous [outer, r, inner]), y: f32* (same shape), outer: u64, r: u32, inner: u64 "
      "(_row configs need inner == 1)",
      "sizes = {outer, r, inner}; block 256; _row: one warp per row, grid ceil(outer/8) (max 65535); "
      "_col: one thread per (outer, inner) line, grid min(ceil(outer*inner/256), 8192)",
      geometry};
  return g;
}

// x viewed as [outer, r, inner] around the axis: the row form when inner == 1.
std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  i64 outer, r, inner;
  split(c.inputs[0].shape(), std::get<AxisParams>(c.params).axis, outer, r, inner);
  if (r > UINT32_MAX) return std::nullopt;
  Steps steps;
  const std::size_t config =
      config_index(configs, "softmax", [&](const SoftmaxConfig& s) { return s.op == c.op && s.row == (inner == 1); });
  Plan& pl = steps.add(softmax_generator(), config, {outer, r, inner});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(outer));
  pl.args.add(static_cast<std::uint32_t>(r));
  pl.args.add(static_cast<std::uint64_t>(inner));
  return steps;
}

}  // namespace

void register_softmax(CudaOps& r) {
  r.generators.push_back(&softmax_generator());
  for (OpKind op : {OpKind::softmax, OpKind::log_softmax}) r.ops.add(op, OpKernel{plan});
}

}  // namespace trine::cuda::kernels
