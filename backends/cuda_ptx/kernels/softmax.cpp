// softmax and log_softmax over one axis of x viewed as [outer, r, inner]: one pass sums the row's
// exponentials (softmax: relative to a reference value of the row; log_softmax: an online (max, sum)
// pair), merged across lanes with shuffles, then a second pass writes.
// Special rows follow docs/ops.md: -inf entries give 0 (log: -inf) while one entry is finite; a row
// of all -inf, or one holding +inf or NaN, gives NaN everywhere.
#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/math.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

#include <optional>

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

// log_softmax's online pass: a row's running max m and its sum of e^(x - m) less one e^0 = 1 of the
// max, s = sum - 1, so that log(1 + s) keeps its accuracy where s is tiny (log(sum) of the rounded
// sum loses everything below ulp(1): the max's own log-probability, -log(1 + 1e-9) = -1e-9, would
// come out 0). Empty: m = -inf, s = -1. Its rescales round (below), but the log turns the sum's
// relative error into an absolute one, which the log-probabilities mostly dwarf: 1.26 ulps measured.
struct Online {
  Reg<F32> m, s;
};

// Folds x into (m, s) in place with one exponential: x above the max rescales the sum to x
// (sum e^(m - x) + 1: s' = (s + 1) e), anything else adds e^(x - m) (x = m adds 1 to s, which then
// counts the other maxima). Each rescale multiplies the sum by one exponential (1.82u): a lane's
// sum errs by 1.82u per increase of its running max, on top of the additions' roundings.
void online_add(Kernel& k, Online& o, Reg<F32> x) {
  Reg<F32> e = rel_exp(k, x, o.m);
  Reg<Pred> above = setp(k, Cmp::gt, x, V<F32>(o.m));
  Reg<F32> s_new = selp<F32>(k, fma(k, o.s, V<F32>(e), V<F32>(e)), add(k, o.s, V<F32>(e)), above);
  assign(k, o.m, V<F32>(max_nan(k, o.m, x)));
  assign(k, o.s, V<F32>(s_new));
}

// sum_a e^(m_a - m) + sum_b e^(m_b - m) - 1, m the larger max: (s_a + 1) e + s_b for b above (each
// side's one counted once, the larger's left out); equal maxima give s_a + 1 + s_b.
Online merge(Kernel& k, Online a, Online b) {
  Reg<F32> e = rel_exp(k, a.m, b.m);
  Reg<Pred> b_above = setp(k, Cmp::gt, b.m, V<F32>(a.m));
  auto scaled_plus = [&](Reg<F32> lower, Reg<F32> upper) {
    return add(k, fma(k, lower, V<F32>(e), V<F32>(e)), V<F32>(upper));
  };
  Reg<F32> s = selp<F32>(k, scaled_plus(a.s, b.s), scaled_plus(b.s, a.s), b_above);
  return Online{max_nan(k, a.m, b.m), s};
}

// softmax's sum, relative to a reference value R of the row (not the running max): sum_j e^(x_j - R)
// = (s + c) 2^e with e an integer, so that a term above the others so far rescales the sum by
// 2^-(its exponent's rise), which is exact, where the online pass multiplied it by e^(m - x),
// rounded (2.07u per rise of a lane's max: 6.3 ulps measured). Each term is e^(x - R) = m 2^k
// (exp_parts, x - R carried exactly: 2.07u), added as m 2^(k - e') + s 2^(e - e'), e' = max(e, k),
// with the addition's error kept in c (TwoSum): a lane sums thousands of terms (2188 in a row of
// 70001), whose roundings alone had reached 8 ulps. R is an element of the row (or the largest of
// some), so its own term, 1, keeps the sum at least 1 and a term more than 120 below R is nothing
// beside it; x - R is taken up to ref_range, where exp_parts' k stays under 512 (k ln2_hi exact). A
// row with an x further above R, or with x - R NaN (R or x infinite or NaN), raises `far` and is
// summed again with its max as R.
struct RefSum {
  Reg<F32> s, c;
  Reg<S32> e;
  Reg<U32> far;  // nonzero: some x - R past ref_range, or NaN
};
constexpr float ref_range = 354.0f;
constexpr std::int32_t ref_empty = -1000;  // an empty sum's e: every other e is above it

// e^(x - R) = p.m 2^p.e for x - R in [-120, ref_range] (clamped to that, its low part kept only
// inside it: x = -inf makes it NaN), and whether x - R is past ref_range or NaN. neg_ref: -R.
struct RefTerm {
  ExpParts p;
  Reg<Pred> far;
};
RefTerm ref_exp(Kernel& k, Reg<F32> x, Reg<F32> neg_ref) {
  const TwoF32 d = two_sum(k, x, neg_ref);
  Reg<Pred> far = setp(k, Cmp::gtu, d.hi, V<F32>(ref_range));
  Reg<Pred> inside = and_(k, setp(k, Cmp::ge, d.hi, V<F32>(-120.0f)), V<Pred>(not_(k, far)));
  Reg<F32> hi = min(k, max(k, d.hi, V<F32>(-120.0f)), V<F32>(ref_range));  // NaN: -120 (max.f32)
  return {exp_parts(k, hi, selp<F32>(k, d.lo, 0.0f, inside)), far};
}

// (s + c) 2^e + (m + m_c) 2^k in place, the larger exponent kept: the scalings are exact (a part
// more than 126 octaves below goes: 2^-127 is made as 0), s + m exactly as a TwoSum, whose error
// joins c.
void ref_add(Kernel& k, RefSum& a, Reg<F32> m, std::optional<Reg<F32>> m_c, Reg<S32> e) {
  Reg<S32> top = max(k, a.e, V<S32>(e));
  auto scale = [&](Reg<S32> from) { return pow2_f32(k, max(k, sub(k, from, V<S32>(top)), V<S32>(-127))); };
  Reg<F32> f_old = scale(a.e), f_new = scale(e);
  const TwoF32 sum = two_sum(k, mul(k, a.s, V<F32>(f_old)), mul(k, m, V<F32>(f_new)));
  Reg<F32> lo = m_c ? fma(k, *m_c, V<F32>(f_new), V<F32>(sum.lo)) : sum.lo;
  assign(k, a.c, V<F32>(fma(k, a.c, V<F32>(f_old), V<F32>(lo))));
  assign(k, a.s, V<F32>(sum.hi));
  assign(k, a.e, V<S32>(top));
}

// After the row is seen: a maximum of +inf, -inf (every entry -inf) or NaN makes the whole row NaN.
Reg<F32> final_sum(Kernel& k, Online o) {
  Reg<Pred> special = setp(k, Cmp::geu, abs(k, o.m), V<F32>(std::numeric_limits<float>::infinity()));
  return selp<F32>(k, std::numeric_limits<float>::quiet_NaN(), o.s, special);
}

struct SoftmaxConfig {
  std::string_view name;
  OpKind op;           // softmax or log_softmax
  bool row;            // inner == 1: a warp per row
  Elem e = Elem::f32;  // how x and y are stored (computed in f32, rounded once)
};
// clang-format off
#define TRINE_SOFTMAX(op, form, row) \
    {#op "_" form, OpKind::op, row}, {#op "_" form "_f16", OpKind::op, row, Elem::f16}, \
    {#op "_" form "_bf16", OpKind::op, row, Elem::bf16}
constexpr SoftmaxConfig configs[] = {
    TRINE_SOFTMAX(softmax, "row", true), TRINE_SOFTMAX(log_softmax, "row", true),
    TRINE_SOFTMAX(softmax, "col", false), TRINE_SOFTMAX(log_softmax, "col", false),
};
#undef TRINE_SOFTMAX
// clang-format on

std::string generate(std::size_t config, Target target) {
  const SoftmaxConfig& cfg = config_at(configs, config, "softmax");
  const bool is_log = cfg.op == OpKind::log_softmax;
  Kernel k(kernel_name("softmax", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> outer = param<U64>(k, "outer");
  Reg<U32> r = param<U32>(k, "r");
  Reg<U64> inner = param<U64>(k, "inner");
  const float neg_inf = -std::numeric_limits<float>::infinity();

  // log_softmax writes one element given the row's max m and log_sum = log(1 + s), the log of the
  // sum: (x - m) - log_sum with x - m exact (TwoSum: hi + lo) and the subtraction's own error
  // (TwoSum again) joining lo, so that one rounding remains beyond log_sum's error; x = -inf (lo
  // NaN) gives -inf.
  auto write_log = [&](Reg<U64> index, Reg<F32> m, Reg<F32> log_sum) {
    Reg<F32> v = load_f32(k, cfg.e, x, index);
    const TwoF32 d = two_sum(k, v, neg(k, m));
    const TwoF32 r = two_sum(k, d.hi, neg(k, log_sum));
    Reg<F32> refined = add(k, r.hi, V<F32>(add(k, r.lo, V<F32>(d.lo))));
    Reg<Pred> finite = setp(k, Cmp::lt, abs(k, d.hi), V<F32>(std::numeric_limits<float>::infinity()));
    store_f32(k, cfg.e, y, index, selp<F32>(k, refined, r.hi, finite));
  };
  // softmax writes e^(x - R) / (s 2^e) = (m / s) 2^(k - e): e^(x - R) = m 2^k (2.07u), 1 / s
  // (rcp.rn: 1u), their product (1u), then the exact scaling (two steps: k - e may pass -126 where
  // the result is still normal; it rounds once into the subnormals, and to 0 for x - R below -120).
  auto write_softmax = [&](Reg<U64> index, Reg<F32> neg_ref, Reg<F32> inv_s, Reg<S32> e) {
    const RefTerm t = ref_exp(k, load_f32(k, cfg.e, x, index), neg_ref);
    Reg<S32> shift = max(k, sub(k, t.p.e, V<S32>(e)), V<S32>(-254));
    store_f32(k, cfg.e, y, index, scale_pow2(k, mul(k, t.p.m, V<F32>(inv_s)), shift));
  };
  // softmax's sum of one line (RefSum) with ref, a register the fallback may rewrite: each(body) calls
  // body(x) for this thread's values, combine(sum) merges the lanes' sums (rows) or does nothing
  // (columns), line_max() is the NaN-propagating max of the line. Rows with `far` set are summed
  // again with their max as R; those whose max is +-inf or NaN get a NaN sum.
  auto softmax_sum = [&](Reg<F32> ref, auto&& each, auto&& combine, auto&& line_max) {
    RefSum sum{mov<F32>(k, 0.0f), mov<F32>(k, 0.0f), mov<S32>(k, ref_empty), mov<U32>(k, 0u)};
    auto sum_terms = [&](bool watch_far) {
      Reg<F32> neg_ref = neg(k, ref);
      each([&](Reg<F32> v) {
        const RefTerm t = ref_exp(k, v, neg_ref);
        ref_add(k, sum, t.p.m, std::nullopt, t.p.e);
        if (watch_far) assign(k, sum.far, V<U32>(or_(k, sum.far, V<U32>(selp<U32>(k, 1u, 0u, t.far)))));
      });
      combine(sum);
    };
    sum_terms(true);
    Label done = k.new_label();
    bra_if(k, setp(k, Cmp::eq, sum.far, V<U32>(0u)), done);
    assign(k, ref, V<F32>(line_max()));
    assign(k, sum.s, V<F32>(0.0f));
    assign(k, sum.c, V<F32>(0.0f));
    assign(k, sum.e, V<S32>(ref_empty));
    sum_terms(false);
    Reg<Pred> special = setp(k, Cmp::geu, abs(k, ref), V<F32>(std::numeric_limits<float>::infinity()));
    assign(k, sum.s, V<F32>(selp<F32>(k, std::numeric_limits<float>::quiet_NaN(), sum.s, special)));
    place(k, done);
    return sum;  // the sum is (s + c) 2^e
  };

  if (cfg.row) {
    Reg<U32> tid = special(k, Special::tid_x);
    Reg<U32> lane = and_(k, tid, V<U32>(31u));
    Reg<U32> warp = shr(k, tid, 5u);
    Reg<U64> first =
        add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, warp)));
    Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
    for_range<U64>(k, first, outer, stride, [&](Reg<U64> row) {
      Reg<U64> base = mul(k, row, V<U64>(to_u64(k, r)));
      auto at = [&](Reg<U32> j) { return add(k, base, V<U64>(to_u64(k, j))); };
      auto each = [&](auto&& body) {
        for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) { body(load_f32(k, cfg.e, x, at(j))); });
      };
      if (is_log) {
        Online o{mov<F32>(k, neg_inf), mov<F32>(k, -1.0f)};
        each([&](Reg<F32> v) { online_add(k, o, v); });
        Online all = o;
        for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
          all = merge(k, all, Online{shfl(k, Shfl::bfly, all.m, offset), shfl(k, Shfl::bfly, all.s, offset)});
        }
        Reg<F32> log_sum = log1p_accurate(k, final_sum(k, all));
        for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) { write_log(at(j), all.m, log_sum); });
        return;
      }
      // R: the largest of the row's first 32 values (one a lane, none past r), so that only a row
      // whose max is 354 above it, or that holds inf or NaN, takes the fallback
      Reg<F32> head = mov<F32>(k, neg_inf);
      for_range<U32>(k, lane, min(k, r, V<U32>(32u)), 32u,
                     [&](Reg<U32> j) { assign(k, head, V<F32>(load_f32(k, cfg.e, x, at(j)))); });
      Reg<F32> ref = warp_max_nan(k, head);
      auto combine = [&](RefSum& sum) {
        for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
          Reg<F32> s = shfl(k, Shfl::bfly, sum.s, offset);
          Reg<F32> c = shfl(k, Shfl::bfly, sum.c, offset);
          Reg<S32> e = shfl(k, Shfl::bfly, sum.e, offset);
          Reg<U32> far = shfl(k, Shfl::bfly, sum.far, offset);
          ref_add(k, sum, s, c, e);
          assign(k, sum.far, V<U32>(or_(k, sum.far, V<U32>(far))));
        }
      };
      auto line_max = [&] {
        Reg<F32> m = mov<F32>(k, neg_inf);
        each([&](Reg<F32> v) { assign(k, m, V<F32>(max_nan(k, m, v))); });
        return warp_max_nan(k, m);
      };
      const RefSum sum = softmax_sum(ref, each, combine, line_max);
      Reg<F32> inv_s = rcp_rn(k, add(k, sum.s, V<F32>(sum.c)));
      Reg<F32> neg_ref = neg(k, ref);
      for_range<U32>(k, lane, r, 32u, [&](Reg<U32> j) { write_softmax(at(j), neg_ref, inv_s, sum.e); });
    });
  } else {
    Reg<U64> n_out = mul(k, outer, V<U64>(inner));
    grid_stride(k, n_out, [&](Reg<U64> o) {
      Reg<U64> i = rem(k, o, V<U64>(inner));
      Reg<U64> base = fma(k, sub(k, o, V<U64>(i)), V<U64>(to_u64(k, r)), V<U64>(i));
      auto at = [&](Reg<U32> j) { return fma(k, to_u64(k, j), V<U64>(inner), V<U64>(base)); };
      auto each = [&](auto&& body) {
        for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) { body(load_f32(k, cfg.e, x, at(j))); });
      };
      if (is_log) {
        Online on{mov<F32>(k, neg_inf), mov<F32>(k, -1.0f)};
        each([&](Reg<F32> v) { online_add(k, on, v); });
        Reg<F32> log_sum = log1p_accurate(k, final_sum(k, on));
        for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) { write_log(at(j), on.m, log_sum); });
        return;
      }
      // R: the line's first value (none when r = 0)
      Reg<F32> ref = mov<F32>(k, neg_inf);
      for_range<U32>(k, 0u, min(k, r, V<U32>(1u)), 1u,
                     [&](Reg<U32> j) { assign(k, ref, V<F32>(load_f32(k, cfg.e, x, at(j)))); });
      auto line_max = [&] {
        Reg<F32> m = mov<F32>(k, neg_inf);
        each([&](Reg<F32> v) { assign(k, m, V<F32>(max_nan(k, m, v))); });
        return m;
      };
      auto one_thread = [](RefSum&) {};  // nothing to merge
      const RefSum sum = softmax_sum(ref, each, one_thread, line_max);
      Reg<F32> inv_s = rcp_rn(k, add(k, sum.s, V<F32>(sum.c)));
      Reg<F32> neg_ref = neg(k, ref);
      for_range<U32>(k, 0u, r, 1u, [&](Reg<U32> j) { write_softmax(at(j), neg_ref, inv_s, sum.e); });
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
      "x: f32* (contiguous [outer, r, inner]; *_f16 / *_bf16: f16* / bf16*), y: as x (same shape), outer: u64, "
      "r: u32, inner: u64 "
      "(_row configs need inner == 1)",
      "sizes = {outer, r, inner}; block 256; _row: one warp per row, grid ceil(outer/8) (max 65535); "
      "_col: one thread per (outer, inner) line, grid min(ceil(outer*inner/256), 8192)",
      geometry};
  return g;
}

// x viewed as [outer, r, inner] around the axis: the row form when inner == 1.
std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered) || c.inputs[0].dtype() != c.output.dtype()) return std::nullopt;
  i64 outer, r, inner;
  split(c.inputs[0].shape(), std::get<AxisParams>(c.params).axis, outer, r, inner);
  if (r > UINT32_MAX) return std::nullopt;
  Steps steps;
  const Elem e = elem_of(c.output.dtype());
  const std::size_t config = config_index(configs, "softmax", [&](const SoftmaxConfig& s) {
    return s.op == c.op && s.row == (inner == 1) && s.e == e;
  });
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
  for (OpKind op : {OpKind::softmax, OpKind::log_softmax}) r.ops.add(op, OpKernel{plan, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
