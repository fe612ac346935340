// Automatic backend choice: where an op runs when the user has not pinned it, the cost model behind
// the choice, the calibration profile that feeds the model, and the pins that override it.
//
// Placement rules (dispatch/dispatcher.cpp):
//   - A tensor made with an explicit device (`Tensor::random(shape, seed, -1, 1, f32, dev)`,
//     `x.to(dev)`, a `Batch(dev)`) is *pinned*: ops on it run on that device, and their outputs are
//     pinned there too. Two inputs pinned to different devices are an error.
//   - A `DeviceScope` on the calling thread, or `TRINE_DEVICE=cpu|vulkan[:N]|cuda[:N]` for the
//     whole process, pins ops whose inputs are not pinned (a pinned input still wins over the
//     scope only if they agree; otherwise the op fails naming both).
//   - Otherwise the dispatcher picks the device with the lowest predicted time: moving each input
//     that lives elsewhere (readback to the host, upload to the candidate) + the op's compute time
//     + bringing the result back to the host when every input lives on the host. The output of an
//     automatically placed op is not pinned: it stays where it was computed, and the next op
//     decides again (so data on a device stays there unless moving pays).
//   - Software devices (lavapipe and other CPU-type Vulkan devices, the emulated CUDA device) are
//     candidates only when opted in: `TRINE_ALLOW_SOFTWARE=1` (every software device),
//     `TRINE_VULKAN_ALLOW_CPU=1` (CPU-type Vulkan devices), or `allow_software(true)`.
//   - A pinned op that its device cannot run fails with Error(unsupported); nothing falls back.
//   - `TRINE_LOG=dispatch` prints each automatic decision with every candidate's estimate (stderr).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trine/device.hpp"
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine {

// Pins the ops this thread calls inside the scope to `device`. Scopes nest; the innermost wins.
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::optional<Device> previous_;
};

namespace dispatch {

// ---- the cost model ----
//
// time(op on device) = fixed_s + bytes / bytes_per_s + flops / flops_per_s, with the rates of the
// op's size class on that device (size = flops + bytes of the call, op_cost()), blended with the
// neighbouring class between measured sizes (SizeClass::at); an op the profile does not know uses
// the device's default rates. A transfer of B bytes host -> device costs
// upload_fixed_s + B / upload_bytes_per_s (readback likewise); the cpu's memory is the host's, so
// moving to or from the cpu costs only the other side's transfer.

struct SizeClass {
  double upto = 0;  // serves calls whose size (flops + bytes) is <= upto; the last class: +inf
  double fixed_s = 0;
  double bytes_per_s = 0;  // 0 = this term is not counted
  double flops_per_s = 0;  // 0 = this term is not counted
  // The size it was measured at (calibrated classes; 0 = unknown). Between the measured sizes of
  // two neighbouring classes the prediction moves from one class's formula to the next's
  // linearly in log(size) and log(time), so the model is exact at every measured size and
  // continuous between them.
  double at = 0;
};

struct DeviceModel {
  std::string device;  // "cpu", "vulkan:0", "cuda:0"
  std::string name;    // DeviceInfo::name when calibrated
  std::string driver;  // DeviceInfo::driver when calibrated (a profile for another driver is stale)
  bool software = false;
  // Defaults for ops the profile has no classes for.
  double op_fixed_s = 0;
  double bytes_per_s = 0;
  double flops_per_s = 0;
  // Host <-> device transfers (the cpu: zero cost).
  double upload_fixed_s = 0;
  double upload_bytes_per_s = 0;
  double readback_fixed_s = 0;
  double readback_bytes_per_s = 0;
  std::map<std::string, std::vector<SizeClass>> ops;  // by op name, classes sorted by upto
};

struct Profile {
  static constexpr int k_format = 1;
  int format = k_format;
  std::string trine_version;  // the version that wrote it
  std::string created;        // UTC, ISO 8601
  std::string source;         // "built-in defaults", or the file it was loaded from
  std::vector<DeviceModel> devices;

  const DeviceModel* find(Device d) const;
};

// The documented defaults for the devices this machine has (docs/dispatch.md lists them).
Profile builtin_profile();
// The profile the dispatcher uses: loaded once from profile_path() when present and valid, else
// the built-in defaults (a file that cannot be used gives one warning on stderr).
const Profile& active_profile();
// Replaces the active profile (tests use synthetic ones; trine-bench installs a fresh calibration).
void set_profile(Profile p);
// Forgets the active profile: the next use loads profile_path() again.
void reset_profile();

// $XDG_CACHE_HOME/trine/profile.json, else ~/.cache/trine/profile.json; empty when neither is set.
std::filesystem::path profile_path();
// Reads a profile; nullopt with `warning` set when the file is missing, corrupt, truncated, of
// another format, or for devices/drivers this machine does not have (foreign or stale). Never throws.
std::optional<Profile> load_profile(const std::filesystem::path& path, std::string& warning);
// Writes a profile (creating the directory); throws Error(invalid_argument) naming the path on failure.
void save_profile(const Profile& p, const std::filesystem::path& path);
std::string to_json(const Profile& p);
// Throws Error(invalid_argument) with what is wrong.
Profile profile_from_json(const std::string& text);

// Predicted seconds of the op's compute on `device` (inputs already there, output left there).
double predict_compute(const Profile& p, Device device, OpKind op, const OpCost& cost);
// Predicted seconds to move `bytes` from one device to another (through the host).
double predict_transfer(const Profile& p, Device from, Device to, double bytes);

// ---- decisions ----

struct Candidate {
  Device device;
  bool eligible = false;
  std::string why_not;    // when not eligible: "software device (not opted in)", "unsupported", ...
  double compute_s = 0;   // predicted
  double transfer_s = 0;  // predicted: inputs in, and the result back to the host when counted
  double total_s = 0;
};

struct Decision {
  Device device;
  bool pinned = false;  // by a pinned input, a DeviceScope or TRINE_DEVICE
  // "pinned by input 0 (pinned to vulkan:0)", "pinned by TRINE_DEVICE=cuda", "cheapest of 2", ...
  std::string why;
  // Every device of this machine, eligible or not, with the model's estimates: filled for a pinned
  // call too (what it would cost elsewhere).
  std::vector<Candidate> candidates;
};

// What the dispatcher does for this call (validates it like the op; runs nothing).
Decision decide(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

// Software devices as candidates for automatic placement (see the top of this file).
void allow_software(bool allow);
bool software_allowed(Device device);

// ---- calibration ----

struct CalibrateOptions {
  std::vector<Device> devices;  // empty: every device of this machine (software ones included)
  std::vector<OpKind> ops;      // empty: every op of the table
  bool quick = false;           // fewer sizes and repetitions
  double max_seconds_per_op = 2.0;  // per device and op; larger sizes are skipped past it
};

// Measures this machine: per device, the fixed cost of a sync op, host <-> device bandwidths, and
// per op a sweep of sizes with the inputs resident on the device; fits the size classes. Progress
// lines go to `progress` (may be empty).
Profile calibrate(const CalibrateOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace dispatch
}  // namespace trine
