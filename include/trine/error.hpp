// trine::Error: the one exception type every trine failure is reported with.
#pragma once

#include <stdexcept>
#include <string>

namespace trine {

enum class ErrorCode {
  invalid_shape,       // shapes that do not fit the op (inner dims, broadcast, zero-size, kernel > input)
  invalid_argument,    // a parameter out of range (axis, groups, eps, device mismatch, ...)
  dtype_mismatch,      // a dtype the op does not take
  device_unavailable,  // the device named is not built, not present, or failed to start
  out_of_memory,       // an allocation the device cannot satisfy
  driver_error,        // a backend driver call failed (carries the driver's code and name)
  unsupported,         // a valid request this build or backend does not implement
  internal,            // a broken invariant inside trine (always a bug: please report it)
};

const char* error_code_name(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace trine
