// copy and cast (f32 <-> f16 <-> bf16, round to nearest even through f32, which is exact for the
// widening half), and the strided gather that makes any view contiguous on the device.
#include <array>

#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;
constexpr int gather_dims = 6;

std::string generate_cast(const std::string& config, Target target) {
  Kernel k(kernel_name("cast", config), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = param<U64>(k, "x");
  Reg<U64> y = param<U64>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  if (config == "copy_b32" || config == "copy_b16") {
    Ptr<Global, U32> x32 = global_ptr<U32>(k, x), y32 = global_ptr<U32>(k, y);
    Ptr<Global, U16> x16 = global_ptr<U16>(k, x), y16 = global_ptr<U16>(k, y);
    grid_stride(k, n, [&](Reg<U64> i) {
      if (config == "copy_b32")
        st(k, element(k, y32, i), V<U32>(ld(k, element(k, x32, i))));
      else
        st(k, element(k, y16, i), V<U16>(ld(k, element(k, x16, i))));
    });
    return module_text(k);
  }
  if (config == "gather_b32" || config == "gather_b16") {
    // y[i] = x[sum_d idx_d(i) * s_d]: i split into 6 coordinates (innermost last) over the view's
    // collapsed dims; offsets wrap modulo 2^64, so negative strides work.
    std::array<Reg<U64>, gather_dims - 1> dims;  // dims 1..5 (dim 0 is what remains)
    for (int d = 0; d < gather_dims - 1; ++d) dims[d] = param<U64>(k, "d" + std::to_string(d + 1));
    std::array<Reg<U64>, gather_dims> strides;
    for (int d = 0; d < gather_dims; ++d) strides[d] = bitcast<U64>(k, param<S64>(k, "s" + std::to_string(d)));
    Ptr<Global, U32> x32 = global_ptr<U32>(k, x), y32 = global_ptr<U32>(k, y);
    Ptr<Global, U16> x16 = global_ptr<U16>(k, x), y16 = global_ptr<U16>(k, y);
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
      if (config == "gather_b32")
        st(k, element(k, y32, i), V<U32>(ld(k, element(k, x32, src))));
      else
        st(k, element(k, y16, i), V<U16>(ld(k, element(k, x16, src))));
    });
    return module_text(k);
  }
  auto sep = config.find("_to_");
  Elem from = Elem::f32, to = Elem::f32;
  if (sep == std::string::npos || !parse_elem(config.substr(0, sep), from) || !parse_elem(config.substr(sep + 4), to) ||
      from == to) {
    unknown_config("cast", config);
  }
  Reg<U64> gx = global_ptr<F32>(k, x).base, gy = global_ptr<F32>(k, y).base;
  grid_stride(k, n, [&](Reg<U64> i) { store_f32(k, to, gy, i, load_f32(k, from, gx, i)); });
  return module_text(k);
}

Launch flat_geometry(const std::string&, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, 8192), 1, 1};
  return l;
}

// copy and cast: a contiguous copy or conversion, or a strided view copied by the gather kernel.
std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const DType from = c.inputs[0].dtype(), to = c.output.dtype();
  if (from == to && !c.inputs[0].is_contiguous()) {
    // A strided view copied: the gather kernel over the view's (collapsed) dims.
    std::array<i64, 6> d{}, st{};
    if (!collapse6(c.inputs[0], d, st)) return std::nullopt;
    Plan& pl = steps.add("cast", dtype_size(from) == 4 ? "gather_b32" : "gather_b16", {n_out});
    pl.args.add_ptr(c.inputs[0]);
    pl.args.add_ptr(c.output);
    pl.args.add(static_cast<std::uint64_t>(n_out));
    for (std::size_t i = 1; i < 6; ++i) pl.args.add(static_cast<std::uint64_t>(d[i]));
    for (i64 v : st) pl.args.add(v);
    return steps;
  }
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  std::string config =
      from == to ? (dtype_size(from) == 4 ? "copy_b32" : "copy_b16") : std::string(elem(from)) + "_to_" + elem(to);
  Plan& pl = steps.add("cast", config, {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  return steps;
}

}  // namespace

Generator cast_generator() {
  std::vector<std::string> configs = {"copy_b32", "copy_b16", "gather_b32", "gather_b16"};
  for (Elem from : {Elem::f32, Elem::f16, Elem::bf16}) {
    for (Elem to : {Elem::f32, Elem::f16, Elem::bf16}) {
      if (from != to) configs.push_back(std::string(elem_name(from)) + "_to_" + std::string(elem_name(to)));
    }
  }
  return Generator{"cast",
                   "copy cast",
                   configs,
                   generate_cast,
                   "x: pointer to n elements (contiguous; gather_*: the view's first element), y: pointer to n "
                   "elements, n: u64; gather_* also d1..d5: u64 (the view's dims 1..5 after collapsing to 6, 1 "
                   "where unused; never 0), s0..s5: s64 element strides",
                   "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                   flat_geometry};
}

void register_copy(CudaOps& r) {
  for (OpKind op : {OpKind::copy, OpKind::cast}) r.ops.add(op, OpKernel{plan});
}

}  // namespace trine::cuda::kernels
