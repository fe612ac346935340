// The scalar reference oracle: plain double-precision loops that follow docs/ops.md line by line.
// This file holds run(), which calls an op by its OpKind; the ops are in linear.cpp, elementwise.cpp,
// rows.cpp, spatial.cpp and copy.cpp, their shared helpers in common.hpp and common.cpp.
#include "common.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <variant>

namespace trine::ref {

using namespace detail;

// ---- dispatch ----

Array run(OpKind op, const std::vector<Array>& inputs, const OpParams& params) {
  if (static_cast<std::size_t>(op) >= static_cast<std::size_t>(TRINE_OP_COUNT))
    throw std::invalid_argument("[ref run] unknown op");
  const OpInfo& row = op_info(op);
  const std::string name = row.name;
  const auto count = static_cast<int>(inputs.size());
  if (count < row.min_inputs || count > row.max_inputs) {
    fail(name, "takes " + std::to_string(row.min_inputs) + ".." + std::to_string(row.max_inputs) + " inputs, got " +
                   std::to_string(count));
  }
  for (int i = 0; i < row.min_inputs; ++i) {
    if (!inputs[static_cast<std::size_t>(i)].present) fail(name, "input " + std::to_string(i) + " is required");
  }
  if (params.index() != row.params_index) fail(name, "params are not the op's parameter struct");

  const Array missing = absent();
  auto in = [&](std::size_t i) -> const Array& { return i < inputs.size() ? inputs[i] : missing; };
  // The holds_alternative check above makes each std::get below safe.
  switch (op) {
    case OpKind::matmul: return matmul(in(0), in(1), std::get<MatmulParams>(params));
    case OpKind::gemv: return gemv(in(0), in(1), std::get<GemvParams>(params));
    case OpKind::dot: return dot(in(0), in(1));
    case OpKind::add: return add(in(0), in(1));
    case OpKind::sub: return sub(in(0), in(1));
    case OpKind::mul: return mul(in(0), in(1));
    case OpKind::div: return div(in(0), in(1));
    case OpKind::scale: return scale(in(0), std::get<ScaleParams>(params));
    case OpKind::bias_act: return bias_act(in(0), in(1), std::get<BiasActParams>(params));
    case OpKind::relu: return relu(in(0));
    case OpKind::leaky_relu: return leaky_relu(in(0), std::get<ActParams>(params).alpha);
    case OpKind::elu: return elu(in(0), std::get<ActParams>(params).alpha);
    case OpKind::sigmoid: return sigmoid(in(0));
    case OpKind::tanh: return tanh(in(0));
    case OpKind::silu: return silu(in(0));
    case OpKind::gelu: return gelu(in(0));
    case OpKind::gelu_tanh: return gelu_tanh(in(0));
    case OpKind::clip: {
      const auto& p = std::get<ActParams>(params);
      return clip(in(0), p.alpha, p.beta);
    }
    case OpKind::softmax: return softmax(in(0), std::get<AxisParams>(params).axis);
    case OpKind::log_softmax: return log_softmax(in(0), std::get<AxisParams>(params).axis);
    case OpKind::layernorm: return layernorm(in(0), in(1), in(2), std::get<NormParams>(params).eps);
    case OpKind::rmsnorm: return rmsnorm(in(0), in(1), std::get<NormParams>(params).eps);
    case OpKind::conv2d: return conv2d(in(0), in(1), in(2), std::get<Conv2dParams>(params));
    case OpKind::attention: return attention(in(0), in(1), in(2), std::get<AttentionParams>(params));
    case OpKind::rope: return rope(in(0), std::get<RopeParams>(params));
    case OpKind::sum: {
      const auto& p = std::get<ReduceParams>(params);
      return sum(in(0), p.axis, p.keepdims);
    }
    case OpKind::mean: {
      const auto& p = std::get<ReduceParams>(params);
      return mean(in(0), p.axis, p.keepdims);
    }
    case OpKind::max: {
      const auto& p = std::get<ReduceParams>(params);
      return max(in(0), p.axis, p.keepdims);
    }
    case OpKind::copy: return copy(in(0));
    case OpKind::cast: return cast(in(0), std::get<CastParams>(params).dtype);
    case OpKind::minimum: return minimum(in(0), in(1));
    case OpKind::maximum: return maximum(in(0), in(1));
    case OpKind::where: return where(in(0), in(1), in(2));
    case OpKind::exp: return exp(in(0));
    case OpKind::log: return log(in(0));
    case OpKind::sqrt: return sqrt(in(0));
    case OpKind::rsqrt: return rsqrt(in(0));
    case OpKind::abs: return abs(in(0));
    case OpKind::neg: return neg(in(0));
    case OpKind::pow: return pow(in(0), std::get<ActParams>(params).alpha);
    case OpKind::argmax: {
      const auto& p = std::get<ReduceParams>(params);
      return argmax(in(0), p.axis, p.keepdims);
    }
    case OpKind::gather: return gather(in(0), in(1));
    case OpKind::concat: return concat(inputs, std::get<AxisParams>(params).axis);
  }
  throw std::invalid_argument("[ref run] unknown op");
}

}  // namespace trine::ref
