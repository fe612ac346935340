// trine::Error and the names of its codes.
#include "trine/error.hpp"

#include <utility>

namespace trine {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_shape: return "invalid_shape";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::dtype_mismatch: return "dtype_mismatch";
    case ErrorCode::device_unavailable: return "device_unavailable";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::driver_error: return "driver_error";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::internal: return "internal";
  }
  return "?";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

Error::Error(ErrorCode code, const std::string& message, ErrorEntry entry)
    : std::runtime_error(message), code_(code), entry_(std::move(entry)) {}

}  // namespace trine
