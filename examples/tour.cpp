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

// A typical size per op; `s` scales it down for --quick. The switch has no default: a new op in
// ops.def breaks this build until it has a line here.
Case typical(OpKind op, Device d, std::int64_t s) {
  auto r = [&](const Shape& shape, std::uint64_t seed, float lo = -1, float hi = 1, DType t = DType::f32) {
    return Tensor::random(shape, seed, lo, hi, t, d);
  };
  const std::int64_t big = 1 << 22 >> (s > 1 ? 6 : 0);
  const std::int64_t n = 512 / s;
  switch (op) {
    case OpKind::matmul: return {{r({n, n}, 1), r({n, n}, 2)}, MatmulParams{}};
    case OpKind::gemv: return {{r({4 * n, 4 * n}, 3), r({4 * n}, 4)}, GemvParams{}};
    case OpKind::dot: return {{r({big}, 5), r({big}, 6)}, NoParams{}};
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: return {{r({big / 1024, 1024}, 7), r({1024}, 8)}, NoParams{}};
    case OpKind::div: return {{r({big / 1024, 1024}, 9), r({big / 1024, 1024}, 10, 0.5f, 2.0f)}, NoParams{}};
    case OpKind::scale: return {{r({big}, 11)}, ScaleParams{2.0f, 1.0f}};
    case OpKind::bias_act: return {{r({big / 1024, 1024}, 12), r({1024}, 13)}, BiasActParams{Activation::gelu}};
    case OpKind::relu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh: return {{r({big}, 14, -6, 6)}, ActParams{}};
    case OpKind::leaky_relu: return {{r({big}, 15, -6, 6)}, ActParams{0.01f, 0}};
    case OpKind::elu: return {{r({big}, 16, -6, 6)}, ActParams{1.0f, 0}};
    case OpKind::clip: return {{r({big}, 17, -6, 6)}, ActParams{-1.0f, 1.0f}};
    case OpKind::softmax:
    case OpKind::log_softmax: return {{r({big / 4096, 4096}, 18, -10, 10)}, AxisParams{-1}};
    case OpKind::layernorm: return {{r({big / 4096, 4096}, 19), r({4096}, 20), r({4096}, 21)}, NormParams{}};
    case OpKind::rmsnorm: return {{r({big / 4096, 4096}, 22), r({4096}, 23)}, NormParams{1e-6f}};
    case OpKind::conv2d:
      return {{r({1, 64 / s, 56 / s, 56 / s}, 24), r({64 / s, 64 / s, 3, 3}, 25), r({64 / s}, 26)},
              Conv2dParams{1, 1, 1, 1}};
    case OpKind::attention:
      return {{r({1, 8, n, 64}, 27, -2, 2), r({1, 8, n, 64}, 28, -2, 2), r({1, 8, n, 64}, 29)},
              AttentionParams{true, 0}};
    case OpKind::rope: return {{r({8, n, 128}, 30)}, RopeParams{}};
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: return {{r({big / 4096, 4096}, 31)}, ReduceParams{-1, false}};
    case OpKind::copy: return {{r({2048 / s, 2048 / s}, 32).transpose()}, NoParams{}};
    case OpKind::cast: return {{r({big}, 33)}, CastParams{DType::f16}};
  }
  return {};
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
    const std::int64_t s = quick ? 4 : 1;
    int failures = 0;
    for (const auto& dev : devices()) {
      std::printf("\n%s: %s\n", dev.device.str().c_str(), dev.name.c_str());
      std::printf("%-12s %-44s %10s %14s %10s %10s %10s\n", "op", "inputs", "time", "rate", "err/eps", "bound/eps",
                  "max|err|");
      for (int k = 0; k < TRINE_OP_COUNT; ++k) {
        const auto op = static_cast<OpKind>(k);
        Case c = typical(op, dev.device, s);
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
        const ref::Comparison e = ref::compare(ref::from_tensor(out).data, expect);
        double bound = ref::error_bound(op, c.params, expect.terms) * ref::device_math_factor(out.device().kind);
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
