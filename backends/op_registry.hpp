// The ops one backend runs: for every op of the table, the kernel its family file registered, or
// the reason that backend refuses the op. Each backend fills one from its kernels/<family>.cpp
// files (one register_<family> function each, declared from ops.def's TRINE_FAMILY list, so a
// family without its file fails the link) and checks it complete when it starts: an op with
// neither a kernel nor a refusal fails start-up, naming the op and the file to add it to.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine::detail {

template <class Kernel>
class OpRegistry {
 public:
  void add(OpKind op, Kernel kernel) { kernels_[index(op)] = kernel; }
  // The backend does not run `op` at all, because `why` (a sentence for the error a pinned call
  // gets, no leading "[op]").
  void refuse(OpKind op, const char* why) { refusals_[index(op)] = why; }

  // The kernel of `op`, or null when the backend refuses it.
  const Kernel* find(OpKind op) const noexcept {
    const auto& k = kernels_[index(op)];
    return k ? &*k : nullptr;
  }
  // Why the backend refuses `op` (nullptr when it runs it).
  const char* refusal(OpKind op) const noexcept { return refusals_[index(op)]; }

  // Throws Error(internal) naming every op with neither a kernel nor a refusal and the file that
  // should register it: `folder`/kernels/<family>.cpp. `backend` names the backend (and ISA) in
  // the message.
  void require_complete(const std::string& backend, const char* folder) const {
    std::string missing;
    for (int i = 0; i < TRINE_OP_COUNT; ++i) {
      if (kernels_[static_cast<std::size_t>(i)] || refusals_[static_cast<std::size_t>(i)]) continue;
      const OpInfo& info = op_info(static_cast<OpKind>(i));
      missing += std::string(missing.empty() ? "" : "; ") + "'" + info.name + "' (family " + family_name(info.family) +
                 "): register its kernel, or refuse it with the reason, in " + folder + "/kernels/" +
                 family_name(info.family) + ".cpp";
    }
    if (!missing.empty()) throw Error(ErrorCode::internal, "[" + backend + "] ops without a kernel: " + missing);
  }

 private:
  static std::size_t index(OpKind op) noexcept { return static_cast<std::size_t>(op); }
  std::array<std::optional<Kernel>, TRINE_OP_COUNT> kernels_{};
  std::array<const char*, TRINE_OP_COUNT> refusals_{};
};

}  // namespace trine::detail
