// The Vulkan backend when it is not built (option off, or headers / glslc / spirv-val missing):
// links, and reports itself unavailable with the reason.
#include "backends/backend.hpp"
#include "backends/vulkan/debug.hpp"
#include "trine/error.hpp"

#ifndef TRINE_VULKAN_STUB_REASON
#define TRINE_VULKAN_STUB_REASON "compiled out (configure with -DTRINE_VULKAN=ON)"
#endif

namespace trine::detail {

std::unique_ptr<Backend> make_vulkan_backend(std::string& reason, bool& built) {
  built = false;
  reason = TRINE_VULKAN_STUB_REASON;
  return nullptr;
}

}  // namespace trine::detail

namespace trine::vulkan {
std::vector<std::string> take_validation_messages() { return {}; }
std::vector<std::string> shaders_never_dispatched() { return {}; }
std::vector<std::string> shaders_dispatched() { return {}; }
std::uint64_t dispatches_of(const std::string&) { return 0; }
void copy_at_offsets_for_test(const Tensor&, std::uint32_t, const Tensor&, std::uint32_t, std::uint32_t) {
  throw Error(ErrorCode::unsupported,
              std::string("[copy_at_offsets_for_test] no Vulkan backend: ") + TRINE_VULKAN_STUB_REASON);
}
}  // namespace trine::vulkan
