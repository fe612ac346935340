// Driver calls that fail become trine::Error naming the op, the call and the driver's error; module
// loads carry the JIT's log.
#include "backends/cuda_ptx/driver/check.hpp"

#include <array>

#include "trine/error.hpp"

namespace trine::cuda {

void check_driver(const DriverApi* api, CUresult r, std::string_view op, std::string_view call_text) {
  if (r == CUDA_SUCCESS) return;
  std::string message = "[" + std::string(op) + "] " + std::string(call_text) + " failed: " + result_name(api, r) +
                        " (" + std::to_string(r) + ")";
  const char* description = nullptr;
  if (api && api->cuGetErrorString && api->cuGetErrorString(r, &description) == CUDA_SUCCESS && description) {
    message += ": " + std::string(description);
  }
  throw Error(r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::out_of_memory : ErrorCode::driver_error, message);
}

CUmodule load_module(const DriverApi* api, const std::string& ptx, std::string_view op) {
  std::array<char, 8192> error_log{}, info_log{};
  std::array<CUjit_option, 5> options = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  // The size options are passed by value in the pointer slot, as cuda.h specifies.
  std::array<void*, 5> values = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(),
                                 reinterpret_cast<void*>(info_log.size()), reinterpret_cast<void*>(std::size_t{1})};
  CUmodule module = nullptr;
  CUresult r = api->cuModuleLoadDataEx ? api->cuModuleLoadDataEx(&module, ptx.c_str(), unsigned(options.size()),
                                                                 options.data(), values.data())
                                       : CUDA_ERROR_ENTRY_MISSING;
  if (r != CUDA_SUCCESS) {
    error_log.back() = '\0';
    std::string log(error_log.data());
    try {
      check_driver(api, r, op, "cuModuleLoadDataEx(ptx)");
    } catch (const Error& e) {
      throw Error(e.code(), std::string(e.what()) + (log.empty() ? "" : "; JIT log: " + log));
    }
  }
  return module;
}

}  // namespace trine::cuda
