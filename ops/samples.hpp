// One table of sample calls per op (ops/samples.cpp), read by everything that calls ops without a
// user: the conformance suite (tests/ops_tests.cpp) checks every backend against the reference on
// its conformance cases, trine-bench times its bench rows, the calibration measures it over its
// ladder of sizes, and the tour runs it once at a typical size. A new op without its samples fails
// the build (the switch in samples.cpp has no default).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trine/device.hpp"
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine::samples {

enum class Layout {
  contiguous,
  strided,     // every other element of a tensor twice as wide along the last axis
  transposed,  // the transpose of a tensor with the last two dims swapped (rank >= 2)
};
const char* layout_name(Layout layout) noexcept;

struct Input {
  Shape shape;
  DType dtype = DType::f32;
  float low = -1.0f;  // values uniform in [low, high)
  float high = 1.0f;
  Layout layout = Layout::contiguous;
  bool absent = false;  // an optional input left out (an undefined tensor)
  float step = 0.0f;    // > 0: the values are multiples of step (many ties), made on the host
};

struct Sample {
  std::vector<Input> inputs;
  OpParams params;
  std::string note;       // what the case is for, printed beside its shapes ("axis 1, many rows")
  bool cpu_only = false;  // reaches a path only the cpu has, and is too slow for the software devices
};

// The cases every device is checked on: each kernel path of each backend and the edge cases (sizes
// of 1, primes, powers of two and their neighbours, empty where the op allows it, large; views;
// the parameters' corners).
std::vector<Sample> conformance(OpKind op);

// One call of `op` at size n: n elements for the memory-bound ops (rows of up to 4096 for the row
// ops), the side of the problem for the others (matmul n^3, gemv n x n, conv2d n x n images,
// attention n positions). The calibration measures each op over ladder(op, quick); the tour runs
// one call at a size from it.
Sample sized(OpKind op, std::int64_t n);
std::vector<std::int64_t> ladder(OpKind op, bool quick);

// trine-bench's rows of `op`: the size as its table prints it ("n=1M", "4096x4096 (decode)") and
// the call; quick keeps two or three.
struct BenchRow {
  std::string size;
  Sample sample;
};
std::vector<BenchRow> bench(OpKind op, bool quick);

// The tensors of a sample: input i uniform in [low, high) from seed + i, laid out as it says; on
// `device` (pinned there) when given, else host tensors the dispatcher places.
Tensor make_input(const Input& input, std::uint64_t seed, std::optional<Device> device);
std::vector<Tensor> make_inputs(const Sample& sample, std::uint64_t seed, std::optional<Device> device);

}  // namespace trine::samples
