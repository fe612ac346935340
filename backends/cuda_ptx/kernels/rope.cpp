// rope with the angle reduced in f64. One configuration per storage dtype of x and y (f32, f16, bf16;
// computed in f32, rounded once), pair form: interleaved (x[2i], x[2i+1]), or halves (x[i],
// x[i + D/2]), where consecutive threads still read consecutive words of each half, and position:
// position_offset alone, or (the *_at configs) plus the s32 a position pointer holds when the kernel
// runs, so that a batch recorded once rotates by each replay's position.
#include <cmath>

#include "backends/cuda_ptx/kernels/common.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int block_threads = 256;

struct RopeConfig {
  std::string_view name;
  Elem e;  // how x and y are stored
  RopePairs pairs;
  bool at = false;  // adds *position (s32, read on the device) to position_offset
};
constexpr RopeConfig configs[] = {{"f32", Elem::f32, RopePairs::interleaved},
                                  {"f16", Elem::f16, RopePairs::interleaved},
                                  {"bf16", Elem::bf16, RopePairs::interleaved},
                                  {"f32_halves", Elem::f32, RopePairs::halves},
                                  {"f16_halves", Elem::f16, RopePairs::halves},
                                  {"bf16_halves", Elem::bf16, RopePairs::halves},
                                  {"f32_at", Elem::f32, RopePairs::interleaved, true},
                                  {"f16_at", Elem::f16, RopePairs::interleaved, true},
                                  {"bf16_at", Elem::bf16, RopePairs::interleaved, true},
                                  {"f32_halves_at", Elem::f32, RopePairs::halves, true},
                                  {"f16_halves_at", Elem::f16, RopePairs::halves, true},
                                  {"bf16_halves_at", Elem::bf16, RopePairs::halves, true}};

std::string generate_rope(std::size_t config, Target target) {
  const RopeConfig& cfg = config_at(configs, config, "rope");
  Kernel k(kernel_name("rope", cfg.name), target);
  k.set_max_threads(block_threads);
  Reg<U64> x = global_ptr<U32>(k, param<U64>(k, "x")).base;
  Reg<U64> y = global_ptr<U32>(k, param<U64>(k, "y")).base;
  Ptr<Global, F64> inv_freq = param_ptr<F64>(k, "inv_freq");
  Reg<U64> pairs = param<U64>(k, "pairs");
  Reg<U64> len = param<U64>(k, "len");
  Reg<U64> half_d = param<U64>(k, "half_d");
  Reg<S64> position_offset = param<S64>(k, "position_offset");
  if (cfg.at) {  // read once per thread, before the loop: one s32 every thread of the grid shares
    Ptr<Global, S32> position = param_ptr<S32>(k, "position");
    position_offset = add(k, position_offset, V<S64>(cvt<S64>(k, ld(k, position))));
  }
  grid_stride(k, pairs, [&](Reg<U64> p) {
    Reg<U64> i = rem(k, p, V<U64>(half_d));
    Reg<U64> row = div(k, p, V<U64>(half_d));
    Reg<S64> l = bitcast<S64>(k, rem(k, row, V<U64>(len)));
    Reg<F64> pos = cvt<F64>(k, add(k, l, V<S64>(position_offset)), Round::rn);
    // The angle in f64 (the frequencies come from the host in f64), reduced there to r in
    // [-pi/4, pi/4] and a quadrant q. sin.approx/cos.approx are not used: their error is absolute
    // (2^-20.9 of 1), so a small angle's sine, and every output it scales, came out hundreds of
    // ulp off on an H100. The Taylor series to x^9 (sine) and x^10 (cosine) are within 2e-9 of
    // them on [-pi/4, pi/4]; in f32 with fma that is about an ulp.
    Reg<F64> angle = mul(k, pos, V<F64>(ld(k, element(k, inv_freq, i))));
    Reg<F64> q = cvt<F64>(k, mul(k, angle, V<F64>(2.0 / M_PI)), Round::rni);
    Reg<F32> r = cvt<F32>(k, fma(k, q, V<F64>(-M_PI / 2.0), V<F64>(angle)), Round::rn);
    Reg<F32> z = mul(k, r, V<F32>(r));
    Reg<F32> sp = fma(k, z, V<F32>(static_cast<float>(1.0 / 362880.0)), V<F32>(static_cast<float>(-1.0 / 5040.0)));
    sp = fma(k, z, V<F32>(sp), V<F32>(static_cast<float>(1.0 / 120.0)));
    sp = fma(k, z, V<F32>(sp), V<F32>(static_cast<float>(-1.0 / 6.0)));
    sp = fma(k, mul(k, r, V<F32>(z)), V<F32>(sp), V<F32>(r));  // r + r^3 (...)
    Reg<F32> cp = fma(k, z, V<F32>(static_cast<float>(-1.0 / 3628800.0)), V<F32>(static_cast<float>(1.0 / 40320.0)));
    cp = fma(k, z, V<F32>(cp), V<F32>(static_cast<float>(-1.0 / 720.0)));
    cp = fma(k, z, V<F32>(cp), V<F32>(static_cast<float>(1.0 / 24.0)));
    cp = fma(k, z, V<F32>(cp), V<F32>(-0.5f));
    cp = fma(k, z, V<F32>(cp), V<F32>(1.0f));
    // Quadrant q mod 4: odd swaps sine and cosine; the sine is negated in quadrants 2 and 3, the
    // cosine in 1 and 2.
    Reg<S64> qi = cvt<S64>(k, q, Round::rni);
    Reg<Pred> odd = setp(k, Cmp::ne, and_(k, qi, V<S64>(std::int64_t{1})), V<S64>(std::int64_t{0}));
    Reg<Pred> neg_s = setp(k, Cmp::ne, and_(k, qi, V<S64>(std::int64_t{2})), V<S64>(std::int64_t{0}));
    Reg<Pred> neg_c = setp(k, Cmp::ne, and_(k, add(k, qi, V<S64>(std::int64_t{1})), V<S64>(std::int64_t{2})),
                           V<S64>(std::int64_t{0}));
    Reg<F32> s0 = selp<F32>(k, V<F32>(cp), V<F32>(sp), odd), c0 = selp<F32>(k, V<F32>(sp), V<F32>(cp), odd);
    Reg<F32> s = selp<F32>(k, V<F32>(neg(k, s0)), V<F32>(s0), neg_s);
    Reg<F32> c = selp<F32>(k, V<F32>(neg(k, c0)), V<F32>(c0), neg_c);
    const bool halves = cfg.pairs == RopePairs::halves;
    // halves: row * D + i = p + row * D/2, and its partner D/2 further
    Reg<U64> first = halves ? fma(k, row, V<U64>(half_d), V<U64>(p)) : shl(k, p, 1u);
    Reg<U64> second = add(k, first, halves ? V<U64>(half_d) : V<U64>(std::uint64_t{1}));
    const bool paired_words = cfg.e == Elem::f32 && !halves;  // one 8-byte access per pair
    std::array<Reg<F32>, 2> v;
    if (paired_words) {
      v = ld_v<2>(k, element(k, Ptr<Global, F32>{x, 0}, first));  // pairs are 8-byte aligned: D is even
    } else {
      v = {load_f32(k, cfg.e, x, first), load_f32(k, cfg.e, x, second)};
    }
    Reg<F32> y0 = fma(k, v[0], V<F32>(c), V<F32>(neg(k, mul(k, v[1], V<F32>(s)))));
    Reg<F32> y1 = fma(k, v[0], V<F32>(s), V<F32>(mul(k, v[1], V<F32>(c))));
    if (paired_words) {
      st_v<2>(k, element(k, Ptr<Global, F32>{y, 0}, first), {y0, y1});
    } else {
      store_f32(k, cfg.e, y, first, y0);
      store_f32(k, cfg.e, y, second, y1);
    }
  });
  return module_text(k);
}

Launch flat_geometry(std::size_t, std::span<const std::int64_t> sizes) {
  Launch l;
  l.block = {block_threads, 1, 1};
  l.grid = {blocks_for(sizes.empty() ? 1 : sizes[0], block_threads, 8192), 1, 1};
  return l;
}

const Generator& rope_generator() {
  static const Generator g{
      "rope",
      {OpKind::rope},
      config_names(configs),
      generate_rope,
      "x: f32* (contiguous [rows, D], 8-byte aligned; f16 / bf16: f16* / bf16*; pair i is x[2i], x[2i+1], in the "
      "*_halves configs x[i], x[i + D/2]), y: as x, inv_freq: f64* [D/2] with inv_freq[i] = base^(-2i/D) computed on "
      "the host in double, pairs: u64 = rows*D/2, len: u64 (L, rows per sequence: row r has position "
      "position_offset + r % L), half_d: u64 = D/2, position_offset: s64; the *_at configs also position: s32* "
      "(one element, read when the kernel runs, added to position_offset)",
      "sizes = {pairs}; block 256; grid min(ceil(pairs/256), 8192), grid-stride",
      flat_geometry,
      true};
  return g;
}

std::optional<Steps> plan(const OpCall& c, int, const Resources& res, bool gathered) {
  if (!contiguous_inputs(c, gathered) || c.inputs[0].dtype() != c.output.dtype()) return std::nullopt;
  const bool at = c.inputs.size() > 1;  // a position tensor, read on the device
  if (at && c.inputs[1].dtype() != DType::i32) return std::nullopt;
  const auto& p = std::get<RopeParams>(c.params);
  const i64 n_out = c.output.numel(), d = c.inputs[0].dim(-1), len = c.inputs[0].dim(-2);
  const CUdeviceptr table = res.kernels ? res.kernels->rope_frequencies(*res.api, res.stream, d, p.base) : 0;
  Steps steps;
  const Elem e = elem_of(c.output.dtype());
  Plan& pl = steps.add(
      rope_generator(),
      config_index(configs, "rope", [&](const RopeConfig& r) { return r.e == e && r.pairs == p.pairs && r.at == at; }),
      {n_out / 2});
  pl.args.add_ptr(c.inputs[0]);
  pl.args.add_ptr(c.output);
  pl.args.add(table);
  pl.args.add(static_cast<std::uint64_t>(n_out / 2));
  pl.args.add(static_cast<std::uint64_t>(len));
  pl.args.add(static_cast<std::uint64_t>(d / 2));
  pl.args.add(static_cast<std::int64_t>(p.position_offset));
  if (at) pl.args.add_ptr(c.inputs[1]);
  return steps;
}

}  // namespace

void register_rope(CudaOps& r) {
  r.generators.push_back(&rope_generator());
  r.ops.add(OpKind::rope, OpKernel{plan, nullptr, false, true});
}

}  // namespace trine::cuda::kernels
