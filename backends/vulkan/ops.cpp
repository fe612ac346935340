// Routes each op of the table to its family (no default: a new op breaks the build until it is
// placed), and the helpers the families share.
#include "backends/vulkan/ops.hpp"

#include <cstdint>
#include <utility>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {

// The shaders' op codes (the generated ops.glsl, read as C++: its lines are valid declarations)
// are OpKind's values: vulkan.cmake numbers ops.def's rows as ops.hpp's X-macro does, and this
// fails the build where the two disagree.
namespace glsl {
using uint = std::uint32_t;
#include "ops.glsl"
}  // namespace glsl
#define TRINE_OP(name, ...)                                                  \
  static_assert(glsl::OP_##name == static_cast<std::uint32_t>(OpKind::name), \
                "shaders/ops.glsl's OP_" #name " is not OpKind::" #name "'s value");
#include "trine/ops.def"

namespace {
enum class Family { elementwise, reduce, linalg, nn };

Family family_of(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::scale:
    case OpKind::bias_act:
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh:
    case OpKind::clip:
    case OpKind::copy:
    case OpKind::cast: return Family::elementwise;
    case OpKind::softmax:
    case OpKind::log_softmax:
    case OpKind::layernorm:
    case OpKind::rmsnorm:
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: return Family::reduce;
    case OpKind::matmul:
    case OpKind::gemv:
    case OpKind::dot: return Family::linalg;
    case OpKind::conv2d:
    case OpKind::attention:
    case OpKind::rope: return Family::nn;
  }
  return Family::nn;
}
}  // namespace

bool supports_op(const detail::OpCall& call) {
  switch (family_of(call.op)) {
    case Family::elementwise: return supports_elementwise(call);
    case Family::reduce: return supports_reduce(call);
    case Family::linalg: return supports_linalg(call);
    case Family::nn: return supports_nn(call);
  }
  return false;
}

std::string refusal(const DeviceCaps& caps, int index, const detail::OpCall& call) {
  Limits l(caps, index);
  switch (family_of(call.op)) {
    case Family::elementwise: limits_elementwise(l, call); break;
    case Family::reduce: limits_reduce(l, call); break;
    case Family::linalg: limits_linalg(l, call); break;
    case Family::nn: limits_nn(l, call); break;
  }
  return std::move(l.why());
}

void record_op(Recorder& rec, const detail::OpCall& call) {
  if (std::string why = refusal(rec.caps(), rec.context().index(), call); !why.empty())
    throw Error(ErrorCode::unsupported, std::string("[") + op_info(call.op).name + "] " + why);
  switch (family_of(call.op)) {
    case Family::elementwise: return record_elementwise(rec, call);
    case Family::reduce: return record_reduce(rec, call);
    case Family::linalg: return record_linalg(rec, call);
    case Family::nn: return record_nn(rec, call);
  }
  throw Error(ErrorCode::internal, std::string("[") + op_info(call.op).name + "] has no op family on vulkan");
}

TensorRef ref_of(const Tensor& t) {
  return {static_cast<Allocation*>(t.storage()->handle()), static_cast<std::uint32_t>(t.offset()),
          static_cast<std::size_t>(bound_bytes(t.storage()->bytes()))};
}

}  // namespace trine::vulkan
