// add/sub/mul/div/minimum/maximum and where(cond, a, b) with numpy broadcasting: the output is
// contiguous, each input is read through element strides over the output's (collapsed, at most 4)
// dims, 0 where it broadcasts.
#include <algorithm>
#include <vector>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;

struct BinaryConfig {
  std::string_view name;
  OpKind op;              // add, sub, mul, div, minimum, maximum, or where
  bool broadcast;         // read through the strides (bcast), or each input at i (contig)
  Elem cond = Elem::f32;  // where: how the condition is stored (f32 or i32)
};
constexpr BinaryConfig configs[] = {
    {"add_contig", OpKind::add, false},
    {"add_bcast", OpKind::add, true},
    {"sub_contig", OpKind::sub, false},
    {"sub_bcast", OpKind::sub, true},
    {"mul_contig", OpKind::mul, false},
    {"mul_bcast", OpKind::mul, true},
    {"div_contig", OpKind::div, false},
    {"div_bcast", OpKind::div, true},
    {"minimum_contig", OpKind::minimum, false},
    {"minimum_bcast", OpKind::minimum, true},
    {"maximum_contig", OpKind::maximum, false},
    {"maximum_bcast", OpKind::maximum, true},
    {"where_f32_contig", OpKind::where, false, Elem::f32},
    {"where_f32_bcast", OpKind::where, true, Elem::f32},
    {"where_i32_contig", OpKind::where, false, Elem::i32},
    {"where_i32_bcast", OpKind::where, true, Elem::i32},
};

std::string generate(std::size_t config, Target target) {
  const BinaryConfig& cfg = config_at(configs, config, "binary");
  const bool where = cfg.op == OpKind::where;
  const std::vector<std::string> inputs =
      where ? std::vector<std::string>{"c", "a", "b"} : std::vector<std::string>{"a", "b"};
  Kernel k(kernel_name("binary", cfg.name), target);
  k.set_max_threads(block_threads);
  std::vector<Reg<U64>> base;
  for (const std::string& name : inputs) base.push_back(global_ptr<U32>(k, param<U64>(k, name)).base);
  Ptr<Global, F32> y = param_ptr<F32>(k, "y");
  Reg<U64> n = param<U64>(k, "n");
  std::array<Reg<U64>, 3> dims;  // output dims 1..3 (dim 0 is what remains)
  for (int d = 0; d < 3; ++d) dims[d] = param<U64>(k, "d" + std::to_string(d + 1));
  std::vector<std::array<Reg<U64>, 4>> strides(inputs.size());  // two's complement element strides
  for (std::size_t in = 0; in < inputs.size(); ++in)
    for (int d = 0; d < 4; ++d) strides[in][d] = bitcast<U64>(k, param<S64>(k, inputs[in] + "_s" + std::to_string(d)));
  grid_stride(k, n, [&](Reg<U64> i) {
    std::vector<Reg<U64>> at(inputs.size(), i);
    if (cfg.broadcast) {
      // i -> (i0, i1, i2, i3), innermost first; offsets wrap modulo 2^64, so negative strides work.
      Reg<U64> rest = i;
      for (auto& a : at) a = mov<U64>(k, 0u);
      for (int d = 3; d >= 0; --d) {
        Reg<U64> idx = rest;
        if (d > 0) {
          idx = rem(k, rest, V<U64>(dims[d - 1]));
          rest = div(k, rest, V<U64>(dims[d - 1]));
        }
        for (std::size_t in = 0; in < inputs.size(); ++in) at[in] = fma(k, idx, V<U64>(strides[in][d]), V<U64>(at[in]));
      }
    }
    auto value = [&](std::size_t in) { return ld(k, element(k, Ptr<Global, F32>{base[in], 0}, at[in])); };
    Reg<F32> r;
    if (where) {
      // Nonzero: any bit set but an f32's sign (-0 is zero, NaN is not).
      Reg<U32> bits = ld(k, element(k, Ptr<Global, U32>{base[0], 0}, at[0]));
      if (cfg.cond == Elem::f32) bits = and_(k, bits, V<U32>(0x7fffffffu));
      r = selp<F32>(k, value(1), value(2), setp(k, Cmp::ne, bits, V<U32>(0u)));
    } else {
      Reg<F32> va = value(0), vb = value(1);
      r = cfg.op == OpKind::add       ? add(k, va, V<F32>(vb))
          : cfg.op == OpKind::sub     ? sub(k, va, V<F32>(vb))
          : cfg.op == OpKind::mul     ? mul(k, va, V<F32>(vb))
          : cfg.op == OpKind::div     ? div(k, va, V<F32>(vb))  // div.rn: IEEE, x/0 = inf, 0/0 = NaN
          : cfg.op == OpKind::minimum ? min_nan(k, va, vb)
                                      : max_nan(k, va, vb);  // maximum
    }
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
  static const Generator g = [] {
    std::vector<OpKind> ops;
    for (const BinaryConfig& c : configs)
      if (std::find(ops.begin(), ops.end(), c.op) == ops.end()) ops.push_back(c.op);
    return Generator{"binary",
                     ops,
                     config_names(configs),
                     generate,
                     "a: f32*, b: f32* (where_*: c: f32* or i32* first, true where nonzero), y: f32* (contiguous "
                     "output), n: u64 output elements, d1, d2, d3: u64 (output dims 1..3 after collapsing to 4 dims, "
                     "1 where unused; never 0), then per input (c_s0..c_s3,) a_s0..a_s3, b_s0..b_s3: s64 element "
                     "strides (0 where broadcast); *_contig reads each input at i and ignores the dims and strides; "
                     "minimum/maximum give NaN when either input is NaN",
                     "sizes = {n}; block 256; grid min(ceil(n/256), 8192), grid-stride",
                     geometry,
                     true};
  }();
  return g;
}

// The kernel addresses the innermost 4 collapsed dims; an output with more is written one slab per
// index of the dims before them, each input and the output moved to that index's element.
std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool) {
  const i64 n_out = c.output.numel();
  Steps steps;
  if (n_out == 0) return steps;
  const std::vector<BroadcastDim> dims = broadcast_dims(c);
  constexpr std::size_t per_launch = 4;
  const std::size_t lead = dims.size() > per_launch ? dims.size() - per_launch : 0;
  std::array<i64, per_launch> d{1, 1, 1, 1};
  std::array<std::array<i64, per_launch>, 3> strides{};
  for (std::size_t i = lead; i < dims.size(); ++i) {
    const std::size_t at = per_launch - (dims.size() - i);
    d[at] = dims[i].size;
    for (std::size_t k = 0; k < 3; ++k) strides[k][at] = dims[i].stride[k];
  }
  i64 slab = 1, slabs = 1;
  for (i64 v : d) slab *= v;
  for (std::size_t i = 0; i < lead; ++i) slabs *= dims[i].size;
  bool dense = contiguous_inputs(c);
  for (const Tensor& t : c.inputs) dense = dense && t.shape() == c.output.shape();
  const Elem cond = c.op == OpKind::where ? elem_of(c.inputs[0].dtype()) : Elem::f32;
  const std::size_t config = config_index(configs, "binary", [&](const BinaryConfig& b) {
    return b.op == c.op && b.broadcast == !dense && b.cond == cond;
  });
  for (i64 s = 0; s < slabs; ++s) {
    std::array<i64, 3> offset{};
    i64 rest = s;
    for (std::size_t i = lead; i-- > 0;) {
      const i64 idx = rest % dims[i].size;
      rest /= dims[i].size;
      for (std::size_t k = 0; k < 3; ++k) offset[k] += idx * dims[i].stride[k];
    }
    Plan& pl = steps.add(binary_generator(), config, {slab});
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      const Tensor& t = c.inputs[k];
      pl.args.add(Args::device_ptr(t) + static_cast<CUdeviceptr>(offset[k] * static_cast<i64>(dtype_size(t.dtype()))));
    }
    pl.args.add(Args::device_ptr(c.output) + static_cast<CUdeviceptr>(s * slab * 4));
    pl.args.add(static_cast<std::uint64_t>(slab));
    for (std::size_t i = 1; i < per_launch; ++i) pl.args.add(static_cast<std::uint64_t>(d[i]));
    for (std::size_t in = 0; in < c.inputs.size(); ++in)
      for (i64 v : strides[in]) pl.args.add(v);
  }
  return steps;
}

}  // namespace

void register_binary(CudaOps& r) {
  r.generators.push_back(&binary_generator());
  for (OpKind op : binary_generator().ops) r.ops.add(op, OpKernel{plan});
}

}  // namespace trine::cuda::kernels
