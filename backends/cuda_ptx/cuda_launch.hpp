// From an op call to a kernel launch: which generated kernel serves it on a device, its
// parameters, its grid; and the modules loaded per context.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

// Modules are generated once per (kernel, config, target) and loaded once per context. Not
// thread-safe: the backend calls it under its lock.
class ModuleCache {
 public:
  CUfunction function(const DriverApi& api, std::string_view family, const std::string& config, int sm);
  void unload(const DriverApi& api) noexcept;

 private:
  struct Loaded {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
  };
  std::map<std::string, Loaded> loaded_;
};

// Whether a generated kernel runs this call on a device of compute capability `sm` (x10).
bool can_launch(const detail::OpCall& call, int sm);
// Enqueues the call's kernel(s) on `stream`. Throws Error(driver_error) naming the op and the call.
void launch(const DriverApi& api, CUstream stream, int sm, const detail::OpCall& call, ModuleCache& modules);

}  // namespace trine::cuda
