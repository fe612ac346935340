// GEMM register and cache block sizes for the ISA this translation unit is compiled for.
// Included only by per-ISA kernel files (after isa.hpp), like the rest of backends/cpu_simd/gemm/.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "backends/cpu_simd/isa.hpp"

namespace trine::cpu::TRINE_ISA_NS {

// The micro-kernel keeps an mr x nr tile of C in registers: mr rows of nv vectors, plus nv vectors
// of B and one broadcast of A. mr * nv accumulators must cover FMA latency times FMA ports (8 on
// current cores): 6 x 2 fits the 16-register ISAs, AVX-512 takes 8 x 2.
// AVX-512 also has a taller tile, mr_tall = 12 rows (24 accumulators of its 32 registers), for large
// products: each B vector it loads serves 12 rows instead of 8, a third less of the B panel's
// traffic from L2 per FMA, and that traffic is what holds the 8-row kernel below the FMA peak
// once the panel outgrows L1 (driver.hpp's gemm_tall_rows says when it is used). Elsewhere
// mr_tall == mr.
struct GemmConfig {
#if defined(TRINE_ISA_AVX512)
  static constexpr int mr = 8;
  static constexpr int mr_tall = 12;
#else
  static constexpr int mr = 6;
  static constexpr int mr_tall = mr;
#endif
  static constexpr int nv = 2;
  static constexpr i64 nr = nv * vec_width;

  // gemm_blocked runs one of two orders, by the product's width (driver.hpp):
  // - B resident: each B micro-panel (kc x nr) is reused by every A panel of an A block in L2,
  //   the A panels streaming past it;
  // - A resident: each A micro-panel (mr x kc) stays in L1 while the panels of a B block in L2
  //   stream past it.
  i64 kc = 256;      // depth of one packed block
  i64 mc = 480;      // B resident: rows of the packed A block (mc x kc), which stays in L2
  i64 nc = 1024;     // B resident: columns of the packed B block (kc x nc), which stays in L3
  i64 mc_l3 = 1024;  // A resident: rows of the packed A block, which stays in L3
  i64 nc_l2 = 512;   // A resident: columns of the packed B block, which stays in L2
  // A matmul whose rows all fit one A block (gemm_blocked's few-rows path): columns of B packed at
  // once, just before their micro-kernels. A panel at a time (nr columns, as a convolution's im2col
  // is still packed) reads one line from each of kc rows of B, from memory for a large B, and when
  // B's row stride is a multiple of 4 KiB those lines share a handful of cache sets: packing waited
  // on memory for a third of the call. 1 MiB of panels reads each row in runs of 2 KiB. sgemm M=32
  // K=N=4096, one thread, Zen 3, alternating in one process: 20.9 ms a panel at a time, 19.3 with
  // 128 columns, 18.0 with 512, 18.2 with 1024 (requesting the next block's rows during the
  // micro-kernels made it slower). AVX-512 keeps one panel until it is measured on a machine that
  // has it.
  i64 nc_few = nr;
  // Products at least this wide take the A-resident order. On the Xeon with AVX-512 the 32-column
  // B micro-panel is 64 KiB at kc 512, more than L1, where the 12-row A panel is 24 KiB; with the
  // old and new loops alternating in one process, 1 thread: sgemm n=2048 +2-5%, 3001x2999x1500
  // +4%, 512x4096x4096 +6-7%, against 2-6% slower at N <= 256 (an A panel then serves too few B
  // panels). AVX2 gained nothing (its kernel runs at its FMA peak either way) and lost 7% at
  // N=256, so there it is never taken.
#if defined(TRINE_ISA_AVX512)
  static constexpr i64 a_resident_min_cols = 512;
#else
  static constexpr i64 a_resident_min_cols = i64{1} << 62;
#endif
};

inline i64 gemm_cache_size(int name, i64 fallback) {
  long v = sysconf(name);
  return v > 0 ? static_cast<i64>(v) : fallback;
}

// Derived once from the caches the OS reports; sizes are clamped because VMs report odd values.
inline const GemmConfig& gemm_config() {
  static const GemmConfig cfg = [] {
    GemmConfig c;
    constexpr i64 nr = GemmConfig::nr;
    // mc and mc_l3 are whole numbers of row panels of either height.
    constexpr i64 mr = std::lcm(GemmConfig::mr, GemmConfig::mr_tall);
    const i64 l1 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), 16 << 10, 128 << 10);
    const i64 l2 = std::clamp<i64>(gemm_cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20), 256 << 10, 4 << 20);
    // The B micro-panel may be twice L1: the micro-kernel prefetches it, so the part L1 does not
    // hold streams from L2 without stalls, and a deeper kc cuts the passes over C. On the Xeon's
    // 48 KiB L1, kc 512 against 384 (one L1): sgemm n=2048 0.96-0.99 -> 1.00-1.02 of OpenBLAS
    // (in the B-resident order, before the A-resident one).
    c.kc = std::clamp<i64>(2 * l1 / (nr * 4) / 16 * 16, 64, 512);
    // Half of L2 for the block that stays there; the rest holds the other operand's panels
    // passing through, and C.
    c.mc = std::clamp<i64>(l2 / 2 / (c.kc * 4) / mr * mr, mr * 8, 1536 / mr * mr);
    c.nc_l2 = std::clamp<i64>(l2 / 2 / (c.kc * 4) / nr * nr, nr * 4, 1024);
#if !defined(TRINE_ISA_AVX512)
    c.nc_few = std::clamp<i64>((i64{1} << 20) / (c.kc * 4) / nr * nr, nr, 4096);
#endif
    // The block in L3, which a VM shares with its neighbours and may report wrongly (256 MiB here
    // for a 32 MiB L3): a fixed 2 MiB, not the reported size. sgemm n=2048 on the Zen 3, B block
    // against nc 4096 (8 MiB): +7-14% with 1 thread, +7-8% with 2. For the A block, 4 and 8 MiB
    // measured the same as 2 on the Xeon.
    c.nc = std::clamp<i64>((i64{2} << 20) / (c.kc * 4), 256, 4096) / nr * nr;
    c.mc_l3 = std::clamp<i64>((i64{2} << 20) / (c.kc * 4) / mr * mr, mr * 8, 8192 / mr * mr);
    return c;
  }();
  return cfg;
}

}  // namespace trine::cpu::TRINE_ISA_NS
