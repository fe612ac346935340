// submit_entries: dependencies in from the storages, the completion back out to them.
#include "tensor/submit.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "trine/error.hpp"

namespace trine::detail {
namespace {

struct Use {
  Storage* storage;
  bool write;
};

// The storages one submission touches: a few inline (a single op touches at most four), more on
// the heap (batches), so the sync call allocates nothing here.
class Uses {
 public:
  void add(Storage* s, bool write) {
    if (!s) return;
    // Once, in either part: a storage read and written by a batch's entries is one write use (a
    // second, read-only use past the sixth storage inherited a failed run's error for ever).
    auto merge = [&](Use& u) {
      if (u.storage != s) return false;
      u.write = u.write || write;
      return true;
    };
    for (auto& u : *this)
      if (merge(u)) return;
    for (auto& u : more_)
      if (merge(u)) return;
    if (n_ < small_.size()) {
      small_[n_++] = {s, write};
    } else {
      more_.push_back({s, write});
    }
  }
  Use* begin() { return small_.data(); }
  Use* end() { return small_.data() + n_; }
  std::vector<Use>& more() { return more_; }

 private:
  std::array<Use, 6> small_{};
  std::size_t n_ = 0;
  std::vector<Use> more_;
};

// Every storage the entries touch, once, written if any entry writes it.
void collect_uses(const std::vector<Entry>& entries, Uses& uses) {
  auto add = [&](Storage* s, bool write) { uses.add(s, write); };
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
            add(x.src_storage.get(), false);
          } else if constexpr (std::is_same_v<T, Readback>) {
            add(x.src.get(), false);
            add(x.dst_storage.get(), true);
          } else {
            add(x.src.get(), false);
            add(x.dst.get(), true);
          }
        },
        e);
  }
}

}  // namespace

std::shared_ptr<Completion> submit_entries(Backend& backend, std::vector<Entry> entries, bool caller_waits,
                                           const char* what) {
  Uses uses;
  collect_uses(entries, uses);
  std::vector<std::shared_ptr<Completion>> waits;
  auto each_use = [&](auto&& f) {
    for (auto& u : uses) f(u);
    for (auto& u : uses.more()) f(u);
  };
  each_use([&](const Use& u) {
    if (!u.storage->handle() && u.storage->recording()) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[") + what +
                      "] a tensor recorded in a trine::Batch has no data until the batch runs: run the batch "
                      "first, or read it with batch.read()");
    }
    u.storage->collect_waits(u.write, waits);
  });
  if (waits.size() > 1) {
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
  }
  auto done = backend.submit(backend.encode(std::move(entries)), waits, caller_waits);
  each_use([&](const Use& u) { u.storage->add_use(done, u.write); });
  return done;
}

}  // namespace trine::detail
