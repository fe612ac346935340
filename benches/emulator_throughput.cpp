// The PTX emulator's speed: emulated thread-instructions per second on one host thread (one core)
// for the tiled f32 matmul and the tensor-core (mma.sync) matmul, checker off and on, and what
// the checker costs. Issue 9's targets, for reference: >= 100 M/s with the checker off, the
// checker costing at most 4x.
//
//   cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRINE_BUILD_BENCHES=ON
//   cmake --build build/bench --target emulator_throughput
//   build/bench/benches/emulator_throughput
//
// Each iteration is one launch of a 256 x 256 x 256 matmul through emu::launch_kernel with
// LaunchConfig::threads = 1, so the launch runs on the benchmark's own thread and the rate is
// per CPU second of that thread. A thread-instruction is one instruction issued for one active
// lane (LaunchResult::thread_instructions); lanes a guard switches off count, as on nvprof's
// thread_inst_executed. The first launch's result is checked exactly before timing (the inputs
// are multiples of 1/8 up to 1/2, so every product and sum is exact in f16 and f32).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/interp.hpp"
#include "backends/cuda_ptx/emulator/parser.hpp"
#include "backends/cuda_ptx/kernels/generator.hpp"
#include "trine/dtype.hpp"

namespace {

namespace emu = trine::cuda::emu;
namespace kernels = trine::cuda::kernels;

constexpr std::uint32_t kSize = 256;  // M = N = K
constexpr const char* kRate = "thread_instr/s";

struct Case {
  const char* family;
  const char* config;
  bool f16_inputs;
};

// One matmul problem on the emulator: the module, its buffers (registered with the checker's
// allocation table), and the packed parameters.
class MatmulProblem {
 public:
  explicit MatmulProblem(const Case& c) {
    const kernels::Generator* g = kernels::find_generator(c.family);
    const std::size_t config = g->find(c.config).value();  // the cases name shipped configurations
    module_ = emu::load_ptx(g->generate(config, trine::cuda::ptx::Target::sm_80));
    kernel_ = module_.find(kernels::kernel_name(c.family, c.config));
    const std::array<std::int64_t, 4> sizes{1, kSize, kSize, kSize};  // batch, m, n, k
    launch_ = g->geometry(config, sizes);

    const std::size_t n = std::size_t{kSize} * kSize;
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4) / 8.0f;
      b[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3) / 8.0f;
    }
    expected_.assign(n, 0.0f);
    for (std::uint32_t i = 0; i < kSize; ++i)
      for (std::uint32_t p = 0; p < kSize; ++p)
        for (std::uint32_t j = 0; j < kSize; ++j) expected_[i * kSize + j] += a[i * kSize + p] * b[p * kSize + j];
    a_ = upload(a, c.f16_inputs);
    b_ = upload(b, c.f16_inputs);
    c_.assign(n * sizeof(float), 0);
    allocations_.add(address(a_), a_.size(), "a");
    allocations_.add(address(b_), b_.size(), "b");
    allocations_.add(address(c_), c_.size(), "c");

    // the parameter list of the matmul families (trine-ptx --list: matmul_tiled / matmul_mma params)
    const std::uint64_t pa = address(a_), pb = address(b_), pc = address(c_);
    const std::uint32_t m = kSize, nn = kSize, k = kSize, batch_inner = 1;
    const std::int64_t sa_m = kSize, sa_k = 1, sb_k = kSize, sb_n = 1, zero = 0;
    const void* params[] = {&pa, &pb, &pc, &m, &nn, &k, &sa_m, &sa_k, &sb_k, &sb_n, &batch_inner, &zero, &zero, &zero, &zero};
    params_ = emu::pack_params(*kernel_, const_cast<void* const*>(params));
  }

  emu::LaunchResult run(bool checker) {
    emu::LaunchConfig config;
    std::copy(launch_.grid.begin(), launch_.grid.end(), config.grid);
    std::copy(launch_.block.begin(), launch_.block.end(), config.block);
    config.dynamic_shared = launch_.dynamic_shared_bytes;
    config.params = params_.data();
    config.check.enabled = checker;
    config.allocations = &allocations_;
    config.threads = 1;
    return emu::launch_kernel(module_, *kernel_, config);
  }

  bool correct() const {
    const auto* c = reinterpret_cast<const float*>(c_.data());
    for (std::size_t i = 0; i < expected_.size(); ++i)
      if (c[i] != expected_[i]) return false;
    return true;
  }

 private:
  static std::vector<std::uint8_t> upload(const std::vector<float>& v, bool f16) {
    std::vector<std::uint8_t> out(v.size() * (f16 ? 2 : 4));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (f16) {
        const std::uint16_t h = trine::f32_to_f16(v[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(out.data() + 4 * i, &v[i], 4);
      }
    }
    return out;
  }
  static std::uint64_t address(const std::vector<std::uint8_t>& v) { return reinterpret_cast<std::uint64_t>(v.data()); }

  emu::Module module_;
  const emu::Kernel* kernel_ = nullptr;
  kernels::Launch launch_;
  std::vector<std::uint8_t> a_, b_, c_, params_;
  std::vector<float> expected_;
  emu::AllocationTable allocations_;
};

void matmul(benchmark::State& state, Case c, bool checker) {
  MatmulProblem problem(c);
  const emu::LaunchResult first = problem.run(checker);
  if (first.result != trine::cuda::CUDA_SUCCESS) {
    state.SkipWithError(("launch failed: " + first.report).c_str());
    return;
  }
  if (!problem.correct()) {
    state.SkipWithError("wrong result");
    return;
  }
  std::uint64_t executed = 0;
  for (auto _ : state) executed += problem.run(checker).thread_instructions;
  state.counters[kRate] = benchmark::Counter(static_cast<double>(executed), benchmark::Counter::kIsRate);
  state.counters["thread_instr/launch"] = static_cast<double>(first.thread_instructions);
}

const Case kTiled{"matmul_tiled", "f32_f32_64", false};
const Case kMma{"matmul_mma", "f16", true};
BENCHMARK_CAPTURE(matmul, tiled_f32_f32_64/checker_off, kTiled, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(matmul, tiled_f32_f32_64/checker_on, kTiled, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(matmul, mma_f16/checker_off, kMma, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(matmul, mma_f16/checker_on, kMma, true)->Unit(benchmark::kMillisecond);

// The console table, then one line per kernel: both rates and the checker's cost (off / on).
// With --benchmark_repetitions the median of the repetitions is used.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      // repetitions: the median aggregate when it is reported, else the median of the runs
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if ((r.run_type != Run::RT_Iteration && !median) || r.error_occurred) continue;
      const auto rate = r.counters.find(kRate);
      const std::string name = r.run_name.str();
      const auto slash = name.rfind("/checker_");
      if (rate == r.counters.end() || slash == std::string::npos) continue;
      const bool on = name.compare(slash, std::string::npos, "/checker_on") == 0;
      std::vector<double>& v = on ? rates_[name.substr(0, slash)].on : rates_[name.substr(0, slash)].off;
      if (median) v.assign(1, rate->second.value);
      else v.push_back(rate->second.value);
    }
  }

  void print_summary() const {
    std::printf("\nemulated thread-instructions per second per core (%ux%ux%u matmul, one host thread):\n", kSize, kSize, kSize);
    for (const auto& [name, r] : rates_) {
      const double off = median(r.off), on = median(r.on);
      std::printf("  %-34s checker off %8.1f M/s   checker on %8.1f M/s", name.c_str(), off / 1e6, on / 1e6);
      if (off > 0 && on > 0) std::printf("   checker cost %.2fx", off / on);
      std::printf("\n");
    }
  }

 private:
  static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  struct Rates {
    std::vector<double> off, on;
  };
  std::map<std::string, Rates> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
