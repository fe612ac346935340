// Reductions, softmax and norms on Vulkan.
#include "backends/vulkan/ops.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

bool supports_reduce(const detail::OpCall&) { return false; }
void record_reduce(Recorder&, const detail::OpCall& call) {
  throw Error(ErrorCode::unsupported, std::string("[") + op_info(call.op).name + "] is not implemented on vulkan yet");
}

}  // namespace trine::vulkan
