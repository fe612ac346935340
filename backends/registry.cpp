// Finds the backends once, keeps them alive for the process, and maps devices to them.
#include <memory>
#include <mutex>

#include "backends/backend.hpp"
#include "trine/error.hpp"

namespace trine::detail {

Storage::~Storage() {
  if (backend_) backend_->deallocate(handle_);
}

namespace {

struct Registry {
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<BackendSlot> slots;

  Registry() {
    {
      BackendSlot s{DeviceKind::cpu, true, nullptr, {}};
      auto b = make_cpu_backend(s.reason);
      s.backend = b.get();
      if (b) owned.push_back(std::move(b));
      slots.push_back(s);
    }
    {
      BackendSlot s{DeviceKind::vulkan, false, nullptr, {}};
      auto b = make_vulkan_backend(s.reason, s.built);
      s.backend = b.get();
      if (b) owned.push_back(std::move(b));
      slots.push_back(s);
    }
    {
      BackendSlot s{DeviceKind::cuda, false, nullptr, {}};
      auto b = make_cuda_backend(s.reason, s.built);
      s.backend = b.get();
      if (b) owned.push_back(std::move(b));
      slots.push_back(s);
    }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const std::vector<BackendSlot>& backend_slots() { return registry().slots; }

Backend& backend_for(Device device, const char* op_context) {
  for (const auto& s : backend_slots()) {
    if (s.kind != device.kind) continue;
    if (!s.backend) {
      throw Error(ErrorCode::device_unavailable,
                  std::string(op_context) + " device " + device.str() + " is unavailable: " + s.reason);
    }
    auto devs = s.backend->devices();
    if (device.index < 0 || static_cast<std::size_t>(device.index) >= devs.size()) {
      throw Error(ErrorCode::device_unavailable, std::string(op_context) + " device " + device.str() +
                                                     " does not exist (" + std::to_string(devs.size()) + " " +
                                                     device_kind_name(device.kind) + " device(s))");
    }
    return *s.backend;
  }
  throw Error(ErrorCode::device_unavailable, std::string(op_context) + " unknown device " + device.str());
}

}  // namespace trine::detail

namespace trine {

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  for (const auto& s : detail::backend_slots()) {
    if (!s.backend) continue;
    auto d = s.backend->devices();
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

std::vector<BackendStatus> backend_status() {
  std::vector<BackendStatus> out;
  for (const auto& s : detail::backend_slots()) out.push_back({s.kind, s.built, s.backend != nullptr, s.reason});
  return out;
}

}  // namespace trine
