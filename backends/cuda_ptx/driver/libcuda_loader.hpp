// The libcuda provider of the Driver API table (dlopen, no link-time dependency on CUDA), and the one
// checking wrapper every driver call goes through.
#pragma once

#include <string_view>

#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

// Opens libcuda.so.1 once per process, fills the table and runs cuInit(0). Never throws: without
// libcuda (or with a driver that cannot start) the provider has api == nullptr and says why.
const DriverProvider& libcuda_provider();
// The same from an explicit library path, not cached (tests, and a user's TRINE_LIBCUDA override).
DriverProvider load_libcuda(const char* path);

// Throws Error(driver_error) (out_of_memory for CUDA_ERROR_OUT_OF_MEMORY) whose message reads
// "[op] <call text> failed: <CUresult name> (<code>): <driver's description>". r == CUDA_SUCCESS: no-op.
void check_driver(const DriverApi* api, CUresult r, std::string_view op, std::string_view call_text);
// A table entry the provider left empty (an emulator that does not implement a call).
inline constexpr CUresult CUDA_ERROR_ENTRY_MISSING = CUDA_ERROR_NOT_SUPPORTED;

}  // namespace trine::cuda

// Calls one table entry and checks it: TRINE_CU(api, "matmul", cuMemAlloc, &ptr, bytes).
// The error names the op, the call as written and the driver's error name.
#define TRINE_CU(api, op, fn, ...)                                                                                 \
  ::trine::cuda::check_driver((api), (api)->fn ? (api)->fn(__VA_ARGS__) : ::trine::cuda::CUDA_ERROR_ENTRY_MISSING, \
                              (op), #fn "(" #__VA_ARGS__ ")")
