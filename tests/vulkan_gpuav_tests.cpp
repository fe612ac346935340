// What a bad value of TRINE_VULKAN_VALIDATION does. Hidden ([.]): only its ctest entry runs it.
#include <catch2/catch.hpp>

#include <string>

#include "trine/trine.hpp"

using namespace trine;

namespace {

const Device k_vk{DeviceKind::vulkan, 0};

}  // namespace

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
