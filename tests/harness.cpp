// The differential harness (see harness.hpp).
#include "tests/harness.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "backends/vulkan/debug.hpp"
#include "tests/reference/bounds.hpp"

namespace trine::test {

std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 20261121;
    const char* env = std::getenv("TRINE_TEST_SEED");
    const bool fresh = env && std::string(env) == "fresh";
    if (fresh) {
      // A new seed every run widens what CI explores; small enough to type when replaying.
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      s = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) % 1000000007u;
    } else if (env && *env) {
      s = std::strtoull(env, nullptr, 10);
    }
    std::printf("test seed: %llu%s (replay with TRINE_TEST_SEED=%llu)\n", static_cast<unsigned long long>(s),
                fresh ? ", fresh" : "", static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

namespace {

struct DeviceChoice {
  Device device = Device::cpu();
  std::string problem;  // empty when usable
};

const DeviceChoice& device_choice() {
  static const DeviceChoice choice = [] {
    DeviceChoice c;
    const char* env = std::getenv("TRINE_TEST_DEVICE");
    if (!env || !*env) return c;
    try {
      c.device = Device::parse(env);
    } catch (const std::exception& e) {
      c.problem = std::string("TRINE_TEST_DEVICE=") + env + " is not a device name: " + e.what();
      return c;
    }
    for (const auto& info : devices()) {
      if (info.device == c.device) return c;
    }
    c.problem = "TRINE_TEST_DEVICE=" + std::string(env) + ": " + c.device.str() + " is not available here";
    for (const auto& st : backend_status()) {
      if (st.kind == c.device.kind && !st.available) c.problem += " (" + st.reason + ")";
    }
    return c;
  }();
  return choice;
}

}  // namespace

Device test_device() { return device_choice().device; }
std::string test_device_problem() { return device_choice().problem; }

Tensor make_input(const Shape& shape, std::uint64_t seed, View view, DType dtype, float low, float high,
                  Device device) {
  const samples::Input input{shape, dtype, low, high, view, false};
  return samples::make_input(input, seed ^ (base_seed() * 0x9e3779b97f4a7c15ull), device);
}

namespace {

std::array<bool, TRINE_OP_COUNT>& checked() {
  static std::array<bool, TRINE_OP_COUNT> c{};
  return c;
}

// Whether the backend of `probe`'s device keeps allocation guards; where it does not, says so
// once per device and run rather than once per check, and the guard checks are skipped.
bool guards_kept(const Tensor& probe) {
  static std::map<std::string, bool> kept;  // by device, filled on its first check
  const std::string device = probe.device().str();
  if (auto it = kept.find(device); it != kept.end()) return it->second;
  try {
    (void)debug::guards_intact(probe);
    kept[device] = true;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    kept[device] = false;
    std::printf("guard checks skipped on %s: %s\n", device.c_str(), e.what());
    std::fflush(stdout);
  }
  return kept[device];
}

// TRINE_TEST_ERROR_LOG=path appends one line per check (op, terms, error, bound, error/bound,
// label): how the bounds in bounds.hpp were measured, and how to re-measure them.
void log_error(OpKind op, std::int64_t terms, double error, double bound, const std::string& label) {
  static const char* path = std::getenv("TRINE_TEST_ERROR_LOG");
  if (!path || !*path) return;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::ofstream f(path, std::ios::app);
  f << op_info(op).name << '\t' << terms << '\t' << error << '\t' << bound << '\t'
    << (bound > 0 ? error / bound : (error > 0 ? 1e300 : 0.0)) << '\t' << label << '\n';
}

DType expected_dtype(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params) {
  if (op == OpKind::cast) return std::get<CastParams>(params).dtype;
  if (op == OpKind::copy || op == OpKind::gather || op == OpKind::concat) return inputs.at(0).dtype();
  if (op == OpKind::argmax) return DType::i32;
  // out_dtype when the call sets it
  std::optional<DType> out;
  if (const auto* p = std::get_if<MatmulParams>(&params)) out = p->out_dtype;
  if (const auto* p = std::get_if<GemvParams>(&params)) out = p->out_dtype;
  if (const auto* p = std::get_if<Conv2dParams>(&params)) out = p->out_dtype;
  if (const auto* p = std::get_if<AttentionParams>(&params)) out = p->out_dtype;
  if (out) return *out;
  // every other op computes in f32 and returns its floating inputs' dtype when they share one, else
  // f32 (where's cond, input 0, does not count; nor do attention's valid and mask, inputs 3 and 4,
  // nor rope's position)
  std::optional<DType> shared;
  bool mixed = false;
  const std::size_t end = op == OpKind::attention ? 3 : op == OpKind::rope ? 1 : inputs.size();
  for (std::size_t i = op == OpKind::where ? 1 : 0; i < std::min(end, inputs.size()); ++i) {
    if (!inputs[i].defined()) continue;
    if (shared && *shared != inputs[i].dtype()) mixed = true;
    shared = inputs[i].dtype();
  }
  return mixed || !shared ? DType::f32 : *shared;
}

}  // namespace

std::vector<OpKind> unchecked_ops() {
  std::vector<OpKind> out;
  for (int i = 0; i < TRINE_OP_COUNT; ++i)
    if (!checked()[static_cast<std::size_t>(i)]) out.push_back(static_cast<OpKind>(i));
  return out;
}

void check_op(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, const std::string& label) {
  checked()[static_cast<std::size_t>(op)] = true;
  std::vector<std::vector<std::uint8_t>> before;
  std::vector<ref::Array> ref_in;
  for (const auto& t : inputs) {
    before.push_back(t.defined() ? debug::storage_bytes(t) : std::vector<std::uint8_t>{});
    ref_in.push_back(t.defined() ? ref::from_tensor(t, before.back()) : ref::absent());
  }
  // The device the inputs live on (make_input's default: the device under test) is where the op
  // must run and leave its result.
  Device device = test_device();
  for (const auto& t : inputs) {
    if (t.defined()) {
      device = t.device();
      break;
    }
  }
  INFO(op_info(op).name << " " << label << " on " << device.str() << " seed " << base_seed());
  Tensor out = run_op(op, inputs, params);
  ref::Array expect = ref::run(op, ref_in, params);

  REQUIRE(out.defined());
  REQUIRE(out.is_contiguous());
  REQUIRE(out.device() == device);
  REQUIRE(dtype_name(out.dtype()) == std::string(dtype_name(expected_dtype(op, inputs, params))));
  REQUIRE(static_cast<std::size_t>(out.rank()) == expect.shape.size());
  for (int i = 0; i < out.rank(); ++i) REQUIRE(out.shape()[i] == expect.shape[static_cast<std::size_t>(i)]);
  // The output and every input buffer: nothing written outside them, inputs left alone.
  if (guards_kept(out)) {
    REQUIRE(debug::guards_intact(out));
    for (const auto& t : inputs) {
      if (t.defined()) REQUIRE(debug::guards_intact(t));
    }
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    INFO("input " << i << " was modified");
    REQUIRE(debug::storage_bytes(inputs[i]) == before[i]);
  }
  const ref::Array got = ref::from_tensor(out);
  REQUIRE(got.data.size() == expect.data.size());
  const ref::Comparison c = ref::compare(got.data, expect, out.dtype());
  double bound = ref::device_bound(op, params, expect.terms, out.device().kind) + ref::storage_rounding(out.dtype());
  std::string path;
  if (op == OpKind::conv2d && out.device().kind == DeviceKind::cpu) {
    path = debug::cpu_conv2d_path(inputs[0].shape(), inputs[1].shape(), std::get<Conv2dParams>(params));
    if (path == "winograd_f4") bound *= ref::winograd_f4_factor;
  }
  log_error(op, expect.terms, c.error, bound, path.empty() ? label : label + " [" + path + "]");
  INFO("cpu conv2d path " << (path.empty() ? "-" : path));
  // CHECK, not REQUIRE: the case is over either way, and the test case goes on to its next cases,
  // so one run reports every case above its bound.
  INFO(c.first_mismatch);
  CHECK(c.specials_match);
  INFO("error " << c.error << " (" << c.error / ref::f32_eps << " eps) bound " << bound << " (" << bound / ref::f32_eps
                << " eps, " << expect.terms << " terms)");
  CHECK(c.error <= bound);
  // Under the validation layer (TRINE_VULKAN_VALIDATION=1), any message fails the case that caused it.
  if (device.kind == DeviceKind::vulkan) {
    std::string messages;
    for (const auto& m : vulkan::take_validation_messages()) messages += m + "\n";
    INFO(messages);
    CHECK(messages.empty());
  }
}

}  // namespace trine::test
