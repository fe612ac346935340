// debug::storage_bytes: a tensor's raw storage on the host, for tests that decode it themselves.
#include "trine/debug.hpp"

#include "backends/backend.hpp"
#include "trine/error.hpp"

namespace trine::debug {

std::vector<std::uint8_t> storage_bytes(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "[storage_bytes] undefined tensor");
  const auto& storage = t.storage();
  std::vector<std::uint8_t> bytes(storage->bytes());
  if (bytes.empty()) return bytes;  // no copy call with a null destination, whatever the backend
  // The one place that reads a whole storage back: the backend interface may change how copies
  // are ordered after in-flight work, and only this call then needs to follow.
  storage->backend().copy_to_host(storage->handle(), 0, bytes.data(), storage->bytes());
  return bytes;
}

}  // namespace trine::debug
