#include "backends/cache_dir.hpp"

#include <cstdlib>

namespace trine::detail {

std::filesystem::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "trine";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "trine";
  return {};
}

}  // namespace trine::detail
