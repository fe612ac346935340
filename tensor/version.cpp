// trine::version(), spelled from the one place the version is written: include/trine/version.hpp.
#include "trine/version.hpp"

#define TRINE_STR2(x) #x
#define TRINE_STR(x) TRINE_STR2(x)

namespace trine {

const char* version() noexcept {
  return TRINE_STR(TRINE_VERSION_MAJOR) "." TRINE_STR(TRINE_VERSION_MINOR) "." TRINE_STR(TRINE_VERSION_PATCH);
}

}  // namespace trine
