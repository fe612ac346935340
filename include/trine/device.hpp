// Devices: where storage lives and ops run.
#pragma once

#include <cstdint>
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
  // A device that computes in software on the host's CPU (lavapipe, the PTX emulator): listed and
  // usable when pinned, but a candidate for automatic placement only on opt-in (trine/dispatch.hpp).
  bool software = false;
  // Driver identity and version ("Mesa llvmpipe 22.3.6", "CUDA driver 13000"); a calibration
  // profile made under another driver is stale.
  std::string driver;
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

// What a device's backend has moved across the host boundary and within the device since the
// process started: each Upload, Readback and device-to-device copy counted once, with its bytes.
struct TransferStats {
  std::uint64_t uploads = 0;
  std::uint64_t upload_bytes = 0;
  std::uint64_t readbacks = 0;
  std::uint64_t readback_bytes = 0;
  std::uint64_t device_copies = 0;
  std::uint64_t device_copy_bytes = 0;
  std::uint64_t submissions = 0;
  // Submissions run from a form the backend recorded at an earlier run of the same batch (a CUDA
  // graph), rather than issued op by op.
  std::uint64_t replays = 0;
  // Queue submissions made to the driver (Vulkan: vkQueueSubmit calls). A submission split by the
  // work budget (TRINE_VULKAN_SUBMIT_BUDGET) counts once per part; 0 where a backend keeps no count.
  std::uint64_t driver_submits = 0;
};
// Throws Error(device_unavailable) for a device this machine does not have.
TransferStats transfer_stats(Device device = Device::cpu());

// Blocks until everything submitted before the call, on every device, has finished. Errors of that
// work are not raised here but where its results are read (Future::get, to_vector, ...).
void synchronize();

}  // namespace trine
