// debug::storage_bytes: a tensor's raw storage on the host, for tests that decode it themselves;
// debug::device_memory: what a device's backend holds from its driver.
#include "trine/debug.hpp"

#include "backends/backend.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"

namespace trine::debug {

std::vector<std::uint8_t> storage_bytes(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "[storage_bytes] undefined tensor");
  const auto& storage = t.storage();
  std::vector<std::uint8_t> bytes(storage->bytes());
  if (bytes.empty()) return bytes;  // no copy call with a null destination, whatever the backend
  // One readback of the whole storage, ordered after whatever still writes it.
  std::vector<detail::Entry> e{detail::Readback{storage, 0, bytes.data(), bytes.size(), {}}};
  detail::submit_entries(storage->backend(), std::move(e), /*caller_waits=*/true, "storage_bytes")->wait();
  return bytes;
}

DeviceMemoryStats device_memory(Device device) {
  auto stats = detail::backend_for(device, "device_memory").device_memory(device.index);
  if (!stats)
    throw Error(ErrorCode::unsupported, "[device_memory] " + device.str() + " keeps no account of its driver memory");
  return *stats;
}

}  // namespace trine::debug
