// The device a test run exercises: TRINE_TEST_DEVICE (cpu, vulkan:0, cuda:0; default cpu).
#pragma once

#include <cstdlib>

#include "trine/device.hpp"

namespace trine::test {

inline Device device_under_test() {
  static const Device d = [] {
    const char* env = std::getenv("TRINE_TEST_DEVICE");
    return env && *env ? Device::parse(env) : Device::cpu();
  }();
  return d;
}

}  // namespace trine::test
