// The tiled GEMM core: A tile stored k-major and B tile n-major in shared memory, so each thread's
// tm x tn block reads its A column and B row as 16-byte vectors; one barrier pair per k tile.
#include "backends/cuda_ptx/kernels/gemm_tile.hpp"

#include <vector>

#include "trine/error.hpp"

namespace trine::cuda::kernels {

Reg<F32> load_f32_if(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index, Reg<Pred> inside) {
  // Addresses are computed before the guard: a value defined only under a predicate stays live longer.
  switch (e) {
    case Elem::f32: {
      Ptr<Global, F32> p = element(k, Ptr<Global, F32>{base, 0}, index);
      Reg<F32> v = mov<F32>(k, 0.0f);
      Kernel::Guard g(k, inside, false);
      ld_to(k, v, p);
      return v;
    }
    case Elem::f16: {
      Ptr<Global, F16> p = element(k, Ptr<Global, F16>{base, 0}, index);
      Reg<F16> h = mov<F16>(k, 0u);
      {
        Kernel::Guard g(k, inside, false);
        ld_to(k, h, p);
      }
      return f16_to_f32(k, h);
    }
    case Elem::bf16: {
      Ptr<Global, BF16> p = element(k, Ptr<Global, BF16>{base, 0}, index);
      Reg<BF16> h = mov<BF16>(k, 0u);
      {
        Kernel::Guard g(k, inside, false);
        ld_to(k, h, p);
      }
      return bf16_to_f32(k, h);
    }
    case Elem::i32: {  // no matmul takes i32 (ops.def); here for the switch's completeness
      Ptr<Global, S32> p = element(k, Ptr<Global, S32>{base, 0}, index);
      Reg<S32> v = mov<S32>(k, 0);
      {
        Kernel::Guard g(k, inside, false);
        ld_to(k, v, p);
      }
      return cvt<F32>(k, v, Round::rn);
    }
  }
  throw Error(ErrorCode::internal, "[ptx] unknown element type");
}

void gemm_tiled(Kernel& k, const TileShape& t, Reg<U32> m, Reg<U32> n, Reg<U32> kdim, Reg<U32> m0, Reg<U32> n0,
                const TileLoad& load_a, const TileLoad& load_b, const TileStore& store_c) {
  const int threads = t.threads();
  if (t.tm % 4 != 0 || t.tn % 4 != 0 || (t.bm * t.bk) % threads != 0 || (t.bk * t.bn) % threads != 0) {
    throw Error(ErrorCode::internal, "[ptx] gemm tile shape does not divide among its threads");
  }
  Ptr<Shared, F32> as = shared_array<F32>(k, "a_tile", std::int64_t(t.bk) * t.bm);  // [bk][bm]
  Ptr<Shared, F32> bs = shared_array<F32>(k, "b_tile", std::int64_t(t.bk) * t.bn);  // [bk][bn]
  Reg<U32> tid = special(k, Special::tid_x);
  const std::uint32_t cols_threads = std::uint32_t(t.bn / t.tn);
  Reg<U32> tx = rem(k, tid, V<U32>(cols_threads));
  Reg<U32> ty = div(k, tid, V<U32>(cols_threads));

  std::vector<Reg<F32>> acc(std::size_t(t.tm) * t.tn);
  for (auto& r : acc) r = mov<F32>(k, 0.0f);

  for_range<U32>(k, 0u, kdim, std::uint32_t(t.bk), [&](Reg<U32> k0) {
    // Global -> shared: A's consecutive threads take consecutive k, B's consecutive n.
    for (int e = 0; e < t.bm * t.bk / threads; ++e) {
      Reg<U32> idx = add(k, tid, V<U32>(std::uint32_t(e * threads)));
      Reg<U32> kk = rem(k, idx, V<U32>(std::uint32_t(t.bk)));
      Reg<U32> mm = div(k, idx, V<U32>(std::uint32_t(t.bk)));
      Reg<U32> row = add(k, m0, V<U32>(mm)), col = add(k, k0, V<U32>(kk));
      Reg<Pred> inside = and_(k, setp(k, Cmp::lt, row, V<U32>(m)), V<Pred>(setp(k, Cmp::lt, col, V<U32>(kdim))));
      Reg<F32> v = load_a(row, col, inside);
      st(k, element(k, as, fma(k, kk, V<U32>(std::uint32_t(t.bm)), V<U32>(mm))), V<F32>(v));
    }
    for (int e = 0; e < t.bk * t.bn / threads; ++e) {
      Reg<U32> idx = add(k, tid, V<U32>(std::uint32_t(e * threads)));
      Reg<U32> nn = rem(k, idx, V<U32>(std::uint32_t(t.bn)));
      Reg<U32> kk = div(k, idx, V<U32>(std::uint32_t(t.bn)));
      Reg<U32> row = add(k, k0, V<U32>(kk)), col = add(k, n0, V<U32>(nn));
      Reg<Pred> inside = and_(k, setp(k, Cmp::lt, row, V<U32>(kdim)), V<Pred>(setp(k, Cmp::lt, col, V<U32>(n))));
      Reg<F32> v = load_b(row, col, inside);
      st(k, element(k, bs, idx), V<F32>(v));  // idx == kk*bn + nn
    }
    bar_sync(k);
    Ptr<Shared, F32> a_col = element(k, as, mul(k, ty, V<U32>(std::uint32_t(t.tm))));
    Ptr<Shared, F32> b_row = element(k, bs, mul(k, tx, V<U32>(std::uint32_t(t.tn))));
    for (int kk = 0; kk < t.bk; ++kk) {
      std::vector<Reg<F32>> af, bf;
      for (int i = 0; i < t.tm; i += 4) {
        auto v = ld_v<4>(k, a_col.at(std::int64_t(kk) * t.bm + i));
        af.insert(af.end(), v.begin(), v.end());
      }
      for (int j = 0; j < t.tn; j += 4) {
        auto v = ld_v<4>(k, b_row.at(std::int64_t(kk) * t.bn + j));
        bf.insert(bf.end(), v.begin(), v.end());
      }
      for (int i = 0; i < t.tm; ++i) {
        for (int j = 0; j < t.tn; ++j) fma_to(k, acc[std::size_t(i) * t.tn + j], af[i], V<F32>(bf[j]));
      }
    }
    bar_sync(k);  // the next tile's stores wait for every thread's reads
  });

  for (int i = 0; i < t.tm; ++i) {
    Reg<U32> row = add(k, m0, V<U32>(fma(k, ty, V<U32>(std::uint32_t(t.tm)), V<U32>(std::uint32_t(i)))));
    Reg<Pred> row_in = setp(k, Cmp::lt, row, V<U32>(m));
    for (int j = 0; j < t.tn; ++j) {
      Reg<U32> col = add(k, n0, V<U32>(fma(k, tx, V<U32>(std::uint32_t(t.tn)), V<U32>(std::uint32_t(j)))));
      Reg<Pred> inside = and_(k, row_in, V<Pred>(setp(k, Cmp::lt, col, V<U32>(n))));
      Label skip = k.new_label();
      bra_if(k, inside, skip, true);
      store_c(row, col, acc[std::size_t(i) * t.tn + j]);
      place(k, skip);
    }
  }
}

}  // namespace trine::cuda::kernels
