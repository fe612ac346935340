// trine-bench's sweep: each op's bench rows from the op table's samples (ops/samples.cpp), the
// transformer shapes users run among them.
#include "benches/trine_bench/grid.hpp"

#include "ops/samples.hpp"

namespace trine_bench {
namespace {

using trine::OpKind;

void add_op(std::vector<Case>& out, OpKind op, bool quick) {
  for (trine::samples::BenchRow& row : trine::samples::bench(op, quick)) {
    // Host tensors (no device: the dispatcher places them), made on demand, deterministic values.
    auto inputs = [sample = row.sample] { return trine::samples::make_inputs(sample, 1, std::nullopt); };
    out.push_back({op, std::move(row.size), std::move(inputs), row.sample.params,
                   trine::op_info(op).bound == trine::OpBound::compute});
  }
}

}  // namespace

bool op_from_name(const std::string& name, trine::OpKind& out) {
  for (std::size_t k = 0; k < trine::TRINE_OP_COUNT; ++k) {
    const auto op = static_cast<OpKind>(k);
    if (name == trine::op_info(op).name) {
      out = op;
      return true;
    }
  }
  return false;
}

std::vector<Case> make_grid(const std::vector<trine::OpKind>& ops, bool quick) {
  std::vector<Case> out;
  if (ops.empty()) {
    for (std::size_t k = 0; k < trine::TRINE_OP_COUNT; ++k) add_op(out, static_cast<OpKind>(k), quick);
  } else {
    for (auto op : ops) add_op(out, op, quick);
  }
  return out;
}

}  // namespace trine_bench
