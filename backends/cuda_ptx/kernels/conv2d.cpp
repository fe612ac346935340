// conv2d (NCHW, cross-correlation) as an implicit GEMM on the tiled core, one group per grid.z:
// rows are the group's filters, columns the (image, p, q) outputs, and the reduced dim (c, r, s);
// the input element for (c, r, s) x (image, p, q) is computed, never copied into an im2col buffer.
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

// e: how x, w, the bias and y are stored (f32, or f16 / bf16 widened as staged and y rounded once as
// written; the sums run in f32 either way); the 64x64 tile.
struct Conv2dConfig {
  std::string_view name;
  Elem e;
};
constexpr Conv2dConfig configs[] = {{"f32_64", Elem::f32}, {"f16_64", Elem::f16}, {"bf16_64", Elem::bf16}};

std::string generate(std::size_t config, Target target) {
  const Conv2dConfig& cfg = config_at(configs, config, "conv2d");
  TileShape t{64, 64, 16, 4, 4};
  Kernel k(kernel_name("conv2d", cfg.name), target);
  // Two CTAs per SM: without a floor, ptxas on sm_120 caps registers low enough to spill here.
  k.set_max_threads(t.threads(), 2);
  Reg<U64> x = global_ptr<F32>(k, param<U64>(k, "x")).base;
  Reg<U64> w = global_ptr<F32>(k, param<U64>(k, "w")).base;
  Reg<U64> bias_raw = param<U64>(k, "bias");
  Reg<U64> bias = global_ptr<F32>(k, bias_raw).base;
  Reg<U64> y = global_ptr<F32>(k, param<U64>(k, "y")).base;
  const Elem e = cfg.e;
  auto u32 = [&](const char* name) { return param<U32>(k, name); };
  Reg<U32> batch = u32("n"), channels = u32("c"), height = u32("h"), width = u32("w_in"), filters = u32("k");
  Reg<U32> out_h = u32("p"), out_w = u32("q"), kh = u32("r"), kw = u32("s");
  Reg<U32> stride_h = u32("stride_h"), stride_w = u32("stride_w"), pad_h = u32("pad_h"), pad_w = u32("pad_w");
  Reg<U32> dil_h = u32("dil_h"), dil_w = u32("dil_w"), groups = u32("groups");
  Reg<Pred> has_bias = setp(k, Cmp::ne, bias_raw, V<U64>(0u));

  Reg<U32> g = special(k, Special::ctaid_z);
  Reg<U32> cg = div(k, channels, V<U32>(groups));  // channels per group
  Reg<U32> kg = div(k, filters, V<U32>(groups));   // filters per group
  Reg<U32> rs = mul(k, kh, V<U32>(kw));
  Reg<U32> krs = mul(k, cg, V<U32>(rs));  // GEMM reduced length
  Reg<U32> pq = mul(k, out_h, V<U32>(out_w));
  Reg<U32> cols = mul(k, batch, V<U32>(pq));  // GEMM columns
  Reg<U32> m0 = mul(k, special(k, Special::ctaid_y), V<U32>(std::uint32_t(t.bm)));
  Reg<U32> n0 = mul(k, special(k, Special::ctaid_x), V<U32>(std::uint32_t(t.bn)));
  Reg<U32> first_filter = mul(k, g, V<U32>(kg));
  Reg<U32> first_channel = mul(k, g, V<U32>(cg));

  gemm_tiled(
      k, t, kg, cols, krs, m0, n0,
      [&](Reg<U32> row, Reg<U32> col, Reg<Pred> inside) {  // w[g*kg + row][col], rows of length krs
        Reg<U64> idx =
            fma(k, to_u64(k, add(k, first_filter, V<U32>(row))), V<U64>(to_u64(k, krs)), V<U64>(to_u64(k, col)));
        return load_f32_if(k, e, w, idx, inside);
      },
      [&](Reg<U32> row, Reg<U32> col, Reg<Pred> inside) {  // x[image][g*cg + c][h][w] for (c, r, s) x (image, p, q)
        Reg<U32> c = div(k, row, V<U32>(rs));
        Reg<U32> rem_rs = rem(k, row, V<U32>(rs));
        Reg<U32> r = div(k, rem_rs, V<U32>(kw));
        Reg<U32> s = rem(k, rem_rs, V<U32>(kw));
        Reg<U32> image = div(k, col, V<U32>(pq));
        Reg<U32> rem_pq = rem(k, col, V<U32>(pq));
        Reg<U32> p = div(k, rem_pq, V<U32>(out_w));
        Reg<U32> q = rem(k, rem_pq, V<U32>(out_w));
        // Rows above or left of the image wrap to huge unsigned values: one compare rejects both sides.
        Reg<U32> hi = sub(k, fma(k, p, V<U32>(stride_h), V<U32>(mul(k, r, V<U32>(dil_h)))), V<U32>(pad_h));
        Reg<U32> wi = sub(k, fma(k, q, V<U32>(stride_w), V<U32>(mul(k, s, V<U32>(dil_w)))), V<U32>(pad_w));
        Reg<Pred> in_image =
            and_(k, setp(k, Cmp::lt, hi, V<U32>(height)), V<Pred>(setp(k, Cmp::lt, wi, V<U32>(width))));
        Reg<U32> plane = fma(k, image, V<U32>(channels), V<U32>(add(k, first_channel, V<U32>(c))));
        Reg<U64> line = to_u64(k, fma(k, plane, V<U32>(height), V<U32>(hi)));
        Reg<U64> idx = fma(k, line, V<U64>(to_u64(k, width)), V<U64>(to_u64(k, wi)));
        return load_f32_if(k, e, x, idx, and_(k, inside, V<Pred>(in_image)));
      },
      [&](Reg<U32> row, Reg<U32> col, Reg<F32> v) {  // y[image][g*kg + row][p][q] (+ bias)
        Reg<U32> filter = add(k, first_filter, V<U32>(row));
        Reg<F32> b = load_f32_if(k, e, bias, to_u64(k, filter), has_bias);
        Reg<U32> image = div(k, col, V<U32>(pq));
        Reg<U32> rem_pq = rem(k, col, V<U32>(pq));
        Reg<U64> plane = to_u64(k, fma(k, image, V<U32>(filters), V<U32>(filter)));
        Reg<U64> idx = fma(k, plane, V<U64>(to_u64(k, pq)), V<U64>(to_u64(k, rem_pq)));
        store_f32(k, e, y, idx, add(k, v, V<F32>(b)));
      });
  return module_text(k);
}

Launch geometry(std::size_t, std::span<const std::int64_t> s) {
  // sizes = {n, k/groups, p*q, groups}
  Launch l;
  l.block = {256, 1, 1};
  l.grid = {blocks_for(size_at(s, 0) * size_at(s, 2), 64, max_grid_x), blocks_for(size_at(s, 1), 64),
            std::uint32_t(size_at(s, 3))};
  return l;
}

const Generator& conv2d_generator() {
  static const Generator g{"conv2d",
                           {OpKind::conv2d},
                           config_names(configs),
                           generate,
                           "x: f32* [n, c, h, w], w: f32* [k, c/groups, r, s], bias: f32* [k] or 0, y: f32* [n, k, p, "
                           "q] (all contiguous; f16_64, bf16_64: all stored so), then u32: n, c, h, w_in, k, p, q, r, s, stride_h, stride_w, pad_h, "
                           "pad_w, dil_h, dil_w, groups; needs n*c*h and n*p*q below 2^32",
                           "sizes = {n, k/groups, p*q, groups}; block 256 (64x64x16 tile, 4x4 per thread); grid "
                           "(ceil(n*p*q/64), ceil((k/groups)/64), groups)",
                           geometry};
  return g;
}

std::optional<Steps> plan(const OpCall& c, int, const Resources&, bool gathered) {
  if (!contiguous_inputs(c, gathered)) return std::nullopt;
  const auto& p = std::get<Conv2dParams>(c.params);
  const Shape& xs = c.inputs[0].shape();
  const Shape& ws = c.inputs[1].shape();
  const Shape& os = c.output.shape();
  if (xs[0] * xs[1] * xs[2] > UINT32_MAX || os[0] * os[2] * os[3] > UINT32_MAX) return std::nullopt;
  // grid.y holds the filters of a group in blocks of 64, grid.z the groups
  if (ws[0] / p.groups > max_grid_yz * 64 || p.groups > max_grid_yz) return std::nullopt;
  // x, w, the bias and y stored alike; other mixes run between casts (widen.hpp)
  const DType dt = c.inputs[0].dtype();
  for (std::size_t i = 1; i < c.inputs.size(); ++i)
    if (c.inputs[i].defined() && c.inputs[i].dtype() != dt) return std::nullopt;
  if (c.output.dtype() != dt) return std::nullopt;
  const Elem elem = elem_of(dt);
  const std::size_t config = config_index(configs, "conv2d", [&](const Conv2dConfig& g) { return g.e == elem; });
  Steps steps;
  Plan& pl = steps.add(conv2d_generator(), config, {xs[0], ws[0] / p.groups, os[2] * os[3], p.groups});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.inputs[1]);
  pl.args.add_ptr_or_null(c, 2);
  pl.args.add_ptr(c.output);
  for (i64 v : {xs[0], xs[1], xs[2], xs[3], ws[0], os[2], os[3], ws[2], ws[3], p.stride.h, p.stride.w, p.padding.h,
                p.padding.w, p.dilation.h, p.dilation.w, p.groups})
    pl.args.add(static_cast<std::uint32_t>(v));
  return steps;
}

}  // namespace

void register_conv2d(CudaOps& r) {
  r.generators.push_back(&conv2d_generator());
  r.ops.add(OpKind::conv2d, OpKernel{plan, nullptr, false, true});  // f32, f16 or bf16 alike
}

}  // namespace trine::cuda::kernels
