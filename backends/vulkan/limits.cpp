// The limits one call runs into on a Vulkan device, in words a user can act on.
#include "backends/vulkan/limits.hpp"

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"

namespace trine::vulkan {

void Limits::temporary(std::uint64_t bytes) {
  if (!fits_allocation(caps_, bytes)) done_ = true;
}

void Limits::bind(std::uint64_t bytes, const char* what) {
  if (done_ || bytes <= caps_.max_storage_buffer_range) return;
  done_ = true;
  why_ = std::string(what) + " binds " + std::to_string(bytes) + " bytes, over vulkan:" + std::to_string(index_) +
         "'s maxStorageBufferRange (" + std::to_string(caps_.max_storage_buffer_range) +
         " bytes), the most one shader binding can address; this op does not bind its tensors in pieces yet (the "
         "contiguous activations and scale do): run it on the cpu, or split the tensor";
}

void Limits::bind(const Tensor& t, const char* what) { bind(bound_bytes(t.storage()->bytes()), what); }

std::uint64_t Limits::contiguous_f32(const Tensor& t, const char* what) {
  if (t.is_contiguous()) return bound_bytes(t.storage()->bytes());
  const auto n = static_cast<std::uint64_t>(t.numel());
  temporary(n * 4);
  if (n > 0) {  // the strided copy binds t's storage and the temporary
    bind(t, what);
    bind(bound_bytes(n * 4), "the contiguous copy of a strided input");
  }
  return bound_bytes(n * 4);
}

std::uint64_t Limits::contiguous(const Tensor& t, const char* what) {
  if (!dtype_is_16bit(t.dtype())) return contiguous_f32(t, what);
  if (t.is_contiguous()) return bound_bytes(t.storage()->bytes());
  const auto n = static_cast<std::uint64_t>(t.numel());
  temporary(bound_bytes(n * 2));
  if (n > 0) {  // the strided copy binds t's storage and the temporary
    bind(t, what);
    bind(bound_bytes(n * 2), "the contiguous copy of a strided input");
  }
  return bound_bytes(n * 2);
}

void Limits::float64(const char* what) {
  if (done_ || caps_.float64) return;
  done_ = true;
  why_ = std::string(what) +
         " computes its logarithm and exponential in double precision (f32 cannot reach its error "
         "bound), and vulkan:" +
         std::to_string(index_) + " (" + caps_.name + ") has no shaderFloat64: run it on the cpu";
}

bool Limits::over_loop_budget(std::uint64_t iterations) const noexcept {
  return caps_.loop_budget != 0 && iterations > caps_.loop_budget;
}

void Limits::refuse_loop(std::uint64_t iterations, const std::string& what) {
  done_ = true;
  why_ = what + " needs " + std::to_string(iterations) + " loop iterations per shader invocation; " + caps_.name +
         " cuts shader loops short past ~65535 (this backend keeps under " + std::to_string(caps_.loop_budget) +
         "), and splitting this case is not implemented yet: run it on the cpu";
}

}  // namespace trine::vulkan
