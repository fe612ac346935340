// Entry names and the errors of submissions, shared by every backend.
#include "backends/entries.hpp"

#include <string>
#include <type_traits>
#include <variant>

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
  const std::string where =
      n == 1 ? " on " + device.str() : " batch entry " + std::to_string(i + 1) + " of " + std::to_string(n);
  return Error(e.code(), tag + where + ": " + rest, ErrorEntry{tag, i, n, rest});
}

Error with_batch_position(const Error& e, std::span<const std::size_t> positions, std::size_t total) {
  const auto& at = e.entry();
  if (!at || at->index >= positions.size()) return e;
  const std::string of = " of " + std::to_string(total), &tag = at->tag, &rest = at->detail;
  if (const std::size_t p = positions[at->index]; p != k_not_recorded)
    return Error(e.code(), tag + " batch entry " + std::to_string(p + 1) + of + ": " + rest,
                 ErrorEntry{tag, p, total, rest});
  // A transfer the placement added: named by the recorded entry it follows (or precedes).
  for (std::size_t j = at->index; j-- > 0;) {
    if (positions[j] != k_not_recorded)
      return Error(e.code(), tag + " moving a tensor between devices after batch entry " +
                                 std::to_string(positions[j] + 1) + of + ": " + rest);
  }
  for (std::size_t j = at->index + 1; j < positions.size(); ++j) {
    if (positions[j] != k_not_recorded)
      return Error(e.code(), tag + " moving a tensor between devices before batch entry " +
                                 std::to_string(positions[j] + 1) + of + ": " + rest);
  }
  return Error(e.code(), tag + " moving a tensor between devices in a batch of " + std::to_string(total) + ": " + rest);
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

namespace {

// The bytes of one trivially copyable value appended to a signature.
template <class T>
void put(std::string& key, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_tensor(std::string& key, const Tensor& t, StorageKey storage) {
  if (!t.defined()) return put(key, std::uint64_t{0});
  storage(key, *t.storage());
  put(key, t.offset());
  put(key, static_cast<int>(t.dtype()));
  put(key, t.rank());
  for (int i = 0; i < t.rank(); ++i) {
    put(key, t.shape()[i]);
    put(key, t.strides()[i]);
  }
}

}  // namespace

std::string signature_of(std::span<const Entry> entries, StorageKey storage) {
  std::string key;
  for (const Entry& e : entries) {
    put(key, e.index());
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, OpCall>) {
            put(key, static_cast<int>(x.op));
            put(key, x.params.index());
            std::visit([&](const auto& p) { put(key, p); }, x.params);
            put(key, x.inputs.size());
            for (const Tensor& t : x.inputs) put_tensor(key, t, storage);
            put_tensor(key, x.output, storage);
          } else if constexpr (std::is_same_v<T, Upload>) {
            storage(key, *x.dst);
            put(key, reinterpret_cast<std::uintptr_t>(x.src));
            put(key, x.offset);
            put(key, x.bytes);
          } else if constexpr (std::is_same_v<T, Readback>) {
            storage(key, *x.src);
            put(key, reinterpret_cast<std::uintptr_t>(x.dst));
            put(key, x.offset);
            put(key, x.bytes);
          } else {
            storage(key, *x.src);
            storage(key, *x.dst);
            put(key, x.src_offset);
            put(key, x.dst_offset);
            put(key, x.bytes);
          }
        },
        e);
  }
  return key;
}

}  // namespace trine::detail
