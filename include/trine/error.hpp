// trine::Error: the one exception type every trine failure is reported with.
#pragma once

#include <cstddef>
#include <optional>
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

// Where in a submission the failing entry was, as data: the error of one entry of a batch (or of
// a single call) carries it, so the layers above can name the entry by its place in the user's
// batch without reading the message.
struct ErrorEntry {
  std::string tag;     // "[relu]", "[upload]", ...: what failed
  std::size_t index;   // 0-based, in the submission (or, once renumbered, in the batch)
  std::size_t count;   // the entries of the submission (or batch)
  std::string detail;  // the message after the position ("no memory ...")
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  Error(ErrorCode code, const std::string& message, ErrorEntry entry);
  ErrorCode code() const noexcept { return code_; }
  // The failing entry when the error is one entry's (nullopt otherwise). For an error of a batch,
  // index is the entry's 0-based place among the batch's recorded entries.
  const std::optional<ErrorEntry>& entry() const noexcept { return entry_; }

 private:
  ErrorCode code_;
  std::optional<ErrorEntry> entry_;
};

}  // namespace trine
