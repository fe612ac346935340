// matmul, simple (one thread per output) and shared-memory tiled with register blocking. Both read
// A and B through element strides, so transposes and batch broadcasting (stride 0) need no copies;
// the batch is grid.z, split into an outer and an inner index with a stride pair for each input.
// matmul's plan picks one of them or the tensor-core kernel (matmul_mma.cpp).
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"

namespace trine::cuda::kernels {

MatmulOperands load_matmul_operands(Kernel& k, Elem c) {
  MatmulOperands o;
  o.c_elem = c;
  o.a = global_ptr<F32>(k, param<U64>(k, "a")).base;
  o.b = global_ptr<F32>(k, param<U64>(k, "b")).base;
  o.c = param_ptr<F32>(k, "c");
  o.m = param<U32>(k, "m");
  o.n = param<U32>(k, "n");
  o.kdim = param<U32>(k, "k");
  auto stride = [&](const char* name) { return bitcast<U64>(k, param<S64>(k, name)); };
  o.a_row = stride("sa_m");
  o.a_col = stride("sa_k");
  o.b_row = stride("sb_k");
  o.b_col = stride("sb_n");
  Reg<U32> batch_inner = param<U32>(k, "batch_inner");
  Reg<U64> a_outer = stride("sa_outer"), a_inner = stride("sa_inner");
  Reg<U64> b_outer = stride("sb_outer"), b_inner = stride("sb_inner");
  Reg<U32> z = special(k, Special::ctaid_z);
  Reg<U64> zo = to_u64(k, div(k, z, V<U32>(batch_inner)));
  Reg<U64> zi = to_u64(k, rem(k, z, V<U32>(batch_inner)));
  o.a_batch = fma(k, zo, V<U64>(a_outer), V<U64>(mul(k, zi, V<U64>(a_inner))));
  o.b_batch = fma(k, zo, V<U64>(b_outer), V<U64>(mul(k, zi, V<U64>(b_inner))));
  o.c_batch = mul(k, to_u64(k, z), V<U64>(mul_wide(k, o.m, V<U32>(o.n))));
  return o;
}

Reg<U64> matmul_offset(Kernel& k, Reg<U64> start, Reg<U32> i, Reg<U64> si, Reg<U32> j, Reg<U64> sj) {
  return fma(k, to_u64(k, i), V<U64>(si), V<U64>(fma(k, to_u64(k, j), V<U64>(sj), V<U64>(start))));
}

void matmul_store(Kernel& k, const MatmulOperands& o, Reg<U32> row, Reg<U32> col, Reg<F32> v) {
  Reg<U64> idx = add(k, o.c_batch, V<U64>(add(k, mul_wide(k, row, V<U32>(o.n)), V<U64>(to_u64(k, col)))));
  if (o.c_elem == Elem::f32)
    st(k, element(k, o.c, idx), V<F32>(v));
  else
    store_f32(k, o.c_elem, o.c.base, idx, v);
}

void matmul_tiled_body(Kernel& k, const TileShape& t, Elem ea, Elem eb, Elem ec) {
  k.set_max_threads(t.threads());
  MatmulOperands o = load_matmul_operands(k, ec);
  Reg<U32> m0 = mul(k, special(k, Special::ctaid_y), V<U32>(std::uint32_t(t.bm)));
  Reg<U32> n0 = mul(k, special(k, Special::ctaid_x), V<U32>(std::uint32_t(t.bn)));
  gemm_tiled(
      k, t, o.m, o.n, o.kdim, m0, n0,
      [&](Reg<U32> row, Reg<U32> col, Reg<Pred> inside) {
        return load_f32_if(k, ea, o.a, matmul_offset(k, o.a_batch, row, o.a_row, col, o.a_col), inside);
      },
      [&](Reg<U32> row, Reg<U32> col, Reg<Pred> inside) {
        return load_f32_if(k, eb, o.b, matmul_offset(k, o.b_batch, row, o.b_row, col, o.b_col), inside);
      },
      [&](Reg<U32> row, Reg<U32> col, Reg<F32> v) { matmul_store(k, o, row, col, v); });
}

namespace {

struct SimpleConfig {
  std::string_view name;
  Elem a, b;  // how A and B are stored
};
constexpr SimpleConfig simple_configs[] = {
    {"f32_f32", Elem::f32, Elem::f32},
    {"f16_f16", Elem::f16, Elem::f16},
    {"bf16_bf16", Elem::bf16, Elem::bf16},
    {"f32_bf16", Elem::f32, Elem::bf16},
};

struct TiledConfig {
  std::string_view name;
  Elem a, b;  // how A and B are stored
  int tile;   // 64 or 128 (tile_shape)
};
constexpr TiledConfig tiled_configs[] = {
    {"f32_f32_64", Elem::f32, Elem::f32, 64},     {"f16_f16_64", Elem::f16, Elem::f16, 64},
    {"bf16_bf16_64", Elem::bf16, Elem::bf16, 64}, {"f32_f32_128", Elem::f32, Elem::f32, 128},
    {"f32_f16_64", Elem::f32, Elem::f16, 64},     {"f16_f32_64", Elem::f16, Elem::f32, 64},
    {"f32_bf16_64", Elem::f32, Elem::bf16, 64},   {"bf16_f32_64", Elem::bf16, Elem::f32, 64},
    {"f16_bf16_64", Elem::f16, Elem::bf16, 64},   {"bf16_f16_64", Elem::bf16, Elem::f16, 64},
};

std::string generate_simple(std::size_t config, Target target) {
  const SimpleConfig& cfg = config_at(simple_configs, config, "matmul_simple");
  Kernel k(kernel_name("matmul_simple", cfg.name), target);
  k.set_max_block({16, 16, 1});
  MatmulOperands o = load_matmul_operands(k);
  Reg<U32> col =
      fma(k, special(k, Special::ctaid_x), V<U32>(special(k, Special::ntid_x)), V<U32>(special(k, Special::tid_x)));
  Reg<U32> row =
      fma(k, special(k, Special::ctaid_y), V<U32>(special(k, Special::ntid_y)), V<U32>(special(k, Special::tid_y)));
  Label done = k.new_label();
  Reg<Pred> inside = and_(k, setp(k, Cmp::lt, row, V<U32>(o.m)), V<Pred>(setp(k, Cmp::lt, col, V<U32>(o.n))));
  bra_if(k, inside, done, true);
  Reg<F32> acc = mov<F32>(k, 0.0f);
  for_range<U32>(k, 0u, o.kdim, 1u, [&](Reg<U32> kk) {
    Reg<F32> av = load_f32(k, cfg.a, o.a, matmul_offset(k, o.a_batch, row, o.a_row, kk, o.a_col));
    Reg<F32> bv = load_f32(k, cfg.b, o.b, matmul_offset(k, o.b_batch, kk, o.b_row, col, o.b_col));
    fma_to(k, acc, av, V<F32>(bv));
  });
  matmul_store(k, o, row, col, acc);
  place(k, done);
  return module_text(k);
}

TileShape tile_shape(int tile) { return tile == 128 ? TileShape{128, 128, 8, 8, 8} : TileShape{64, 64, 16, 4, 4}; }

std::string generate_tiled(std::size_t config, Target target) {
  const TiledConfig& cfg = config_at(tiled_configs, config, "matmul_tiled");
  Kernel k(kernel_name("matmul_tiled", cfg.name), target);
  matmul_tiled_body(k, tile_shape(cfg.tile), cfg.a, cfg.b);
  return module_text(k);
}

Launch geometry_simple(std::size_t, std::span<const std::int64_t> s) {
  // sizes = {batch, m, n, k}
  Launch l;
  l.block = {16, 16, 1};
  l.grid = {blocks_for(size_at(s, 2), 16, max_grid_x), blocks_for(size_at(s, 1), 16), std::uint32_t(size_at(s, 0))};
  return l;
}

Launch geometry_tiled(std::size_t config, std::span<const std::int64_t> s) {
  TileShape t = tile_shape(config_at(tiled_configs, config, "matmul_tiled").tile);
  Launch l;
  l.block = {std::uint32_t(t.threads()), 1, 1};
  l.grid = {blocks_for(size_at(s, 2), t.bn, max_grid_x), blocks_for(size_at(s, 1), t.bm), std::uint32_t(size_at(s, 0))};
  return l;
}

const Generator& simple_generator() {
  static const Generator g{
      "matmul_simple",
      {OpKind::matmul},
      config_names(simple_configs),
      generate_simple,
      matmul_params,
      "sizes = {batch, m, n, k}; block (16, 16); grid (ceil(n/16), ceil(m/16), batch); batch <= 65535",
      geometry_simple};
  return g;
}

const Generator& tiled_generator() {
  static const Generator g{"matmul_tiled",
                           {OpKind::matmul},
                           config_names(tiled_configs),
                           generate_tiled,
                           matmul_params,
                           "sizes = {batch, m, n, k}; _64: block 256, tile 64x64x16, 4x4 per thread; _128: block 256, "
                           "tile 128x128x8, 8x8 per thread; grid (ceil(n/tile), ceil(m/tile), batch); batch <= 65535",
                           geometry_tiled};
  return g;
}

// The matmul kernel for these dtypes, layout and size: tensor cores for f16/bf16 pairs laid out for
// ldmatrix on sm_80+, the simple form for outputs of one 16x16 block where it ships for the pair,
// the tiled form otherwise (every dtype pair: each operand is widened to f32 as it is staged). An f32
// C from each; a 16-bit C (the inputs' own dtype) from the tensor-core kernel's _c16 configs only:
// nullopt for the rest, which then write an f32 temporary and a cast (widen.hpp).
std::optional<std::pair<const Generator*, std::size_t>> matmul_kernel(DType a, DType b, DType c, i64 sa_k, i64 sb_n,
                                                                      int sm, bool aligned, i64 m, i64 n) {
  const Elem ea = elem_of(a), eb = elem_of(b);
  const bool mma = a == b && a != DType::f32 && sm >= 80 && sa_k == 1 && sb_n == 1 && aligned;
  if (c != DType::f32) {
    if (mma && c == a) return std::pair{&matmul_mma_generator(), matmul_mma_config(ea, ea)};
    return std::nullopt;
  }
  if (mma) return std::pair{&matmul_mma_generator(), matmul_mma_config(ea)};
  if (m <= 16 && n <= 16) {
    if (auto simple = find_config(simple_configs, [&](const SimpleConfig& c) { return c.a == ea && c.b == eb; }))
      return std::pair{&simple_generator(), *simple};
  }
  return std::pair{&tiled_generator(), config_index(tiled_configs, "matmul_tiled", [&](const TiledConfig& c) {
                     return c.a == ea && c.b == eb && c.tile == 64;
                   })};
}

// The output's batch dims with each operand's element strides (0 where it broadcasts), size-1
// dims dropped and neighbours merged where both operands step over the inner one whole (the
// output, contiguous, always does): outermost first. Any rank of batch dims reduces to these.
struct BatchDims {
  std::vector<i64> size, sa, sb;
};
BatchDims batch_dims(const Tensor& a, const Tensor& b, const Shape& os, int nb) {
  auto stride = [&](const Tensor& t, int out_dim) -> i64 {
    const int d = out_dim - (nb - (t.rank() - 2));
    return d >= 0 && t.shape()[d] != 1 ? t.strides()[d] : 0;
  };
  BatchDims bd;
  for (int i = 0; i < nb; ++i) {
    if (os[i] == 1) continue;
    const i64 sa = stride(a, i), sb = stride(b, i);
    if (!bd.size.empty() && bd.sa.back() == sa * os[i] && bd.sb.back() == sb * os[i]) {
      bd.size.back() *= os[i];
      bd.sa.back() = sa;
      bd.sb.back() = sb;
    } else {
      bd.size.push_back(os[i]);
      bd.sa.push_back(sa);
      bd.sb.push_back(sb);
    }
  }
  return bd;
}

// A launch addresses two batch dims (grid.z = outer * inner, at most 65535) and at most 65535
// blocks of rows (grid.y; 16 rows a block at the least): the plan launches once per index of the
// batch dims before those two, per chunk of them past grid.z, and per chunk of rows past grid.y,
// each launch's a, b and c moved to its first element.
constexpr i64 rows_per_launch = max_grid_yz * 16;

std::optional<Steps> plan(const OpCall& c, int sm, const Resources&, bool gathered) {
  if (dtype_is_quantized(c.inputs[1].dtype())) return plan_quantized(c, gathered);
  const auto& p = std::get<MatmulParams>(c.params);
  const Tensor& a = c.inputs[0];
  const Tensor& b = c.inputs[1];
  const Shape& os = c.output.shape();
  const int orank = os.rank(), nb = orank - 2;
  const i64 m = os[orank - 2], n = os[orank - 1], k = p.trans_a ? a.dim(-2) : a.dim(-1);
  Steps steps;
  if (c.output.numel() == 0) return steps;
  if (k == 0) {
    steps.zero_output = true;
    return steps;
  }
  if (n > UINT32_MAX || k > UINT32_MAX) return std::nullopt;
  const BatchDims bd = batch_dims(a, b, os, nb);
  const std::size_t r = bd.size.size();
  const i64 inner_all = r >= 1 ? bd.size[r - 1] : 1, outer_all = r >= 2 ? bd.size[r - 2] : 1;
  const i64 sa_inner = r >= 1 ? bd.sa[r - 1] : 0, sb_inner = r >= 1 ? bd.sb[r - 1] : 0;
  const i64 sa_outer = r >= 2 ? bd.sa[r - 2] : 0, sb_outer = r >= 2 ? bd.sb[r - 2] : 0;
  // Row chunks take one batch element a launch (c's batch stride is the launch's m * n).
  const bool row_chunks = m > rows_per_launch;
  const i64 inner_chunk = row_chunks ? 1 : std::min(inner_all, max_grid_yz);
  const i64 outer_chunk = row_chunks || inner_chunk < inner_all ? 1 : std::min(outer_all, max_grid_yz / inner_chunk);
  const i64 m_chunk = std::min(m, rows_per_launch);
  const std::size_t lead_dims = r >= 2 ? r - 2 : 0;
  i64 leading = 1;
  for (std::size_t d = 0; d < lead_dims; ++d) leading *= bd.size[d];

  const i64 sa_m = p.trans_a ? a.strides()[a.rank() - 1] : a.strides()[a.rank() - 2];
  const i64 sa_k = p.trans_a ? a.strides()[a.rank() - 2] : a.strides()[a.rank() - 1];
  const i64 sb_k = p.trans_b ? b.strides()[b.rank() - 1] : b.strides()[b.rank() - 2];
  const i64 sb_n = p.trans_b ? b.strides()[b.rank() - 2] : b.strides()[b.rank() - 1];
  // Every launch's a and b stay 16-byte aligned: each moves by multiples of these strides.
  bool aligned = (Args::device_ptr(a) % 16 == 0) && (Args::device_ptr(b) % 16 == 0) && sa_m % 8 == 0 && sb_k % 8 == 0;
  for (std::size_t d = 0; d < r; ++d) aligned = aligned && bd.sa[d] % 8 == 0 && bd.sb[d] % 8 == 0;
  const auto kernel = matmul_kernel(a.dtype(), b.dtype(), c.output.dtype(), sa_k, sb_n, sm, aligned, m, n);
  if (!kernel) return std::nullopt;
  const auto [generator, config] = *kernel;
  auto at = [](const Tensor& t, i64 elements) {
    return Args::device_ptr(t) + static_cast<CUdeviceptr>(elements * static_cast<i64>(dtype_size(t.dtype())));
  };
  for (i64 lead = 0; lead < leading; ++lead) {
    i64 off_a = 0, off_b = 0, rest = lead;
    for (std::size_t d = lead_dims; d-- > 0;) {
      const i64 idx = rest % bd.size[d];
      rest /= bd.size[d];
      off_a += idx * bd.sa[d];
      off_b += idx * bd.sb[d];
    }
    for (i64 o0 = 0; o0 < outer_all; o0 += outer_chunk) {
      for (i64 i0 = 0; i0 < inner_all; i0 += inner_chunk) {
        const i64 outer = std::min(outer_chunk, outer_all - o0), inner = std::min(inner_chunk, inner_all - i0);
        const i64 first = (lead * outer_all + o0) * inner_all + i0;  // the flat batch index c starts at
        for (i64 m0 = 0; m0 < m; m0 += m_chunk) {
          const i64 rows = std::min(m_chunk, m - m0);
          Plan& pl = steps.add(*generator, config, {outer * inner, rows, n, k});
          pl.args.add(at(a, off_a + o0 * sa_outer + i0 * sa_inner + m0 * sa_m));
          pl.args.add(at(b, off_b + o0 * sb_outer + i0 * sb_inner));
          pl.args.add(at(c.output, first * m * n + m0 * n));
          for (i64 v : {rows, n, k}) pl.args.add(static_cast<std::uint32_t>(v));
          for (i64 v : {sa_m, sa_k, sb_k, sb_n}) pl.args.add(v);
          pl.args.add(static_cast<std::uint32_t>(inner));
          for (i64 v : {sa_outer, sa_inner, sb_outer, sb_inner}) pl.args.add(v);
        }
      }
    }
  }
  return steps;
}

}  // namespace

const std::string_view matmul_params =
    "a, b: pointers (dtype per config), c: f32* (contiguous [batch, m, n]; the input dtype for matmul_mma's "
    "_c16 configs), m, n, k: u32, "
    "sa_m, sa_k, sb_k, sb_n: s64 element strides of A[m, k] and B[k, n] (a transpose swaps them), "
    "batch_inner: u32 (z = outer * batch_inner + inner), sa_outer, sa_inner, sb_outer, sb_inner: s64 batch "
    "strides (0 where that input broadcasts)";

void register_matmul(CudaOps& r) {
  r.generators.push_back(&simple_generator());
  r.generators.push_back(&tiled_generator());
  r.generators.push_back(&matmul_mma_generator());
  r.generators.push_back(&matmul_quant_generator());
  r.generators.push_back(&matmul_quant_tiles_generator());
  r.ops.add(OpKind::matmul, OpKernel{plan, nullptr, false, true});  // f16 / bf16 inputs, an f32 or 16-bit result
}

}  // namespace trine::cuda::kernels
