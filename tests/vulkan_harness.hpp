// What the Vulkan test files share: device 0, and the checks every Vulkan test starts and ends with.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "backends/vulkan/debug.hpp"
#include "trine/trine.hpp"

namespace trine::test {

inline const Device k_vk{DeviceKind::vulkan, 0};

// Not a skip: a machine without a Vulkan device fails here with the reason.
inline void require_vulkan() {
  for (const auto& s : backend_status()) {
    if (s.kind != DeviceKind::vulkan) continue;
    INFO("vulkan backend: " << s.reason);
    REQUIRE(s.available);
  }
}

// A size a Vulkan device's capability line gives in MiB after `key` ("maxStorageBufferRange 128
// MiB", "largest allocation 2048 MiB"), in bytes; fails the test where the line has none.
inline std::uint64_t capability_bytes(Device vk, const std::string& key) {
  for (const auto& d : devices()) {
    const auto at = d.capabilities.find(key + " ");
    if (d.device == vk && at != std::string::npos) return std::stoull(d.capabilities.substr(at + key.size() + 1)) << 20;
  }
  FAIL("no " << key << " in " << vk.str() << "'s capabilities");
  return 0;
}

// Every validation message since the last call fails the current test.
inline void require_no_validation_messages() {
  const auto messages = vulkan::take_validation_messages();
  std::string all;
  for (const auto& m : messages) all += m + "\n";
  INFO(all);
  REQUIRE(messages.empty());
}

}  // namespace trine::test
