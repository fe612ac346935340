// Device: parsing and printing "cpu", "vulkan:1", "cuda".
#include <string>

#include "trine/device.hpp"
#include "trine/error.hpp"

namespace trine {

const char* device_kind_name(DeviceKind k) noexcept {
  switch (k) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::vulkan: return "vulkan";
    case DeviceKind::cuda: return "cuda";
  }
  return "?";
}

Device Device::parse(std::string_view text) {
  std::string_view kind = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    kind = text.substr(0, colon);
    std::string_view num = text.substr(colon + 1);
    if (num.empty() || num.size() > 4) goto bad;
    index = 0;
    for (char c : num) {
      if (c < '0' || c > '9') goto bad;
      index = index * 10 + (c - '0');
    }
  }
  if (kind == "cpu") return {DeviceKind::cpu, index};
  if (kind == "vulkan") return {DeviceKind::vulkan, index};
  if (kind == "cuda") return {DeviceKind::cuda, index};
bad:
  throw Error(ErrorCode::invalid_argument,
              "[device] cannot parse '" + std::string(text) + "': expected cpu, vulkan or cuda, optionally :N");
}

std::string Device::str() const {
  std::string s = device_kind_name(kind);
  if (kind != DeviceKind::cpu || index != 0) s.append(":").append(std::to_string(index));
  return s;
}

}  // namespace trine
