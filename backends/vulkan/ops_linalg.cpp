// matmul, gemv and dot on Vulkan.
#include "backends/vulkan/ops.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

bool supports_linalg(const detail::OpCall&) { return false; }
void record_linalg(Recorder&, const detail::OpCall& call) {
  throw Error(ErrorCode::unsupported, std::string("[") + op_info(call.op).name + "] is not implemented on vulkan yet");
}

}  // namespace trine::vulkan
