// The cases trine-bench times: each op of the table over its bench rows (ops/samples.cpp), the shapes of
// transformer inference among them (decode gemv, prefill matmul, causal attention, rmsnorm).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trine/trine.hpp"

namespace trine_bench {

struct Case {
  trine::OpKind op;
  std::string size;  // "n=1M", "4096x11008 (decode)"
  // Host input data (unpinned tensors), made on demand: a case that is skipped allocates nothing.
  std::function<std::vector<trine::Tensor>()> inputs;
  trine::OpParams params;
  bool compute_bound = false;  // throughput in GFLOP/s, else GB/s
};

// Every case for `ops` (all when empty); --quick keeps two or three sizes per op.
std::vector<Case> make_grid(const std::vector<trine::OpKind>& ops, bool quick);

// "relu" -> OpKind; false when no op has that name.
bool op_from_name(const std::string& name, trine::OpKind& out);

}  // namespace trine_bench
