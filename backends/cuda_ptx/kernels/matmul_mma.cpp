// matmul on the tensor cores (sm_80+): a 64x64 CTA tile, eight warps of 32x16, mma.sync m16n8k16
// with f16 or bf16 inputs and f32 accumulation, fragments from ldmatrix, and a three-stage cp.async
// pipeline (zero-filled past the matrix edges); f32_bf16 rounds f32 inputs to bf16 as it stages them.
// On sm_75, f16 uses m16n8k8 with register staging; bf16 and f32_bf16 fall back to the tiled kernel.
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"
#include "backends/cuda_ptx/ptx/tensor_core.hpp"

namespace trine::cuda::kernels {
namespace {

constexpr int bm = 64, bn = 64, bk = 32, stages = 3, threads = 256;
// Rows padded by 8 halves: ldmatrix's eight 16-byte rows then fall in eight different bank groups.
constexpr int a_pitch = bk + 8;                                // halves per A row ([bm][a_pitch])
constexpr int b_pitch = bn + 8;                                // halves per B row ([bk][b_pitch])
constexpr int a_stage = bm * a_pitch, b_stage = bk * b_pitch;  // halves per stage

// f32_inputs: A and B are f32 in memory, loaded through registers (any strides) and rounded to E
// when staged, instead of copied by cp.async.
// b_nk: B is stored [n][k] (sb_k == 1, a transposed weight), staged [bn][bk] and read by ldmatrix
// without .trans.
// How tiles reach shared memory: cp.async (sm_80+), or through registers from f32 (rounded) or from
// 16-bit elements (sm_75, which has no cp.async).
enum class Staging { cp_async, from_f32, from_b16 };

template <HalfElem E>
void mma_body(Kernel& k, Staging staging, bool b_nk, Elem ec) {
  const bool f32_inputs = staging != Staging::cp_async;  // staged through registers
  const bool turing = target_sm(k.target()) < 80;        // m16n8k8, twice per k16 step
  k.set_max_threads(threads);
  MatmulOperands o = load_matmul_operands(k, ec);
  Ptr<Shared, E> as = shared_array<E>(k, "a_tiles", std::int64_t(stages) * a_stage, 128);
  const int b_pitch_used = b_nk ? a_pitch : b_pitch;
  const int b_stage_used = b_nk ? bn * a_pitch : b_stage;
  Ptr<Shared, E> bs = shared_array<E>(k, "b_tiles", std::int64_t(stages) * b_stage_used, 128);
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U32> lane = and_(k, tid, V<U32>(31u));
  Reg<U32> warp = shr(k, tid, 5u);
  Reg<U32> warp_m = shr(k, warp, 2u), warp_n = and_(k, warp, V<U32>(3u));
  Reg<U32> m0 = mul(k, special(k, Special::ctaid_y), V<U32>(std::uint32_t(bm)));
  Reg<U32> n0 = mul(k, special(k, Special::ctaid_x), V<U32>(std::uint32_t(bn)));
  Ptr<Global, E> a_mem{o.a, 0}, b_mem{o.b, 0};

  // This thread's 16-byte chunk of each tile: A row tid/4, halves 8*(tid%4); B row tid/8, halves 8*(tid%8).
  Reg<U32> a_row = shr(k, tid, 2u), a_col = shl(k, and_(k, tid, V<U32>(3u)), 3u);
  // (b_nk: B row tid/4 is an n, halves 8*(tid%4) run along k, like A.)
  Reg<U32> b_row = b_nk ? shr(k, tid, 2u) : shr(k, tid, 3u);
  Reg<U32> b_col = b_nk ? shl(k, and_(k, tid, V<U32>(3u)), 3u) : shl(k, and_(k, tid, V<U32>(7u)), 3u);
  Reg<U32> a_dst = fma(k, a_row, V<U32>(std::uint32_t(a_pitch)), V<U32>(a_col));
  Reg<U32> b_dst = fma(k, b_row, V<U32>(std::uint32_t(b_pitch_used)), V<U32>(b_col));
  Reg<U32> a_grow = add(k, m0, V<U32>(a_row)), b_gcol = add(k, n0, V<U32>(b_nk ? b_row : b_col));
  Reg<Pred> a_row_in = setp(k, Cmp::lt, a_grow, V<U32>(o.m));
  // Bytes of a chunk inside the matrix: 2 * clamp(limit - start, 0, 8).
  auto chunk_bytes = [&](Reg<U32> limit, Reg<U32> start) {
    Reg<U32> left = sub(k, max(k, limit, V<U32>(start)), V<U32>(start));
    return shl(k, min(k, left, V<U32>(8u)), 1u);
  };

  // Issues the cp.async of k tile `tile` into stage `stage` where `issue` holds.
  auto copy_tile = [&](Reg<U32> stage, Reg<U32> tile, Reg<Pred> issue) {
    Reg<U32> k0 = mul(k, tile, V<U32>(std::uint32_t(bk)));
    Reg<U32> a_k = add(k, k0, V<U32>(a_col));
    Reg<U32> a_bytes = selp<U32>(k, chunk_bytes(o.kdim, a_k), 0u, a_row_in);
    Reg<U32> b_k = add(k, k0, V<U32>(b_nk ? b_col : b_row));
    Reg<U32> b_bytes = b_nk ? selp<U32>(k, chunk_bytes(o.kdim, b_k), 0u, setp(k, Cmp::lt, b_gcol, V<U32>(o.n)))
                            : selp<U32>(k, chunk_bytes(o.n, b_gcol), 0u, setp(k, Cmp::lt, b_k, V<U32>(o.kdim)));
    // An empty chunk reads nothing; its address is the matrix base, never one past the edge.
    Reg<U64> a_off = matmul_offset(k, o.a_batch, a_grow, o.a_row, a_k, o.a_col);
    Reg<U64> b_off = matmul_offset(k, o.b_batch, b_k, o.b_row, b_gcol, o.b_col);
    a_off = selp<U64>(k, a_off, 0u, setp(k, Cmp::ne, a_bytes, V<U32>(0u)));
    b_off = selp<U64>(k, b_off, 0u, setp(k, Cmp::ne, b_bytes, V<U32>(0u)));
    Ptr<Shared, E> a_to = element(k, as, fma(k, stage, V<U32>(std::uint32_t(a_stage)), V<U32>(a_dst)));
    Ptr<Shared, E> b_to = element(k, bs, fma(k, stage, V<U32>(std::uint32_t(b_stage_used)), V<U32>(b_dst)));
    Ptr<Global, E> a_from = element(k, a_mem, a_off), b_from = element(k, b_mem, b_off);
    Kernel::Guard g(k, issue, false);
    cp_async_16(k, a_to, a_from, a_bytes);
    cp_async_16(k, b_to, b_from, b_bytes);
  };
  // Through registers: eight guarded loads per chunk, packed (rounded from f32) in pairs, one 16-byte
  // shared store.
  auto convert_tile = [&](Reg<U32> stage, Reg<U32> tile, Reg<Pred> issue) {
    Label skip = k.new_label();
    bra_if(k, issue, skip, true);
    Reg<U32> k0 = mul(k, tile, V<U32>(std::uint32_t(bk)));
    auto stage_chunk = [&](Reg<U64> base_addr, Reg<U64> start, Reg<U32> row, Reg<U64> row_stride, Reg<U32> col,
                           Reg<U64> col_stride, Reg<Pred> row_in, Reg<U32> col_limit, Ptr<Shared, E> to) {
      auto load8 = [&]<class T>(Ptr<Global, T> base, Val<T> zero) {
        std::array<Reg<T>, 8> v;
        for (int e = 0; e < 8; ++e) {
          Reg<U32> c = add(k, col, V<U32>(std::uint32_t(e)));
          Reg<Pred> inside = and_(k, row_in, V<Pred>(setp(k, Cmp::lt, c, V<U32>(col_limit))));
          v[e] = mov<T>(k, zero);
          Ptr<Global, T> from = element(k, base, matmul_offset(k, start, row, row_stride, c, col_stride));
          Kernel::Guard g(k, inside, false);  // the address above is computed unguarded on purpose
          ld_to(k, v[e], from);
        }
        return v;
      };
      std::array<Reg<PairOf<E>>, 4> packed;
      if (staging == Staging::from_f32) {
        auto v = load8(Ptr<Global, F32>{base_addr, 0}, Val<F32>(0.0f));
        for (int i = 0; i < 4; ++i) packed[i] = cvt_pack<PairOf<E>>(k, v[2 * i + 1], v[2 * i]);
      } else {
        auto v = load8(Ptr<Global, E>{base_addr, 0}, Val<E>(0u));
        for (int i = 0; i < 4; ++i) packed[i] = pack_pair<E>(k, v[2 * i], v[2 * i + 1]);
      }
      st_v<4>(k, reinterpret<PairOf<E>>(to), packed);
    };
    Reg<U32> a_k = add(k, k0, V<U32>(a_col));
    stage_chunk(o.a, o.a_batch, a_grow, o.a_row, a_k, o.a_col, a_row_in, o.kdim,
                element(k, as, fma(k, stage, V<U32>(std::uint32_t(a_stage)), V<U32>(a_dst))));
    // B's chunk runs along n (rows are k), or along k for b_nk (rows are n).
    Reg<U32> b_k = add(k, k0, V<U32>(b_nk ? b_col : b_row));
    Ptr<Shared, E> b_to = element(k, bs, fma(k, stage, V<U32>(std::uint32_t(b_stage_used)), V<U32>(b_dst)));
    if (b_nk) {
      stage_chunk(o.b, o.b_batch, b_gcol, o.b_col, b_k, o.b_row, setp(k, Cmp::lt, b_gcol, V<U32>(o.n)), o.kdim, b_to);
    } else {
      stage_chunk(o.b, o.b_batch, b_k, o.b_row, b_gcol, o.b_col, setp(k, Cmp::lt, b_k, V<U32>(o.kdim)), o.n, b_to);
    }
    place(k, skip);
  };
  auto load_tile = [&](Reg<U32> stage, Reg<U32> tile, Reg<Pred> issue) {
    if (f32_inputs) {
      convert_tile(stage, tile, issue);
    } else {
      copy_tile(stage, tile, issue);
    }
  };
  auto commit = [&] {
    if (!f32_inputs) cp_async_commit(k);
  };

  // ldmatrix row addresses: lanes 0-15 rows 0-15 at column 0, lanes 16-31 the same rows at column 8.
  Reg<U32> lane_row = and_(k, lane, V<U32>(15u)), lane_col = shl(k, shr(k, lane, 4u), 3u);
  Reg<U32> a_frag =
      fma(k, fma(k, warp_m, V<U32>(32u), V<U32>(lane_row)), V<U32>(std::uint32_t(a_pitch)), V<U32>(lane_col));
  Reg<U32> b_frag =
      fma(k, lane_row, V<U32>(std::uint32_t(b_pitch)), V<U32>(fma(k, warp_n, V<U32>(16u), V<U32>(lane_col))));
  if (b_nk) {
    // Matrices (n0-7, k0-7), (n0-7, k8-15), (n8-15, k0-7), (n8-15, k8-15): lane i addresses row
    // n = i%8 + 8*(i/16) at k = 8*((i/8)%2).
    Reg<U32> n_row = add(k, and_(k, lane, V<U32>(7u)), V<U32>(shl(k, shr(k, lane, 4u), 3u)));
    n_row = fma(k, warp_n, V<U32>(16u), V<U32>(n_row));
    Reg<U32> k_col = shl(k, and_(k, shr(k, lane, 3u), V<U32>(1u)), 3u);
    b_frag = fma(k, n_row, V<U32>(std::uint32_t(a_pitch)), V<U32>(k_col));
  }

  std::array<std::array<std::array<Reg<F32>, 4>, 2>, 2> acc;  // [m16 tile][n8 tile][fragment]
  for (auto& mi : acc) {
    for (auto& ni : mi) {
      for (auto& r : ni) r = mov<F32>(k, 0.0f);
    }
  }

  Reg<U32> tiles = shr(k, add(k, o.kdim, V<U32>(std::uint32_t(bk - 1))), 5u);
  for (std::uint32_t s = 0; s + 1 < stages; ++s) {
    load_tile(mov<U32>(k, s), mov<U32>(k, s), setp(k, Cmp::gt, tiles, V<U32>(s)));
    commit();
  }
  for_range<U32>(k, 0u, tiles, 1u, [&](Reg<U32> kt) {
    if (!f32_inputs) cp_async_wait(k, stages - 2);  // tile kt has landed (for this thread) ...
    bar_sync(k);                                    // ... for every thread, and stage (kt-1)%3 is free to refill
    Reg<U32> next = add(k, kt, V<U32>(std::uint32_t(stages - 1)));
    load_tile(rem(k, next, V<U32>(std::uint32_t(stages))), next, setp(k, Cmp::lt, next, V<U32>(tiles)));
    commit();  // an empty group near the end keeps the wait count uniform
    Reg<U32> stage = rem(k, kt, V<U32>(std::uint32_t(stages)));
    Ptr<Shared, E> a_base = element(k, as, fma(k, stage, V<U32>(std::uint32_t(a_stage)), V<U32>(a_frag)));
    Ptr<Shared, E> b_base = element(k, bs, fma(k, stage, V<U32>(std::uint32_t(b_stage_used)), V<U32>(b_frag)));
    for (int ks = 0; ks < bk; ks += 16) {
      std::array<std::array<Reg<PairOf<E>>, 4>, 2> a;
      for (int mi = 0; mi < 2; ++mi) a[mi] = ldmatrix_x4(k, a_base.at(std::int64_t(mi) * 16 * a_pitch + ks), false);
      // Transposed: matrices (k0-7, n0-7), (k8-15, n0-7), (k0-7, n8-15), (k8-15, n8-15) = b0, b1 of two n8 tiles.
      auto b =
          b_nk ? ldmatrix_x4(k, b_base.at(ks), false) : ldmatrix_x4(k, b_base.at(std::int64_t(ks) * b_pitch), true);
      for (int mi = 0; mi < 2; ++mi) {
        for (int ni = 0; ni < 2; ++ni) {
          if constexpr (std::is_same_v<E, F16>) {
            if (turing) {  // k 0-7 then k 8-15: A matrices (0, 1) then (2, 3), B's b0 then b1
              mma_m16n8k8_f16(k, acc[mi][ni], {a[mi][0], a[mi][1]}, b[2 * ni]);
              mma_m16n8k8_f16(k, acc[mi][ni], {a[mi][2], a[mi][3]}, b[2 * ni + 1]);
              continue;
            }
          }
          mma_m16n8k16<E>(k, acc[mi][ni], a[mi], {b[2 * ni], b[2 * ni + 1]});
        }
      }
    }
  });
  if (!f32_inputs) cp_async_wait(k, 0);

  // Fragment (i, j) of a 16x8 tile: rows lane/4 (+8 for i >= 2), columns 2*(lane%4) + (i%2).
  Reg<U32> frag_row = add(k, add(k, m0, V<U32>(mul(k, warp_m, V<U32>(32u)))), V<U32>(shr(k, lane, 2u)));
  Reg<U32> frag_col =
      add(k, add(k, n0, V<U32>(mul(k, warp_n, V<U32>(16u)))), V<U32>(shl(k, and_(k, lane, V<U32>(3u)), 1u)));
  for (int mi = 0; mi < 2; ++mi) {
    for (int ni = 0; ni < 2; ++ni) {
      for (int i = 0; i < 4; ++i) {
        Reg<U32> row = add(k, frag_row, V<U32>(std::uint32_t(mi * 16 + (i >= 2 ? 8 : 0))));
        Reg<U32> col = add(k, frag_col, V<U32>(std::uint32_t(ni * 8 + (i % 2))));
        Reg<Pred> inside = and_(k, setp(k, Cmp::lt, row, V<U32>(o.m)), V<Pred>(setp(k, Cmp::lt, col, V<U32>(o.n))));
        Label skip = k.new_label();
        bra_if(k, inside, skip, true);
        matmul_store(k, o, row, col, acc[mi][ni][i]);
        place(k, skip);
      }
    }
  }
}

struct MmaConfig {
  std::string_view name;
  Elem e;                // how A and B are stored: f16 or bf16 (multiplied as such), f32 (rounded to bf16 when staged)
  bool b_nk;             // B stored [n, k] (mma_body's b_nk)
  Elem c = Elem::f32;    // how C is stored: f32, or e (_c16: rounded once as written)
};
constexpr MmaConfig configs[] = {
    {"f16", Elem::f16, false},         {"bf16", Elem::bf16, false},           {"f16_nt", Elem::f16, true},
    {"bf16_nt", Elem::bf16, true},     {"f32_bf16", Elem::f32, false},        {"f16_c16", Elem::f16, false, Elem::f16},
    {"bf16_c16", Elem::bf16, false, Elem::bf16},
};

std::string generate(std::size_t config, Target target) {
  const MmaConfig& cfg = config_at(configs, config, "matmul_mma");
  Kernel k(kernel_name("matmul_mma", cfg.name), target);
  const Elem e = cfg.e;
  const bool nt = cfg.b_nk;
  if (target_sm(target) < 80 && e == Elem::f16) {
    mma_body<F16>(k, Staging::from_b16, nt, cfg.c);  // no cp.async: staged through registers, m16n8k8
  } else if (target_sm(target) < 80) {
    // No bf16 mma before sm_80: the tiled kernel, same tile, block and parameters.
    matmul_tiled_body(k, TileShape{bm, bn, 16, 4, 4}, e, e, cfg.c);
  } else if (e == Elem::f16) {
    mma_body<F16>(k, Staging::cp_async, nt, cfg.c);
  } else {
    mma_body<BF16>(k, e == Elem::f32 ? Staging::from_f32 : Staging::cp_async, nt, cfg.c);
  }
  return module_text(k);
}

Launch geometry(std::size_t, std::span<const std::int64_t> s) {
  Launch l;
  l.block = {threads, 1, 1};
  l.grid = {blocks_for(size_at(s, 2), bn, max_grid_x), blocks_for(size_at(s, 1), bm), std::uint32_t(size_at(s, 0))};
  return l;
}

}  // namespace

std::size_t matmul_mma_config(Elem e, Elem ec) {
  return config_index(configs, "matmul_mma", [&](const MmaConfig& c) { return c.e == e && !c.b_nk && c.c == ec; });
}

const Generator& matmul_mma_generator() {
  static const Generator g{
      "matmul_mma",
      {OpKind::matmul},
      config_names(configs),
      generate,
      matmul_params,
      "sizes = {batch, m, n, k}; block 256; grid (ceil(n/64), ceil(m/64), batch). sm_80+ needs "
      "sa_k == 1 and sb_n == 1 (row-major A and B; _nt: sb_k == 1, B stored [n, k]; other layouts go to "
      "matmul_tiled), the other strides and the batch strides multiples of 8, a and b 16-byte aligned "
      "(f16, bf16); _c16: C stored in the inputs' dtype, rounded once as written; f32_bf16 takes f32 A and B with any "
      "strides and rounds them to bf16 when staged (an opt-in precision trade: bf16 products, f32 sums); "
      "sm_75: f16 configs stage through registers (any alignment) into mma m16n8k8; bf16 and f32_bf16 run "
      "the tiled form in f32 (any strides)",
      geometry};
  return g;
}

}  // namespace trine::cuda::kernels
