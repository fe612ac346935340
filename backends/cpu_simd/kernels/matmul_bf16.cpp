// bf16 x bf16 GEMM with the CPU's bf16 instructions, two kernels:
// - AMX (tdpbf16ps on 16 x 64-byte tiles), where the CPU has AMX-BF16 and Linux grants the
//   process the tile state: a 32 x 32 block of C in four tiles, about 15x the f32 FMA kernel's
//   multiply-adds per cycle at its peak;
// - AVX512-BF16 (vdpbf16ps) otherwise: each instruction multiplies 16 pairs of bf16 (exact in f32)
//   and adds them to 16 f32 sums, twice the multiply-adds of an f32 FMA.
// Operands are packed as they are, with no conversion: B in panels of 32 columns, k in pairs (one
// 32-bit lane holds elements k and k+1), for both kernels; A in panels of 12 rows, k in pairs, for
// vdpbf16ps and of 32 rows, k in runs of 32, for AMX; odd K padded with zero. The loops and thread
// split are the f32 GEMM's, over 16-bit panels.
//
// Both instructions treat bf16 subnormal inputs as zero and flush subnormal results (as oneDNN's
// bf16 kernels do on the same hardware); docs/ops.md states it. Only the avx512 build of this file
// holds the kernels. TRINE_CPU_AMX=0 rules AMX out.
#include "backends/cpu_simd/isa.hpp"

#include <immintrin.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "backends/cpu_simd/gemm/driver.hpp"

namespace trine::cpu::TRINE_ISA_NS {

#if defined(TRINE_ISA_AVX512)
namespace {

constexpr i64 bmr = 12, bnr = 32;  // 12 x 2 zmm accumulators, 2 of B, 1 broadcast: 27 of 32

struct Bf16Blocks {
  i64 kc = 256, mc = 960, nc = 4096;  // kc in elements of k (even)
};

const Bf16Blocks& bf16_blocks() {
  static const Bf16Blocks b = [] {
    Bf16Blocks c;
    const i64 l1 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), 16 << 10, 128 << 10);
    const i64 l2 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20), 256 << 10, 4 << 20);
    // Deep: every KC pass reads and writes all of C, and a B panel of 2 x L1 still streams from L2
    // fast enough, each vector serving 12 rows (n=2048 on a 32 KiB L1: kc 256 / 512 / 1024 gave
    // 160-187 / 199 / 207 GFLOP/s).
    c.kc = std::clamp<i64>(2 * l1 / (bnr * 2) / 32 * 32, 64, 1024);
    c.mc = std::clamp<i64>(l2 / 2 / (c.kc * 2) / bmr * bmr, bmr * 8, 1920 / bmr * bmr);
    return c;
  }();
  return b;
}

struct Bf16Matrix {
  const std::uint16_t* base;
  i64 offset, rs, cs;
  std::uint16_t at(i64 i, i64 k) const { return base[offset + i * rs + k * cs]; }
};

// Rows [i0, i0 + m) x k [k0, k0 + kc) into panels of bmr rows: panel[(p * bmr + i) * 2 + e] =
// A(row i, k0 + 2p + e), zero past m and past kc.
void pack_a(const Bf16Matrix& a, i64 i0, i64 m, i64 k0, i64 kc, std::uint16_t* dst) {
  const i64 kp = (kc + 1) / 2;
  if (a.cs == 1) {  // rows contiguous in k: a pair is one 32-bit word of the row, copied whole
    const i64 full = kc / 2;
    for (i64 ir = 0; ir < m; ir += bmr) {
      std::uint16_t* panel = dst + ir * kp * 2;
      const i64 rows = std::min(bmr, m - ir);
      for (i64 i = 0; i < bmr; ++i) {
        if (i >= rows) {
          for (i64 p = 0; p < kp; ++p) panel[(p * bmr + i) * 2] = panel[(p * bmr + i) * 2 + 1] = 0;
          continue;
        }
        const std::uint16_t* row = a.base + a.offset + (i0 + ir + i) * a.rs + k0;
        for (i64 p = 0; p < full; ++p) std::memcpy(panel + (p * bmr + i) * 2, row + 2 * p, 4);
        if (full < kp) panel[(full * bmr + i) * 2] = row[2 * full], panel[(full * bmr + i) * 2 + 1] = 0;
      }
    }
    return;
  }
  for (i64 ir = 0; ir < m; ir += bmr) {
    std::uint16_t* panel = dst + ir * kp * 2;
    const i64 rows = std::min(bmr, m - ir);
    for (i64 p = 0; p < kp; ++p) {
      std::uint16_t* out = panel + p * bmr * 2;
      const bool second = 2 * p + 1 < kc;
      for (i64 i = 0; i < rows; ++i) {
        out[2 * i] = a.at(i0 + ir + i, k0 + 2 * p);
        out[2 * i + 1] = second ? a.at(i0 + ir + i, k0 + 2 * p + 1) : 0;
      }
      for (i64 i = rows; i < bmr; ++i) out[2 * i] = out[2 * i + 1] = 0;
    }
  }
}

// k [k0, k0 + kc) x columns [j0, j0 + n) into panels of bnr columns: panel[(p * bnr + j) * 2 + e]
// = B(k0 + 2p + e, column j), zero past n and past kc. Panels hold kp_pad >= (kc + 1) / 2 pairs,
// the pairs past kc zero (the AMX kernel steps k 16 pairs at a time).
void pack_b(const Bf16Matrix& b, i64 k0, i64 kc, i64 j0, i64 n, std::uint16_t* dst, i64 kp_pad) {
  const i64 kp = (kc + 1) / 2;
  if (kp_pad > kp) {
    for (i64 jr = 0; jr < n; jr += bnr) std::fill_n(dst + (jr * kp_pad + kp * bnr) * 2, (kp_pad - kp) * bnr * 2, 0);
  }
  if (b.cs == 1) {  // rows contiguous in n: interleave two rows 16 columns at a time
    for (i64 jr = 0; jr < n; jr += bnr) {
      std::uint16_t* panel = dst + jr * kp_pad * 2;
      const i64 cols = std::min(bnr, n - jr);
      for (i64 p = 0; p < kp; ++p) {
        std::uint16_t* out = panel + p * bnr * 2;
        const std::uint16_t* r0 = b.base + b.offset + (k0 + 2 * p) * b.rs + j0 + jr;
        const std::uint16_t* r1 = 2 * p + 1 < kc ? r0 + b.rs : nullptr;
        if (cols == bnr) {
          for (i64 j = 0; j < bnr; j += 16) {
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + j)));
            const __m512i hi = r1 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + j)))
                                  : _mm512_setzero_si512();
            _mm512_storeu_si512(out + 2 * j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
          }
          continue;
        }
        for (i64 j = 0; j < bnr; ++j) {
          out[2 * j] = j < cols ? r0[j] : 0;
          out[2 * j + 1] = (j < cols && r1) ? r1[j] : 0;
        }
      }
    }
    return;
  }
  if (b.rs == 1) {
    // Columns contiguous in k (a weight stored [n, k], PyTorch's layout, with trans_b): a pair is one
    // 32-bit word of the column, copied whole; a column's words read in order, written a panel row
    // apart. Element by element this took 1.4x the f32 GEMM's time at 64 x 2048 x 2048 (Zen 4).
    const bool odd = kc % 2 != 0;
    for (i64 jr = 0; jr < n; jr += bnr) {
      std::uint16_t* panel = dst + jr * kp_pad * 2;
      const i64 cols = std::min(bnr, n - jr);
      for (i64 j = 0; j < bnr; ++j) {
        if (j >= cols) {
          for (i64 p = 0; p < kp; ++p) panel[(p * bnr + j) * 2] = panel[(p * bnr + j) * 2 + 1] = 0;
          continue;
        }
        const std::uint16_t* col = b.base + b.offset + (j0 + jr + j) * b.cs + k0;
        const i64 whole = odd ? kp - 1 : kp;
        for (i64 p = 0; p < whole; ++p) std::memcpy(panel + (p * bnr + j) * 2, col + 2 * p, 4);
        if (odd) {
          panel[(whole * bnr + j) * 2] = col[2 * whole];
          panel[(whole * bnr + j) * 2 + 1] = 0;
        }
      }
    }
    return;
  }
  for (i64 jr = 0; jr < n; jr += bnr) {
    std::uint16_t* panel = dst + jr * kp_pad * 2;
    const i64 cols = std::min(bnr, n - jr);
    for (i64 p = 0; p < kp; ++p) {
      std::uint16_t* out = panel + p * bnr * 2;
      const bool second = 2 * p + 1 < kc;
      for (i64 j = 0; j < cols; ++j) {
        out[2 * j] = b.at(k0 + 2 * p, j0 + jr + j);
        out[2 * j + 1] = second ? b.at(k0 + 2 * p + 1, j0 + jr + j) : 0;
      }
      for (i64 j = cols; j < bnr; ++j) out[2 * j] = out[2 * j + 1] = 0;
    }
  }
}

// c (m x n corner of a bmr x bnr tile) = or += a_panel . b_panel over kp pairs of k.
__attribute__((target("avx512f,avx512bf16"))) void micro_bf16(i64 kp, const std::uint16_t* a, const std::uint16_t* b,
                                                              float* c, i64 c_rs, i64 m, i64 n, bool accumulate) {
  // The C tile of a large product is in L3 or memory between KC passes: ask for it now, so its
  // misses overlap the k loop instead of stalling the write-back.
#pragma GCC unroll 12
  for (int i = 0; i < bmr; ++i) {
    __builtin_prefetch(c + i * c_rs, 1, 2);
    __builtin_prefetch(c + i * c_rs + 16, 1, 2);
  }
  __m512 acc[bmr][2];
#pragma GCC unroll 12
  for (int i = 0; i < bmr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (i64 p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 32);
#pragma GCC unroll 12
    for (int i = 0; i < bmr; ++i) {
      std::int32_t pair;
      std::memcpy(&pair, a + 2 * i, sizeof pair);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
    a += 2 * bmr;
    b += 2 * bnr;
  }
  if (m == bmr && n == bnr) {
#pragma GCC unroll 12
    for (int i = 0; i < bmr; ++i) {
      float* row = c + i * c_rs;
      __m512 r0 = acc[i][0], r1 = acc[i][1];
      if (accumulate) r0 = _mm512_add_ps(r0, _mm512_loadu_ps(row)), r1 = _mm512_add_ps(r1, _mm512_loadu_ps(row + 16));
      _mm512_storeu_ps(row, r0);
      _mm512_storeu_ps(row + 16, r1);
    }
    return;
  }
  alignas(64) float tile[bmr * bnr];
  for (int i = 0; i < bmr; ++i)
    _mm512_store_ps(tile + i * bnr, acc[i][0]), _mm512_store_ps(tile + i * bnr + 16, acc[i][1]);
  for (i64 i = 0; i < m; ++i) {
    float* row = c + i * c_rs;
    for (i64 j = 0; j < n; ++j) row[j] = accumulate ? row[j] + tile[i * bnr + j] : tile[i * bnr + j];
  }
}

struct Bf16Scratch {
  AlignedBuffer a, b;  // float-sized slots, two bf16 each
};

Bf16Scratch& bf16_scratch() {
  thread_local Bf16Scratch s;
  return s;
}

// C[m0:m1, n0:n1] on the calling thread: the BLIS loops, as gemm_blocked runs them for f32.
void blocked(const Bf16Matrix& a, const Bf16Matrix& b, i64 K, float* c, i64 c_rs, i64 m0, i64 m1, i64 n0, i64 n1) {
  const Bf16Blocks& blk = bf16_blocks();
  const i64 kc_blk = gemm_even_block(K, blk.kc, 32), mc_blk = gemm_even_block(m1 - m0, blk.mc, bmr);
  const i64 nc_blk = gemm_even_block(n1 - n0, blk.nc, bnr);
  Bf16Scratch& s = bf16_scratch();
  auto* ap = reinterpret_cast<std::uint16_t*>(s.a.get((mc_blk + bmr) * (kc_blk + 2) / 2));
  auto* bp = reinterpret_cast<std::uint16_t*>(s.b.get((nc_blk + bnr) * (kc_blk + 2) / 2));
  for (i64 jc = n0; jc < n1; jc += nc_blk) {
    const i64 nc = std::min(nc_blk, n1 - jc);
    for (i64 pc = 0; pc < K; pc += kc_blk) {
      const i64 kc = std::min(kc_blk, K - pc), kp = (kc + 1) / 2;
      pack_b(b, pc, kc, jc, nc, bp, kp);
      for (i64 ic = m0; ic < m1; ic += mc_blk) {
        const i64 mc = std::min(mc_blk, m1 - ic);
        pack_a(a, ic, mc, pc, kc, ap);
        for (i64 jr = 0; jr < nc; jr += bnr) {
          for (i64 ir = 0; ir < mc; ir += bmr) {
            micro_bf16(kp, ap + ir * kp * 2, bp + jr * kp * 2, c + (ic + ir) * c_rs + jc + jr, c_rs,
                       std::min(bmr, mc - ir), std::min(bnr, nc - jr), pc > 0);
          }
        }
      }
    }
  }
}

// ---- AMX (tiles of 16 rows x 64 bytes, tdpbf16ps): where the CPU has AMX-BF16 and the OS grants
// the tile state. One instruction multiplies a 16 x 32 bf16 tile of A by a 32 x 16 one of B (k in
// pairs, the same layout pack_b writes) into a 16 x 16 f32 tile: 8192 multiply-adds. The kernel
// keeps a 32 x 32 block of C in four tiles, A's two row halves and B's two column halves in the
// other four of the eight. Same loops as above, over these panels.

constexpr i64 amr = 32, anr = bnr, ak = 32;  // C block, and k per step (16 pairs)
static_assert(anr == 32, "the AMX kernel reads pack_b's 32-column panels as two 16-column tiles");

// Rows [i0, i0 + m) x k [k0, k0 + kc) into panels of amr rows, k in steps of ak:
// panel[(s * amr + i) * ak + e] = A(row i, k0 + s * ak + e), zero past m and past kc.
void pack_a_amx(const Bf16Matrix& a, i64 i0, i64 m, i64 k0, i64 kc, std::uint16_t* dst) {
  const i64 steps = (kc + ak - 1) / ak;
  for (i64 ir = 0; ir < m; ir += amr) {
    std::uint16_t* panel = dst + ir * steps * ak;
    const i64 rows = std::min(amr, m - ir);
    for (i64 i = 0; i < amr; ++i) {
      for (i64 st = 0; st < steps; ++st) {
        std::uint16_t* out = panel + (st * amr + i) * ak;
        const i64 n = i < rows ? std::min(ak, kc - st * ak) : 0;
        if (n > 0 && a.cs == 1) {  // one masked 64-byte load (a variable-size memcpy became rep movs)
          const std::uint16_t* src = a.base + a.offset + (i0 + ir + i) * a.rs + k0 + st * ak;
          const auto mask = static_cast<__mmask32>(n == ak ? ~0u : (1u << n) - 1);
          _mm512_store_si512(out, _mm512_maskz_loadu_epi16(mask, src));
          continue;
        }
        for (i64 e = 0; e < n; ++e) out[e] = a.at(i0 + ir + i, k0 + st * ak + e);
        std::fill(out + n, out + ak, std::uint16_t{0});
      }
    }
  }
}

struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Tiles 0-3: C (16 x 16 f32); 4, 5: A rows 0-15, 16-31 (16 x 32 bf16); 6, 7: B columns 0-15, 16-31
// (16 pairs x 16 columns). Every tile is 16 rows of 64 bytes.
//
// GCC's tile intrinsics are asm statements that name only their pointer registers (and
// _tile_loadconfig only the configuration's first 8 bytes), not the memory behind them: the
// configuration is loaded here with the whole struct as the operand, and micro_amx is an
// out-of-line call fenced by memory clobbers, so no load or store of the packed panels or of C
// can move across the tile instructions.
void amx_configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  asm volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
}

__attribute__((target("amx-tile"))) void amx_release() { _tile_release(); }

// A full 32 x 32 block of C (row pitch c_rs floats) = or += a_panel . b_panel over `steps` steps of
// 32 k. b_panel's rows are pairs of 32 columns (128 bytes); a_panel's are 32 k of one row.
__attribute__((target("amx-tile,amx-bf16,avx512f"), noinline)) void micro_amx(i64 steps, const std::uint16_t* a,
                                                                              const std::uint16_t* b, float* c,
                                                                              i64 c_rs, bool accumulate) {
  // C is in L3 or memory between KC passes and its rows are a large power-of-two stride apart:
  // loading it into the tiles first stalls the whole block. Instead the tiles start at zero, the
  // C rows are prefetched now, and the block is added to them with vector loads at the end, when
  // they have arrived.
  if (accumulate) {
#pragma GCC unroll 32
    for (int i = 0; i < amr; ++i) {
      __builtin_prefetch(c + i * c_rs, 1, 2);
      __builtin_prefetch(c + i * c_rs + 16, 1, 2);
    }
  }
  alignas(64) float tile[amr * anr];
  asm volatile("" : : : "memory");
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (i64 st = 0; st < steps; ++st) {
    _tile_loadd(4, a, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 32, 128);
    _tile_loadd(5, a + 16 * ak, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
    a += amr * ak;
    b += 16 * anr * 2;
  }
  if (!accumulate) {
    const long cs = static_cast<long>(c_rs * sizeof(float));
    _tile_stored(0, c, cs);
    _tile_stored(1, c + 16, cs);
    _tile_stored(2, c + 16 * c_rs, cs);
    _tile_stored(3, c + 16 * c_rs + 16, cs);
    asm volatile("" : : : "memory");
    return;
  }
  constexpr long ts = anr * sizeof(float);
  _tile_stored(0, tile, ts);
  _tile_stored(1, tile + 16, ts);
  _tile_stored(2, tile + 16 * anr, ts);
  _tile_stored(3, tile + 16 * anr + 16, ts);
  asm volatile("" : : : "memory");
#pragma GCC unroll 4
  for (int i = 0; i < amr; ++i) {
    float* row = c + i * c_rs;
    _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), _mm512_load_ps(tile + i * anr)));
    _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_loadu_ps(row + 16), _mm512_load_ps(tile + i * anr + 16)));
  }
}

struct AmxBlocks {
  i64 kc = 512, mc = 256, nc = 4096;
};

// Measured on a Xeon with AMX (2 MiB L2, bf16 n = 256..2048, one thread): kc 256 / 512 / 1024 within
// 5% of each other; mc 128-256 rows 20-25% faster than 512-1024 (the A block and the B micro-panel
// both stay in L2 with room to spare); nc 512-1024 no better than 4096.
const AmxBlocks& amx_blocks() {
  static const AmxBlocks b = [] {
    AmxBlocks c;
    const i64 l2 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20), 256 << 10, 4 << 20);
    c.mc = std::clamp<i64>(l2 / 8 / (c.kc * 2) / amr * amr, amr * 2, 1024);
    return c;
  }();
  return b;
}

void blocked_amx(const Bf16Matrix& a, const Bf16Matrix& b, i64 K, float* c, i64 c_rs, i64 m0, i64 m1, i64 n0, i64 n1) {
  const AmxBlocks& blk = amx_blocks();
  const i64 kc_blk = gemm_even_block(K, blk.kc, ak), mc_blk = gemm_even_block(m1 - m0, blk.mc, amr);
  const i64 nc_blk = gemm_even_block(n1 - n0, blk.nc, anr);
  const i64 kc_pad = gemm_round_up(kc_blk, ak);
  Bf16Scratch& s = bf16_scratch();
  auto* ap = reinterpret_cast<std::uint16_t*>(s.a.get((mc_blk + amr) * kc_pad / 2));
  auto* bp = reinterpret_cast<std::uint16_t*>(s.b.get((nc_blk + anr) * kc_pad / 2));
  alignas(64) float edge[amr * anr];
  amx_configure();
  for (i64 jc = n0; jc < n1; jc += nc_blk) {
    const i64 nc = std::min(nc_blk, n1 - jc);
    for (i64 pc = 0; pc < K; pc += kc_blk) {
      const i64 kc = std::min(kc_blk, K - pc), steps = (kc + ak - 1) / ak;
      pack_b(b, pc, kc, jc, nc, bp, steps * ak / 2);
      for (i64 ic = m0; ic < m1; ic += mc_blk) {
        const i64 mc = std::min(mc_blk, m1 - ic);
        pack_a_amx(a, ic, mc, pc, kc, ap);
        for (i64 jr = 0; jr < nc; jr += anr) {
          for (i64 ir = 0; ir < mc; ir += amr) {
            const std::uint16_t* pa = ap + ir * steps * ak;
            const std::uint16_t* pb = bp + jr * steps * ak;
            float* cb = c + (ic + ir) * c_rs + jc + jr;
            const i64 m = std::min(amr, mc - ir), n = std::min(anr, nc - jr);
            if (m == amr && n == anr) {
              micro_amx(steps, pa, pb, cb, c_rs, pc > 0);
              continue;
            }
            // A corner of C: through a full block, the panels' zero padding filling the rest.
            if (pc > 0) {
              for (i64 i = 0; i < m; ++i) std::copy_n(cb + i * c_rs, n, edge + i * anr);
            }
            micro_amx(steps, pa, pb, edge, anr, pc > 0);
            for (i64 i = 0; i < m; ++i) std::copy_n(edge + i * anr, n, cb + i * c_rs);
          }
        }
      }
    }
  }
  amx_release();
}

// AMX-BF16 on the CPU, the tile state granted by the kernel (Linux asks each process to request
// it: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), and not switched off with
// TRINE_CPU_AMX=0.
bool amx_usable() {
  static const bool ok = [] {
    if (!amx_allowed()) return false;
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return ok;
}

// One product over up to `threads` rectangles of C: split N when it is the longer side, else M.
void product(const Bf16Matrix& a, const Bf16Matrix& b, i64 M, i64 N, i64 K, float* c, i64 c_rs, int threads) {
  const bool amx = amx_usable();
  const auto run = amx ? blocked_amx : blocked;
  const i64 mr = amx ? amr : bmr, nr = amx ? anr : bnr;
  if (K <= 0) {
    for (i64 i = 0; i < M; ++i) std::fill_n(c + i * c_rs, N, 0.0f);
    return;
  }
  const i64 slots = std::clamp<i64>(M * N * K / (2 * gemm_min_work_per_thread), 1, threads);
  if (slots == 1) {
    run(a, b, K, c, c_rs, 0, M, 0, N);
    return;
  }
  const bool split_n = N >= M;
  const i64 unit = split_n ? nr : mr, len = split_n ? N : M;
  const i64 part = gemm_round_up(gemm_ceil_div(len, slots), unit);
  parallel_for(gemm_ceil_div(len, part), 1, [&](i64 s0, i64 s1) {
    for (i64 s = s0; s < s1; ++s) {
      const i64 lo = s * part, hi = std::min(len, lo + part);
      if (split_n) {
        run(a, b, K, c, c_rs, 0, M, lo, hi);
      } else {
        run(a, b, K, c, c_rs, lo, hi, 0, N);
      }
    }
  });
}

}  // namespace

bool gemm_bf16_native() {
  static const bool ok = __builtin_cpu_supports("avx512bf16") || amx_usable();
  return ok;
}

const char* gemm_bf16_kind() {
  if (amx_usable()) return "amx";
  return __builtin_cpu_supports("avx512bf16") ? "avx512_bf16" : "f32";
}

void gemm_bf16(const GemmArgs& g) {
  TRINE_ASSERT(gemm_bf16_native() && g.a_dtype == DType::bf16 && g.b_dtype == DType::bf16,
               "[gemm] the bf16 kernel was called without bf16 inputs or without avx512_bf16 / AMX");
  auto matrix = [](const void* p, const i64* offsets, i64 b, i64 rs, i64 cs) {
    return Bf16Matrix{static_cast<const std::uint16_t*>(p), offsets ? offsets[b] : 0, rs, cs};
  };
  const int threads = thread_count();
  const bool over_batch = threads > 1 && g.batch >= threads;
  auto one = [&](i64 b, int t) {
    product(matrix(g.a, g.a_batch_offsets, b, g.a_rs, g.a_cs), matrix(g.b, g.b_batch_offsets, b, g.b_rs, g.b_cs), g.M,
            g.N, g.K, g.c + b * g.c_bs, g.c_rs, t);
  };
  if (over_batch) {
    parallel_for(g.batch, 1, [&](i64 b0, i64 b1) {
      for (i64 b = b0; b < b1; ++b) one(b, 1);
    });
  } else {
    for (i64 b = 0; b < g.batch; ++b) one(b, threads);
  }
}

#else

bool gemm_bf16_native() { return false; }

const char* gemm_bf16_kind() { return "f32"; }

void gemm_bf16(const GemmArgs&) { TRINE_ASSERT(false, "[gemm] the bf16 kernel exists only in the avx512 build"); }

#endif

}  // namespace trine::cpu::TRINE_ISA_NS
