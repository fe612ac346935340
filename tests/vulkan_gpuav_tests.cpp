// The Vulkan validation layer's GPU-assisted validation (TRINE_VULKAN_VALIDATION=gpu, ctest
// vulkan_gpuav, which also runs the conformance cases that dispatch every shader): a shader access
// past the end of its buffer is skipped and fails its submission with an error, instead of landing
// wherever the driver puts it (the host heap, on lavapipe without robustness). No op of the
// library accesses out of bounds, so a test-only hook does it on purpose. And what a bad value of
// the variable does. The tests are hidden ([.]): only their ctest entries run them.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "backends/vulkan/debug.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

const Device k_vk{DeviceKind::vulkan, 0};
constexpr std::int64_t k_n = 256;
// The layer's VUID for a storage-buffer access out of its descriptor's range in a dispatch.
const char* const k_storage_oob = "VUID-vkCmdDispatch-None-02706";

// Not a skip: these tests exist for the run with GPU-assisted validation on.
void require_gpu_validation() {
  const char* mode = std::getenv("TRINE_VULKAN_VALIDATION");
  INFO("run by ctest vulkan_gpuav with TRINE_VULKAN_VALIDATION=gpu; got " << (mode ? mode : "(unset)"));
  REQUIRE(mode != nullptr);
  REQUIRE(std::string(mode) == "gpu");
  for (const auto& s : backend_status()) {
    if (s.kind != DeviceKind::vulkan) continue;
    INFO("vulkan backend: " << s.reason);
    REQUIRE(s.available);
  }
}

std::vector<float> iota(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

// Far past the end of any buffer these tests make (a 1 KiB tensor), so that under GPU-assisted
// validation every access there is one the layer checks: layer 1.3.239 compares an access's
// offset from the binding's start with the whole VkBuffer's size (gpu_validation.cpp,
// SetBindingState), not with the binding's range, so past the range but inside the buffer
// (trine's guards, a cached allocation's spare capacity) is not reported.
constexpr std::uint32_t k_far = 1u << 16;

// copy_at_offsets_for_test must fail naming an out-of-bounds storage-buffer access, reported by
// the layer as an error (not a warning: robustBufferAccess is off under GPU-assisted validation).
void require_oob_error(const Tensor& x, std::uint32_t x_off, const Tensor& y, std::uint32_t y_off) {
  try {
    vulkan::copy_at_offsets_for_test(x, x_off, y, y_off, static_cast<std::uint32_t>(k_n));
    FAIL("no error for a dispatch that accesses past the end of its buffers");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::internal);
    CHECK_THAT(e.what(), Catch::Contains(k_storage_oob));
    CHECK_THAT(e.what(), Catch::Contains("access out of bounds"));
  }
  const auto messages = vulkan::take_validation_messages();
  REQUIRE(!messages.empty());
  for (const auto& m : messages) {
    INFO(m);
    CHECK(m.rfind("validation error: ", 0) == 0);
  }
}

}  // namespace

TEST_CASE("vulkan GPU-assisted validation: in-bounds accesses pass, robustBufferAccess is off", "[vulkan_gpuav][.]") {
  require_gpu_validation();
  for (const auto& d : devices()) {
    if (d.device == k_vk) CHECK_THAT(d.capabilities, Catch::Contains("robustBufferAccess off (GPU-assisted"));
  }
  const auto values = iota(k_n);
  Tensor x = Tensor::from(values, {k_n}, DType::f32, k_vk);
  Tensor y = Tensor::full({k_n}, -1.0f, DType::f32, k_vk);
  // The same dispatch as below, inside the buffers: no message, every element copied.
  vulkan::copy_at_offsets_for_test(x, 0, y, 0, static_cast<std::uint32_t>(k_n));
  CHECK(vulkan::take_validation_messages().empty());
  CHECK(y.to_vector() == values);
}

TEST_CASE("vulkan GPU-assisted validation: a write past the buffer is skipped and is an error", "[vulkan_gpuav][.]") {
  require_gpu_validation();
  const auto values = iota(k_n);
  Tensor x = Tensor::from(values, {k_n}, DType::f32, k_vk);
  Tensor y = Tensor::full({k_n}, -1.0f, DType::f32, k_vk);
  // Without the layer's check (and without robustBufferAccess) these writes would land in
  // whatever lies 256 KiB past y's memory: on lavapipe, the host heap.
  require_oob_error(x, 0, y, k_far);
  CHECK(y.to_vector() == std::vector<float>(values.size(), -1.0f));
  CHECK(debug::guards_intact(y));
  // The device works on: an op after it runs clean.
  CHECK(relu(x).to_vector() == values);
  CHECK(vulkan::take_validation_messages().empty());
}

TEST_CASE("vulkan GPU-assisted validation: a read past the buffer reads 0 and is an error", "[vulkan_gpuav][.]") {
  require_gpu_validation();
  const auto values = iota(k_n);
  Tensor x = Tensor::from(values, {k_n}, DType::f32, k_vk);
  Tensor y = Tensor::full({k_n}, -1.0f, DType::f32, k_vk);
  require_oob_error(x, k_far, y, 0);
  // Every element was written, with the 0 the layer hands the shader for each read.
  CHECK(y.to_vector() == std::vector<float>(values.size(), 0.0f));
}

// Run by ctest vulkan_validation_env_bad with TRINE_VULKAN_VALIDATION=yes: the Vulkan backend does
// not start, and every use of a vulkan device says why.
TEST_CASE("a TRINE_VULKAN_VALIDATION other than 0, 1 or gpu is an error naming the variable",
          "[vulkan_validation_env_bad][.]") {
  const std::string expected = "TRINE_VULKAN_VALIDATION must be 0, 1 or gpu, got 'yes'";
  bool seen = false;
  for (const auto& s : backend_status()) {
    if (s.kind != DeviceKind::vulkan || !s.built) continue;
    seen = true;
    CHECK(!s.available);
    CHECK_THAT(s.reason, Catch::Contains(expected));
  }
  INFO("the vulkan backend is not built: nothing reads the variable");
  REQUIRE(seen);
  try {
    (void)relu(Tensor::full({8}, 1.0f, DType::f32, k_vk));
    FAIL("an op on vulkan:0 ran with TRINE_VULKAN_VALIDATION=yes");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::device_unavailable);
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
}
