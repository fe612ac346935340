// Attention, FlashAttention-style: the CTA's eight warps each own one query row and stream the keys
// and values through shared memory 32 at a time; lane j scores key j, an online softmax (running
// max and sum) rescales the output accumulator, and the scores never reach memory.
// Causal masking is aligned to the end (query i sees keys j <= i + lk - lq), Lq != Lk allowed; a
// sliding window keeps the last `window` of those keys. Grouped-query attention maps q head h to kv
// head h / group by index arithmetic: k and v are read where they are, never copied per q head.
// The keys that count may be read on the device (attention's `valid` input): every thread reads
// the one i32 n first, and the CTA walks keys [0, n) only, with n in place of lk; an n outside
// [valid_min, lk] stores nothing and leaves n in the index-check word (IndexCheck).
// An additive mask (attention's fifth input; mask != 0): lane j adds the mask element of its query
// row and key j0 + j to its scaled score, loaded only for a key the row sees. The q batch index
// b = outer * heads + h reads the mask rows at outer * mask_outer + h * mask_head (0: broadcast).
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/kernels/math.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int warps = 8;
constexpr int block_threads = warps * 32;
constexpr int keys_per_tile = 32;

// e^(t - m) for a score t = hi + lo (the exact product of the dot product and the scale) and a
// running max m >= hi, with t - m carried exactly: TwoSum of hi - m, its low part and lo joining
// exp_parts' reduced argument (lo and the TwoSum's part are each under an ulp of m, their sum's
// rounding under 2^-48 of it), so within exp_parts' 2.07u however far t is below m (the rounded
// difference would cost |t - m| u more: 62.6 ulps at the far tail). The argument may exceed 0 by
// lo (hi = m): e^lo, just over 1. Below -120 (hi = -inf included, where the low parts are NaN) the
// result is 0; NaN stays NaN.
Reg<F32> exp_score(Kernel& k, TwoF32 t, Reg<F32> m) {
  const TwoF32 d = two_sum(k, t.hi, neg(k, m));
  Reg<Pred> far = setp(k, Cmp::lt, d.hi, V<F32>(-120.0f));
  Reg<F32> lo = selp<F32>(k, 0.0f, add(k, d.lo, V<F32>(t.lo)), far);
  const ExpParts p = exp_parts(k, max(k, d.hi, V<F32>(-120.0f)), lo);
  return mul(k, p.m, V<F32>(pow2_f32(k, max(k, p.e, V<S32>(-127)))));
}

// D, Dv in {64, 128} exactly, or padded: any D, Dv up to 64 or 128, given as parameters, the rows
// zero-padded to that width in shared memory and registers (zeros add nothing to a score or an
// output column; padded outputs are not stored).
// e: how q, k, v and o are stored: f32, or f16 / bf16 (read as such and widened as staged, the
// output rounded once as written; the online softmax and the sums run in f32 either way). The
// 16-bit forms cover D = Dv = 64 or 128 exactly and the padded widths (D != Dv pads).
struct AttentionConfig {
  std::string_view name;
  int d, dv;  // the head dims, or with `padded` the width both are padded to
  bool padded;
  Elem e = Elem::f32;
};
constexpr AttentionConfig configs[] = {
    {"d64", 64, 64, false},
    {"d128", 128, 128, false},
    {"d64_v128", 64, 128, false},
    {"d128_v64", 128, 64, false},
    {"pad64", 64, 64, true},
    {"pad128", 128, 128, true},
    {"d64_f16", 64, 64, false, Elem::f16},
    {"d128_f16", 128, 128, false, Elem::f16},
    {"pad64_f16", 64, 64, true, Elem::f16},
    {"pad128_f16", 128, 128, true, Elem::f16},
    {"d64_bf16", 64, 64, false, Elem::bf16},
    {"d128_bf16", 128, 128, false, Elem::bf16},
    {"pad64_bf16", 64, 64, true, Elem::bf16},
    {"pad128_bf16", 128, 128, true, Elem::bf16},
};

std::string generate(std::size_t config, Target target) {
  const AttentionConfig& cfg = config_at(configs, config, "attention");
  const int d = cfg.d, dv = cfg.dv;
  const bool padded = cfg.padded;
  const int per_lane = d / 32, per_lane_out = dv / 32;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  Kernel k(kernel_name("attention", cfg.name), target);
  k.set_max_threads(block_threads, 2);
  const Elem elem = cfg.e;
  Reg<U64> q = global_ptr<F32>(k, param<U64>(k, "q")).base;
  Reg<U64> kp = global_ptr<F32>(k, param<U64>(k, "k")).base;
  Reg<U64> v = global_ptr<F32>(k, param<U64>(k, "v")).base;
  Reg<U64> o = global_ptr<F32>(k, param<U64>(k, "o")).base;
  Reg<U32> lq = param<U32>(k, "lq");
  Reg<U32> rows = param<U32>(k, "lk");  // each kv head's rows in memory
  Reg<U64> valid_addr = param<U64>(k, "valid");
  Reg<U32> valid_min = param<U32>(k, "valid_min");
  Ptr<Global, U64> check = param_ptr<U64>(k, "check");
  Reg<U32> causal = param<U32>(k, "causal");
  Reg<F32> scale = param<F32>(k, "scale");
  Reg<U32> heads = param<U32>(k, "heads");
  Reg<U32> group = param<U32>(k, "group");
  Reg<U32> window = param<U32>(k, "window");
  Reg<U64> mask_addr = param<U64>(k, "mask");
  Reg<U32> mask_outer = param<U32>(k, "mask_outer");
  Reg<U32> mask_head = param<U32>(k, "mask_head");
  // The rows' true lengths in global memory: parameters when padded, the widths otherwise.
  const Val<U32> d_true = padded ? Val<U32>(param<U32>(k, "d")) : Val<U32>(std::uint32_t(d));
  const Val<U32> dv_true = padded ? Val<U32>(param<U32>(k, "dv")) : Val<U32>(std::uint32_t(dv));

  // Keys padded to d + 1 floats a row, so lane j reading row j hits bank j.
  Ptr<Shared, F32> k_tile = shared_array<F32>(k, "k_tile", std::int64_t(keys_per_tile) * (d + 1));
  Ptr<Shared, F32> v_tile = shared_array<F32>(k, "v_tile", std::int64_t(keys_per_tile) * dv);
  Ptr<Shared, F32> q_rows = shared_array<F32>(k, "q_rows", std::int64_t(warps) * d);
  Ptr<Shared, F32> p_rows = shared_array<F32>(k, "p_rows", std::int64_t(warps) * keys_per_tile);

  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U32> warp = shr(k, tid, 5u);
  Reg<U32> block_first = mul(k, special(k, Special::ctaid_x), V<U32>(std::uint32_t(warps)));
  Reg<U32> qi = add(k, block_first, V<U32>(warp));
  Reg<U32> batch = special(k, Special::ctaid_y);

  // The keys that count, lk: all rows, or the valid input's n when given (valid != 0), read by
  // every thread (one word, the same for all: the branch below is uniform, before any barrier).
  // A bad n: the first CTA's thread 0 reports it, and nothing is stored.
  Label done = k.new_label();
  Reg<S32> n = bitcast<S32>(k, rows);
  {
    Ptr<Global, S32> count = global_ptr<S32>(k, valid_addr);
    Kernel::Guard g(k, setp(k, Cmp::ne, valid_addr, V<U64>(std::uint64_t{0})), false);
    ld_to(k, n, count);
  }
  Reg<Pred> n_ok = and_(k, setp(k, Cmp::ge, n, V<S32>(bitcast<S32>(k, valid_min))),
                        V<Pred>(setp(k, Cmp::le, bitcast<U32>(k, n), V<U32>(rows))));
  {
    Reg<U32> cta = or_(k, or_(k, special(k, Special::ctaid_x), V<U32>(batch)), V<U32>(tid));
    Reg<Pred> report = and_(k, not_(k, n_ok), V<Pred>(setp(k, Cmp::eq, cta, V<U32>(0u))));
    Kernel::Guard g(k, report, false);
    red(k, Reduction::min, check, V<U64>(to_u64(k, bitcast<U32>(k, n))));
  }
  bra_if(k, n_ok, done, true);
  Reg<U32> lk = bitcast<U32>(k, n);
  Reg<Pred> valid_query = setp(k, Cmp::lt, qi, V<U32>(lq));
  Reg<U32> shift = sub(k, lk, V<U32>(lq));  // causal offset (lq <= lk when causal)
  Reg<Pred> is_causal = setp(k, Cmp::ne, causal, V<U32>(0u));

  // Keys any query of this CTA can see: all, or up to its last query's diagonal.
  Reg<U32> last_query = min(k, add(k, block_first, V<U32>(std::uint32_t(warps - 1))), V<U32>(sub(k, lq, V<U32>(1u))));
  Reg<U32> causal_end = min(k, add(k, add(k, last_query, V<U32>(shift)), V<U32>(1u)), V<U32>(lk));
  Reg<U32> kv_end = selp<U32>(k, causal_end, lk, is_causal);
  // A window: query row qi sees keys from max(diagonal + 1, window) - window (the host passes 0, no
  // window, unless causal); the CTA's keys start at its first query's.
  Reg<Pred> has_window = setp(k, Cmp::ne, window, V<U32>(0u));
  auto window_first = [&](Reg<U32> diag) {
    Reg<U32> lo = sub(k, max(k, add(k, diag, V<U32>(1u)), V<U32>(window)), V<U32>(window));
    return selp<U32>(k, lo, 0u, has_window);
  };
  Reg<U32> kv_begin = window_first(add(k, block_first, V<U32>(shift)));
  // Grouped-query attention: q batch index batch = outer * heads + h reads kv index
  // outer * (heads / group) + h / group.
  Reg<U32> kv_batch = fma(k, div(k, batch, V<U32>(heads)), V<U32>(div(k, heads, V<U32>(group))),
                          V<U32>(div(k, rem(k, batch, V<U32>(heads)), V<U32>(group))));

  // This warp's query row as given: the scale multiplies each score exactly (two_prod) below, where
  // scaling q (or scaling into log2 units) would round every score by up to |s| u.
  Reg<U64> q_base = mul_wide(k, fma(k, batch, V<U32>(lq), V<U32>(qi)), d_true);
  Ptr<Shared, F32> my_q = element(k, q_rows, mul(k, warp, V<U32>(std::uint32_t(d))));
  for (int t = 0; t < per_lane; ++t) {
    Reg<U32> col = add(k, lane, V<U32>(std::uint32_t(32 * t)));
    Reg<Pred> load = padded ? and_(k, valid_query, V<Pred>(setp(k, Cmp::lt, col, d_true))) : valid_query;
    Reg<F32> val = load_f32_if(k, elem, q, add(k, q_base, V<U64>(to_u64(k, col))), load);
    st(k, element(k, my_q, col), V<F32>(val));
  }

  Reg<F32> m = mov<F32>(k, neg_inf), l = mov<F32>(k, 0.0f);
  std::vector<Reg<F32>> acc(per_lane_out);
  for (auto& a : acc) a = mov<F32>(k, 0.0f);
  Reg<U64> k_base = mul_wide(k, mul(k, kv_batch, V<U32>(rows)), d_true);
  Reg<U64> v_base = mul_wide(k, mul(k, kv_batch, V<U32>(rows)), dv_true);
  Ptr<Shared, F32> my_p = element(k, p_rows, mul(k, warp, V<U32>(std::uint32_t(keys_per_tile))));
  // This warp's query sees keys [first_key, key_end): two registers through the loop, as the
  // diagonal and the causal flag were before the window.
  Reg<U32> diagonal = add(k, qi, V<U32>(shift));
  Reg<U32> first_key = window_first(diagonal);
  Reg<U32> key_end = selp<U32>(k, min(k, add(k, diagonal, V<U32>(1u)), V<U32>(lk)), lk, is_causal);
  // This warp's mask row: element offset (batch / heads) * mask_outer + (batch % heads) * mask_head
  // + qi * rows, in bytes from mask_addr; read only with a mask and a query row inside lq.
  Reg<Pred> has_mask = and_(k, setp(k, Cmp::ne, mask_addr, V<U64>(std::uint64_t{0})), V<Pred>(valid_query));
  Reg<U64> mask_row = add(k,
                          add(k, mul_wide(k, div(k, batch, V<U32>(heads)), V<U32>(mask_outer)),
                              V<U64>(mul_wide(k, rem(k, batch, V<U32>(heads)), V<U32>(mask_head)))),
                          V<U64>(mul_wide(k, qi, V<U32>(rows))));
  Ptr<Global, F32> mask_base = element(k, global_ptr<F32>(k, mask_addr), mask_row);

  for_range<U32>(k, kv_begin, kv_end, std::uint32_t(keys_per_tile), [&](Reg<U32> j0) {
    // Stage the tile's keys and values; rows past lk are zeros (and masked below).
    // Four elements per step of a loop: unrolled whole, ptxas keeps every load in flight and spills.
    // Keys land in rows padded to d + 1 floats, values in rows of dv.
    auto stage = [&](Reg<U64> src_mem, Reg<U64> base, int width, const Val<U32>& row_length,
                     Ptr<Shared, F32> tile, int pitch) {
      constexpr int unroll = 4;
      for_range<U32>(k, 0u, std::uint32_t(keys_per_tile * width / block_threads), std::uint32_t(unroll),
                     [&](Reg<U32> e0) {
                       Reg<U32> first = fma(k, e0, V<U32>(std::uint32_t(block_threads)), V<U32>(tid));
                       for (int e = 0; e < unroll; ++e) {
                         Reg<U32> idx = add(k, first, V<U32>(std::uint32_t(e * block_threads)));
                         Reg<U32> row = shr(k, idx, std::uint32_t(width == 64 ? 6 : 7));
                         Reg<U32> col = and_(k, idx, V<U32>(std::uint32_t(width - 1)));
                         Reg<U32> key = add(k, j0, V<U32>(row));
                         Reg<U64> src = add(k, base, V<U64>(mul_wide(k, key, row_length)));
                         // Address and predicate first: defined under the guard, ptxas would keep
                         // them live across the loop.
                         Reg<Pred> inside = setp(k, Cmp::lt, key, V<U32>(lk));
                         if (padded) inside = and_(k, inside, V<Pred>(setp(k, Cmp::lt, col, row_length)));
                         Reg<F32> val = load_f32_if(k, elem, src_mem, add(k, src, V<U64>(to_u64(k, col))), inside);
                         st(k, element(k, tile, fma(k, row, V<U32>(std::uint32_t(pitch)), V<U32>(col))), V<F32>(val));
                       }
                     });
    };
    stage(kp, k_base, d, d_true, k_tile, d + 1);
    stage(v, v_base, dv, dv_true, v_tile, dv);
    bar_sync(k);

    // Lane j: the score of key j0 + j.
    Ptr<Shared, F32> my_key = element(k, k_tile, mul(k, lane, V<U32>(std::uint32_t(d + 1))));
    // A loop over 16-column chunks, not a full unroll: ptxas would hoist d loads and spill.
    Reg<F32> s = mov<F32>(k, 0.0f);
    for_range<U32>(k, 0u, std::uint32_t(d), 16u, [&](Reg<U32> c0) {
      Ptr<Shared, F32> qc = element(k, my_q, c0), kc = element(k, my_key, c0);
      for (int c = 0; c < 16; c += 4) {
        auto qv = ld_v<4>(k, qc.at(c));
        for (int e = 0; e < 4; ++e) fma_to(k, s, qv[e], V<F32>(ld(k, kc.at(c + e))));
      }
    });
    Reg<U32> key = add(k, j0, V<U32>(lane));
    Reg<Pred> visible =
        and_(k, setp(k, Cmp::lt, key, V<U32>(key_end)), V<Pred>(setp(k, Cmp::ge, key, V<U32>(first_key))));
    // The scaled score as hi + lo exactly; masked keys -inf.
    TwoF32 t = two_prod(k, s, scale);
    {
      // The mask element joins the score exactly as the product did: hi + lo, the sum's rounding
      // carried into lo (exp_score zeroes a low part below -120, a -inf sum's NaN one included).
      Reg<F32> mval = mov<F32>(k, 0.0f);
      {
        Ptr<Global, F32> at = element(k, mask_base, to_u64(k, key));
        Kernel::Guard g(k, and_(k, has_mask, V<Pred>(visible)), false);
        ld_to(k, mval, at);
      }
      const TwoF32 sum = two_sum(k, t.hi, mval);
      t = TwoF32{sum.hi, add(k, sum.lo, V<F32>(t.lo))};
    }
    t.hi = selp<F32>(k, t.hi, neg_inf, visible);

    // Online softmax: -inf scores contribute 0, and an unchanged max rescales by exactly 1.
    // e^(t - max) within 2.07u (exp_score: IEEE operations only, the difference carried exactly;
    // ex2.approx errs by up to 2.5 ulp, more than attention's bound at small D and Lk), and the
    // rescale factor e^(max_old - max_new) within 2.07u the same way (exp_neg_dist, once a tile).
    Reg<F32> m_new = max_nan(k, m, warp_max_nan(k, t.hi));
    Reg<F32> p = exp_score(k, t, m_new);
    p = selp<F32>(k, 0.0f, p, setp(k, Cmp::eq, t.hi, V<F32>(neg_inf)));
    Reg<F32> factor = exp_neg_dist(k, m, m_new);
    factor = selp<F32>(k, 1.0f, factor, setp(k, Cmp::eq, m, V<F32>(m_new)));
    assign(k, l, V<F32>(fma(k, l, V<F32>(factor), V<F32>(warp_sum(k, p)))));
    assign(k, m, V<F32>(m_new));
    for (auto& a : acc) assign(k, a, V<F32>(mul(k, a, V<F32>(factor))));

    // acc[c] += sum_j p_j V[j][c], p_j shared through the warp's row of p_rows.
    st(k, element(k, my_p, lane), V<F32>(p));
    bar_warp_sync(k);
    Ptr<Shared, F32> my_v = element(k, v_tile, lane);
    for_range<U32>(k, 0u, std::uint32_t(keys_per_tile), 8u, [&](Reg<U32> j0) {
      Ptr<Shared, F32> pc = element(k, my_p, j0);
      Ptr<Shared, F32> vc = element(k, my_v, mul(k, j0, V<U32>(std::uint32_t(dv))));
      for (int j = 0; j < 8; ++j) {
        Reg<F32> pj = ld(k, pc.at(j));
        for (int t = 0; t < per_lane_out; ++t) {
          fma_to(k, acc[t], pj, V<F32>(ld(k, vc.at(std::int64_t(j) * dv + 32 * t))));
        }
      }
    });
    bar_sync(k);  // every warp is done with this tile (and with its p row) before the next
  });

  bra_if(k, valid_query, done, true);
  Reg<F32> inv_l = rcp_rn(k, l);
  Reg<U64> o_base = mul_wide(k, fma(k, batch, V<U32>(lq), V<U32>(qi)), dv_true);
  for (int t = 0; t < per_lane_out; ++t) {
    Reg<U32> col = add(k, lane, V<U32>(std::uint32_t(32 * t)));
    Reg<U64> dst = add(k, o_base, V<U64>(to_u64(k, col)));
    Reg<F32> out = mul(k, acc[t], V<F32>(inv_l));
    if (padded) {
      Kernel::Guard g(k, setp(k, Cmp::lt, col, dv_true), false);
      store_f32(k, elem, o, dst, out);
    } else {
      store_f32(k, elem, o, dst, out);
    }
  }
  place(k, done);
  return module_text(k);
}

Launch geometry(std::size_t, std::span<const std::int64_t> s) {
  // sizes = {batch, lq, lk}
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(size_at(s, 1), warps, max_grid_x), std::uint32_t(size_at(s, 0)), 1};
  return l;
}

const Generator& attention_generator() {
  static const Generator g{
      "attention",
      {OpKind::attention},
      config_names(configs),
      generate,
      "q: f32* [batch, lq, D], k: f32* [kv_batch, lk, D], v: f32* [kv_batch, lk, Dv], o: f32* [batch, lq, Dv] "
      "(contiguous; _f16, _bf16: all four stored so; d64, d128: D = Dv; d64_v128, d128_v64: D, Dv as named), lq, lk: u32 (lk: the rows of "
      "k and v), valid: s32* (the keys that count, n = *valid, in place of lk; 0: all lk), valid_min: u32 (n "
      "outside [valid_min, lk] stores nothing and leaves n in check), check: u64* (an index check; with "
      "valid), causal: u32 (0 or 1; needs lq <= lk), scale: f32 (the host resolves 0 to 1/sqrt(D)), heads, group: u32 (q batch index "
      "o * heads + h reads k, v index o * heads / group + h / group; 1, 1 without grouped-query attention), "
      "window: u32 (causal sliding window, 0: none), mask: f32* (added to the scaled scores, row qi of q batch "
      "index o * heads + h at element o * mask_outer + h * mask_head + qi * lk; 0: none), mask_outer, mask_head: "
      "u32 (0: broadcast); pad64, pad128 also d, dv: u32 (1 .. the pad)",
      "sizes = {batch, lq, lk}; block 256 (8 warps, one query row each); grid (ceil(lq/8), batch); "
      "batch <= 65535 (the plan launches once per 65535, at whole head groups with grouped-query attention)",
      geometry};
  return g;
}

// The mask's two strides (attention_mask_strides: its dims above the heads all 1 or all q's), when
// it is also indexed within u32 and each launch (split at whole multiples of the heads) starts at a
// whole head count. Else nullopt (limits says why).
using MaskForm = trine::detail::AttentionMaskStrides;
std::optional<MaskForm> mask_form(const OpCall& c) {
  const Tensor &q = c.inputs[0], &m = c.inputs[4];
  if (m.numel() > UINT32_MAX) return std::nullopt;
  const i64 heads = q.rank() >= 3 ? q.dim(-3) : 1;
  if (std::min<i64>(max_grid_yz, UINT32_MAX / std::max(q.dim(-2), c.inputs[1].dim(-2))) < heads) return std::nullopt;
  return trine::detail::attention_mask_strides(c);
}

std::optional<Steps> plan(const OpCall& c, int, const Resources& res, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const auto& p = std::get<AttentionParams>(c.params);
  const i64 d = c.inputs[0].dim(-1), dv = c.inputs[2].dim(-1), lq = c.inputs[0].dim(-2), lk = c.inputs[1].dim(-2);
  if (d > 128 || dv > 128 || lq > UINT32_MAX || lk > UINT32_MAX) return std::nullopt;
  const i64 batch = c.inputs[0].numel() / (lq * d);
  if (p.causal && lq > lk) return std::nullopt;
  // The valid input's n, read on the device, stands for lk: a bad one fails the call (IndexCheck).
  const bool valid = trine::detail::attends_valid(c);
  if (valid && lk > INT32_MAX) return std::nullopt;
  const bool masked = trine::detail::attends_masked(c);
  if (masked && !mask_form(c)) return std::nullopt;
  // q, k, v and o stored alike (f32, f16 or bf16), the mask f32: other mixes run between casts
  // (widen.hpp: the output alone when only it differs).
  const DType dt = c.inputs[0].dtype();
  for (const Tensor* t : {&c.inputs[1], &c.inputs[2], &c.output})
    if (t->dtype() != dt) return std::nullopt;
  if (masked && c.inputs[4].dtype() != DType::f32) return std::nullopt;
  const Elem elem = elem_of(dt);
  // Head dims of 64 and 128 have their own kernels; others run zero-padded to 64 or 128 (16-bit:
  // D != Dv padded too).
  const bool exact = (d == 64 || d == 128) && (dv == 64 || dv == 128) && (elem == Elem::f32 || d == dv);
  const i64 pad = std::max(d, dv) <= 64 ? 64 : 128;
  const std::size_t config = config_index(configs, "attention", [&](const AttentionConfig& e) {
    return e.e == elem && (exact ? !e.padded && e.d == d && e.dv == dv : e.padded && e.d == pad);
  });
  const i64 size = static_cast<i64>(dtype_size(dt));
  // Grouped-query attention: q head h reads kv head h / group (the op table checks the heads divide).
  const int r = c.inputs[0].rank();
  const i64 heads = r >= 3 ? c.inputs[0].dim(-3) : 1, group = r >= 3 ? heads / c.inputs[1].dim(-3) : 1;
  // A window of lk keys or more hides none (nor of n <= lk).
  const i64 window = p.causal && p.window < lk ? p.window : 0;
  Steps steps;
  if (valid) {
    const OpCall call = c;  // what the error, raised after the work, names
    steps.index_check = IndexCheck{res.kernels ? res.kernels->index_check_slot(*res.api) : 0, 0, [call](std::int64_t n) {
                                     return trine::detail::attention_valid_error(n, call);
                                   }};
  }
  // The batch is grid.y, and the kernel's row indices (batch * lq + query, batch * lk) are u32: a
  // launch per at most 65535 of it, fewer where the rows would pass 2^32, its q, k, v and o moved
  // to its first element. With grouped-query attention a launch starts at a whole head group: it
  // takes whole multiples of the heads, or (more heads than a launch takes) whole groups of one
  // outer index's heads, so its kv rows start at kv index b0 / heads * (heads / group) + b0 % heads / group.
  i64 per_launch = std::min<i64>(max_grid_yz, UINT32_MAX / std::max(lq, lk));
  if (masked) per_launch = per_launch / heads * heads;  // the kernel's mask index is from a whole head count
  if (group > 1) per_launch = per_launch >= heads ? per_launch / heads * heads : per_launch / group * group;
  if (per_launch < 1) return std::nullopt;
  for (i64 b0 = 0; b0 < batch;) {
    const i64 n = std::min({per_launch, batch - b0, group > 1 && per_launch < heads ? heads - b0 % heads : batch});
    const i64 kv0 = b0 / heads * (heads / group) + b0 % heads / group;
    Plan& pl = steps.add(attention_generator(), config, {n, lq, lk});
    for (auto [t, first, rows, width] : {std::tuple{&c.inputs[0], b0, lq, d},
                                         {&c.inputs[1], kv0, lk, d},
                                         {&c.inputs[2], kv0, lk, dv},
                                         {&c.output, b0, lq, dv}})
      pl.args.add(Args::device_ptr(*t) + static_cast<CUdeviceptr>(first * rows * width * size));
    pl.args.add(static_cast<std::uint32_t>(lq));
    pl.args.add(static_cast<std::uint32_t>(lk));
    pl.args.add<CUdeviceptr>(valid ? Args::device_ptr(c.inputs[3]) : 0);
    pl.args.add(static_cast<std::uint32_t>(valid ? trine::detail::attention_valid_min(c) : 1));
    pl.args.add<CUdeviceptr>(valid ? steps.index_check->slot : 0);
    pl.args.add(static_cast<std::uint32_t>(p.causal ? 1 : 0));
    pl.args.add(p.scale != 0.0f ? p.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
    pl.args.add(static_cast<std::uint32_t>(heads));
    pl.args.add(static_cast<std::uint32_t>(group));
    pl.args.add(static_cast<std::uint32_t>(window));
    // The mask from this launch's first q batch index b0 (a multiple of the heads: see mask_form).
    pl.args.add<CUdeviceptr>(masked ? Args::device_ptr(c.inputs[4]) +
                                          static_cast<CUdeviceptr>(trine::detail::attention_mask_offset(c, b0) * 4)
                                    : 0);
    pl.args.add(static_cast<std::uint32_t>(masked ? mask_form(c)->outer : 0));
    pl.args.add(static_cast<std::uint32_t>(masked ? mask_form(c)->head : 0));
    if (!exact) {
      pl.args.add(static_cast<std::uint32_t>(d));
      pl.args.add(static_cast<std::uint32_t>(dv));
    }
    b0 += n;
  }
  return steps;
}

std::optional<std::string> limits(const OpCall& c) {
  const i64 d = c.inputs[0].dim(-1), dv = c.inputs[2].dim(-1);
  if (d > 128 || dv > 128)
    return "the cuda attention kernels take head dims up to 128 (a row per warp in registers), got D " +
           std::to_string(d) + ", Dv " + std::to_string(dv);
  if (trine::detail::attends_masked(c) && !mask_form(c))
    return "the cuda attention kernel takes a mask whose dims above the heads (dim -3) are all 1 or all q's, of "
           "at most 2^32 elements, with at most 65535 heads, got mask " +
           c.inputs[4].shape().str() + " for q " + c.inputs[0].shape().str();
  return std::nullopt;
}

}  // namespace

void register_attention(CudaOps& r) {
  r.generators.push_back(&attention_generator());
  r.ops.add(OpKind::attention, OpKernel{plan, limits, false, true});  // f32, f16 or bf16 q, k, v and o
}

}  // namespace trine::cuda::kernels
