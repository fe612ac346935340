// The one path every piece of work takes to a backend: ops (sync, async, batched) and transfers.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.hpp"

namespace trine::detail {

// Encodes `entries` on `backend` and submits them after every completion the storages they touch
// require (an entry's reads wait for the storage's last writer; its writes also wait for the readers
// since), then records the new completion on those storages. `what` names the work in errors (an
// op's name, "to_vector", "batch"). Throws Error(invalid_argument) for a storage that a batch has
// recorded but not yet placed. The caller keeps every storage the entries touch alive until this
// returns (its tensors do).
std::shared_ptr<Completion> submit_entries(Backend& backend, std::vector<Entry> entries, bool caller_waits,
                                           const char* what);

}  // namespace trine::detail
