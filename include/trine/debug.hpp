// Checks for tests and tools: allocation guards, the CPU's chosen instruction set, and the device
// memory a Vulkan device holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine::debug {

// Whether the sentinel regions before and after `t`'s storage are untouched (an op wrote only
// inside its output). Throws Error(unsupported) for devices whose backend keeps no guards.
bool guards_intact(const Tensor& t);

// Every byte of `t`'s storage, copied to the host as it lies (the whole allocation, not only the
// view's elements), so a test can decode the values with its own index arithmetic.
std::vector<std::uint8_t> storage_bytes(const Tensor& t);

// The instruction set the cpu_simd backend runs ("sse4_2", "avx2", "avx512") and why.
std::string cpu_isa();
std::string cpu_isa_reason();

// Which cpu kernel multiplies bf16 x bf16: "amx" (AMX tiles), "avx512_bf16" (vdpbf16ps), or "f32"
// (converted to f32 while packing). The first two treat bf16 subnormals as zero (docs/ops.md).
// TRINE_CPU_AMX=0 rules out "amx"; Error(invalid_argument) if it is set to anything but 0 or 1.
std::string cpu_bf16_matmul();

// Which cpu kernel conv2d runs for an input of shape x [N, C, H, W] and a weight w [K, C/groups, R,
// S] under p: "depthwise", "winograd_f2", "winograd_f4" (F(2x2,3x3) / F(4x4,3x3), docs/design.md),
// "direct" or "implicit_gemm". The conformance tests bound Winograd F(4x4,3x3)'s error more widely
// (docs/ops.md). Error(invalid_argument) for shapes conv2d would reject, or a bad TRINE_CPU_WINOGRAD.
std::string cpu_conv2d_path(const Shape& x, const Shape& w, const Conv2dParams& p);

// Whether `op` on these inputs, on their device, runs as its f32 kernel between casts of its f16 and
// bf16 tensors (a GPU backend's op without a 16-bit kernel yet: docs/ops.md, "Dtypes") rather than in
// a kernel that reads them. False for calls without 16-bit tensors and on the cpu. Errors as the op
// would raise them for bad inputs; Error(unsupported) when the device does not run the call at all.
bool runs_between_casts(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

// One empty submission on `device` (no commands), waited for: the driver's floor under a sync
// call, for benchmarks (trine-bench prints a sync call's fixed cost next to it). Vulkan devices
// only; Error(unsupported) elsewhere.
void bare_submit(Device device);

// The device memory behind a device's allocations, as its backend holds it from the driver. On
// Vulkan: pooled blocks of VkDeviceMemory that small and medium buffers are carved from, and memory
// of their own for large ones (docs/design.md, "vulkan specifics").
struct DeviceMemoryStats {
  std::size_t memory_objects = 0;      // live driver allocations (VkDeviceMemory): blocks + dedicated
  std::size_t memory_objects_max = 0;  // the driver's limit on them (maxMemoryAllocationCount)
  std::size_t blocks = 0;              // pooled blocks, an empty one kept for reuse included
  std::size_t dedicated = 0;           // allocations in memory of their own
  std::size_t pooled = 0;              // live buffers carved from blocks
  std::size_t reserved_bytes = 0;      // the bytes of every live driver allocation
  std::size_t pooled_bytes = 0;        // of the blocks' bytes, those live buffers use
  std::size_t block_bytes_max = 0;     // the largest block; a request over a quarter of it is dedicated
};

// What `device`'s backend holds from its driver now. Vulkan devices only; Error(unsupported)
// elsewhere. Memory the memory cache (trine/memory.hpp) keeps for reuse is still held: call
// memory::clear_cache first to see what the tensors alone use.
DeviceMemoryStats device_memory(Device device);

}  // namespace trine::debug
