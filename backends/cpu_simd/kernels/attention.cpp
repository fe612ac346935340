// Scaled dot-product attention: query-row blocks walk key tiles with an online softmax.
#include "backends/cpu_simd/isa.hpp"

#include <cmath>
#include <vector>

#include "backends/backend.hpp"

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// The kernel's arguments: a.Lk is the keys that count (the call's valid input, or all of them),
// rows the keys each kv head has in a.k and a.v (k's dim -2, or Lk where only the valid keys were
// widened), which the kv heads' strides take. mask (attention's fifth input, or null): row i of q
// batch index b at mask + mask_off[b] + i * mask_rows (k's dim -2).
struct Args : AttentionArgs {
  i64 rows = 0;
  i64 mask_rows = 0;
  const float* mask = nullptr;
  std::vector<i64> mask_off;  // [batch]: where each q batch index's [Lq, mask_rows] mask starts
};

constexpr i64 q_block = 4;     // query rows sharing each load of a V row (the K tile stays in L1 for them)
constexpr i64 key_tile = 128;  // keys per tile: its V rows stay in L1/L2 while every column block reads them

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

// Scores of one zero-padded query row against key rows [0, tn), vec_width keys at a time: one
// accumulator per key, then one transposing sum gives vec_width scores (a horizontal sum per key
// would cost as much as the dot product itself at D = 64).
// Each score is the dot product times scale carried as a sum of two floats, s + s_lo (the product's
// rounding is what s_lo holds): rounded, it would cost the weight |s - m| u, 38.7 ulps measured with
// scale 0.7 (issue 31); exp_diff takes the low part into the exponential's reduced argument.
void tile_scores(const float* q, const float* k, i64 D, i64 tn, float scale, float* s, float* s_lo) {
  const i64 d_full = D / vec_width * vec_width;
  const batch_f32 vscale(scale);
  for (i64 j = 0; j < tn; j += vec_width) {
    const i64 g = std::min(vec_width, tn - j);  // keys in this group; the other accumulators stay 0
    batch_f32 acc[vec_width];
    for (auto& a : acc) a = batch_f32(0.0f);
    if (g == vec_width) {
      for (i64 c = 0; c < d_full; c += vec_width) {
        const batch_f32 qv = batch_f32::load_aligned(q + c);
#pragma GCC unroll 16
        for (i64 u = 0; u < vec_width; ++u)
          acc[u] = xsimd::fma(qv, batch_f32::load_unaligned(k + (j + u) * D + c), acc[u]);
      }
    } else {
      for (i64 c = 0; c < d_full; c += vec_width) {
        const batch_f32 qv = batch_f32::load_aligned(q + c);
        for (i64 u = 0; u < g; ++u) acc[u] = xsimd::fma(qv, batch_f32::load_unaligned(k + (j + u) * D + c), acc[u]);
      }
    }
    if (d_full < D) {  // partial loads: reading past the last key row could fault or bring in NaN
      const batch_f32 qv = batch_f32::load_aligned(q + d_full);
      for (i64 u = 0; u < g; ++u) acc[u] = xsimd::fma(qv, load_partial(k + (j + u) * D + d_full, D - d_full), acc[u]);
    }
    batch_f32 sums, lo;
    two_prod(hsum_rows(acc), vscale, sums, lo);
    if (g == vec_width) {
      sums.store_unaligned(s + j);
      lo.store_unaligned(s_lo + j);
    } else {
      store_partial(s + j, g, sums);
      store_partial(s_lo + j, g, lo);
    }
  }
}

// The mask's elements added to n scores s + s_lo, the sum's rounding carried into s_lo as
// tile_scores carries the product's; a sum that is not finite (a -inf mask element) has no low part.
void add_mask(const float* mask, i64 n, float* s, float* s_lo) {
  for (i64 j = 0; j < n; ++j) {
    const float a = s[j], b = mask[j];
    const float t = a + b, bb = t - a;
    const float e = (a - (t - bb)) + (b - bb);
    s[j] = t;
    s_lo[j] = std::isfinite(t) ? s_lo[j] + e : 0.0f;
  }
}

// Online-softmax step for one query row over its nv visible scores of this tile: raises the
// running max m, rescales l and acc, turns the scores into weights in place and adds them to l.
// NaN scores make m NaN for good; a max of -inf (only -inf seen so far) gives weights 0, not NaN.
// The weights come from exp_diff (s - m carried exactly, normal weights never flushed) and the
// rescale factor from a double difference: from f32, |s - m| u of error (44 ulps at e^-87, issue 31).
// m is the weights' reference rather than the max: it rises only when a score passes it by more than
// rescale_slack (weights then reach e^2, sums e^2 Lk), since each rescale rounds l and acc once more
// (2u a rescale; rows of 2100 keys reached 4.3 ulps from them on SSE4.2).
constexpr float rescale_slack = 2.0f;
void softmax_step(float* s, const float* s_lo, i64 nv, float& m, float& l, float* acc, i64 dvp) {
  batch_f32 bm(-f32_inf);
  i64 j = 0;
  for (; j + vec_width <= nv; j += vec_width) bm = max_nan(bm, batch_f32::load_unaligned(s + j));
  if (j < nv) bm = max_nan(bm, load_partial(s + j, nv - j, -f32_inf));
  const float mt = hmax_nan(bm);
  const float m_new = (std::isnan(m) || std::isnan(mt)) ? f32_nan : mt > m + rescale_slack ? mt : m;
  const float factor = m == m_new ? 1.0f : static_cast<float>(std::exp(static_cast<double>(m) - m_new));
  if (factor != 1.0f) {
    l *= factor;
    for (i64 c = 0; c < dvp; c += vec_width)
      (batch_f32::load_aligned(acc + c) * batch_f32(factor)).store_aligned(acc + c);
  }
  m = m_new;
  if (m_new == -f32_inf) {
    std::fill_n(s, nv, 0.0f);
    return;
  }
  const batch_f32 vm(m_new);
  batch_f32 sum(0.0f);
  for (j = 0; j + vec_width <= nv; j += vec_width) {
    const batch_f32 p = exp_diff(batch_f32::load_unaligned(s + j), vm, batch_f32::load_unaligned(s_lo + j));
    sum += p;
    p.store_unaligned(s + j);
  }
  if (j < nv) {
    const batch_f32 p = exp_diff(load_partial(s + j, nv - j, -f32_inf), vm, load_partial(s_lo + j, nv - j));
    sum += p;
    store_partial(s + j, nv - j, p);
  }
  l += hsum(sum);
}

// acc[r][c, c + NV * vec_width) += sum_j p[r][j] * v_j over the keys row r sees (Partial: one
// vector cut at Dv). Keys past a row's limit are skipped, not weighted by 0: 0 * inf in a masked V
// row would be NaN. Loops over r and u are unrolled so the NQ * NV accumulators live in registers.
template <int NQ, int NV, bool Partial>
void values_block(const float* v, i64 Dv, i64 c, i64 tn, const i64* st, const i64* nv, const float* p, float* acc,
                  i64 dvp) {
  batch_f32 a[NQ][NV];
#pragma GCC unroll 4
  for (int r = 0; r < NQ; ++r)
#pragma GCC unroll 4
    for (int u = 0; u < NV; ++u) a[r][u] = batch_f32::load_aligned(acc + r * dvp + c + u * vec_width);
  auto step = [&](i64 j, bool masked) {
    batch_f32 vv[NV];
#pragma GCC unroll 4
    for (int u = 0; u < NV; ++u) {
      if constexpr (Partial)
        vv[u] = load_partial(v + j * Dv + c, Dv - c);
      else
        vv[u] = batch_f32::load_unaligned(v + j * Dv + c + u * vec_width);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NQ; ++r) {
      if (masked && (j < st[r] || j >= nv[r])) continue;
      const batch_f32 w(p[r * key_tile + j]);
#pragma GCC unroll 4
      for (int u = 0; u < NV; ++u) a[r][u] = xsimd::fma(w, vv[u], a[r][u]);
    }
  };
  // Rows see keys [st[r], nv[r]) of the tile, both growing with r (st[0] = 0): every row sees
  // [st[NQ - 1], nv[0]); before it a window's later rows start later, after it causal rows see more.
  const i64 all_first = std::min(st[NQ - 1], tn), all_end = std::max(all_first, nv[0]);
  i64 j = 0;
  if constexpr (NQ > 1) {
    for (; j < all_first; ++j) step(j, true);
  }
  for (; j < all_end; ++j) step(j, false);
  if constexpr (NQ > 1) {
    for (; j < tn; ++j) step(j, true);
  }
#pragma GCC unroll 4
  for (int r = 0; r < NQ; ++r)
#pragma GCC unroll 4
    for (int u = 0; u < NV; ++u) a[r][u].store_aligned(acc + r * dvp + c + u * vec_width);
}

template <int NQ>
void tile_values(const float* v, i64 Dv, i64 tn, const i64* st, const i64* nv, const float* p, float* acc, i64 dvp) {
  i64 c = 0;
  for (; c + 2 * vec_width <= Dv; c += 2 * vec_width) values_block<NQ, 2, false>(v, Dv, c, tn, st, nv, p, acc, dvp);
  if (c + vec_width <= Dv) {
    values_block<NQ, 1, false>(v, Dv, c, tn, st, nv, p, acc, dvp);
    c += vec_width;
  }
  if (c < Dv) values_block<NQ, 1, true>(v, Dv, c, tn, st, nv, p, acc, dvp);
}

struct Scratch {
  std::vector<float, xsimd::aligned_allocator<float, 64>> q, acc, s, s_lo;
};

// Where a query block's running state goes when it has seen its keys: straight into y, or (for one
// split of the keys) into a partial record that combine_splits merges.
struct BlockOut {
  float* m = nullptr;    // [q_block]; null: write y
  float* l = nullptr;    // [q_block]
  float* acc = nullptr;  // [q_block * dvp]
};

// Query rows [i0, i0 + NQ) of batch b over keys [k0, k1).
template <int NQ>
void attend_block(const Args& a, float scale, i64 b, i64 i0, i64 k0, i64 k1, Scratch& w, const BlockOut& out) {
  const i64 D = a.D, Dv = a.Dv, Lk = a.Lk;
  const i64 dp = round_up(D, vec_width), dvp = round_up(Dv, vec_width);
  const i64 kv = (b / a.heads) * (a.heads / a.group) + (b % a.heads) / a.group;  // q head h reads kv head h / group
  const float* k = a.k + kv * a.rows * D;
  const float* v = a.v + kv * a.rows * Dv;
  std::fill(w.q.begin(), w.q.end(), 0.0f);
  std::fill(w.acc.begin(), w.acc.end(), 0.0f);
  i64 first[NQ], vis[NQ];  // row r sees keys [first[r], vis[r]) of [k0, k1)
  float m[NQ], l[NQ];
  for (int r = 0; r < NQ; ++r) {
    std::copy_n(a.q + (b * a.Lq + i0 + r) * D, D, w.q.data() + r * dp);
    const i64 pos = i0 + r + Lk - a.Lq;
    vis[r] = std::min(k1, a.causal ? std::min(Lk, pos + 1) : Lk);
    first[r] = std::max(k0, a.window > 0 ? pos + 1 - a.window : 0);
    m[r] = -f32_inf;
    l[r] = 0.0f;
  }
  for (i64 t0 = first[0]; t0 < vis[NQ - 1]; t0 += key_tile) {
    const i64 tn = std::min(key_tile, vis[NQ - 1] - t0);
    i64 st[NQ], nv[NQ];  // keys [st[r], nv[r]) of this tile row r may see
    for (int r = 0; r < NQ; ++r) {
      st[r] = std::max<i64>(0, first[r] - t0);
      nv[r] = std::min(tn, vis[r] - t0);
      if (nv[r] <= st[r]) continue;
      float* s = w.s.data() + r * key_tile + st[r];
      float* s_lo = w.s_lo.data() + r * key_tile + st[r];
      tile_scores(w.q.data() + r * dp, k + (t0 + st[r]) * D, D, nv[r] - st[r], scale, s, s_lo);
      if (a.mask) add_mask(a.mask + a.mask_off[b] + (i0 + r) * a.mask_rows + t0 + st[r], nv[r] - st[r], s, s_lo);
      softmax_step(s, s_lo, nv[r] - st[r], m[r], l[r], w.acc.data() + r * dvp, dvp);
    }
    tile_values<NQ>(v + t0 * Dv, Dv, tn, st, nv, w.s.data(), w.acc.data(), dvp);
  }
  if (out.m) {
    for (int r = 0; r < NQ; ++r) {
      out.m[r] = m[r];
      out.l[r] = l[r];
      std::copy_n(w.acc.data() + r * dvp, dvp, out.acc + r * dvp);
    }
    return;
  }
  for (int r = 0; r < NQ; ++r) {
    float* y = a.y + (b * a.Lq + i0 + r) * Dv;
    const float* acc = w.acc.data() + r * dvp;
    const batch_f32 vl(l[r]);  // l == 0 (every score -inf) gives 0/0 = NaN, as softmax does
    i64 c = 0;
    for (; c + vec_width <= Dv; c += vec_width) (batch_f32::load_aligned(acc + c) / vl).store_unaligned(y + c);
    if (c < Dv) store_partial(y + c, Dv - c, batch_f32::load_aligned(acc + c) / vl);
  }
}

void attend_rows(i64 rows, const Args& a, float scale, i64 b, i64 i0, i64 k0, i64 k1, Scratch& w,
                 const BlockOut& out) {
  switch (rows) {
    case 4: return attend_block<4>(a, scale, b, i0, k0, k1, w, out);
    case 3: return attend_block<3>(a, scale, b, i0, k0, k1, w, out);
    case 2: return attend_block<2>(a, scale, b, i0, k0, k1, w, out);
    default: return attend_block<1>(a, scale, b, i0, k0, k1, w, out);
  }
}

// Decode (few query blocks, many keys) has too few blocks to share among threads: the keys are
// cut into splits of this many (a multiple of key_tile), each split's running max, sum and
// accumulator are kept, and combine_splits merges them, flash-decoding style. Whether and how a
// call splits depends only on its shape, never on the thread count, so results do not either.
constexpr i64 split_keys = 1024;
constexpr i64 split_below_blocks = 8;

Scratch make_scratch(const Args& a) {
  Scratch w;
  w.q.resize(static_cast<size_t>(q_block * round_up(a.D, vec_width)));
  w.acc.resize(static_cast<size_t>(q_block * round_up(a.Dv, vec_width)));
  w.s.resize(static_cast<size_t>(q_block * key_tile));
  w.s_lo.resize(static_cast<size_t>(q_block * key_tile));
  return w;
}

void attention_split(const Args& a, float scale, i64 blocks, i64 splits) {
  const i64 dvp = round_up(a.Dv, vec_width);
  const i64 rec = q_block * (2 + dvp);  // m, l, acc of one (block, split)
  std::vector<float, xsimd::aligned_allocator<float, 64>> part(static_cast<size_t>(a.batch * blocks * splits * rec));
  auto record = [&](i64 item) {
    float* p = part.data() + item * rec;
    return BlockOut{p, p + q_block, p + 2 * q_block};
  };
  parallel_for(a.batch * blocks * splits, 1, [&](i64 begin, i64 end) {
    Scratch w = make_scratch(a);
    for (i64 it = begin; it < end; ++it) {
      const i64 sp = it % splits, blk = it / splits;
      const i64 b = blk / blocks, i0 = (blk % blocks) * q_block;
      const i64 k0 = sp * split_keys, k1 = std::min(a.Lk, k0 + split_keys);
      attend_rows(std::min(q_block, a.Lq - i0), a, scale, b, i0, k0, k1, w, record(it));
    }
  });
  // y = sum_s acc_s e^(m_s - m) / sum_s l_s e^(m_s - m), m the largest m_s; splits a row cannot
  // see (m_s = -inf) weigh 0, and a NaN anywhere makes the row NaN, as in one pass. In double, with
  // one rounding at the end: in f32 the factors, products and quotient added 3.5u to the weights'
  // error (attention's weights reached 4.3 ulps of e^(s - m) / l).
  std::vector<double> acc(static_cast<std::size_t>(a.Dv));
  for (i64 blk = 0; blk < a.batch * blocks; ++blk) {
    const i64 b = blk / blocks, i0 = (blk % blocks) * q_block;
    for (i64 r = 0; r < std::min(q_block, a.Lq - i0); ++r) {
      float mx = -f32_inf;
      bool nan = false;
      for (i64 sp = 0; sp < splits; ++sp) {
        const float ms = record(blk * splits + sp).m[r];
        nan = nan || std::isnan(ms);
        mx = std::max(mx, ms);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      double l = 0.0;
      for (i64 sp = 0; sp < splits; ++sp) {
        const BlockOut o = record(blk * splits + sp);
        const double f = nan                  ? static_cast<double>(f32_nan)
                         : o.m[r] == -f32_inf ? 0.0
                                              : std::exp(static_cast<double>(o.m[r]) - mx);
        l += o.l[r] * f;
        for (i64 c = 0; c < a.Dv; ++c) acc[static_cast<std::size_t>(c)] += o.acc[r * dvp + c] * f;
      }
      float* y = a.y + (b * a.Lq + i0 + r) * a.Dv;
      for (i64 c = 0; c < a.Dv; ++c) y[c] = static_cast<float>(acc[static_cast<std::size_t>(c)] / l);
    }
  }
}

void attention(const Args& a) {
  if (a.batch <= 0 || a.Lq <= 0 || a.Dv <= 0) return;
  // The op resolves scale 0 to 1/sqrt(D); doing it again here keeps the kernel safe on its own.
  const float scale = a.scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(a.D)) : a.scale;
  const i64 blocks = (a.Lq + q_block - 1) / q_block;
  if (a.batch * blocks < split_below_blocks && a.Lk >= 2 * split_keys) {
    attention_split(a, scale, blocks, (a.Lk + split_keys - 1) / split_keys);
    return;
  }
  const i64 keys = a.window > 0 ? std::min(a.Lk, a.window + q_block) : a.Lk;  // a block's keys, at most
  parallel_for(a.batch * blocks, grain_for(q_block * keys * (a.D + a.Dv), grain_cheap), [&](i64 begin, i64 end) {
    Scratch w = make_scratch(a);
    for (i64 it = begin; it < end; ++it) {
      const i64 b = it / blocks, i0 = (it % blocks) * q_block;
      attend_rows(std::min(q_block, a.Lq - i0), a, scale, b, i0, 0, a.Lk, w, BlockOut{});
    }
  });
}

void run_attention(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  const auto& p = std::get<AttentionParams>(call.params);
  Args a;
  a.Lq = in[0].dim(-2);
  a.D = in[0].dim(-1);
  a.rows = in[1].dim(-2);
  a.mask_rows = a.rows;
  a.Lk = a.rows;
  if (trine::detail::attends_valid(call)) {
    // The keys that count, read now that the call runs: outside its range nothing is written.
    const std::int64_t n = *reinterpret_cast<const std::int32_t*>(base_ptr(in[3]));
    if (n < trine::detail::attention_valid_min(call) || n > trine::detail::attention_valid_max(call))
      throw Error(ErrorCode::invalid_argument, "[attention] " + trine::detail::attention_valid_error(n, call));
    a.Lk = n;
  }
  a.Dv = in[2].dim(-1);
  a.batch = in[0].numel() / (a.Lq * a.D);
  a.scale = p.scale != 0.0f ? p.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.D)));
  a.causal = p.causal;
  a.window = p.causal ? p.window : 0;
  // Grouped-query attention: dim -3 of k (and v) divides q's (the op table checks it).
  if (in[0].rank() >= 3) {
    a.heads = in[0].dim(-3);
    a.group = a.heads / in[1].dim(-3);
  }
  Tensor keep0, keep1, keep2, keep4;
  if (trine::detail::attends_masked(call)) {  // [..., Lq, rows], broadcast over q's leading dims
    a.mask = widened_f32(k, in[4], keep4);
    a.mask_off.resize(static_cast<std::size_t>(a.batch));
    for (i64 b = 0; b < a.batch; ++b)
      a.mask_off[static_cast<std::size_t>(b)] = trine::detail::attention_mask_offset(call, b);
  }
  // 16-bit q, k and v are widened before (only the valid keys' rows of a 16-bit cache: a decode step
  // reads n rows, not the cache's length) and a 16-bit result rounded once after (F32Result): passes
  // of O(L D) against the O(Lq Lk D) work.
  a.q = widened_f32(k, in[0], keep0);
  if (a.Lk < a.rows && (dtype_is_16bit(in[1].dtype()) || dtype_is_16bit(in[2].dtype()))) {
    const Tensor kv = in[1].slice(-2, 0, a.Lk), vv = in[2].slice(-2, 0, a.Lk);
    a.k = widened_f32(k, kv, keep1);
    a.v = widened_f32(k, vv, keep2);
    a.rows = a.Lk;
  } else {
    a.k = widened_f32(k, in[1], keep1);
    a.v = widened_f32(k, in[2], keep2);
  }
  const F32Result y(k, call);
  a.y = y.data();
  attention(a);
  y.round();
}

}  // namespace

void register_attention(KernelTable& t) { t.ops.add(OpKind::attention, run_attention); }

}  // namespace trine::cpu::TRINE_ISA_NS
