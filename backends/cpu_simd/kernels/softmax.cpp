// Softmax and log-softmax along n of [outer, n, inner]: rows in cached passes (max, exps, write), long
// rows a segment at a time, columns with one online max/sum pass and one writing pass.
#include "backends/cpu_simd/isa.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/gemm/pack.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// Rows (inner == 1) longer than this are cut into segments whose statistics are merged, so one
// long row still spreads over the pool; the cut depends on n only, so results do not depend on the
// thread count.
constexpr i64 segment_len = i64{1} << 15;

// e^(x - m) through exp_diff (simd_common.hpp): x - m carried exactly, Cody-Waite's reduction, terms
// under 2^-126 (-inf among them) taken as 0, NaN kept. Rounding x - m to f32 first, as before issue
// 31, cost |x - m| u (44 ulps at e^-87), and the clamp at 2^-125 flushed e^-87 (1.6e-38, normal).
[[gnu::always_inline]] inline batch_f32 exp_term(const batch_f32& v, const batch_f32& m) { return exp_diff(v, m); }

// Per-lane running max m and sum s of exp(x - m). A block of four vectors shares one rescale.
// -inf entries add exactly 0 (exp(-inf - -inf) would be NaN while a lane has seen only -inf);
// +inf or NaN make s NaN for good (exp(inf - inf), exp(NaN - m)), which is the all-NaN row
// docs/ops.md asks for. The max may drop a NaN (maxps returns its 2nd operand), s never does.
// With Off, also s_off, the part of s from entries below the max, for log_sum.
template <bool Off>
struct OnlineStat {
  batch_f32 m = batch_f32(-f32_inf);
  batch_f32 s = batch_f32(0.0f);
  batch_f32 s_off = batch_f32(0.0f);

  batch_f32 term(const batch_f32& v) const {
    return xsimd::select(v == batch_f32(-f32_inf), batch_f32(0.0f), exp_term(v, m));
  }
  void raise_max(const batch_f32& m_new) {
    const auto same = m == m_new;
    const batch_f32 f = xsimd::select(same, batch_f32(1.0f), exp_term(m, m_new));
    if constexpr (Off) s_off = xsimd::select(same, s_off, s) * f;  // a new max: all of s is below it
    s *= f;
    m = m_new;
  }
  void add_term(const batch_f32& v) {
    const batch_f32 e = term(v);
    s += e;
    if constexpr (Off) s_off += zero_where(v == m, e);
  }
  void add(const batch_f32& v) {
    raise_max(xsimd::max(m, v));
    add_term(v);
  }
  void add4(const batch_f32& v0, const batch_f32& v1, const batch_f32& v2, const batch_f32& v3) {
    raise_max(xsimd::max(m, xsimd::max(xsimd::max(v0, v1), xsimd::max(v2, v3))));
    if constexpr (Off) {
      add_term(v0);
      add_term(v1);
      add_term(v2);
      add_term(v3);
    } else {
      s += (term(v0) + term(v1)) + (term(v2) + term(v3));
    }
  }
};

// log s for log_softmax, s = c + s_off with c the count of entries at the max (each e^0 = 1): with one
// maximum, log1p(s_off), which keeps the relative accuracy that log(s) loses for s near 1 (the max's
// own log-probability, -log(1 + 1e-9) = -1e-9, came out 0 from log(s)); from two up, log s >= ln 2.
inline float log_sum(float s, float s_off) {
  return s - s_off < 1.5f ? static_cast<float>(std::log1p(static_cast<double>(s_off)))
                          : static_cast<float>(std::log(static_cast<double>(s)));
}
inline batch_f32 log_sum(const batch_f32& s, const batch_f32& s_off) {
  return xsimd::select(s - s_off < batch_f32(1.5f), xsimd::log1p(s_off), xsimd::log(s));
}

struct RowStat {
  float m = -f32_inf;
  float s = 0.0f;
  float s_off = 0.0f;  // the part of s from entries below m (log_sum)
};

// Merges (max, sum, sum below the max) triples with the same -inf and NaN rules as OnlineStat. The
// factors e^(m_i - m) in double: from f32, m_i - m's rounding cost |m_i - m| u.
RowStat merge(const float* m, const float* s, const float* s_off, i64 count) {
  RowStat r;
  for (i64 i = 0; i < count; ++i) r.m = (std::isnan(r.m) || r.m >= m[i]) ? r.m : m[i];
  for (i64 i = 0; i < count; ++i) {
    const bool top = m[i] == r.m;
    const float f = top ? 1.0f : static_cast<float>(std::exp(static_cast<double>(m[i]) - r.m));
    r.s += s[i] * f;
    r.s_off += (top ? s_off[i] : s[i]) * f;
  }
  return r;
}

// (x - m) - log s keeps the log-probabilities exact for large x; exp(x - m) / s cannot overflow.
template <bool Log>
batch_f32 finish(const batch_f32& x, const batch_f32& m, const batch_f32& inv_or_log_s) {
  if constexpr (Log)
    return (x - m) - inv_or_log_s;
  else
    return exp_term(x, m) * inv_or_log_s;
}

template <bool Log>
void write_row(const float* x, float* y, i64 n, RowStat st, bool stream) {
  const batch_f32 m(st.m), k(Log ? log_sum(st.s, st.s_off) : 1.0f / st.s);
  store_run(
      y, n, stream, [&](i64 j) { return finish<Log>(batch_f32::load_unaligned(x + j), m, k); },
      [&](i64 j, i64 r) { return finish<Log>(load_partial(x + j, r), m, k); });
}

// The row's max, four maxima side by side so the pass runs at the loads' rate rather than maxps's
// latency. A NaN that one of them drops still makes the row NaN, through its own exp.
// x stored as D (f16 / bf16 widened as loaded), here and in exp_sum.
template <DType D = DType::f32>
float row_max(const elem_t<D>* x, i64 n) {
  batch_f32 b0(-f32_inf), b1(-f32_inf), b2(-f32_inf), b3(-f32_inf);
  i64 j = 0;
  for (; j + 4 * vec_width <= n; j += 4 * vec_width) {
    b0 = xsimd::max(b0, load_as<D>(x + j));
    b1 = xsimd::max(b1, load_as<D>(x + j + vec_width));
    b2 = xsimd::max(b2, load_as<D>(x + j + 2 * vec_width));
    b3 = xsimd::max(b3, load_as<D>(x + j + 3 * vec_width));
  }
  for (; j + vec_width <= n; j += vec_width) b0 = xsimd::max(b0, load_as<D>(x + j));
  if (j < n) b0 = xsimd::max(b0, load_partial_as<D>(x + j, n - j, -f32_inf));
  return hmax_nan(xsimd::max(xsimd::max(b0, b1), xsimd::max(b2, b3)));
}

// The cached passes sum their exps in blocks of this many floats, two accumulators a block, the
// blocks' sums added into a third: a lane then adds at most 64 terms in a row, plus one per block.
// With the two accumulators running across a row, a lane of a 32K row added 2048 (4096 on SSE4.2),
// and rows of 70001 reached 0.83 of softmax's bound on SSE4.2.
constexpr i64 sum_block = 1024;

// The sum of exp(x - m) over a row, each exp also stored to y when Store, `next` (or null) prefetched
// meanwhile, a line per two vectors. With Off, *off gets the part of the sum from entries below m.
template <bool Store, bool Off = false, DType D = DType::f32>
[[gnu::always_inline]] inline batch_f32 exp_sum(const elem_t<D>* x, i64 n, const batch_f32 m, const elem_t<D>* next,
                                                float* y, batch_f32* off = nullptr) {
  const i64 pairs = n / (2 * vec_width) * (2 * vec_width);
  batch_f32 t(0.0f), t_off(0.0f);
  auto below = [&](const batch_f32& v, const batch_f32& e) __attribute__((always_inline)) {
    if constexpr (Off) t_off += zero_where(v == m, e);
  };
  for (i64 jb = 0; jb < pairs; jb += sum_block) {
    batch_f32 s0(0.0f), s1(0.0f);
    for (i64 j = jb; j < std::min(pairs, jb + sum_block); j += 2 * vec_width) {
      if (next) {
        for (i64 l = 0; l < 2 * vec_width; l += 16) __builtin_prefetch(next + j + l, 0, 3);  // each 64-byte line
      }
      const batch_f32 v0 = load_as<D>(x + j), v1 = load_as<D>(x + j + vec_width);
      const batch_f32 e0 = exp_term(v0, m), e1 = exp_term(v1, m);
      s0 += e0;
      s1 += e1;
      below(v0, e0);
      below(v1, e1);
      if constexpr (Store) {
        e0.store_unaligned(y + j);
        e1.store_unaligned(y + j + vec_width);
      }
    }
    t += s0 + s1;
  }
  i64 j = pairs;
  for (; j + vec_width <= n; j += vec_width) {
    const batch_f32 v = load_as<D>(x + j), e = exp_term(v, m);
    t += e;
    below(v, e);
    if constexpr (Store) e.store_unaligned(y + j);
  }
  if (j < n) {
    const batch_f32 v = load_partial_as<D>(x + j, n - j, -f32_inf), e = exp_term(v, m);
    t += e;
    below(v, e);
    if constexpr (Store) store_partial(y + j, n - j, e);
  }
  if constexpr (Off) *off = t_off;
  return t;
}

// Softmax of a row that fits in L2, with one exp per element instead of the online pass's two:
// the max, then y = exp(x - m) with its sum, then y *= 1 / sum, the last pass over y still in
// cache. Same special values as the online form: -inf weighs 0, +inf or NaN make the row NaN
// (exp(inf - inf), exp(NaN - m)), a row of only -inf gives NaN (-inf - -inf). `next` (the row
// after, or null) is prefetched during the exp pass, so memory works while the exps are computed.
// With `stream` the exps go to `scratch` (n floats, staying in L2) instead of y, and y is written
// once, non-temporally: no read of y's lines before they are written.
void softmax_row_cached(const float* x, float* y, i64 n, const float* next, bool stream, float* scratch) {
  float* const out = y;
  if (stream && n >= stream_min_run) y = scratch;
  const batch_f32 k(1.0f / xsimd::hadd(exp_sum<true>(x, n, batch_f32(row_max(x, n)), next, y)));
  store_run(
      out, n, stream, [&](i64 i) { return batch_f32::load_unaligned(y + i) * k; },
      [&](i64 i, i64 r) { return load_partial(y + i, r) * k; });
}

// (max, sum of exp(x - max)) of a row or segment that fits in L2, with one exp per element where
// the online pass (OnlineStat) takes 1.25 and its rescales: the max, then the exps' sum, `next`
// (or null) prefetched meanwhile as in softmax_row_cached. For log_softmax's rows and long rows'
// segments. The same statistics as OnlineStat for special values: -inf weighs 0 (a run of only -inf
// gives s = 0, as OnlineStat's, so that merge skips it rather than taking NaN from -inf - -inf),
// +inf or NaN make s NaN. With Off (log_softmax), also the sum below the max.
template <bool Off>
RowStat row_stat_cached(const float* x, i64 n, const float* next) {
  const float mf = row_max(x, n);
  batch_f32 off(0.0f);
  const float s = xsimd::hadd(exp_sum<false, Off>(x, n, batch_f32(mf), next, nullptr, &off));
  return mf == -f32_inf ? RowStat{mf, 0.0f, 0.0f} : RowStat{mf, s, xsimd::hadd(off)};
}

// Rows up to this long take the cached forms: x, then y, stay in L2 between their passes (rows of
// 32000, one thread, Zen 3: the online pass took 8.8 ns a vector, the pipelined form 4.2). Longer
// rows are cut into segments (segment_len) whose row_stat_cached statistics are merged.
constexpr i64 cached_row_len = segment_len;

// Softmax of rows [0, rows) of n floats each, n a multiple of the vector, y's rows vector-aligned,
// written non-temporally, as one loop a row: it computes row r's exps into a buffer, reads row r+1
// for its max, and stores row r-1 scaled by its 1 / sum from the other buffer. softmax_row_cached
// does the same work in three passes a row, of which only the exps have arithmetic to hide memory
// behind: here the other two streams ride along with them. buf: 2n floats.
//
// The next row's loads run pipelined_ahead floats behind a prefetch of each line: they are the only
// reads from memory, and with two exps a step the out-of-order window held too few of them to keep
// memory busy. On the Xeon (16M floats in rows of 4096, a 256 MB write between calls, medians of 4
// interleaved runs) 10.9 -> 14.2 GB/s with one thread, 19.1 -> 24.6 with two, and AVX2 there 10.3 ->
// 14.5; 512, 2048 and 4096 floats ahead measured 13.1, 13.1 and 13.2.
constexpr i64 pipelined_ahead = 1024;

void softmax_rows_pipelined(const float* x, float* y, i64 rows, i64 n, float* buf) {
  float* cur = buf;
  float* prev = buf + n;
  float m_next = row_max(x, n), k_prev = 0.0f;
  auto run = [&](auto has_next, auto has_prev, i64 r) __attribute__((always_inline)) {
    const batch_f32 m(m_next), k(k_prev);
    const float* xr = x + r * n;
    const float* xn = xr + n;
    float* out = decltype(has_prev)::value ? y + (r - 1) * n : y;
    batch_f32 t(0.0f), b0(-f32_inf), b1(-f32_inf);
    const i64 pairs = n / (2 * vec_width) * (2 * vec_width);
    for (i64 jb = 0; jb < pairs; jb += sum_block) {
      batch_f32 s0(0.0f), s1(0.0f);
      for (i64 j = jb; j < std::min(pairs, jb + sum_block); j += 2 * vec_width) {
        const batch_f32 e0 = exp_term(batch_f32::load_unaligned(xr + j), m);
        const batch_f32 e1 = exp_term(batch_f32::load_unaligned(xr + j + vec_width), m);
        s0 += e0;
        s1 += e1;
        e0.store_aligned(cur + j);
        e1.store_aligned(cur + j + vec_width);
        if constexpr (decltype(has_next)::value) {
          for (i64 l = 0; l < 2 * vec_width; l += 16) __builtin_prefetch(xn + j + l + pipelined_ahead, 0, 3);
          b0 = xsimd::max(b0, batch_f32::load_unaligned(xn + j));
          b1 = xsimd::max(b1, batch_f32::load_unaligned(xn + j + vec_width));
        }
        if constexpr (decltype(has_prev)::value) {
          store_stream(out + j, batch_f32::load_aligned(prev + j) * k);
          store_stream(out + j + vec_width, batch_f32::load_aligned(prev + j + vec_width) * k);
        }
      }
      t += s0 + s1;
    }
    const i64 j = pairs;
    if (j < n) {  // one vector left
      const batch_f32 e0 = exp_term(batch_f32::load_unaligned(xr + j), m);
      t += e0;
      e0.store_aligned(cur + j);
      if constexpr (decltype(has_next)::value) b0 = xsimd::max(b0, batch_f32::load_unaligned(xn + j));
      if constexpr (decltype(has_prev)::value) store_stream(out + j, batch_f32::load_aligned(prev + j) * k);
    }
    if constexpr (decltype(has_next)::value) m_next = hmax_nan(xsimd::max(b0, b1));
    k_prev = 1.0f / xsimd::hadd(t);
    std::swap(cur, prev);
  };
  using yes = std::true_type;
  using no = std::false_type;
  for (i64 r = 0; r < rows; ++r) {
    const bool has_next = r + 1 < rows;
    if (r == 0) {
      has_next ? run(yes{}, no{}, r) : run(no{}, no{}, r);
    } else {
      has_next ? run(yes{}, yes{}, r) : run(no{}, yes{}, r);
    }
  }
  // The last row, from prev (swapped in by its run).
  const batch_f32 k(k_prev);
  float* out = y + (rows - 1) * n;
  for (i64 j = 0; j < n; j += vec_width) store_stream(out + j, batch_f32::load_aligned(prev + j) * k);
  _mm_sfence();
}

template <bool Log>
void softmax_rows(const float* x, float* y, i64 outer, i64 n) {
  const bool stream = outer * n * 4 >= stream_store_bytes();
  if (n <= cached_row_len) {
    // Whole vectors a row and vector-aligned rows: the pipelined loop, with its non-temporal stores.
    const bool pipelined = !Log && stream && n >= stream_min_run && n % vec_width == 0 &&
                           reinterpret_cast<std::uintptr_t>(y) % (vec_width * sizeof(float)) == 0;
    parallel_for(outer, grain_for(n, grain_costly), [&](i64 b, i64 e) {
      thread_local AlignedBuffer pipe;
      if (pipelined) {
        softmax_rows_pipelined(x + b * n, y + b * n, e - b, n, pipe.get(2 * n));
        return;
      }
      thread_local std::vector<float> scratch;
      if (!Log && stream && scratch.size() < static_cast<std::size_t>(n))
        scratch.resize(static_cast<std::size_t>(cached_row_len));
      for (i64 r = b; r < e; ++r) {
        const float* next = r + 1 < e ? x + (r + 1) * n : nullptr;
        if constexpr (Log)
          write_row<true>(x + r * n, y + r * n, n, row_stat_cached<true>(x + r * n, n, next), stream);
        else
          softmax_row_cached(x + r * n, y + r * n, n, next, stream, scratch.data());
      }
    });
    return;
  }
  const i64 segs = (n + segment_len - 1) / segment_len;
  std::vector<float> seg_m(static_cast<size_t>(outer * segs)), seg_s(seg_m.size()), seg_off(seg_m.size());
  parallel_for(outer * segs, 1, [&](i64 b, i64 e) {
    for (i64 it = b; it < e; ++it) {
      const i64 r = it / segs, j0 = (it % segs) * segment_len;
      const i64 len = std::min(segment_len, n - j0);
      const RowStat st = row_stat_cached<Log>(x + r * n + j0, len, it + 1 < e ? x + r * n + j0 + len : nullptr);
      seg_m[it] = st.m;
      seg_s[it] = st.s;
      seg_off[it] = st.s_off;
    }
  });
  parallel_for(outer * segs, 1, [&](i64 b, i64 e) {
    for (i64 it = b; it < e; ++it) {
      const i64 r = it / segs, j0 = (it % segs) * segment_len;
      const RowStat st = merge(seg_m.data() + r * segs, seg_s.data() + r * segs, seg_off.data() + r * segs, segs);
      write_row<Log>(x + r * n + j0, y + r * n + j0, std::min(segment_len, n - j0), st, stream);
    }
  });
}

// Columns [0, width) of one outer slice, width <= col_tile * vec_width: each row's part of the
// tile is contiguous, so a pass streams whole cache lines instead of one vector per 4 KiB page
// (large strides otherwise cost a TLB or cache miss per vector). Each column vector keeps its
// own running statistics; the last vector may be partial.
constexpr i64 col_tile = 16;

template <bool Log>
void softmax_columns(const float* x, float* y, i64 n, i64 inner, i64 width) {
  const i64 nvec = (width + vec_width - 1) / vec_width, last = width - (nvec - 1) * vec_width;
  auto load = [&](i64 j, i64 u) {
    const float* p = x + j * inner + u * vec_width;
    return u + 1 < nvec || last == vec_width ? batch_f32::load_unaligned(p) : load_partial(p, last, -f32_inf);
  };
  OnlineStat<Log> st[col_tile];
  i64 j = 0;
  for (; j + 4 <= n; j += 4)
    for (i64 u = 0; u < nvec; ++u) st[u].add4(load(j, u), load(j + 1, u), load(j + 2, u), load(j + 3, u));
  for (; j < n; ++j)
    for (i64 u = 0; u < nvec; ++u) st[u].add(load(j, u));
  batch_f32 k[col_tile];
  for (i64 u = 0; u < nvec; ++u) k[u] = Log ? log_sum(st[u].s, st[u].s_off) : batch_f32(1.0f) / st[u].s;
  for (j = 0; j < n; ++j)
    for (i64 u = 0; u < nvec; ++u) {
      const batch_f32 v = finish<Log>(load(j, u), st[u].m, k[u]);
      float* q = y + j * inner + u * vec_width;
      if (u + 1 < nvec || last == vec_width)
        v.store_unaligned(q);
      else
        store_partial(q, last, v);
    }
}

template <bool Log>
void softmax_strided(const float* x, float* y, i64 outer, i64 n, i64 inner) {
  const i64 tile = col_tile * vec_width;
  const i64 tiles = (inner + tile - 1) / tile;
  parallel_for(outer * tiles, grain_for(n * std::min(inner, tile), grain_costly), [&](i64 b, i64 e) {
    for (i64 it = b; it < e; ++it) {
      const i64 o = it / tiles, c0 = (it % tiles) * tile;
      const i64 off = o * n * inner + c0;
      softmax_columns<Log>(x + off, y + off, n, inner, std::min(tile, inner - c0));
    }
  });
}

void softmax(bool log, const float* x, float* y, i64 outer, i64 n, i64 inner) {
  if (outer <= 0 || n <= 0 || inner <= 0) return;
  if (inner == 1) {
    if (log)
      softmax_rows<true>(x, y, outer, n);
    else
      softmax_rows<false>(x, y, outer, n);
  } else {
    if (log)
      softmax_strided<true>(x, y, outer, n, inner);
    else
      softmax_strided<false>(x, y, outer, n, inner);
  }
}

// Rows (inner == 1, n <= cached_row_len) of x and y stored as one 16-bit dtype D: the cached passes
// on the row as stored (widened as loaded, the next row prefetched meanwhile), softmax's exps kept
// in an f32 row buffer (L2), the result rounded once as stored.
template <bool Log, DType D>
void softmax_rows_16(const elem_t<D>* x, elem_t<D>* y, i64 outer, i64 n) {
  const bool stream = outer * n * static_cast<i64>(sizeof(elem_t<D>)) >= stream_store_bytes();
  parallel_for(outer, grain_for(n, grain_costly), [&](i64 b, i64 e) {
    std::vector<float> ex(Log ? 0 : static_cast<std::size_t>(n));
    for (i64 r = b; r < e; ++r) {
      const elem_t<D>* xr = x + r * n;
      const elem_t<D>* next = r + 1 < e ? xr + n : nullptr;
      elem_t<D>* yr = y + r * n;
      if constexpr (Log) {
        const float mf = row_max<D>(xr, n);
        batch_f32 off(0.0f);
        const float s = xsimd::hadd(exp_sum<false, true, D>(xr, n, batch_f32(mf), next, nullptr, &off));
        const RowStat st = mf == -f32_inf ? RowStat{mf, 0.0f, 0.0f} : RowStat{mf, s, xsimd::hadd(off)};
        const batch_f32 m(st.m), ls(log_sum(st.s, st.s_off));
        store_run_blocks_as<1, D>(
            yr, n, stream,
            [&](i64 j, batch_f32(&o)[1]) __attribute__((always_inline)) { o[0] = finish<true>(load_as<D>(xr + j), m, ls); },
            [&](i64 j, i64 rr) { return finish<true>(load_partial_as<D>(xr + j, rr), m, ls); });
      } else {
        const batch_f32 m(row_max<D>(xr, n));
        const batch_f32 inv(1.0f / xsimd::hadd(exp_sum<true, false, D>(xr, n, m, next, ex.data())));
        store_run_blocks_as<1, D>(
            yr, n, stream,
            [&](i64 j, batch_f32(&o)[1]) __attribute__((always_inline)) {
              o[0] = batch_f32::load_unaligned(ex.data() + j) * inv;
            },
            [&](i64 j, i64 rr) { return load_partial(ex.data() + j, rr) * inv; });
      }
    }
  });
}

template <bool Log>
void run_softmax(const KernelTable& k, const trine::detail::OpCall& call) {
  i64 outer, n, inner;
  split_axis(call.inputs[0].shape(), std::get<AxisParams>(call.params).axis, outer, n, inner);
  const DType xd = call.inputs[0].dtype();
  if (inner == 1 && n > 0 && n <= cached_row_len && xd != DType::f32 && call.output.dtype() == xd) {
    Tensor keep;
    const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
    auto* y = reinterpret_cast<half_bits*>(base_ptr(call.output));
    if (xd == DType::f16)
      softmax_rows_16<Log, DType::f16>(reinterpret_cast<const half_bits*>(x), y, outer, n);
    else
      softmax_rows_16<Log, DType::bf16>(reinterpret_cast<const half_bits*>(x), y, outer, n);
    return;
  }
  // staged (execute.hpp) for the other f16 / bf16 calls: pieces of [n, inner] slabs
  run_staged(k, call, outer, {n * inner}, n * inner, grain_cheap,
             [&](const float* const* in, float* out, i64 count) { softmax(Log, in[0], out, count, n, inner); });
}

}  // namespace

void register_softmax(KernelTable& t) {
  t.ops.add(OpKind::softmax, run_softmax<false>);
  t.ops.add(OpKind::log_softmax, run_softmax<true>);
}

}  // namespace trine::cpu::TRINE_ISA_NS
