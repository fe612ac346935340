// The differential harness: seeded inputs (contiguous or strided views) on the device under test,
// the reference oracle reading them from raw storage, the condition-normalized error against it
// bounded per op (tests/reference/bounds.hpp), and guard checks where the backend keeps guards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/samples.hpp"
#include "tests/reference/bridge.hpp"
#include "tests/reference/reference.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

namespace trine::test {

// The run's seed: TRINE_TEST_SEED=N, or TRINE_TEST_SEED=fresh for one drawn from the clock, else
// a fixed default; printed once so a failure replays.
std::uint64_t base_seed();

// The device under test: TRINE_TEST_DEVICE ("cpu", "vulkan:0", "cuda:0"), cpu when unset.
Device test_device();
// Empty when the device under test is usable here, else why not (main fails the run with it: a
// device named but unavailable is an error, never a silent skip).
std::string test_device_problem();

// The layouts of ops/samples.hpp: strided = every other element of a wider tensor along the last
// axis; transposed = the transpose of a tensor with the last two dims swapped (rank >= 2).
using View = samples::Layout;
inline const char* view_name(View v) { return samples::layout_name(v); }

// A tensor of `shape` whose values are uniform in [low, high) from `seed` (mixed with the run's
// seed), laid out as `view`, on `device` (the device under test by default).
Tensor make_input(const Shape& shape, std::uint64_t seed, View view = View::contiguous, DType dtype = DType::f32,
                  float low = -1.0f, float high = 1.0f, Device device = test_device());

// Runs `op` through trine::run_op on the inputs' device (make_input puts them on the device under
// test unless told otherwise) and checks: the output's shape, dtype, device and layout, the
// guards of the output and of every input (where the backend keeps them), every input's storage
// byte for byte unchanged, NaN/Inf agreement, and ref::compare's error <= the op's bound.
// `label` says which case this is in the failure message.
void check_op(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, const std::string& label);

// Ops of the table that no check_op call has exercised in this run (the runner fails a full
// "[ops]" run that leaves any: every op must have differential cases).
std::vector<OpKind> unchecked_ops();

// n seeded values in [-1, 1): a small LCG, the same on every run and every machine.
inline std::vector<float> seeded_values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

// The code of the trine::Error that f() throws; internal when it throws none (no test expects that).
inline ErrorCode code_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::internal;
}

}  // namespace trine::test
