// The op table's rules: every op's shape, dtype and parameter checks, its output and its work, in
// one place, read from its row in ops.def. No backend is asked anything before these pass.
#pragma once

#include <span>
#include <string>

#include "trine/ops.hpp"

namespace trine::detail {

struct InferredOutput {
  Shape shape;
  DType dtype = DType::f32;
};

// Validates inputs and params of `op` (count, definedness, the parameter struct, same device,
// dtypes, ranks, shapes, parameter ranges) and returns the output's shape and dtype. Throws
// trine::Error whose message starts with "[op]" and names the input shapes and the device.
InferredOutput infer_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

// Work of a validated call (trine::OpCost), the input to the dispatcher's cost model.
OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const InferredOutput& out);

// "f32[2, 3] on cpu, f32[4] on cpu" style description of a call's inputs for messages.
std::string describe_call(std::span<const Tensor> inputs);

// Numpy broadcast of two shapes; throws invalid_shape naming `op`.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b, const std::string& context);

}  // namespace trine::detail
