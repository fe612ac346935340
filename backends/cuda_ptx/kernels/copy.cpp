// Data movement: copy and cast (f32, f16, bf16 and i32, through f32, which is exact for every
// widening and rounds once otherwise), the strided gather that makes any view contiguous on the
// device, gather's row lookup with its index check, and concat's slab copies.
#include <algorithm>
#include <array>
#include <cstdint>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;
constexpr int gather_dims = 6;

// ---- cast: copy, strided gather, dtype conversion ----

enum class Move {
  copy,     // contiguous, same dtype
  gather,   // a strided view, same dtype
  scatter,  // into a strided view (trine::copy_into), same dtype
  scatter_at,  // the same at a position read on the device (copy_into with a position tensor)
  convert,  // contiguous, from one dtype to another
};
struct CastConfig {
  std::string_view name;
  Move move;
  int bytes;      // copy, gather: the element size (4 or 2)
  Elem from, to;  // convert
};
// i32 converts through f32: to f16/bf16 with two roundings, as the op defines it; from floats toward
// zero, saturating, NaN to 0 (cvt.rzi.s32.f32).
constexpr CastConfig configs[] = {
    {"copy_b32", Move::copy, 4, Elem::f32, Elem::f32},        {"copy_b16", Move::copy, 2, Elem::f16, Elem::f16},
    {"gather_b32", Move::gather, 4, Elem::f32, Elem::f32},    {"gather_b16", Move::gather, 2, Elem::f16, Elem::f16},
    {"f32_to_f16", Move::convert, 0, Elem::f32, Elem::f16},   {"f32_to_bf16", Move::convert, 0, Elem::f32, Elem::bf16},
    {"f16_to_f32", Move::convert, 0, Elem::f16, Elem::f32},   {"f16_to_bf16", Move::convert, 0, Elem::f16, Elem::bf16},
    {"bf16_to_f32", Move::convert, 0, Elem::bf16, Elem::f32}, {"bf16_to_f16", Move::convert, 0, Elem::bf16, Elem::f16},
    {"f32_to_i32", Move::convert, 0, Elem::f32, Elem::i32},   {"f16_to_i32", Move::convert, 0, Elem::f16, Elem::i32},
    {"bf16_to_i32", Move::convert, 0, Elem::bf16, Elem::i32}, {"i32_to_f32", Move::convert, 0, Elem::i32, Elem::f32},
    {"i32_to_f16", Move::convert, 0, Elem::i32, Elem::f16},   {"i32_to_bf16", Move::convert, 0, Elem::i32, Elem::bf16},
    {"scatter_b32", Move::scatter, 4, Elem::f32, Elem::f32},  {"scatter_b16", Move::scatter, 2, Elem::f16, Elem::f16},
    {"scatter_at_b32", Move::scatter_at, 4, Elem::f32, Elem::f32},
    {"scatter_at_b16", Move::scatter_at, 2, Elem::f16, Elem::f16},
};

// y[i] = x[i] for elements of 4 or 2 bytes, addresses computed by the caller.
void move_element(Kernel& k, int bytes, Reg<U64> x, Reg<U64> src, Reg<U64> y, Reg<U64> dst) {
  if (bytes == 4) {
    st(k, element(k, Ptr<Global, U32>{y, 0}, dst), V<U32>(ld(k, element(k, Ptr<Global, U32>{x, 0}, src))));
  } else {
    st(k, element(k, Ptr<Global, U16>{y, 0}, dst), V<U16>(ld(k, element(k, Ptr<Global, U16>{x, 0}, src))));
  }
}

std::string generate_cast(std::size_t config, Target target) {
  const CastConfig& cfg = config_at(configs, config, "cast");
  Kernel k(kernel_name("cast", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> n = param<U64>(k, "n");
  if (cfg.move == Move::copy) {
    grid_stride(k, n, [&](Reg<U64> i) { move_element(k, cfg.bytes, x, i, y, i); });
    return module_text(k);
  }
  if (cfg.move != Move::copy && cfg.move != Move::convert) {
    // gather: y[i] = x[sum_d idx_d(i) * s_d]; scatter: y[sum_d idx_d(i) * s_d] = x[i]. i split into 6
    // coordinates (innermost last) over the view's collapsed dims; offsets wrap modulo 2^64, so
    // negative strides work.
    std::array<Reg<U64>, gather_dims - 1> dims;  // dims 1..5 (dim 0 is what remains)
    for (int d = 0; d < gather_dims - 1; ++d) dims[d] = param<U64>(k, "d" + std::to_string(d + 1));
    std::array<Reg<U64>, gather_dims> strides;
    for (int d = 0; d < gather_dims; ++d) strides[d] = bitcast<U64>(k, param<S64>(k, "s" + std::to_string(d)));
    // scatter_at: the view starts pos * pos_stride elements further, pos read here; a pos outside
    // [0, pos_max] writes nothing, and thread 0 leaves it in `check` (as gather's index check:
    // (0 << 32) | pos).
    Reg<U64> base = mov<U64>(k, 0u);
    Reg<U64> count = n;
    if (cfg.move == Move::scatter_at) {
      Ptr<Global, S32> pos_ptr = param_ptr<S32>(k, "pos");
      Reg<S64> pos_stride = param<S64>(k, "pos_stride");
      Reg<S64> pos_max = param<S64>(k, "pos_max");
      Ptr<Global, U64> check = param_ptr<U64>(k, "check");
      Reg<S32> p32 = ld(k, pos_ptr);
      Reg<S64> p = cvt<S64>(k, p32);
      Reg<Pred> ok = and_(k, setp(k, Cmp::ge, p, V<S64>(std::int64_t{0})), V<Pred>(setp(k, Cmp::le, p, V<S64>(pos_max))));
      base = bitcast<U64>(k, mul(k, p, V<S64>(pos_stride)));
      count = selp<U64>(k, n, 0u, ok);
      Reg<Pred> report =
          and_(k, not_(k, ok), V<Pred>(setp(k, Cmp::eq, global_thread_u64(k), V<U64>(std::uint64_t{0}))));
      Kernel::Guard g(k, report, false);
      red(k, Reduction::min, check, V<U64>(to_u64(k, bitcast<U32>(k, p32))));
    }
    grid_stride(k, count, [&](Reg<U64> i) {
      Reg<U64> rest = i;
      Reg<U64> src = base;
      for (int d = gather_dims - 1; d >= 0; --d) {
        Reg<U64> idx = rest;
        if (d > 0) {
          idx = rem(k, rest, V<U64>(dims[d - 1]));
          rest = div(k, rest, V<U64>(dims[d - 1]));
        }
        src = fma(k, idx, V<U64>(strides[d]), V<U64>(src));
      }
      if (cfg.move == Move::gather) {
        move_element(k, cfg.bytes, x, src, y, i);
      } else {
        move_element(k, cfg.bytes, x, i, y, src);
      }
    });
    return module_text(k);
  }
  grid_stride(k, n, [&](Reg<U64> i) { store_f32(k, cfg.to, y, i, load_f32(k, cfg.from, x, i)); });
  return module_text(k);
}

Launch flat_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, 8192), 1, 1};
  return l;
}

const Generator& cast_generator() {
  static const Generator g{"cast",
                           {OpKind::copy, OpKind::cast},
                           config_names(configs),
                           generate_cast,
                           "x: pointer to n elements (contiguous; gather_*: the view's first element), y: pointer to n "
                           "elements (scatter_*: the view's first element), n: u64; gather_* and scatter_* also "
                           "d1..d5: u64 (the view's dims 1..5 after collapsing to 6, 1 where unused; never 0), s0..s5: "
                           "s64 element strides; scatter_at_* also pos: s32* (the view starts pos * pos_stride elements "
                           "further), pos_stride: s64, pos_max: s64, check: u64* (all ones before the launch; a pos "
                           "outside [0, pos_max] writes nothing and leaves pos there)",
                           "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                           flat_geometry,
                           true};
  return g;
}

// ---- gather: rows of a table picked by i32 indices ----

struct GatherConfig {
  std::string_view name;
  int bytes;  // the table's element size
};
constexpr GatherConfig gather_configs[] = {{"b32", 4}, {"b16", 2}};

// One warp per output row: every lane reads the row's index; a good index copies the table's row,
// a bad one (outside [0, rows), negative ones included) writes zeros, reads nothing of
// the table, and leaves (position << 32) | index in `check` by an atomic min, so the lowest bad
// position wins whatever order the warps run in (IndexCheck).
std::string generate_gather(std::size_t config, Target target) {
  const GatherConfig& cfg = config_at(gather_configs, config, "gather");
  Kernel k(kernel_name("gather", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> table = global_ptr<U32>(k, param<U64>(k, "table")).base;
  Ptr<Global, S32> indices = param_ptr<S32>(k, "indices");
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Ptr<Global, U64> check = param_ptr<U64>(k, "check");
  Reg<U64> n = param<U64>(k, "n");
  Reg<U32> d = param<U32>(k, "d");
  Reg<U64> rows = param<U64>(k, "rows");
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U64> first =
      add(k, mul_wide(k, special(k, Special::ctaid_x), V<U32>(warps_per_block)), V<U64>(to_u64(k, shr(k, tid, 5u))));
  Reg<U64> stride = mul_wide(k, special(k, Special::nctaid_x), V<U32>(warps_per_block));
  Reg<U64> d64 = to_u64(k, d);
  for_range<U64>(k, first, n, stride, [&](Reg<U64> row) {  // warp-uniform
    Reg<S32> index = ld(k, element(k, indices, row));
    Reg<U64> at = bitcast<U64>(k, cvt<S64>(k, index));  // a negative index wraps past any row count
    Reg<Pred> inside = setp(k, Cmp::lt, at, V<U64>(rows));
    Reg<U64> src = mul(k, at, V<U64>(d64));
    Reg<U64> dst = mul(k, row, V<U64>(d64));
    for_range<U32>(k, lane, d, 32u, [&](Reg<U32> col) {
      Reg<U64> c = to_u64(k, col);
      if (cfg.bytes == 4) {
        Ptr<Global, U32> from = element(k, Ptr<Global, U32>{table, 0}, add(k, src, V<U64>(c)));
        Reg<U32> v = mov<U32>(k, 0u);
        {
          Kernel::Guard g(k, inside, false);
          ld_to(k, v, from);
        }
        st(k, element(k, Ptr<Global, U32>{y, 0}, add(k, dst, V<U64>(c))), V<U32>(v));
      } else {
        Ptr<Global, U16> from = element(k, Ptr<Global, U16>{table, 0}, add(k, src, V<U64>(c)));
        Reg<U16> v = mov<U16>(k, 0u);
        {
          Kernel::Guard g(k, inside, false);
          ld_to(k, v, from);
        }
        st(k, element(k, Ptr<Global, U16>{y, 0}, add(k, dst, V<U64>(c))), V<U16>(v));
      }
    });
    Reg<U64> bad = or_(k, shl(k, row, 32u), V<U64>(to_u64(k, bitcast<U32>(k, index))));
    Reg<Pred> report = and_(k, not_(k, inside), V<Pred>(setp(k, Cmp::eq, lane, V<U32>(0u))));
    Kernel::Guard g(k, report, false);
    red(k, Reduction::min, check, V<U64>(bad));
  });
  return module_text(k);
}

Launch gather_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(size_at(sizes, 0), warps_per_block), 1, 1};
  return l;
}

const Generator& gather_generator() {
  static const Generator g{
      "gather",
      {OpKind::gather},
      config_names(gather_configs),
      generate_gather,
      "table: pointer to [rows, d] (contiguous; b32: 4-byte elements, b16: 2-byte), indices: s32* "
      "[n], y: pointer to [n, d], check: u64* (all ones before the launch; the lowest bad position "
      "p and its index i leave (p << 32) | i), n: u64 < 2^32, d: u32, rows: u64",
      "sizes = {n, d}; block 256, one warp per output row; grid ceil(n/8) (max 65535, rows beyond "
      "loop)",
      gather_geometry};
  return g;
}

// ---- concat: each input copied into its slab of the output ----

struct ConcatConfig {
  std::string_view name;
  int bytes;  // the element size
};
constexpr ConcatConfig concat_configs[] = {{"b32", 4}, {"b16", 2}};

// The output seen as [outer, row_out] and the input as [outer, row_in]: y[o, offset + j] = x[o, j].
// Rows over the grid's y, columns over its x: no division per element.
std::string generate_concat(std::size_t config, Target target) {
  const ConcatConfig& cfg = config_at(concat_configs, config, "concat");
  Kernel k(kernel_name("concat", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Reg<U64> outer = param<U64>(k, "outer");
  Reg<U64> row_in = param<U64>(k, "row_in");
  Reg<U64> row_out = param<U64>(k, "row_out");
  Reg<U64> offset = param<U64>(k, "offset");
  Reg<U64> first_col = global_thread_u64(k);
  Reg<U64> col_step = grid_threads_u64(k);
  Reg<U64> first_row = to_u64(k, special(k, Special::ctaid_y));
  Reg<U64> row_step = to_u64(k, special(k, Special::nctaid_y));
  for_range<U64>(k, first_row, outer, row_step, [&](Reg<U64> o) {
    Reg<U64> src = mul(k, o, V<U64>(row_in));
    Reg<U64> dst = fma(k, o, V<U64>(row_out), V<U64>(offset));
    for_range<U64>(k, first_col, row_in, col_step, [&](Reg<U64> j) {
      move_element(k, cfg.bytes, x, add(k, src, V<U64>(j)), y, add(k, dst, V<U64>(j)));
    });
  });
  return module_text(k);
}

Launch concat_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  const std::uint32_t rows = blocks_for(size_at(sizes, 0), 1, 1024);
  l.grid = {blocks_for(size_at(sizes, 1), block_threads, std::max<std::int64_t>(1, 8192 / rows)), rows, 1};
  return l;
}

const Generator& concat_generator() {
  static const Generator g{"concat",
                           {OpKind::concat},
                           config_names(concat_configs),
                           generate_concat,
                           "x: pointer to [outer, row_in] (contiguous; b32: 4-byte elements, b16: 2-byte), y: pointer "
                           "to [outer, row_out], outer, row_in, row_out: u64, offset: u64 (where x's slab starts in "
                           "a row of y)",
                           "sizes = {outer, row_in}; block 256; grid (min(ceil(row_in/256), 8192/grid.y), min(outer, "
                           "1024)), both loop",
                           concat_geometry};
  return g;
}

// ---- plans ----

// copy and cast: a contiguous copy or conversion, a strided view copied by the gather kernel, or a
// contiguous input written into a view (trine::copy_into) by the scatter kernel.
std::optional<Steps> plan_cast(const OpCall& c, int, const Resources& res, bool gathered) {
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const DType from = c.inputs[0].dtype(), to = c.output.dtype();
  const bool at = trine::detail::writes_at(c);
  const bool scatter = at || trine::detail::writes_view(c);
  if (scatter && !c.inputs[0].is_contiguous()) return std::nullopt;  // copy_into passes a contiguous one
  if (scatter || (from == to && !c.inputs[0].is_contiguous())) {
    // A strided view copied (or written): the gather (scatter) kernel over the view's collapsed
    // dims, its innermost 6 (leading 1s added) a launch, one launch per index of the dims before
    // them, the view's pointer moved to that index's element and the contiguous side's to its slab.
    // A write at a position: the view at position 0, moved on the device (scatter_at).
    const Tensor view = at ? trine::detail::written_at(c, 0) : scatter ? c.output : c.inputs[0];
    const Tensor& flat = scatter ? c.inputs[0] : c.output;
    const auto dims = collapsed_dims(view);
    constexpr std::size_t per_launch = gather_dims;
    const std::size_t lead = dims.size() > per_launch ? dims.size() - per_launch : 0;
    std::array<i64, per_launch> d{}, st{};
    d.fill(1);
    for (std::size_t i = lead; i < dims.size(); ++i) {
      d[per_launch - (dims.size() - i)] = dims[i][0];
      st[per_launch - (dims.size() - i)] = dims[i][1];
    }
    i64 slab = 1, slabs = 1;
    for (i64 v : d) slab *= v;
    for (std::size_t i = 0; i < lead; ++i) slabs *= dims[i][0];
    const std::size_t config = config_index(configs, "cast", [&](const CastConfig& e) {
      return e.move == (at ? Move::scatter_at : scatter ? Move::scatter : Move::gather) &&
             e.bytes == static_cast<int>(dtype_size(from));
    });
    if (at) {
      const OpCall call = c;  // what the error, raised after the work, names
      steps.index_check = IndexCheck{res.kernels ? res.kernels->index_check_slot(*res.api) : 0, 0,
                                     [call](std::int64_t p) { return trine::detail::write_position_error(p, call); }};
    }
    const i64 bytes = static_cast<i64>(dtype_size(from));
    for (i64 s = 0; s < slabs; ++s) {
      i64 offset = 0, rest = s;
      for (std::size_t i = lead; i-- > 0;) {
        offset += rest % dims[i][0] * dims[i][1];
        rest /= dims[i][0];
      }
      Plan& pl = steps.add(cast_generator(), config, {slab});
      const CUdeviceptr at_view = Args::device_ptr(view) + static_cast<CUdeviceptr>(offset * bytes);
      const CUdeviceptr at_flat = Args::device_ptr(flat) + static_cast<CUdeviceptr>(s * slab * bytes);
      pl.args.add(scatter ? at_flat : at_view);
      pl.args.add(scatter ? at_view : at_flat);
      pl.args.add(static_cast<std::uint64_t>(slab));
      for (std::size_t i = 1; i < per_launch; ++i) pl.args.add(static_cast<std::uint64_t>(d[i]));
      for (i64 v : st) pl.args.add(v);
      if (at) {
        pl.args.add_ptr(c.inputs[1]);
        pl.args.add(static_cast<i64>(c.output.strides()[static_cast<std::size_t>(trine::detail::write_axis(c))]));
        pl.args.add(static_cast<i64>(trine::detail::write_position_max(c)));
        pl.args.add<CUdeviceptr>(steps.index_check->slot);
      }
    }
    return steps;
  }
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const std::size_t config = config_index(configs, "cast", [&](const CastConfig& e) {
    return from == to ? e.move == Move::copy && e.bytes == static_cast<int>(dtype_size(from))
                      : e.move == Move::convert && e.from == elem_of(from) && e.to == elem_of(to);
  });
  Plan& pl = steps.add(cast_generator(), config, {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  return steps;
}

std::optional<Steps> plan_gather(const OpCall& c, int, const Resources& res, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const Tensor &table = c.inputs[0], &indices = c.inputs[1];
  const i64 n = indices.dim(0), d = table.dim(1);
  // positions are reported in 32 bits; a row's columns are counted in 32
  if (n > UINT32_MAX || d > UINT32_MAX) return std::nullopt;
  Steps steps;
  if (n == 0) return steps;
  steps.index_check = IndexCheck{res.kernels ? res.kernels->index_check_slot(*res.api) : 0, table.dim(0), nullptr};
  const std::size_t config = config_index(gather_configs, "gather", [&](const GatherConfig& g) {
    return g.bytes == static_cast<int>(dtype_size(table.dtype()));
  });
  Plan& pl = steps.add(gather_generator(), config, {n, d});
  pl.args.add_ptr(table);
  pl.args.add_ptr(indices);
  pl.args.add_ptr(c.output);
  pl.args.add<CUdeviceptr>(steps.index_check->slot);
  pl.args.add(static_cast<std::uint64_t>(n));
  pl.args.add(static_cast<std::uint32_t>(d));
  pl.args.add(static_cast<std::uint64_t>(table.dim(0)));
  return steps;
}

// One launch per input with anything in it, into its slab of each output row.
std::optional<Steps> plan_concat(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  i64 outer, total, inner;
  split(c.output.shape(), std::get<AxisParams>(c.params).axis, outer, total, inner);
  Steps steps;
  if (c.output.numel() == 0) return steps;
  const std::size_t config = config_index(concat_configs, "concat", [&](const ConcatConfig& e) {
    return e.bytes == static_cast<int>(dtype_size(c.output.dtype()));
  });
  const int axis = std::get<AxisParams>(c.params).axis;
  i64 offset = 0;
  for (const Tensor& x : c.inputs) {
    const i64 row_in = x.dim(axis) * inner;
    if (row_in == 0) continue;
    Plan& pl = steps.add(concat_generator(), config, {outer, row_in});
    pl.args.add_ptr(x);
    pl.args.add_ptr(c.output);
    pl.args.add(static_cast<std::uint64_t>(outer));
    pl.args.add(static_cast<std::uint64_t>(row_in));
    pl.args.add(static_cast<std::uint64_t>(total * inner));
    pl.args.add(static_cast<std::uint64_t>(offset));
    offset += row_in;
  }
  return steps;
}

}  // namespace

void register_copy(CudaOps& r) {
  r.generators.push_back(&cast_generator());
  r.generators.push_back(&gather_generator());
  r.generators.push_back(&concat_generator());
  for (OpKind op : {OpKind::copy, OpKind::cast}) r.ops.add(op, OpKernel{plan_cast, nullptr, false, true});
  r.ops.add(OpKind::gather, OpKernel{plan_gather, nullptr, true, true});
  r.ops.add(OpKind::concat, OpKernel{plan_concat, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
