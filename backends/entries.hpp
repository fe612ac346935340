// What every backend says about the entries of a submission: their names, their device, and the
// errors that name the failing entry (and its position in a batch) or the failed work it waited for.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <span>
#include <string>

#include "backends/backend.hpp"
#include "trine/error.hpp"

namespace trine::detail {

// The op's name ("relu"), or "upload", "readback", "device_copy".
const char* entry_name(const Entry& e) noexcept;
// The index of the device the entry runs on (its output's, or its destination's).
int device_of(const Entry& e) noexcept;
// `e`, raised by entry i of n, as the submission's error: "[relu] on cuda:0: ..." for a single
// entry, "[relu] batch entry 3 of 10: ..." in a batch (a leading "[relu] " of e's message is not
// repeated).
Error entry_error(const Entry& entry, std::size_t i, std::size_t n, const Error& e, Device device);
// `e`, raised by a submission of some of a batch's entries (a batch placed across devices submits
// one run of entries per device), naming the failing entry by its place in the whole batch:
// entry i of the submission is entry positions[i] of `total`, or a transfer between devices that
// the placement added where positions[i] is k_not_recorded. It reads the position entry_error
// recorded in the error (Error::entry()); errors without one (a failed dependency) come back
// unchanged.
inline constexpr std::size_t k_not_recorded = static_cast<std::size_t>(-1);
Error with_batch_position(const Error& e, std::span<const std::size_t> positions, std::size_t total);
// The first failed completion among `waits` as this work's error ("[what] an input comes from work
// that failed: ..."), or null. Only call it once every wait has finished.
std::exception_ptr failed_dependency(std::span<const std::shared_ptr<Completion>> waits, const char* what);

// Appends what identifies `s` for a replay to `key` (its handle, or an id the backend gives its
// buffers where a handle's address can come back for a different buffer).
using StorageKey = void (*)(std::string& key, const Storage& s);
// Every entry's kind, op, parameters, tensor layouts, host pointers and storages (through
// `storage`): two submissions with the same signature issue the same device work on the same
// memory, so a backend may replay what it recorded for the first as the second.
std::string signature_of(std::span<const Entry> entries, StorageKey storage);

}  // namespace trine::detail
