// Finds the backends once, keeps them alive for the process, and maps devices to them.
#include <memory>
#include <utility>

#include "backends/backend.hpp"
#include "tensor/memory_cache.hpp"
#include "trine/error.hpp"

namespace trine::detail {

namespace {

using Factory = std::unique_ptr<Backend> (*)(std::string& reason, bool& built);

struct Registry {
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<BackendSlot> slots;

  Registry() {
    const std::pair<DeviceKind, Factory> factories[] = {{DeviceKind::cpu, &make_cpu_backend},
                                                        {DeviceKind::vulkan, &make_vulkan_backend},
                                                        {DeviceKind::cuda, &make_cuda_backend}};
    for (const auto& [kind, make] : factories) {
      BackendSlot s{kind, false, nullptr, {}, {}};
      auto b = make(s.reason, s.built);
      s.backend = b.get();
      // Devices are enumerated once: every op looks its device up here.
      if (b) {
        s.devices = b->devices();
        owned.push_back(std::move(b));
      }
      slots.push_back(std::move(s));
    }
  }

  // At exit: work still queued or in flight finishes, and cached memory goes back, while the
  // backends it needs are still alive (the cpu pool, made while the registry was being made, is
  // destroyed after it).
  ~Registry() {
    for (auto& s : slots) {
      if (!s.backend) continue;
      try {
        s.backend->synchronize();
      } catch (...) {  // a broken device at exit: nothing left to report it to
      }
      s.backend->drop_recordings();
      for (const auto& d : s.devices) release_cache(*s.backend, d.device);
    }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const std::vector<BackendSlot>& backend_slots() { return registry().slots; }

Backend& backend_for(Device device, const char* op) {
  for (const auto& s : backend_slots()) {
    if (s.kind != device.kind) continue;
    if (!s.backend) {
      throw Error(ErrorCode::device_unavailable,
                  std::string("[") + op + "] device " + device.str() + " is unavailable: " + s.reason);
    }
    if (device.index < 0 || static_cast<std::size_t>(device.index) >= s.devices.size()) {
      throw Error(ErrorCode::device_unavailable, std::string("[") + op + "] device " + device.str() +
                                                     " does not exist (" + std::to_string(s.devices.size()) + " " +
                                                     device_kind_name(device.kind) + " device(s))");
    }
    return *s.backend;
  }
  throw Error(ErrorCode::device_unavailable, std::string("[") + op + "] unknown device " + device.str());
}

}  // namespace trine::detail

namespace trine {

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  for (const auto& s : detail::backend_slots()) out.insert(out.end(), s.devices.begin(), s.devices.end());
  return out;
}

TransferStats transfer_stats(Device device) { return detail::backend_for(device, "transfer_stats").transfer_stats(); }

void synchronize() {
  for (const auto& s : detail::backend_slots())
    if (s.backend) s.backend->synchronize();
}

std::vector<BackendStatus> backend_status() {
  std::vector<BackendStatus> out;
  for (const auto& s : detail::backend_slots()) out.push_back({s.kind, s.built, s.backend != nullptr, s.reason});
  return out;
}

}  // namespace trine
