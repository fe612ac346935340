// From an op call to a kernel launch: which generated kernel serves it on a device, its
// parameters, its grid; and the modules loaded per context.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

namespace kernels {
struct Generator;
}

// What the launches on one device (one context) keep between calls: the modules, generated once per
// (kernel, config, target) and loaded once per context; dot's partial sums; rope's frequency
// tables. Not thread-safe: the backend calls it under its lock, with the device's context current.
class DeviceKernels {
 public:
  // Configuration `config` (an index into its configs) of `generator`, for this device's target.
  // Error(internal) when no family file registers the generator (trine-ptx and the ptxas test would
  // not see the kernel).
  CUfunction function(const DriverApi& api, const kernels::Generator& generator, std::size_t config, int sm);
  // dot's per-CTA partial sums, `count` floats (the dot kernel's largest grid), allocated by the
  // first call. Launches on the device's one stream run in order, so every dot can use the same
  // buffer.
  CUdeviceptr dot_partials(const DriverApi& api, std::size_t count);
  // inv_freq[i] = base^(-2i/D) in f64, computed here as the cpu backend does, uploaded once on
  // `stream` (the host copy stays alive with the table).
  CUdeviceptr rope_frequencies(const DriverApi& api, CUstream stream, std::int64_t d, float base);
  // gather's index check: one u64 the kernel leaves the first bad index in (IndexCheck), allocated
  // by the first call. Launches on the device's one stream run in order, so every gather uses it:
  // each sets it, runs, and has it copied out before the next can.
  CUdeviceptr index_check_slot(const DriverApi& api);
  void release(const DriverApi& api) noexcept;

 private:
  struct Loaded {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
  };
  struct Table {
    CUdeviceptr device = 0;
    std::vector<double> host;
  };
  std::map<std::string, Loaded> loaded_;
  CUdeviceptr dot_partials_ = 0;
  CUdeviceptr index_check_slot_ = 0;
  std::map<std::pair<std::int64_t, float>, Table> rope_;
};

// Builds the op table from the family files (kernels/<family>.cpp) once and checks it complete:
// throws Error(internal) naming every op with neither a kernel nor a refusal and the file to add
// it to. The backend's factory calls it first, so such a build fails at start-up.
void require_kernels();
// Whether generated kernels run this call on a device of compute capability `sm` (x10), counting
// the gathers that make strided inputs contiguous first (see needs_gather).
bool can_launch(const detail::OpCall& call, int sm);
// Why can_launch is false, in words (the known limits), or a generic sentence.
std::string refusal(const detail::OpCall& call, int sm);
// The inputs of `call` to copy into contiguous temporaries (one gather launch each) before its
// kernel runs: none when its kernel reads them through their strides.
std::vector<std::size_t> needs_gather(const detail::OpCall& call, int sm);
// What a launch configuration takes from the device's attributes.
struct DeviceShape {
  int sm = 0;               // compute capability x 10 + minor
  int multiprocessors = 1;  // grid-stride kernels launch a few CTAs per SM, not one per 256 elements
};
// An input checked on the device (gather's indices must lie in [0, rows)): after the launches,
// the u64 at `slot` holds (position << 32) | index of the lowest position holding a bad index, or
// all ones (index_check_clean) when every index is good. The kernel never reads outside the table.
// A write at a position (trine::copy_into) checks its position the same way: the word then holds
// that position, and `describe` says what it fails with. So does attention with its valid input
// (the keys that count): the word then holds that count.
struct IndexCheck {
  CUdeviceptr slot = 0;
  std::int64_t rows = 0;
  std::function<std::string(std::int64_t)> describe;  // null: gather's message
};
inline constexpr std::uint64_t index_check_clean = ~std::uint64_t{0};
// The error a check's word reports, or nullopt when it is clean: "index i at position p is outside
// the table's rows [0, V)" (the op and device are the caller's to add).
std::optional<std::string> index_check_failure(std::uint64_t word, const IndexCheck& check);
// Whether the call's kernel checks an input on the device (launch then returns an IndexCheck).
bool checks_on_device(const detail::OpCall& call);
// The check that launch() would return for the call, planned without launching (its slot 0): what
// a replayed graph's copy of the check word is read against.
std::optional<IndexCheck> planned_check(const detail::OpCall& call, int sm);

// Enqueues the call's kernel(s) on `stream`. Throws Error(driver_error) naming the op and the call.
// A call whose kernel checks an input on the device returns the check: the caller copies its slot
// out on the stream before anything else can launch there, and reads it once the work is done.
std::optional<IndexCheck> launch(const DriverApi& api, CUstream stream, const DeviceShape& device,
                                 const detail::OpCall& call, DeviceKernels& kernels);

}  // namespace trine::cuda
