// TRINE_ASSERT: the check for trine's own invariants, on in every build type (release included),
// so a broken invariant surfaces as trine::Error(internal) naming its place instead of corrupt
// memory. Internal to the library: public headers never include it. Input validation is not an
// invariant: bad user input gets its own error code at the API boundary.
#pragma once

#include <string>
#include <string_view>

#include "trine/error.hpp"

namespace trine::detail {

// Cold and out of the caller's way: the check itself is one compare and branch.
[[noreturn, gnu::cold, gnu::noinline]] inline void assert_failed(const char* condition, std::string_view message,
                                                                 const char* file, int line) {
  // __FILE__ is an absolute build path; the part from the project's top folder is enough.
  std::string_view path(file);
  for (std::string_view top : {"/backends/", "/tensor/", "/dispatch/", "/tools/", "/tests/"}) {
    if (const auto at = path.rfind(top); at != std::string_view::npos) {
      path.remove_prefix(at + 1);
      break;
    }
  }
  throw Error(ErrorCode::internal, std::string(message) + " (internal invariant `" + condition + "` failed at " +
                                       std::string(path) + ":" + std::to_string(line) + "; please report it)");
}

}  // namespace trine::detail

// `message` starts with the op in brackets, like every trine error: "[softmax] row of 0 elements".
#define TRINE_ASSERT(condition, message)                                         \
  do {                                                                           \
    if (!(condition)) [[unlikely]]                                               \
      ::trine::detail::assert_failed(#condition, (message), __FILE__, __LINE__); \
  } while (false)
