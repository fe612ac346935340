// copy and cast (f32, f16, bf16 and i32, through f32, which is exact for every widening and rounds
// once otherwise), and the strided gather that makes any view contiguous on the device.
#include <array>
#include <cstdint>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int gather_dims = 6;

enum class Move {
  copy,     // contiguous, same dtype
  gather,   // a strided view, same dtype
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
  if (cfg.move == Move::gather) {
    // y[i] = x[sum_d idx_d(i) * s_d]: i split into 6 coordinates (innermost last) over the view's
    // collapsed dims; offsets wrap modulo 2^64, so negative strides work.
    std::array<Reg<U64>, gather_dims - 1> dims;  // dims 1..5 (dim 0 is what remains)
    for (int d = 0; d < gather_dims - 1; ++d) dims[d] = param<U64>(k, "d" + std::to_string(d + 1));
    std::array<Reg<U64>, gather_dims> strides;
    for (int d = 0; d < gather_dims; ++d) strides[d] = bitcast<U64>(k, param<S64>(k, "s" + std::to_string(d)));
    grid_stride(k, n, [&](Reg<U64> i) {
      Reg<U64> rest = i;
      Reg<U64> src = mov<U64>(k, 0u);
      for (int d = gather_dims - 1; d >= 0; --d) {
        Reg<U64> idx = rest;
        if (d > 0) {
          idx = rem(k, rest, V<U64>(dims[d - 1]));
          rest = div(k, rest, V<U64>(dims[d - 1]));
        }
        src = fma(k, idx, V<U64>(strides[d]), V<U64>(src));
      }
      move_element(k, cfg.bytes, x, src, y, i);
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
                           "elements, n: u64; gather_* also d1..d5: u64 (the view's dims 1..5 after collapsing to 6, 1 "
                           "where unused; never 0), s0..s5: s64 element strides",
                           "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                           flat_geometry,
                           true};
  return g;
}

// copy and cast: a contiguous copy or conversion, or a strided view copied by the gather kernel.
std::optional<Steps> plan_cast(const OpCall& c, int, const Resources&, bool gathered) {
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const DType from = c.inputs[0].dtype(), to = c.output.dtype();
  if (from == to && !c.inputs[0].is_contiguous()) {
    // A strided view copied: the gather kernel over the view's (collapsed) dims.
    std::array<i64, 6> d{}, st{};
    if (!collapse6(c.inputs[0], d, st)) return std::nullopt;
    const std::size_t config = config_index(configs, "cast", [&](const CastConfig& e) {
      return e.move == Move::gather && e.bytes == static_cast<int>(dtype_size(from));
    });
    Plan& pl = steps.add(cast_generator(), config, {n_out});
    pl.args.add_ptr(c.inputs[0]);
    pl.args.add_ptr(c.output);
    pl.args.add(static_cast<std::uint64_t>(n_out));
    for (std::size_t i = 1; i < 6; ++i) pl.args.add(static_cast<std::uint64_t>(d[i]));
    for (i64 v : st) pl.args.add(v);
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

}  // namespace

void register_copy(CudaOps& r) {
  r.generators.push_back(&cast_generator());
  for (OpKind op : {OpKind::copy, OpKind::cast}) r.ops.add(op, OpKernel{plan_cast});
}

}  // namespace trine::cuda::kernels
