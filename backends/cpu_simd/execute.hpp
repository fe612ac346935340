// Internal to the cpu_simd backend: running one validated op call with a kernel table.
#pragma once

#include "backends/backend.hpp"
#include "backends/cpu_simd/kernel_table.hpp"

namespace trine::cpu {

// Runs `call` (validated by the op table; output contiguous and allocated) with `table`'s kernels.
void execute(const KernelTable& table, const detail::OpCall& call);

}  // namespace trine::cpu
