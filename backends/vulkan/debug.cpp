// The test hooks of debug.hpp that need the backend: which shaders a run dispatched, and a dispatch
// that can be made to access out of bounds, which only the GPU-assisted validation test calls.
#include "backends/vulkan/debug.hpp"

#include <algorithm>
#include <cstdint>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/ops.hpp"
#include "backends/vulkan/pipelines.hpp"
#include "backends/vulkan/recorder.hpp"
#include "trine/device.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

std::vector<std::string> shaders_dispatched() { return shaders_used(); }
std::uint64_t dispatches_of(const std::string& shader) { return shader_dispatches(shader); }

std::vector<std::string> shaders_never_dispatched() {
  const std::vector<std::string> used = shaders_used();
  std::vector<std::string> missing;
  // A shader and its _subgroup variant are one: a device runs one or the other (ctest
  // vulkan_subgroups runs the variants on lavapipe, which otherwise does not use them). So are its
  // float-controls forms (_ieee, _ieee_denorm): a device runs the one it supports.
  auto family = [](std::string n) {
    for (const std::string suffix : {"_ieee_denorm", "_ieee", "_subgroup"})
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        n.resize(n.size() - suffix.size());
    return n;
  };
  for (const EmbeddedShader& s : embedded_shaders()) {
    const bool seen =
        std::any_of(used.begin(), used.end(), [&](const std::string& u) { return family(u) == family(s.name); });
    if (!seen) missing.emplace_back(s.name);
  }
  return missing;
}

void copy_at_offsets_for_test(const Tensor& x, std::uint32_t x_off, const Tensor& y, std::uint32_t y_off,
                              std::uint32_t n) {
  const std::string op = "[copy_at_offsets_for_test] ";
  auto fits = [](const Tensor& t) {
    return t.defined() && t.dtype() == DType::f32 && t.is_contiguous() && t.offset() == 0 && t.numel() > 0;
  };
  if (!fits(x) || !fits(y) || x.device().kind != DeviceKind::vulkan || y.device() != x.device()) {
    throw Error(ErrorCode::invalid_argument, op + "x and y must be contiguous f32 at offset 0 on one vulkan device");
  }
  synchronize();  // whatever wrote x and y has finished: this submission waits for nothing
  const TensorRef rx = ref_of(x), ry = ref_of(y);
  DeviceContext& ctx = *rx.alloc->ctx;
  // The unary shader's push constants (shaders/unary.comp), and its specialization constants
  // below: workgroup size, elements per invocation, activation (0: identity).
  struct Push {
    std::uint32_t n, x_off, y_off;
    float alpha, beta;
  } push{n, x_off, y_off, 0.0f, 0.0f};
  constexpr std::uint32_t group = 64;
  Recorder rec(ctx);
  rec.dispatch("unary", {bind_in(rx), bind_out(ry)}, &push, sizeof(push), (std::uint64_t{n} + group - 1) / group,
               {group, 1, 0});
  if (rec.empty()) return;  // n == 0
  rec.finish();
  const std::uint64_t messages_before = message_log().count.load();
  Recorder::StatePtr state = rec.take_state();
  const std::uint64_t value = submit_state(*state, 0);
  if (!ctx.wait_value(value, UINT64_MAX)) throw Error(ErrorCode::driver_error, op + "the wait timed out");
  complete_state(*state);
  if (message_log().count.load() != messages_before) {
    throw Error(ErrorCode::internal,
                op + "the Vulkan validation layer reported: " + message_log().since(messages_before));
  }
}

}  // namespace trine::vulkan
