// A tour of the library: trine-info's summary, then every op of the table on every available
// device at a typical size, one line each: shapes, device, time, rate, error against the reference
// beside its bound (ref::compare's error and tests/reference/bounds.hpp's bound, the ones the tests
// use, in units of f32 epsilon). --check exits non-zero when an op's error exceeds its bound;
// --quick uses small sizes and times each op for 30 ms instead of 300 (ctest runs it so).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/samples.hpp"
#include "tests/reference/bounds.hpp"
#include "tests/reference/bridge.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

struct Case {
  std::vector<Tensor> inputs;
  OpParams params;
};

// A typical call of each op, from its samples (ops/samples.cpp): the largest size of its quick
// calibration ladder, or for --quick the middle one.
Case typical(OpKind op, Device d, bool quick) {
  const std::vector<std::int64_t> sizes = samples::ladder(op, true);
  const samples::Sample s = samples::sized(op, quick ? sizes[sizes.size() / 2] : sizes.back());
  return {samples::make_inputs(s, 1, d), s.params};
}

std::string shapes_of(const std::vector<Tensor>& in) {
  std::string s;
  for (const auto& t : in) {
    if (!s.empty()) s += " ";
    s += t.defined() ? std::string(dtype_name(t.dtype())) + t.shape().str() : "-";
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check")) {
      check = true;
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: tour [--check] [--quick]\n");
      return 2;
    }
  }
  try {
    std::printf("trine %s\n", version());
    for (const auto& st : backend_status()) {
      std::printf("  %-7s %-12s %s\n", device_kind_name(st.kind),
                  st.available ? "available" : (st.built ? "unavailable" : "not built"), st.reason.c_str());
    }
    int failures = 0;
    for (const auto& dev : devices()) {
      std::printf("\n%s: %s\n", dev.device.str().c_str(), dev.name.c_str());
      std::printf("%-12s %-44s %10s %14s %10s %10s %10s\n", "op", "inputs", "time", "rate", "err/eps", "bound/eps",
                  "max|err|");
      for (int k = 0; k < TRINE_OP_COUNT; ++k) {
        const auto op = static_cast<OpKind>(k);
        Case c = typical(op, dev.device, quick);
        const OpCost cost = op_cost(op, c.inputs, c.params);
        Tensor out = run_op(op, c.inputs, c.params);  // warm-up, and the result we check
        std::vector<double> times;
        const auto start = std::chrono::steady_clock::now();
        const auto budget = std::chrono::milliseconds(quick ? 30 : 300);
        while (times.size() < 3 || (times.size() < 50 && std::chrono::steady_clock::now() - start < budget)) {
          const auto t0 = std::chrono::steady_clock::now();
          run_op(op, c.inputs, c.params);
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(times.begin(), times.end());
        const double t = times[times.size() / 2];
        std::vector<ref::Array> ref_in;
        for (const auto& in : c.inputs) ref_in.push_back(ref::from_tensor(in));
        const ref::Array expect = ref::run(op, ref_in, c.params);
        const ref::Comparison e = ref::compare(ref::from_tensor(out).data, expect, out.dtype());
        double bound = ref::device_bound(op, c.params, expect.terms, out.device().kind);
        // As the conformance suite does (tests/harness.cpp): the cpu's Winograd F(4x4,3x3) errs more.
        if (op == OpKind::conv2d && out.device().kind == DeviceKind::cpu &&
            debug::cpu_conv2d_path(c.inputs[0].shape(), c.inputs[1].shape(), std::get<Conv2dParams>(c.params)) ==
                "winograd_f4")
          bound *= ref::winograd_f4_factor;
        const bool ok = e.specials_match && e.error <= bound;
        char rate[32];
        if (cost.flops > 4 * cost.bytes) {
          std::snprintf(rate, sizeof rate, "%.1f GFLOP/s", cost.flops / t * 1e-9);
        } else {
          std::snprintf(rate, sizeof rate, "%.1f GB/s", cost.bytes / t * 1e-9);
        }
        std::printf("%-12s %-44s %8.3fms %14s %10.3g %10.3g %10.2e%s\n", op_info(op).name, shapes_of(c.inputs).c_str(),
                    t * 1e3, rate, e.error / ref::f32_eps, bound / ref::f32_eps, e.max_abs,
                    ok ? "" : "  ERROR ABOVE BOUND");
        std::fflush(stdout);
        if (!ok) ++failures;
      }
    }
    std::printf("\n%s\n", failures ? "some ops exceeded their error bound" : "every op within its error bound");
    return check && failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tour: %s\n", e.what());
    return 1;
  }
}
