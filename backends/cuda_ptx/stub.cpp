// The cuda_ptx backend until its issue lands: links, and reports itself unavailable with the reason.
#include "backends/backend.hpp"

namespace trine::detail {

std::unique_ptr<Backend> make_cuda_backend(std::string& reason, bool& built) {
  built = false;
#if defined(TRINE_CUDA_ENABLED)
  reason = "not implemented yet: the PTX emitter, Driver API table and emulator are later issues";
#else
  reason = "compiled out (configure with -DTRINE_CUDA=ON)";
#endif
  return nullptr;
}

}  // namespace trine::detail
