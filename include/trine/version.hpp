// trine's version: the one place it is written (CMakeLists.txt reads it from here).
#pragma once

#define TRINE_VERSION_MAJOR 0
#define TRINE_VERSION_MINOR 1
#define TRINE_VERSION_PATCH 0

namespace trine {
const char* version() noexcept;  // "MAJOR.MINOR.PATCH"
}
