// The cpu_simd kernel table: what one instruction set's translation units provide.
//
// Every entry is filled by the per-ISA object libraries (kernels/*.cpp compiled three times, once
// with each ISA's flags; see isa.hpp): each family's file registers its ops' kernels, the glue from
// a validated call to the kernel's arguments (execute.hpp's helpers make strided inputs contiguous
// where a kernel wants them). Nothing re-validates: shapes were checked by the op table. Kernels
// parallelise themselves on the shared pool (thread_pool.hpp) and must be correct for every size,
// including 1 and sizes that are not a multiple of the vector width. Semantics: docs/ops.md.
#pragma once

#include <cstdint>
#include <string>

#include "backends/op_registry.hpp"
#include "trine/dtype.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine::detail {
struct OpCall;
}

namespace trine::cpu {

using i64 = std::int64_t;

// C[b] (M x N, f32, row stride c_rs, batch stride c_bs) = A[b] (M x K) * B[b] (K x N).
// Element (i, k) of A[b] is at a + a_batch_offsets[b] + i*a_rs + k*a_cs (in elements of a_dtype),
// so transposes, strided views and broadcast batch dims all arrive here without a copy.
// A and B may be f32, f16 or bf16 (converted to f32 when packed). K == 0 gives zeros.
struct GemmArgs {
  i64 batch = 1, M = 0, N = 0, K = 0;
  const void* a = nullptr;
  DType a_dtype = DType::f32;
  i64 a_rs = 0, a_cs = 0;
  const i64* a_batch_offsets = nullptr;  // `batch` entries
  const void* b = nullptr;
  DType b_dtype = DType::f32;
  i64 b_rs = 0, b_cs = 0;
  const i64* b_batch_offsets = nullptr;
  float* c = nullptr;
  i64 c_rs = 0, c_bs = 0;
};

// Contiguous NCHW input, [K, C/groups, R, S] weight, optional bias [K], NKPQ output.
struct Conv2dArgs {
  i64 N = 0, C = 0, H = 0, W = 0;
  i64 K = 0, R = 0, S = 0;
  i64 P = 0, Q = 0;
  i64 stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;  // may be null
  float* y = nullptr;
};

// q [batch, Lq, D], k [kv_batch, Lk, D], v [kv_batch, Lk, Dv] -> y [batch, Lq, Dv], all contiguous.
// q's batch index b = outer * heads + h reads kv batch index outer * (heads / group) + h / group
// (grouped-query attention; group 1: the same index).
// causal: query i sees keys j <= i + (Lk - Lq); the op table guarantees Lq <= Lk then. window > 0
// (causal only): and keys j > i + (Lk - Lq) - window.
struct AttentionArgs {
  i64 batch = 0, Lq = 0, Lk = 0, D = 0, Dv = 0;
  i64 heads = 1, group = 1, window = 0;
  float scale = 1.0f;
  bool causal = false;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* y = nullptr;
};

struct KernelTable;

// Runs one validated call (output allocated and contiguous) on this ISA: what kernels/<family>.cpp
// registers for each op of its family, the glue from the call's tensors to the kernel's arguments.
using OpKernel = void (*)(const KernelTable& table, const detail::OpCall& call);

struct KernelTable {
  const char* isa = nullptr;  // "sse4_2", "avx2", "avx512"

  // Every op of the table, registered by its family's file (kernels/<family>.cpp).
  detail::OpRegistry<OpKernel> ops;

  // What the families share.
  // dst[i] (contiguous, dtype `to`) = src[i * stride] (dtype `from`) for i < n, rounded as
  // f32_to_f16 / f32_to_bf16 do. One thread; the caller splits the work. (kernels/copy.cpp)
  void (*convert)(DType from, DType to, const void* src, i64 stride, void* dst, i64 n) = nullptr;
  // dst[r * dst_ld + c] = src[c * src_ld + r] for r < rows, c < cols (strides in elements of each
  // side's dtype), converted as above: the tile of a transposed copy or cast. One thread. With
  // `stream` (a destination too large to stay in cache) an f32 destination with 64-byte aligned
  // rows is written with non-temporal stores, fenced before the return. (kernels/copy.cpp)
  void (*transpose)(DType from, DType to, const void* src, i64 src_ld, void* dst, i64 dst_ld, i64 rows, i64 cols,
                    bool stream) = nullptr;
  // Which kernel conv2d runs for these shapes (the pointers are not read): "depthwise",
  // "winograd_f2", "winograd_f4", "direct" or "implicit_gemm", for the tests' error bounds.
  // (kernels/conv2d.cpp)
  const char* (*conv2d_path)(const Conv2dArgs&) = nullptr;
  // Which kernel gemm runs for bf16 x bf16 on this CPU: "amx", "avx512_bf16" or "f32" (converted
  // while packing), for trine-info and the tests. (kernels/matmul.cpp)
  const char* (*bf16_gemm_kind)() = nullptr;
};

// The shared entries of KernelTable once, for the checks below. The static_assert fails when an
// entry is added to the struct and not here.
#define TRINE_CPU_SHARED_ENTRIES(X) X(convert) X(transpose) X(conv2d_path) X(bf16_gemm_kind)
#define TRINE_CPU_COUNT_ENTRY(name) +1
static_assert(sizeof(KernelTable) == sizeof(const char*) + sizeof(detail::OpRegistry<OpKernel>) +
                                         (0 TRINE_CPU_SHARED_ENTRIES(TRINE_CPU_COUNT_ENTRY)) * sizeof(void (*)()),
              "KernelTable changed: list every shared entry in TRINE_CPU_SHARED_ENTRIES");
#undef TRINE_CPU_COUNT_ENTRY

// Throws Error(internal) naming the first shared entry an ISA left null, and every op without a
// kernel and the file to register it in: a missing kernel fails when the table is built, at
// start-up, not as a null call in the middle of an op.
inline void require_complete(const KernelTable& t) {
  if (t.isa == nullptr) throw Error(ErrorCode::internal, "[cpu] a kernel table has no ISA name");
  const std::string isa = t.isa;
#define TRINE_CPU_REQUIRE_ENTRY(name)                                   \
  if (t.name == nullptr)                                                \
    throw Error(ErrorCode::internal, "[cpu] the " + isa +               \
                                         " kernel table has no '" #name \
                                         "' kernel (every entry "       \
                                         "must be registered by its kernels/*.cpp file)");
  TRINE_CPU_SHARED_ENTRIES(TRINE_CPU_REQUIRE_ENTRY)
#undef TRINE_CPU_REQUIRE_ENTRY
  t.ops.require_complete("cpu " + isa, "backends/cpu_simd");
}

// TRINE_CPU_AMX: unset or 1 allows AMX tiles where the CPU has them, 0 rules them out; any other
// value is Error(invalid_argument), on every ISA. Defined in cpu_backend.cpp, read once.
bool amx_allowed();

// Outputs of at least this many bytes are written with non-temporal stores (simd_common.hpp's
// store_run): the last-level cache as /sys lists it, clamped to [4, 64] MiB, or
// TRINE_CPU_STREAM_BYTES (a byte count; anything else is Error(invalid_argument)). Defined in
// cpu_backend.cpp, read once.
i64 stream_store_bytes();
// The same for a transposed copy's destination: TRINE_CPU_STREAM_BYTES when it is set, else 1 MiB.
// Its normal stores are slow at any size (each destination line is read first, and rows a
// power-of-two stride apart evict each other from L1): on the Xeon, one thread, 512 x 512 went
// from 12-13 to 16-18 GB/s streamed, 2048 x 2048 from 3.6-4.5 to 12.8-12.9.
i64 stream_transpose_bytes();
// TRINE_CPU_WINOGRAD, a test hook: unset or "auto" leaves conv2d's Winograd path to the measured
// shape rule; 0 turns it off; 2 or 4 forces F(2x2,3x3) or F(4x4,3x3) on every conv2d it can run
// (3x3, stride 1, dilation 1, not depthwise), however small. Returns -1, 0, 2 or 4; any other value
// is Error(invalid_argument), on every ISA. Defined in cpu_backend.cpp, read once.
int winograd_forced();

// One table per ISA, each defined in that ISA's object library (kernels/table.cpp).
namespace sse4_2 {
const KernelTable& table();
}
namespace avx2 {
const KernelTable& table();
}
namespace avx512 {
const KernelTable& table();
}

}  // namespace trine::cpu
