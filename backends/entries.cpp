// Entry names and the errors of submissions, shared by every backend.
#include "backends/entries.hpp"

#include <string>

namespace trine::detail {

const char* entry_name(const Entry& e) noexcept {
  switch (e.index()) {
    case 0: return op_info(std::get<OpCall>(e).op).name;
    case 1: return "upload";
    case 2: return "readback";
    default: return "device_copy";
  }
}

int device_of(const Entry& e) noexcept {
  switch (e.index()) {
    case 0: return std::get<OpCall>(e).output.device().index;
    case 1: return std::get<Upload>(e).dst->device().index;
    case 2: return std::get<Readback>(e).src->device().index;
    default: return std::get<DeviceCopy>(e).dst->device().index;
  }
}

Error entry_error(const Entry& entry, std::size_t i, std::size_t n, const Error& e, Device device) {
  const std::string tag = std::string("[") + entry_name(entry) + "]";
  std::string rest = e.what();
  if (rest.starts_with(tag + " ")) rest.erase(0, tag.size() + 1);
  if (n == 1) return Error(e.code(), tag + " on " + device.str() + ": " + rest);
  return Error(e.code(), tag + " batch entry " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + rest);
}

std::exception_ptr failed_dependency(std::span<const std::shared_ptr<Completion>> waits, const char* what) {
  for (const auto& w : waits) {
    if (auto e = w->error()) {
      try {
        std::rethrow_exception(e);
      } catch (const Error& err) {
        return std::make_exception_ptr(
            Error(err.code(), std::string("[") + what + "] an input comes from work that failed: " + err.what()));
      } catch (...) {
        return e;
      }
    }
  }
  return nullptr;
}

}  // namespace trine::detail
