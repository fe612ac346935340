// The cuda_ptx backend compiled out (-DTRINE_CUDA=OFF): links, and reports itself unavailable.
#include "backends/backend.hpp"

namespace trine::detail {

std::unique_ptr<Backend> make_cuda_backend(std::string& reason, bool& built) {
  built = false;
  reason = "compiled out (configure with -DTRINE_CUDA=ON)";
  return nullptr;
}

}  // namespace trine::detail
