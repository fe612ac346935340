// The differential harness: seeded inputs (contiguous or strided views), the reference oracle,
// NMSE against it with NaN/Inf agreement, and guard checks around every buffer an op touched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/reference/reference.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

namespace trine::test {

// The run's seed: TRINE_TEST_SEED if set, else a fixed default; printed once so a failure replays.
std::uint64_t base_seed();

enum class View { contiguous, strided, transposed };
const char* view_name(View v);

// A tensor of `shape` whose values are uniform in [low, high) from `seed`, laid out as `view`:
// strided = every other element of a wider tensor along the last axis; transposed = the transpose
// of a tensor with the last two dims swapped (rank >= 2; otherwise contiguous).
Tensor make_input(const Shape& shape, std::uint64_t seed, View view = View::contiguous, DType dtype = DType::f32,
                  float low = -1.0f, float high = 1.0f);

// Runs `op` through trine::run_op and checks: output shape, guards of the output and of every
// input, inputs unchanged, NaN/Inf agreement and NMSE <= bound against the reference.
// `label` says which case this is in the failure message.
void check_op(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, double bound,
              const std::string& label);

// Ops of the table that no check_op call has exercised in this run (the runner fails a full
// "[ops]" run that leaves any: every op must have differential cases).
std::vector<OpKind> unchecked_ops();

}  // namespace trine::test
