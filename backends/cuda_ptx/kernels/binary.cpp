// add/sub/mul/div with numpy broadcasting: the output is contiguous, each input is read through
// element strides over the output's (collapsed, at most 4) dims, 0 where it broadcasts.
#include <vector>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;

struct BinaryConfig {
  std::string_view name;
  OpKind op;       // add, sub, mul or div
  bool broadcast;  // read through the strides (bcast), or a[i], b[i] (contig)
};
constexpr BinaryConfig configs[] = {
    {"add_contig", OpKind::add, false}, {"add_bcast", OpKind::add, true},  //
    {"sub_contig", OpKind::sub, false}, {"sub_bcast", OpKind::sub, true},  //
    {"mul_contig", OpKind::mul, false}, {"mul_bcast", OpKind::mul, true},  //
    {"div_contig", OpKind::div, false}, {"div_bcast", OpKind::div, true},
};

std::string generate(std::size_t config, Target target) {
  const BinaryConfig& cfg = config_at(configs, config, "binary");
  Kernel k(kernel_name("binary", cfg.name), target);
  k.set_max_threads(block_threads);
  Ptr<Global, F32> a = param_ptr<F32>(k, "a");
  Ptr<Global, F32> b = param_ptr<F32>(k, "b");
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  std::array<Reg<U64>, 3> dims;  // output dims 1..3 (dim 0 is what remains)
  for (int d = 0; d < 3; ++d) dims[d] = param<U64>(k, "d" + std::to_string(d + 1));
  std::array<Reg<U64>, 4> a_strides, b_strides;  // two's complement element strides
  for (int d = 0; d < 4; ++d) a_strides[d] = bitcast<U64>(k, param<S64>(k, "a_s" + std::to_string(d)));
  for (int d = 0; d < 4; ++d) b_strides[d] = bitcast<U64>(k, param<S64>(k, "b_s" + std::to_string(d)));
  grid_stride(k, n, [&](Reg<U64> i) {
    Reg<U64> ia = i, ib = i;
    if (cfg.broadcast) {
      // i -> (i0, i1, i2, i3), innermost first; offsets wrap modulo 2^64, so negative strides work.
      Reg<U64> rest = i;
      ia = mov<U64>(k, 0u);
      ib = mov<U64>(k, 0u);
      for (int d = 3; d >= 0; --d) {
        Reg<U64> idx = rest;
        if (d > 0) {
          idx = rem(k, rest, V<U64>(dims[d - 1]));
          rest = div(k, rest, V<U64>(dims[d - 1]));
        }
        ia = fma(k, idx, V<U64>(a_strides[d]), V<U64>(ia));
        ib = fma(k, idx, V<U64>(b_strides[d]), V<U64>(ib));
      }
    }
    Reg<F32> va = ld(k, element(k, a, ia));
    Reg<F32> vb = ld(k, element(k, b, ib));
    Reg<F32> r = cfg.op == OpKind::add   ? add(k, va, V<F32>(vb))
                 : cfg.op == OpKind::sub ? sub(k, va, V<F32>(vb))
                 : cfg.op == OpKind::mul ? mul(k, va, V<F32>(vb))
                                         : div(k, va, V<F32>(vb));  // div.rn: IEEE, x/0 = inf, 0/0 = NaN
    st(k, element(k, y, i), V<F32>(r));
  });
  return module_text(k);
}

Launch geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, 8192), 1, 1};
  return l;
}

const Generator& binary_generator() {
  static const Generator g{"binary",
                           {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div},
                           config_names(configs),
                           generate,
                           "a: f32*, b: f32*, y: f32* (contiguous output), n: u64 output elements, d1, d2, d3: u64 "
                           "(output dims 1..3 after collapsing to 4 dims, 1 where unused; never 0), a_s0..a_s3, "
                           "b_s0..b_s3: s64 element strides (0 where broadcast); *_contig reads a[i], b[i] and ignores "
                           "the dims and strides",
                           "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                           geometry,
                           true};
  return g;
}

std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool) {
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  std::array<i64, 4> d{}, sa{}, sb{};
  if (!collapse4(c, d, sa, sb)) return std::nullopt;
  const bool dense =
      c.inputs[0].shape() == c.output.shape() && c.inputs[1].shape() == c.output.shape() && contiguous_inputs(c);
  const std::size_t config =
      config_index(configs, "binary", [&](const BinaryConfig& b) { return b.op == c.op && b.broadcast == !dense; });
  Plan& pl = steps.add(binary_generator(), config, {n_out});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.inputs[1]);
  pl.args.add_ptr(c.output);
  pl.args.add(static_cast<std::uint64_t>(n_out));
  for (int i = 1; i < 4; ++i) pl.args.add(static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]));
  for (i64 s : sa) pl.args.add(s);
  for (i64 s : sb) pl.args.add(s);
  return steps;
}

}  // namespace

void register_binary(CudaOps& r) {
  r.generators.push_back(&binary_generator());
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) r.ops.add(op, OpKernel{plan});
}

}  // namespace trine::cuda::kernels
