// Included first by every kernels/*.cpp. Those files are compiled once per ISA, with that ISA's
// compiler flags and one of TRINE_ISA_SSE4_2 / TRINE_ISA_AVX2 / TRINE_ISA_AVX512 defined (see
// CMakeLists.txt), so template bodies over the xsimd arch live only in per-ISA translation units.
// Code in those files sits in namespace trine::cpu::TRINE_ISA_NS, which keeps the three copies of
// every non-template function apart, and uses `Arch` for the xsimd arch tag.
#pragma once

#include <xsimd/xsimd.hpp>

#include "backends/assert.hpp"
#include "backends/cpu_simd/kernel_table.hpp"
#include "backends/cpu_simd/thread_pool.hpp"

#if defined(TRINE_ISA_SSE4_2)
#define TRINE_ISA_NS sse4_2
#define TRINE_ISA_NAME "sse4_2"
namespace trine::cpu::sse4_2 {
using Arch = xsimd::sse4_2;
}
#elif defined(TRINE_ISA_AVX2)
#define TRINE_ISA_NS avx2
#define TRINE_ISA_NAME "avx2"
namespace trine::cpu::avx2 {
using Arch = xsimd::fma3<xsimd::avx2>;
}
#elif defined(TRINE_ISA_AVX512)
#define TRINE_ISA_NS avx512
#define TRINE_ISA_NAME "avx512"
namespace trine::cpu::avx512 {
using Arch = xsimd::avx512bw;
}
#else
#error "kernels/*.cpp must be compiled through a per-ISA object library (TRINE_ISA_* undefined)"
#endif

namespace trine::cpu::TRINE_ISA_NS {
using batch_f32 = xsimd::batch<float, Arch>;
inline constexpr i64 vec_width = static_cast<i64>(batch_f32::size);

// Each family's file (kernels/<family>.cpp, one per TRINE_FAMILY of ops.def) registers the kernels
// of its ops: a family without its file fails the link here.
#define TRINE_FAMILY(name) void register_##name(KernelTable& t);
#include "trine/ops.def"

// kernels/copy.cpp: dst[0, n) = src[0, n) (f16 or bf16) as f32, the convert kernel's contiguous run.
void widen_to_f32(DType from, const std::uint16_t* src, float* dst, i64 n);

// kernels/gemv.cpp, called by matmul.cpp for products with one row or one column: y = A x over
// [0, M), A(i, k) at a[i*a_rs + k*a_cs] (elements of a_dtype: f32, or f16 / bf16 weights widened
// as they are loaded); on the pool when `threaded`. K == 0 gives zeros.
void gemv_impl(i64 M, i64 K, const void* a, DType a_dtype, i64 a_rs, i64 a_cs, const float* x, float* y,
               bool threaded);

// kernels/matmul_quant.cpp: matmul (its b) and gemv (its a) with quantized weights [N, K], read as
// a row per output (GGUF's orientation), dequantized in the kernel.
void matmul_quantized(const KernelTable& k, const trine::detail::OpCall& call, bool trans_a);
void gemv_quantized(const KernelTable& k, const trine::detail::OpCall& call);

// kernels/matmul_bf16.cpp, called by matmul.cpp: bf16 x bf16 products on the CPU's bf16 dot products.
// gemm_bf16_native() is true only in the avx512 build on a CPU with avx512_bf16.
bool gemm_bf16_native();
void gemm_bf16(const GemmArgs& g);
const char* gemm_bf16_kind();  // "amx", "avx512_bf16" or "f32"; TRINE_CPU_AMX=0 rules out "amx"

// kernels/conv2d_direct.cpp, called by conv2d.cpp, R*S > 1: conv2d_direct_channels (output channels as
// the vector lanes) for stride_w >= 2 and groups of at least GemmConfig::nr output channels, any
// stride_h, dilation and groups; conv2d_direct (pixels as the lanes) for stride 1, and stride_w 2
// with fewer channels.
bool conv2d_direct_channels_fits(const Conv2dArgs& a);
void conv2d_direct_channels(const Conv2dArgs& a);
bool conv2d_direct_fits(const Conv2dArgs& a);
void conv2d_direct(const Conv2dArgs& a);

// kernels/conv2d_winograd.cpp, called by conv2d.cpp: 3x3, stride 1, dilation 1. The tile size m of
// F(m x m, 3 x 3) the shape rule (or TRINE_CPU_WINOGRAD) picks, 2 or 4, or 0 for another path.
int conv2d_winograd_tile(const Conv2dArgs& a);
void conv2d_winograd(const Conv2dArgs& a, int tile);

// kernels/conv2d_depthwise.cpp, called by conv2d.cpp: groups == C > 1, K a multiple of C.
bool conv2d_is_depthwise(const Conv2dArgs& a);
void conv2d_depthwise(const Conv2dArgs& a);
}  // namespace trine::cpu::TRINE_ISA_NS
