// The one checking wrapper every driver call goes through (TRINE_CU), and module loading with the
// JIT's logs in the error.
#pragma once

#include <string>
#include <string_view>

#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

// Throws Error(driver_error) (out_of_memory for CUDA_ERROR_OUT_OF_MEMORY) whose message reads
// "[op] <call text> failed: <CUresult name> (<code>): <driver's description>". r == CUDA_SUCCESS: no-op.
void check_driver(const DriverApi* api, CUresult r, std::string_view op, std::string_view call_text);
// A table entry the provider left empty (an emulator that does not implement a call).
inline constexpr CUresult CUDA_ERROR_ENTRY_MISSING = CUDA_ERROR_NOT_SUPPORTED;

// cuModuleLoadDataEx on PTX text with the JIT's error and info logs captured: a PTX the driver
// rejects throws Error(driver_error) whose message carries the error log.
CUmodule load_module(const DriverApi* api, const std::string& ptx, std::string_view op);

}  // namespace trine::cuda

// Calls one table entry and checks it: TRINE_CU(api, "matmul", cuMemAlloc, &ptr, bytes).
// The error names the op, the call as written and the driver's error name.
#define TRINE_CU(api, op, fn, ...)                                                                                 \
  ::trine::cuda::check_driver((api), (api)->fn ? (api)->fn(__VA_ARGS__) : ::trine::cuda::CUDA_ERROR_ENTRY_MISSING, \
                              (op), #fn "(" #__VA_ARGS__ ")")
