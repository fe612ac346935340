// Internal to the library: where a call runs (pins, then the cost model), and moving tensors there.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "backends/backend.hpp"
#include "ops/rules.hpp"
#include "trine/dispatch.hpp"

namespace trine::detail {

// What chose a call's device.
enum class PinSource : std::uint8_t { automatic, input, scope, environment };

struct Placement {
  Device device;
  bool pinned = false;  // the output is pinned too
  PinSource source = PinSource::automatic;
  std::size_t input = 0;  // the pinned input, when source is input
};

// "input 0 (pinned to vulkan:0)", "a DeviceScope (vulkan:0)", "TRINE_DEVICE=cuda": what pinned a
// placement, for messages; empty for an automatic one.
std::string pin_source(const Placement& p);

// Where a validated call runs: the device of its pinned inputs, else the thread's DeviceScope or
// TRINE_DEVICE, else the cheapest eligible device by the active profile (logged with
// TRINE_LOG=dispatch). Throws Error(invalid_argument) when pins disagree, Error(unsupported) when
// no eligible device runs the op.
Placement place_call(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const InferredOutput& out);

// Every device's estimate for the call; `chosen` is the cheapest eligible one (cpu when none is).
dispatch::Decision estimate_call(OpKind op, std::span<const Tensor> inputs, const OpParams& params,
                                 const InferredOutput& out);

// The thread's DeviceScope, else TRINE_DEVICE, else nullopt.
std::optional<Device> pinned_by_scope();

// `t` on `device`: `t` itself when it is there already, else a contiguous copy moved there (an
// Upload and/or Readback through the host, submitted without waiting, ordered by the storages),
// pinned as asked. `op` names the work in errors. Defined in api/ops.cpp.
Tensor move_tensor(const Tensor& t, Device device, bool pinned, const char* op);

// Whether `backend` would run `call` on `device` once its inputs were moved there (inputs elsewhere,
// or not yet placed, are stood in for by memoryless tensors on `device`); when not, `why` (if given)
// gets the backend's reason (Backend::unsupported_reason), possibly empty.
bool runs_on(Backend& backend, Device device, const OpCall& call, std::string* why = nullptr);

// Whether TRINE_LOG asks for dispatch decisions.
bool log_dispatch();

// "12.3 us", "4.56 ms": for decision logs.
std::string format_seconds(double s);

// Is this a software device (DeviceInfo::software)?
bool is_software(Device d);

}  // namespace trine::detail
