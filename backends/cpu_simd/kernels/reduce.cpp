// Sum, mean, max and argmax along n of [outer, n, inner]; max propagates NaN, argmax names the
// first NaN (or the first of equal maxima).
#include "backends/cpu_simd/isa.hpp"

#include <numeric>
#include <vector>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/gemm/pack.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// Long reductions are cut into segments of about this many elements, reduced in parallel and
// merged in order. The cut depends on the shape only, so results do not change with the thread
// count, and partial sums stay short.
constexpr i64 segment_len = i64{1} << 15;
// Rows of a strided (inner > 1) sum accumulated before the partials are flushed into the total.
constexpr i64 flush_rows = 256;

template <bool Max>
batch_f32 combine(const batch_f32& a, const batch_f32& v) {
  if constexpr (Max)
    return max_nan(a, v);
  else
    return a + v;
}

template <bool Max>
float combine(float a, float v) {
  if constexpr (Max)
    return (std::isnan(a) || std::isnan(v)) ? a + v : std::max(a, v);
  else
    return a + v;
}

template <bool Max>
constexpr float identity_value() {
  return Max ? -f32_inf : 0.0f;
}

// Plain maxima (maxps may drop a NaN) and, beside them, whether any element was NaN: three
// operations a vector where max_nan's NaN-carrying select takes six, which kept max over rows of
// 4096 at three quarters of a contiguous sum's speed.
template <DType D = DType::f32>
float max_contig(const elem_t<D>* p, i64 n) {
  using bool_f32 = xsimd::batch_bool<float, Arch>;
  batch_f32 m0(-f32_inf), m1(-f32_inf), m2(-f32_inf), m3(-f32_inf);
  bool_f32 nan0(false), nan1(false);
  i64 i = 0;
  for (; i + 4 * vec_width <= n; i += 4 * vec_width) {
    const batch_f32 v0 = load_as<D>(p + i), v1 = load_as<D>(p + i + vec_width), v2 = load_as<D>(p + i + 2 * vec_width),
                    v3 = load_as<D>(p + i + 3 * vec_width);
    m0 = xsimd::max(m0, v0);
    m1 = xsimd::max(m1, v1);
    m2 = xsimd::max(m2, v2);
    m3 = xsimd::max(m3, v3);
    nan0 = nan0 || (xsimd::isnan(v0) || xsimd::isnan(v1));
    nan1 = nan1 || (xsimd::isnan(v2) || xsimd::isnan(v3));
  }
  for (; i + vec_width <= n; i += vec_width) {
    const batch_f32 v = load_as<D>(p + i);
    m0 = xsimd::max(m0, v);
    nan0 = nan0 || xsimd::isnan(v);
  }
  if (i < n) {
    const batch_f32 v = load_partial_as<D>(p + i, n - i, -f32_inf);
    m1 = xsimd::max(m1, v);
    nan1 = nan1 || xsimd::isnan(v);
  }
  if (xsimd::any(nan0 || nan1)) return f32_nan;
  return hmax_nan(xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3)));
}

template <bool Max, DType D = DType::f32>
float reduce_contig(const elem_t<D>* p, i64 n) {
  if constexpr (Max)
    return max_contig<D>(p, n);
  else
    return sum_mapped<D>(p, n, [](const batch_f32& v) { return v; });
}

// Rows of x, stored as D (f16 / bf16 rows are widened as loaded: memory sees their bytes only).
template <bool Max, DType D = DType::f32>
void reduce_rows(const elem_t<D>* x, float* y, i64 outer, i64 n, bool mean) {
  const i64 segs = (n + segment_len - 1) / segment_len;
  if (segs == 1) {
    parallel_for(outer, grain_for(n, grain_cheap), [&](i64 b, i64 e) {
      for (i64 r = b; r < e; ++r) {
        const float v = reduce_contig<Max, D>(x + r * n, n);
        y[r] = mean ? v / static_cast<float>(n) : v;
      }
    });
    return;
  }
  std::vector<float> part(static_cast<size_t>(outer * segs));
  parallel_for(outer * segs, 1, [&](i64 b, i64 e) {
    for (i64 it = b; it < e; ++it) {
      const i64 r = it / segs, j0 = (it % segs) * segment_len;
      part[it] = reduce_contig<Max, D>(x + r * n + j0, std::min(segment_len, n - j0));
    }
  });
  for (i64 r = 0; r < outer; ++r) {
    const float* pr = part.data() + r * segs;
    if constexpr (Max) {
      float m = pr[0];
      for (i64 s = 1; s < segs; ++s) m = combine<true>(m, pr[s]);
      y[r] = m;
    } else {
      double s = 0.0;  // a handful of partials: double costs nothing here
      for (i64 k = 0; k < segs; ++k) s += pr[k];
      y[r] = static_cast<float>(mean ? s / static_cast<double>(n) : s);
    }
  }
}

// Columns [0, width) of `rows` rows (stride `inner`) into out, width a multiple of the vector: each
// row's run of columns is read whole, into running partials that stay in L1 (buf: 2 * width floats),
// so the rows stream past as long contiguous runs. Tiles of 32 columns (128 bytes a row, then a
// jump of the row stride) ran sum over axis 0 of 4096 x 4096 at half a contiguous sum's speed.
// Every lane adds its column's rows in order, in blocks of flush_rows, as those tiles did.
template <bool Max>
void reduce_columns(const float* p, i64 rows, i64 inner, i64 width, float div, float* out, float* buf) {
  const batch_f32 init(identity_value<Max>());
  float* part = buf;
  float* total = buf + width;
  for (i64 c = 0; c < width; c += vec_width) init.store_unaligned(total + c);
  for (i64 j0 = 0; j0 < rows; j0 += flush_rows) {
    const i64 j1 = std::min(rows, j0 + flush_rows);
    for (i64 c = 0; c < width; c += vec_width) init.store_unaligned(part + c);
    i64 j = j0;
    for (; j + 4 <= j1; j += 4) {
      const float* r = p + j * inner;
      for (i64 c = 0; c < width; c += vec_width) {
        batch_f32 v = batch_f32::load_unaligned(part + c);
        v = combine<Max>(v, batch_f32::load_unaligned(r + c));
        v = combine<Max>(v, batch_f32::load_unaligned(r + inner + c));
        v = combine<Max>(v, batch_f32::load_unaligned(r + 2 * inner + c));
        v = combine<Max>(v, batch_f32::load_unaligned(r + 3 * inner + c));
        v.store_unaligned(part + c);
      }
    }
    for (; j < j1; ++j)
      for (i64 c = 0; c < width; c += vec_width)
        combine<Max>(batch_f32::load_unaligned(part + c), batch_f32::load_unaligned(p + j * inner + c))
            .store_unaligned(part + c);
    for (i64 c = 0; c < width; c += vec_width)
      combine<Max>(batch_f32::load_unaligned(total + c), batch_f32::load_unaligned(part + c))
          .store_unaligned(total + c);
  }
  for (i64 c = 0; c < width; c += vec_width)
    (batch_f32::load_unaligned(total + c) / batch_f32(div)).store_unaligned(out + c);
}

// Columns [0, w), w <= vec_width: four chains over consecutive rows instead.
template <bool Max>
void reduce_tile1(const float* p, i64 rows, i64 inner, i64 w, float div, float* out) {
  const batch_f32 init(identity_value<Max>());
  auto load = [&](i64 j) {
    return w == vec_width ? batch_f32::load_unaligned(p + j * inner)
                          : load_partial(p + j * inner, w, identity_value<Max>());
  };
  batch_f32 t = init;
  for (i64 j0 = 0; j0 < rows; j0 += 4 * flush_rows) {
    batch_f32 a0 = init, a1 = init, a2 = init, a3 = init;
    const i64 j1 = std::min(rows, j0 + 4 * flush_rows);
    i64 j = j0;
    for (; j + 4 <= j1; j += 4) {
      a0 = combine<Max>(a0, load(j));
      a1 = combine<Max>(a1, load(j + 1));
      a2 = combine<Max>(a2, load(j + 2));
      a3 = combine<Max>(a3, load(j + 3));
    }
    for (; j < j1; ++j) a0 = combine<Max>(a0, load(j));
    t = combine<Max>(t, combine<Max>(combine<Max>(a0, a1), combine<Max>(a2, a3)));
  }
  store_partial(out, w, t / batch_f32(div));
}

// inner < vec_width: a vector would hold less than one row, so walk the rows as one contiguous
// run instead. Lane l of vector k holds column (k * vec_width + l) % inner, a pattern that repeats
// every `period` vectors; one accumulator per vector of the period, folded into columns at the end.
template <bool Max>
void reduce_narrow(const float* p, i64 rows, i64 inner, float div, float* out) {
  const i64 period = inner / std::gcd(inner, vec_width);  // <= inner < vec_width
  const i64 total = rows * inner, step = period * vec_width;
  const batch_f32 init(identity_value<Max>());
  batch_f32 t[vec_width];
  for (i64 k = 0; k < period; ++k) t[k] = init;
  i64 i = 0;
  while (i + step <= total) {
    batch_f32 a[vec_width];
    for (i64 k = 0; k < period; ++k) a[k] = init;
    const i64 end = std::min(total, i + flush_rows * step);
    for (; i + step <= end; i += step)
      for (i64 k = 0; k < period; ++k) a[k] = combine<Max>(a[k], batch_f32::load_unaligned(p + i + k * vec_width));
    for (i64 k = 0; k < period; ++k) t[k] = combine<Max>(t[k], a[k]);
  }
  float col[vec_width];
  std::fill_n(col, inner, identity_value<Max>());
  alignas(64) float lanes[vec_width];
  for (i64 k = 0; k < period; ++k) {
    t[k].store_aligned(lanes);
    for (i64 l = 0; l < vec_width; ++l)
      col[(k * vec_width + l) % inner] = combine<Max>(col[(k * vec_width + l) % inner], lanes[l]);
  }
  for (; i < total; ++i) col[i % inner] = combine<Max>(col[i % inner], p[i]);  // i started at a multiple of inner
  for (i64 c = 0; c < inner; ++c) out[c] = col[c] / div;
}

template <bool Max>
void reduce_strided(const float* x, float* y, i64 outer, i64 n, i64 inner, bool mean) {
  // The columns' whole vectors go in chunks of up to chunk_max columns (their running partials fill
  // half of a 32 KiB L1); what is left of a vector is one more item.
  constexpr i64 chunk_max = 2048;
  const i64 whole = inner / vec_width * vec_width;
  const i64 chunk = std::clamp<i64>(whole, vec_width, chunk_max);
  const i64 wide = (whole + chunk - 1) / chunk, narrow = whole < inner ? 1 : 0;
  const i64 tiles = wide + narrow;
  // Too few (outer, chunk) items to fill the pool: also cut n into segments of partial results.
  const i64 seg_rows = outer * tiles < 16 ? std::max<i64>(flush_rows, segment_len / inner) : n;
  const i64 segs = (n + seg_rows - 1) / seg_rows;
  std::vector<float> part(segs > 1 ? static_cast<size_t>(outer * segs * inner) : 0);
  // Mean divides once, where the last partial is formed (dividing by 1 is exact for sum and max).
  const float n_f = mean ? static_cast<float>(n) : 1.0f;
  const float div = segs > 1 ? 1.0f : n_f, div_final = n_f;
  parallel_for(outer * segs * tiles, grain_for(std::min(n, seg_rows) * chunk, grain_cheap), [&](i64 b, i64 e) {
    for (i64 it = b; it < e; ++it) {
      const i64 t = it % tiles, s = (it / tiles) % segs, o = it / (tiles * segs);
      const i64 c0 = t < wide ? t * chunk : whole;
      const i64 j0 = s * seg_rows, rows = std::min(seg_rows, n - j0);
      const float* p = x + (o * n + j0) * inner + c0;
      float* out = segs > 1 ? part.data() + (o * segs + s) * inner + c0 : y + o * inner + c0;
      if (t < wide) {
        thread_local AlignedBuffer buf;
        const i64 width = std::min(chunk, whole - c0);
        reduce_columns<Max>(p, rows, inner, width, div, out, buf.get(2 * width));
      } else if (inner < vec_width)
        reduce_narrow<Max>(p, rows, inner, div, out);
      else
        reduce_tile1<Max>(p, rows, inner, std::min(vec_width, inner - c0), div, out);
    }
  });
  if (segs > 1) {
    // Segment by segment over whole rows of partials (a vector loop), each column in segment order.
    for (i64 o = 0; o < outer; ++o) {
      float* yo = y + o * inner;
      const float* po = part.data() + o * segs * inner;
      std::copy_n(po, inner, yo);
      for (i64 s = 1; s < segs; ++s)
        for (i64 c = 0; c < inner; ++c) yo[c] = combine<Max>(yo[c], po[s * inner + c]);
      for (i64 c = 0; c < inner; ++c) yo[c] /= div_final;
    }
  }
}

// sum and mean (Max false), max (Max true) along n of [outer, n, inner].
template <bool Max>
void reduce(const float* x, float* y, i64 outer, i64 n, i64 inner, bool mean) {
  if (outer <= 0 || n <= 0 || inner <= 0) return;
  if (inner == 1)
    reduce_rows<Max>(x, y, outer, n, mean);
  else
    reduce_strided<Max>(x, y, outer, n, inner, mean);
}

template <OpKind Op>
void run_reduce(const KernelTable& k, const trine::detail::OpCall& call) {
  i64 outer, n, inner;
  split_axis(call.inputs[0].shape(), std::get<ReduceParams>(call.params).axis, outer, n, inner);
  const DType xd = call.inputs[0].dtype();
  if (inner == 1 && n > 0 && xd != DType::f32) {
    // Rows of 16-bit values: summed (or maxed) as they are widened; the outer results, in f32,
    // rounded once into a 16-bit output.
    Tensor keep;
    const std::uint8_t* x = contiguous_bytes(k, call.inputs[0], keep);
    const DType yd = call.output.dtype();
    std::vector<float> yw(yd == DType::f32 ? 0 : static_cast<std::size_t>(outer));
    float* y = yd == DType::f32 ? out_f32(call) : yw.data();
    if (xd == DType::f16)
      reduce_rows<Op == OpKind::max, DType::f16>(reinterpret_cast<const half_bits*>(x), y, outer, n, Op == OpKind::mean);
    else
      reduce_rows<Op == OpKind::max, DType::bf16>(reinterpret_cast<const half_bits*>(x), y, outer, n,
                                                  Op == OpKind::mean);
    if (yd != DType::f32) k.convert(DType::f32, yd, yw.data(), 1, base_ptr(call.output), outer);
    return;
  }
  // staged (execute.hpp) for other f16 / bf16 layouts: pieces of [n, inner] slabs
  run_staged(k, call, outer, {n * inner}, inner, grain_cheap, [&](const float* const* in, float* out, i64 count) {
    reduce<Op == OpKind::max>(in[0], out, count, n, inner, Op == OpKind::mean);
  });
}

// ---- argmax ----

// The index of a row's largest value: the first of equal ones, or the first NaN's. The maximum
// comes from max_contig's vector pass (which also says whether a NaN is there), then a second pass
// finds where it first occurs; a row of logits (32000 floats) is still in L2 for it.
std::int32_t argmax_row(const float* p, i64 n) {
  const float m = max_contig(p, n);
  const bool nan = m != m;
  i64 i = 0;
  if (!nan) {
    const batch_f32 mv(m);
    for (; i + vec_width <= n; i += vec_width) {
      if (xsimd::any(batch_f32::load_unaligned(p + i) == mv)) break;
    }
  }
  for (; i < n; ++i) {
    if (nan ? p[i] != p[i] : p[i] == m) return static_cast<std::int32_t>(i);
  }
  return 0;  // unreachable: the maximum is one of the row's values
}

// Along n of [outer, n, inner] with inner > 1: each inner lane keeps its best value and index; a
// later value replaces it only when strictly larger, or when it is the first NaN.
void argmax_columns(const float* x, std::int32_t* y, i64 n, i64 inner, i64 j0, i64 j1) {
  using batch_i32 = xsimd::batch<std::int32_t, Arch>;
  i64 j = j0;
  for (; j + vec_width <= j1; j += vec_width) {
    batch_f32 best = batch_f32::load_unaligned(x + j);
    batch_i32 at(0);
    for (i64 k = 1; k < n; ++k) {
      const batch_f32 v = batch_f32::load_unaligned(x + k * inner + j);
      const auto take = (v > best) || (xsimd::isnan(v) && !xsimd::isnan(best));
      best = xsimd::select(take, v, best);
      at = xsimd::select(xsimd::bool_cast(take), batch_i32(static_cast<std::int32_t>(k)), at);
    }
    at.store_unaligned(y + j);
  }
  for (; j < j1; ++j) {
    float best = x[j];
    std::int32_t at = 0;
    for (i64 k = 1; k < n; ++k) {
      const float v = x[k * inner + j];
      if (v > best || (v != v && best == best)) best = v, at = static_cast<std::int32_t>(k);
    }
    y[j] = at;
  }
}

void argmax(const float* x, std::int32_t* y, i64 outer, i64 n, i64 inner);

void run_argmax(const KernelTable& k, const trine::detail::OpCall& call) {
  i64 outer, n, inner;
  split_axis(call.inputs[0].shape(), std::get<ReduceParams>(call.params).axis, outer, n, inner);
  if (outer * inner == 0) return;
  // staged (execute.hpp) for f16 / bf16 values: pieces of [n, inner] slabs
  run_staged(k, call, outer, {n * inner}, inner, grain_cheap, [&](const float* const* in, float* out, i64 count) {
    argmax(in[0], reinterpret_cast<std::int32_t*>(out), count, n, inner);
  });
}

void argmax(const float* x, std::int32_t* y, i64 outer, i64 n, i64 inner) {
  if (inner == 1) {
    parallel_for(outer, grain_for(n, grain_cheap), [&](i64 r0, i64 r1) {
      for (i64 r = r0; r < r1; ++r) y[r] = argmax_row(x + r * n, n);
    });
    return;
  }
  // items: (outer row, a run of inner lanes)
  const i64 run = std::min<i64>(inner, 256), runs = (inner + run - 1) / run;
  parallel_for(outer * runs, grain_for(n * run, grain_cheap), [&](i64 t0, i64 t1) {
    for (i64 t = t0; t < t1; ++t) {
      const i64 o = t / runs, j0 = (t % runs) * run;
      argmax_columns(x + o * n * inner, y + o * inner, n, inner, j0, std::min(inner, j0 + run));
    }
  });
}

}  // namespace

void register_reduce(KernelTable& t) {
  t.ops.add(OpKind::sum, run_reduce<OpKind::sum>);
  t.ops.add(OpKind::mean, run_reduce<OpKind::mean>);
  t.ops.add(OpKind::max, run_reduce<OpKind::max>);
  t.ops.add(OpKind::argmax, run_argmax);
}

}  // namespace trine::cpu::TRINE_ISA_NS
