// The Vulkan backend until its issue lands: links, and reports itself unavailable with the reason.
#include "backends/backend.hpp"

namespace trine::detail {

std::unique_ptr<Backend> make_vulkan_backend(std::string& reason, bool& built) {
  built = false;
#if defined(TRINE_VULKAN_ENABLED)
  reason = "not implemented yet: the Vulkan backend (GLSL compute shaders on vulkan-hpp) is a later issue";
#else
  reason = "compiled out (configure with -DTRINE_VULKAN=ON)";
#endif
  return nullptr;
}

}  // namespace trine::detail
