// Devices: where storage lives and ops run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trine {

enum class DeviceKind { cpu, vulkan, cuda };
const char* device_kind_name(DeviceKind k) noexcept;

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() noexcept { return {DeviceKind::cpu, 0}; }
  // "cpu", "vulkan", "cuda:1"; throws invalid_argument on anything else.
  static Device parse(std::string_view text);
  std::string str() const;  // "cpu", "vulkan:0"
  friend bool operator==(const Device&, const Device&) = default;
};

struct DeviceInfo {
  Device device;
  std::string name;          // e.g. "Intel Xeon (avx512, 2 threads)"
  std::string capabilities;  // one line, backend-specific
};

// The devices this machine has and this build can use, cpu first.
std::vector<DeviceInfo> devices();

// One line per backend kind: built or not, available or not, and why.
struct BackendStatus {
  DeviceKind kind;
  bool built;
  bool available;
  std::string reason;  // why it is unavailable, or what it runs on
};
std::vector<BackendStatus> backend_status();

}  // namespace trine
