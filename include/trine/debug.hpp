// Checks for tests and tools: allocation guards and the CPU's chosen instruction set.
#pragma once

#include <string>

#include "trine/tensor.hpp"

namespace trine::debug {

// Whether the sentinel regions before and after `t`'s storage are untouched (an op wrote only
// inside its output). Throws Error(unsupported) for devices whose backend keeps no guards.
bool guards_intact(const Tensor& t);

// The instruction set the cpu_simd backend runs ("sse4_2", "avx2", "avx512") and why.
std::string cpu_isa();
std::string cpu_isa_reason();

}  // namespace trine::debug
