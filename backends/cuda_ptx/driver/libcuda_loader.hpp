// The libcuda provider of the Driver API table: dlopen, no link-time dependency on CUDA.
#pragma once

#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

// Opens libcuda.so.1 once per process, fills the table and runs cuInit(0). Never throws: without
// libcuda (or with a driver that cannot start) the provider has api == nullptr and says why.
const DriverProvider& libcuda_provider();
// The same from an explicit library path, not cached (tests; a libcuda outside the loader path).
DriverProvider load_libcuda(const char* path);

}  // namespace trine::cuda
