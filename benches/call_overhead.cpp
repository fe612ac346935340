// The fixed cost of one op call on the cpu, by spelling: sync, async (submit to ready), one entry
// of a replayed batch; relu on 16 floats, so the kernel itself is a few nanoseconds.
//
//   cmake -S . -B build/bench -G Ninja -DTRINE_BUILD_BENCHES=ON && cmake --build build/bench
//   build/bench/benches/call_overhead --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
//
// The sync case compiles against any trine version, so the same file built against an older
// libtrine measures that version's sync call for a side-by-side comparison.
#include <benchmark/benchmark.h>

#include <vector>

#include "trine/trine.hpp"

#if __has_include("trine/batch.hpp")
#define TRINE_BENCH_ASYNC 1
#endif

namespace {

void sync_relu16(benchmark::State& state) {
  const trine::Tensor x = trine::Tensor::random({16}, 1);
  for (auto _ : state) {
    trine::Tensor y = trine::relu(x);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(sync_relu16);

// Large enough that the cpu backend hands it to its pool (and, async, to the executor thread):
// the difference from a 16-float call is the cost of waking threads plus the work itself.
void sync_relu256k(benchmark::State& state) {
  const trine::Tensor x = trine::Tensor::random({256 * 1024}, 1);
  for (auto _ : state) {
    trine::Tensor y = trine::relu(x);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(sync_relu256k);

// A GEMM small enough that splitting it over threads saves less than a sleeping worker's wake-up.
void sync_matmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const trine::Tensor a = trine::Tensor::random({n, n}, 1), b = trine::Tensor::random({n, n}, 2);
  for (auto _ : state) {
    trine::Tensor c = trine::matmul(a, b);
    benchmark::DoNotOptimize(c);
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n) *
                                                    static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(sync_matmul)->Arg(64)->Arg(128)->Arg(256);

#ifdef TRINE_BENCH_ASYNC
void async_relu16(benchmark::State& state) {
  const trine::Tensor x = trine::Tensor::random({16}, 1);
  for (auto _ : state) {
    trine::Future<trine::Tensor> f = trine::async::relu(x);
    f.wait();
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(async_relu16);

void async_relu256k(benchmark::State& state) {
  const trine::Tensor x = trine::Tensor::random({256 * 1024}, 1);
  for (auto _ : state) {
    trine::Future<trine::Tensor> f = trine::async::relu(x);
    f.wait();
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(async_relu256k);

// One entry of a 64-op batch replayed: (run time - upload - readback) / 64 is not separable here,
// so the figure is the whole replay divided by its 64 ops, transfers included.
void batch_entry_relu16(benchmark::State& state) {
  std::vector<float> host(16, 0.5f);
  trine::Batch batch;
  trine::Tensor t = batch.upload(host, {16});
  for (int i = 0; i < 64; ++i) t = trine::relu(t);
  trine::BatchRead out = batch.read(t);
  batch.run();
  for (auto _ : state) batch.run();
  state.SetItemsProcessed(state.iterations() * 64);
  state.counters["ns_per_entry"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 64, benchmark::Counter::kIsRate |
                                                                            benchmark::Counter::kInvert);
}
BENCHMARK(batch_entry_relu16);
#endif

}  // namespace

BENCHMARK_MAIN();
