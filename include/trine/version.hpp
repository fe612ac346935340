// trine's version.
#pragma once

#define TRINE_VERSION_MAJOR 0
#define TRINE_VERSION_MINOR 1
#define TRINE_VERSION_PATCH 0

namespace trine {
const char* version() noexcept;  // "0.1.0"
}
