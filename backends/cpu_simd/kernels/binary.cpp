// Broadcasting element-wise ops: add, sub, mul, div, minimum, maximum over any strides (numpy
// broadcasting as stride 0), rows on the vector path, transposed views through register tiles.
#include "backends/cpu_simd/isa.hpp"

#include <algorithm>
#include <type_traits>

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/kernels/simd_common.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// y (contiguous, `shape`) = a op b, with a and b read through strides (0 on broadcast dims), in
// elements of their dtypes (f32, f16 or bf16; see binary_row_wide).
struct BinaryArgs {
  int rank = 0;
  i64 shape[8] = {};
  i64 a_strides[8] = {};
  i64 b_strides[8] = {};
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  DType a_dtype = DType::f32, b_dtype = DType::f32, y_dtype = DType::f32;
  bool wide() const { return a_dtype != DType::f32 || b_dtype != DType::f32 || y_dtype != DType::f32; }
};

template <OpKind Op, class T>
T binary_apply(const T& a, const T& b) {
  if constexpr (Op == OpKind::add) return a + b;
  if constexpr (Op == OpKind::sub) return a - b;
  if constexpr (Op == OpKind::mul) return a * b;
  if constexpr (Op == OpKind::div) return a / b;
  if constexpr (Op == OpKind::minimum || Op == OpKind::maximum) {
    // NaN if either is NaN (minps and maxps return their second operand on NaN)
    if constexpr (std::is_same_v<T, float>) {
      if (a != a || b != b) return a + b;
      return Op == OpKind::minimum ? std::min(a, b) : std::max(a, b);
    } else {
      const T m = Op == OpKind::minimum ? xsimd::min(a, b) : xsimd::max(a, b);
      return xsimd::select(xsimd::isnan(a), a, xsimd::select(xsimd::isnan(b), b, m));  // (a != a is false for NaN with xsimd's AVX-512)
    }
  }
}

// One row of the innermost dim; vector paths when each side is contiguous or a broadcast scalar.
// `stream`: see store_run.
template <OpKind Op>
void binary_row(const float* a, i64 sa, const float* b, i64 sb, float* y, i64 n, bool stream = false) {
  if (sa == 1 && sb == 1) {
    store_run(
        y, n, stream,
        [&](i64 i) { return binary_apply<Op>(batch_f32::load_unaligned(a + i), batch_f32::load_unaligned(b + i)); },
        [&](i64 i, i64 r) { return binary_apply<Op>(load_partial(a + i, r), load_partial(b + i, r)); });
  } else if (sa == 1 && sb == 0) {
    const batch_f32 vb(*b);
    store_run(
        y, n, stream, [&](i64 i) { return binary_apply<Op>(batch_f32::load_unaligned(a + i), vb); },
        [&](i64 i, i64 r) { return binary_apply<Op>(load_partial(a + i, r), vb); });
  } else if (sa == 0 && sb == 1) {
    const batch_f32 va(*a);
    store_run(
        y, n, stream, [&](i64 i) { return binary_apply<Op>(va, batch_f32::load_unaligned(b + i)); },
        [&](i64 i, i64 r) { return binary_apply<Op>(va, load_partial(b + i, r)); });
  } else {
    for (i64 i = 0; i < n; ++i) y[i] = binary_apply<Op>(a[i * sa], b[i * sb]);
  }
}

// Elements of a row that binary_row_wide and where_row_wide widen at a time: three f32 buffers of
// it stay in L1.
constexpr i64 wide_chunk = 1024;

// `count` elements of `src` (dtype `dt`, element offset `off`, stride `stride`) as f32: the memory
// itself for f32, else widened into `buf` (one element for a broadcast, stride 0). Returns the
// pointer and sets `step` to the stride to read it with.
const float* widen(const void* src, DType dt, i64 off, i64 stride, i64 count, float* buf, i64& step) {
  if (dt == DType::f32) {
    step = stride;
    return static_cast<const float*>(src) + off;
  }
  const auto* p = static_cast<const std::uint8_t*>(src) + off * static_cast<i64>(dtype_size(dt));
  step = stride == 0 ? 0 : 1;
  table().convert(dt, DType::f32, p, stride, buf, stride == 0 ? 1 : count);
  return buf;
}

// A row of a call with an f16 or bf16 operand or result: a chunk at a time, each operand widened
// to f32 in L1 (widen), binary_row on the chunk, a 16-bit result rounded once into place.
template <OpKind Op>
void binary_row_wide(const BinaryArgs& g, i64 oa, i64 sa, i64 ob, i64 sb, i64 oy, i64 n) {
  alignas(64) float ba[wide_chunk], bb[wide_chunk], by[wide_chunk];
  for (i64 i = 0; i < n; i += wide_chunk) {
    const i64 m = std::min(wide_chunk, n - i);
    i64 ea, eb;
    const float* pa = widen(g.a, g.a_dtype, oa + i * sa, sa, m, ba, ea);
    const float* pb = widen(g.b, g.b_dtype, ob + i * sb, sb, m, bb, eb);
    if (g.y_dtype == DType::f32) {
      binary_row<Op>(pa, ea, pb, eb, static_cast<float*>(g.y) + oy + i, m);
    } else {
      binary_row<Op>(pa, ea, pb, eb, by, m);
      table().convert(DType::f32, g.y_dtype, by, 1, static_cast<std::uint8_t*>(g.y) + (oy + i) * 2, m);
    }
  }
}

// A row whose operands and result share one 16-bit dtype D, each side contiguous or a broadcast
// scalar: widened as loaded and rounded once as stored, in the vector loop (no buffer).
template <OpKind Op, DType D>
void binary_row_as(const half_bits* a, i64 sa, const half_bits* b, i64 sb, half_bits* y, i64 n, bool stream) {
  auto scalar = [](half_bits h) { return D == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h); };
  auto run = [&](auto&& va, auto&& vb, auto&& pa, auto&& pb) {
    store_run_blocks_as<1, D>(
        y, n, stream,
        [&](i64 i, batch_f32(&out)[1]) __attribute__((always_inline)) { out[0] = binary_apply<Op>(va(i), vb(i)); },
        [&](i64 i, i64 r) { return binary_apply<Op>(pa(i, r), pb(i, r)); });
  };
  auto vec = [](const half_bits* p) {
    return [p](i64 i) __attribute__((always_inline)) { return load_wide<D>(p + i); };
  };
  auto part = [](const half_bits* p) { return [p](i64 i, i64 r) { return load_wide_partial<D>(p + i, r); }; };
  auto bcast = [&](const half_bits* p) {
    const batch_f32 v(scalar(*p));
    return [v](auto...) __attribute__((always_inline)) { return v; };
  };
  if (sa == 1 && sb == 1) run(vec(a), vec(b), part(a), part(b));
  else if (sa == 1) run(vec(a), bcast(b), part(a), bcast(b));
  else if (sb == 1) run(bcast(a), vec(b), bcast(a), part(b));
  else run(bcast(a), bcast(b), bcast(a), bcast(b));
}

// The broadcast layout with size-1 dims dropped and dims merged wherever both inputs (and the
// contiguous output) step through them as one, so most calls reach binary_row with long rows.
struct BinaryLayout {
  int rank = 0;
  i64 shape[8] = {}, sa[8] = {}, sb[8] = {};
};

BinaryLayout coalesce(const BinaryArgs& args) {
  BinaryLayout l;
  for (int d = 0; d < args.rank; ++d) {
    const i64 n = args.shape[d];
    if (n == 1) continue;
    if (l.rank > 0 && l.sa[l.rank - 1] == args.a_strides[d] * n && l.sb[l.rank - 1] == args.b_strides[d] * n) {
      l.shape[l.rank - 1] *= n;
    } else {
      l.shape[l.rank] = n;
      ++l.rank;
    }
    l.sa[l.rank - 1] = args.a_strides[d];
    l.sb[l.rank - 1] = args.b_strides[d];
  }
  if (l.rank == 0) l = BinaryLayout{1, {1}, {0}, {0}};
  return l;
}

// Walks the outer (all but last) dims of a layout in row order, tracking both input offsets.
struct RowCursor {
  const BinaryLayout& l;
  i64 idx[8] = {};
  i64 off_a = 0, off_b = 0;

  RowCursor(const BinaryLayout& layout, i64 row) : l(layout) {
    for (int d = l.rank - 2; d >= 0; --d) {
      idx[d] = row % l.shape[d];
      row /= l.shape[d];
      off_a += idx[d] * l.sa[d];
      off_b += idx[d] * l.sb[d];
    }
  }
  void next() {
    for (int d = l.rank - 2; d >= 0; --d) {
      off_a += l.sa[d];
      off_b += l.sb[d];
      if (++idx[d] < l.shape[d]) return;
      off_a -= l.sa[d] * l.shape[d];
      off_b -= l.sb[d] * l.shape[d];
      idx[d] = 0;
    }
  }
};

// An input whose last dim is strided but whose dim before it is contiguous (a transposed view):
// read row by row it costs a cache line per element. Such calls go through square tiles instead:
// the transposed side is turned into a contiguous tile in registers (the transpose kernel), then
// the tile's rows run on the vector path.
constexpr i64 binary_tile = 64;

bool transposed_side(const BinaryLayout& l, const i64* s) {
  return l.rank >= 2 && s[l.rank - 1] != 0 && s[l.rank - 1] != 1 && s[l.rank - 2] == 1;
}

template <OpKind Op>
void binary_tiled(const BinaryArgs& args, const BinaryLayout& l) {
  const int rk = l.rank;
  const i64 rows = l.shape[rk - 2], cols = l.shape[rk - 1];
  i64 outer = 1;
  for (int d = 0; d + 2 < rk; ++d) outer *= l.shape[d];
  const i64 row_tiles = (rows + binary_tile - 1) / binary_tile, col_tiles = (cols + binary_tile - 1) / binary_tile;
  const bool ta = transposed_side(l, l.sa), tb = transposed_side(l, l.sb);
  const auto transpose = table().transpose;
  parallel_for(outer * row_tiles * col_tiles, grain_for(binary_tile * binary_tile, grain_cheap), [&](i64 t0, i64 t1) {
    alignas(64) float bufa[binary_tile * binary_tile], bufb[binary_tile * binary_tile];
    for (i64 t = t0; t < t1; ++t) {
      const i64 o = t / (row_tiles * col_tiles), rt = (t / col_tiles) % row_tiles, ct = t % col_tiles;
      i64 off_a = 0, off_b = 0;
      for (i64 d = rk - 3, rest = o; d >= 0; --d) {
        const i64 idx = rest % l.shape[d];
        rest /= l.shape[d];
        off_a += idx * l.sa[d];
        off_b += idx * l.sb[d];
      }
      const i64 r0 = rt * binary_tile, c0 = ct * binary_tile;
      const i64 nr = std::min(binary_tile, rows - r0), nc = std::min(binary_tile, cols - c0);
      // Each side as (first element of tile row 0, row stride, element stride).
      const float* pa = static_cast<const float*>(args.a) + off_a + r0 * l.sa[rk - 2] + c0 * l.sa[rk - 1];
      const float* pb = static_cast<const float*>(args.b) + off_b + r0 * l.sb[rk - 2] + c0 * l.sb[rk - 1];
      i64 ra = l.sa[rk - 2], ea = l.sa[rk - 1], rb = l.sb[rk - 2], eb = l.sb[rk - 1];
      if (ta) {
        transpose(DType::f32, DType::f32, pa, ea, bufa, binary_tile, nr, nc, false);
        pa = bufa, ra = binary_tile, ea = 1;
      }
      if (tb) {
        transpose(DType::f32, DType::f32, pb, eb, bufb, binary_tile, nr, nc, false);
        pb = bufb, rb = binary_tile, eb = 1;
      }
      float* y = static_cast<float*>(args.y) + (o * rows + r0) * cols + c0;
      for (i64 r = 0; r < nr; ++r) binary_row<Op>(pa + r * ra, ea, pb + r * rb, eb, y + r * cols, nc);
    }
  });
}

template <OpKind Op>
void binary_typed(const BinaryArgs& args) {
  for (int d = 0; d < args.rank; ++d)
    if (args.shape[d] == 0) return;
  const BinaryLayout l = coalesce(args);
  // f16 / bf16 rows go through binary_row_wide (a transposed 16-bit side element by element)
  const bool wide = args.wide();
  if (!wide && (transposed_side(l, l.sa) || transposed_side(l, l.sb))) {
    binary_tiled<Op>(args, l);
    return;
  }
  const i64 cols = l.shape[l.rank - 1], sa = l.sa[l.rank - 1], sb = l.sb[l.rank - 1];
  i64 rows = 1;
  for (int d = 0; d + 1 < l.rank; ++d) rows *= l.shape[d];
  const bool stream = rows * cols * static_cast<i64>(dtype_size(args.y_dtype)) >= stream_store_bytes();
  // one 16-bit dtype throughout, each side contiguous or a scalar along the rows: binary_row_as
  const bool fused = wide && args.a_dtype == args.y_dtype && args.b_dtype == args.y_dtype && (sa == 0 || sa == 1) &&
                     (sb == 0 || sb == 1);
  for_row_segments(rows, cols, grain_cheap, [&](i64 b, i64 e, i64 segs, i64 seg) {
    i64 row = b / segs;
    RowCursor cur(l, row);
    for (i64 it = b; it < e; ++it) {
      const i64 r = segs == 1 ? it : it / segs;
      for (; row < r; ++row) cur.next();
      const i64 c0 = (it - r * segs) * seg, c1 = std::min(cols, c0 + seg);
      if (fused) {
        const auto* a16 = static_cast<const half_bits*>(args.a) + cur.off_a + c0 * sa;
        const auto* b16 = static_cast<const half_bits*>(args.b) + cur.off_b + c0 * sb;
        auto* y16 = static_cast<half_bits*>(args.y) + r * cols + c0;
        if (args.y_dtype == DType::f16)
          binary_row_as<Op, DType::f16>(a16, sa, b16, sb, y16, c1 - c0, stream);
        else
          binary_row_as<Op, DType::bf16>(a16, sa, b16, sb, y16, c1 - c0, stream);
      } else if (wide) {
        binary_row_wide<Op>(args, cur.off_a + c0 * sa, sa, cur.off_b + c0 * sb, sb, r * cols + c0, c1 - c0);
      } else {
        binary_row<Op>(static_cast<const float*>(args.a) + cur.off_a + c0 * sa, sa,
                       static_cast<const float*>(args.b) + cur.off_b + c0 * sb, sb,
                       static_cast<float*>(args.y) + r * cols + c0, c1 - c0, stream);
      }
    }
  });
}

// The call's operands as strides over the output's shape (0 where they broadcast).
BinaryArgs binary_args(const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  BinaryArgs b;
  const Shape& os = call.output.shape();
  const Tensor av = in[0].broadcast_to(os), bv = in[1].broadcast_to(os);
  b.rank = os.rank();
  for (int i = 0; i < os.rank(); ++i) {
    b.shape[i] = os[i];
    b.a_strides[i] = os[i] == 1 ? 0 : av.strides()[i];
    b.b_strides[i] = os[i] == 1 ? 0 : bv.strides()[i];
  }
  if (b.rank == 0) {  // a scalar result is a one-element vector to the kernel
    b.rank = 1;
    b.shape[0] = 1;
  }
  b.a = base_ptr(in[0]);
  b.b = base_ptr(in[1]);
  b.y = base_ptr(call.output);
  b.a_dtype = in[0].dtype();
  b.b_dtype = in[1].dtype();
  b.y_dtype = call.output.dtype();
  return b;
}

template <OpKind Op>
void run_binary(const KernelTable&, const trine::detail::OpCall& call) {
  if (call.output.numel() == 0) return;
  binary_typed<Op>(binary_args(call));
}

// ---- where ----

// y = cond != 0 ? a : b along one row of the innermost dim (NaN is nonzero: !(c == 0)); each side
// contiguous (stride 1), a broadcast scalar (stride 0) or strided.
template <class C>
void where_row(const C* c, i64 cs, const float* a, i64 as, const float* b, i64 bs, float* y, i64 n) {
  using batch_c = xsimd::batch<C, Arch>;
  static_assert(batch_c::size == batch_f32::size);
  i64 i = 0;
  if (cs == 1 && as <= 1 && bs <= 1) {
    const batch_f32 a0(*a), b0(*b);
    for (; i + vec_width <= n; i += vec_width) {
      const auto zero = batch_c::load_unaligned(c + i) == batch_c(C(0));
      const auto pick_b = [&] {
        if constexpr (std::is_same_v<C, float>) return zero;
        else return xsimd::bool_cast(zero);
      }();
      const batch_f32 va = as ? batch_f32::load_unaligned(a + i) : a0, vb = bs ? batch_f32::load_unaligned(b + i) : b0;
      xsimd::select(pick_b, vb, va).store_unaligned(y + i);
    }
  }
  for (; i < n; ++i) y[i] = c[i * cs] == C(0) ? b[i * bs] : a[i * as];
}

void run_where(const KernelTable&, const trine::detail::OpCall& call) {
  const Shape& os = call.output.shape();
  const i64 total = call.output.numel();
  if (total == 0) return;
  // a rank-0 result is one row of one element
  const int rank = std::max(1, os.rank());
  const Shape shape = os.rank() ? os : Shape{1};
  Tensor v[3];
  for (int t = 0; t < 3; ++t) v[t] = call.inputs[static_cast<std::size_t>(t)].broadcast_to(os);
  // strides along each dim, 0 where the dim is 1 (a broadcast's stride does not matter there)
  auto stride = [&](int t, int d) { return shape[d] == 1 ? i64{0} : v[t].strides()[d]; };
  const i64 inner = shape[rank - 1], rows = total / inner;
  const std::uint8_t* cbase = base_ptr(call.inputs[0]);
  const auto* abase = reinterpret_cast<const float*>(base_ptr(call.inputs[1]));
  const auto* bbase = reinterpret_cast<const float*>(base_ptr(call.inputs[2]));
  float* y = out_f32(call);
  const DType cd = call.inputs[0].dtype(), ad = call.inputs[1].dtype(), bd = call.inputs[2].dtype(),
              yd = call.output.dtype();
  const bool cond_i32 = cd == DType::i32;
  // An f16 or bf16 tensor among them: each row a chunk at a time, every operand widened to f32 in
  // L1 (an i32 cond too: a nonzero i32 widens to a nonzero float), a 16-bit result rounded once.
  const bool wide = dtype_is_16bit(cd) || ad != DType::f32 || bd != DType::f32 || yd != DType::f32;
  parallel_for(rows, grain_for(inner, grain_cheap), [&](i64 r0, i64 r1) {
    for (i64 r = r0; r < r1; ++r) {
      i64 off[3] = {0, 0, 0};
      for (i64 d = rank - 2, rest = r; d >= 0; --d) {
        const i64 at = rest % shape[static_cast<int>(d)];
        rest /= shape[static_cast<int>(d)];
        for (int t = 0; t < 3; ++t) off[t] += at * stride(t, static_cast<int>(d));
      }
      const i64 cs = stride(0, rank - 1), as = stride(1, rank - 1), bs = stride(2, rank - 1);
      if (wide) {
        alignas(64) float bc[wide_chunk], ba[wide_chunk], bb[wide_chunk], by[wide_chunk];
        for (i64 i = 0; i < inner; i += wide_chunk) {
          const i64 m = std::min(wide_chunk, inner - i);
          i64 ec, ea, eb;
          const float* pc = widen(cbase, cd, off[0] + i * cs, cs, m, bc, ec);
          const float* pa = widen(abase, ad, off[1] + i * as, as, m, ba, ea);
          const float* pb = widen(bbase, bd, off[2] + i * bs, bs, m, bb, eb);
          if (yd == DType::f32) {
            where_row(pc, ec, pa, ea, pb, eb, y + r * inner + i, m);
          } else {
            where_row(pc, ec, pa, ea, pb, eb, by, m);
            table().convert(DType::f32, yd, by, 1, base_ptr(call.output) + (r * inner + i) * 2, m);
          }
        }
      } else if (cond_i32) {
        where_row(reinterpret_cast<const std::int32_t*>(cbase) + off[0], cs, abase + off[1], as, bbase + off[2], bs,
                  y + r * inner, inner);
      } else {
        where_row(reinterpret_cast<const float*>(cbase) + off[0], cs, abase + off[1], as, bbase + off[2], bs,
                  y + r * inner, inner);
      }
    }
  });
}

}  // namespace

void register_binary(KernelTable& t) {
  t.ops.add(OpKind::add, run_binary<OpKind::add>);
  t.ops.add(OpKind::sub, run_binary<OpKind::sub>);
  t.ops.add(OpKind::mul, run_binary<OpKind::mul>);
  t.ops.add(OpKind::div, run_binary<OpKind::div>);
  t.ops.add(OpKind::minimum, run_binary<OpKind::minimum>);
  t.ops.add(OpKind::maximum, run_binary<OpKind::maximum>);
  t.ops.add(OpKind::where, run_where);
}

}  // namespace trine::cpu::TRINE_ISA_NS
