// submit_entries: dependencies in from the storages, the completion back out to them.
#include "tensor/submit.hpp"

#include <algorithm>
#include <string>

#include "trine/error.hpp"

namespace trine::detail {
namespace {

struct Use {
  Storage* storage;
  bool write;
};

// Every storage the entries touch, once, written if any entry writes it.
void collect_uses(const std::vector<Entry>& entries, std::vector<Use>& uses) {
  auto add = [&](Storage* s, bool write) {
    if (!s) return;
    for (auto& u : uses) {
      if (u.storage == s) {
        u.write = u.write || write;
        return;
      }
    }
    uses.push_back({s, write});
  };
  for (const Entry& e : entries) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, OpCall>) {
            for (const auto& t : x.inputs)
              if (t.defined()) add(t.storage().get(), false);
            add(x.output.storage().get(), true);
          } else if constexpr (std::is_same_v<T, Upload>) {
            add(x.dst.get(), true);
          } else if constexpr (std::is_same_v<T, Readback>) {
            add(x.src.get(), false);
          } else {
            add(x.src.get(), false);
            add(x.dst.get(), true);
          }
        },
        e);
  }
}

}  // namespace

std::shared_ptr<Completion> submit_entries(Backend& backend, std::vector<Entry>& entries, bool caller_waits,
                                           const char* what) {
  std::vector<Use> uses;
  uses.reserve(4);
  collect_uses(entries, uses);
  std::vector<std::shared_ptr<Completion>> waits;
  for (const auto& u : uses) {
    if (!u.storage->handle() && u.storage->recording()) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[") + what +
                      "] a tensor recorded in a trine::Batch has no data until the batch runs: run the batch "
                      "first, or read it with batch.read()");
    }
    u.storage->collect_waits(u.write, waits);
  }
  if (waits.size() > 1) {
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
  }
  auto submission = backend.encode(entries);
  auto done = backend.submit(std::move(submission), waits, caller_waits);
  for (const auto& u : uses) u.storage->add_use(done, u.write);
  return done;
}

}  // namespace trine::detail
