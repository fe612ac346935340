// Checks for tests and tools: allocation guards and the CPU's chosen instruction set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// One empty submission on `device` (no commands), waited for: the driver's floor under a sync
// call, for benchmarks (trine-bench prints a sync call's fixed cost next to it). Vulkan devices
// only; Error(unsupported) elsewhere.
void bare_submit(Device device);

}  // namespace trine::debug
