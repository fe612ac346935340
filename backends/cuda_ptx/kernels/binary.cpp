// add/sub/mul/div/minimum/maximum and where(cond, a, b) with numpy broadcasting: the output is
// contiguous, each input is read through element strides over the output's (collapsed, at most 4)
// dims, 0 where it broadcasts. One configuration per op, addressing and storage dtype (f32, f16,
// bf16: a, b and y all in it, computed in f32 and rounded once as stored); a call mixing dtypes
// runs in f32 between casts (backends/widen.hpp).
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
  Elem e = Elem::f32;     // how a, b and y are stored
  Elem cond = Elem::f32;  // where: how the condition is stored (f32, i32, or f16 for both 16-bit formats)
};
// clang-format off
#define TRINE_BINARY(op) \
    {#op "_contig", OpKind::op, false},                  {#op "_bcast", OpKind::op, true}, \
    {#op "_f16_contig", OpKind::op, false, Elem::f16},   {#op "_f16_bcast", OpKind::op, true, Elem::f16}, \
    {#op "_bf16_contig", OpKind::op, false, Elem::bf16}, {#op "_bf16_bcast", OpKind::op, true, Elem::bf16}
#define TRINE_WHERE(cond, c) \
    {"where_" cond "_contig", OpKind::where, false, Elem::f32, c}, \
    {"where_" cond "_bcast", OpKind::where, true, Elem::f32, c}, \
    {"where_" cond "_f16_contig", OpKind::where, false, Elem::f16, c}, \
    {"where_" cond "_f16_bcast", OpKind::where, true, Elem::f16, c}, \
    {"where_" cond "_bf16_contig", OpKind::where, false, Elem::bf16, c}, \
    {"where_" cond "_bf16_bcast", OpKind::where, true, Elem::bf16, c}
constexpr BinaryConfig configs[] = {
    TRINE_BINARY(add), TRINE_BINARY(sub), TRINE_BINARY(mul), TRINE_BINARY(div), TRINE_BINARY(minimum),
    TRINE_BINARY(maximum), TRINE_WHERE("f32", Elem::f32), TRINE_WHERE("i32", Elem::i32), TRINE_WHERE("b16", Elem::f16),
};
#undef TRINE_BINARY
#undef TRINE_WHERE
// clang-format on

std::string generate(std::size_t config, Target target) {
  const BinaryConfig& cfg = config_at(configs, config, "binary");
  const bool where = cfg.op == OpKind::where;
  const std::vector<std::string> inputs =
      where ? std::vector<std::string>{"c", "a", "b"} : std::vector<std::string>{"a", "b"};
  Kernel k(kernel_name("binary", cfg.name), target);
  k.set_max_threads(block_threads);
  std::vector<Reg<U64>> base;
  for (const std::string& name : inputs) base.push_back(global_ptr<U32>(k, param<U64>(k, name)).base);
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
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
    auto value = [&](std::size_t in) { return load_f32(k, cfg.e, base[in], at[in]); };
    Reg<F32> r;
    if (where) {
      // Nonzero: any bit set but a float's sign (-0 is zero, NaN is not).
      Reg<U32> bits;
      if (cfg.cond == Elem::f16) {
        bits = and_(k, cvt<U32>(k, ld(k, element(k, Ptr<Global, U16>{base[0], 0}, at[0]))), V<U32>(0x7fffu));
      } else {
        bits = ld(k, element(k, Ptr<Global, U32>{base[0], 0}, at[0]));
        if (cfg.cond == Elem::f32) bits = and_(k, bits, V<U32>(0x7fffffffu));
      }
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
    store_f32(k, cfg.e, y, i, r);
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
                     "a: f32*, b: f32* (*_f16_* / *_bf16_*: f16* / bf16*; where_*: c: f32*, i32* or (b16) f16* or "
                     "bf16* first, true where nonzero), y: as a (contiguous output), n: u64 output elements, d1, d2, d3: u64 (output dims 1..3 after collapsing to 4 dims, "
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
  // a, b and y of one dtype (where's condition aside); a call mixing them runs between casts
  const std::size_t first_value = c.op == OpKind::where ? 1 : 0;
  for (std::size_t k = first_value; k < c.inputs.size(); ++k)
    if (c.inputs[k].dtype() != c.output.dtype()) return std::nullopt;
  const Elem e = elem_of(c.output.dtype());
  Elem cond = c.op == OpKind::where ? elem_of(c.inputs[0].dtype()) : Elem::f32;
  if (cond == Elem::bf16) cond = Elem::f16;  // the same test on the same bits
  const std::size_t config = config_index(configs, "binary", [&](const BinaryConfig& b) {
    return b.op == c.op && b.broadcast == !dense && b.e == e && b.cond == cond;
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
    pl.args.add(Args::device_ptr(c.output) +
                static_cast<CUdeviceptr>(s * slab * static_cast<i64>(dtype_size(c.output.dtype()))));
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
  for (OpKind op : binary_generator().ops) r.ops.add(op, OpKernel{plan, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
