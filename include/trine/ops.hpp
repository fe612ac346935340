// The ops: parameter structs, the OpKind enum generated from ops.def, and one free function per op.
// Every function validates its inputs (trine::Error naming the op, shapes and device), runs on the
// device its inputs live on, and returns a new contiguous tensor there. Semantics: docs/ops.md.
// Inputs recorded in a trine::Batch make the call record into that batch instead (batch.hpp).
#pragma once

#include <cstdint>
#include <variant>

#include "trine/future.hpp"
#include "trine/tensor.hpp"

namespace trine {

// ---- parameters ----
struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};

struct MatmulParams {  // a @ b; trans_* transposes the last two dims of that input first
  bool trans_a = false;
  bool trans_b = false;
  friend bool operator==(const MatmulParams&, const MatmulParams&) = default;
};

struct GemvParams {  // y = A x, or A^T x when trans
  bool trans = false;
  friend bool operator==(const GemvParams&, const GemvParams&) = default;
};

struct ScaleParams {  // y = alpha * x + beta
  float alpha = 1.0f;
  float beta = 0.0f;
  friend bool operator==(const ScaleParams&, const ScaleParams&) = default;
};

enum class Activation { identity, relu, leaky_relu, elu, sigmoid, tanh, silu, gelu, gelu_tanh, clip };
const char* activation_name(Activation a) noexcept;

struct ActParams {  // leaky_relu: alpha = slope; elu: alpha; clip: [alpha, beta]
  float alpha = 0.0f;
  float beta = 0.0f;
  friend bool operator==(const ActParams&, const ActParams&) = default;
};

struct BiasActParams {  // y = act(x + bias), bias broadcast over the last axis
  Activation act = Activation::identity;
  float alpha = 0.0f;
  float beta = 0.0f;
  friend bool operator==(const BiasActParams&, const BiasActParams&) = default;
};

struct AxisParams {
  int axis = -1;
  friend bool operator==(const AxisParams&, const AxisParams&) = default;
};

struct NormParams {  // over the last axis
  float eps = 1e-5f;
  friend bool operator==(const NormParams&, const NormParams&) = default;
};

// A (height, width) pair; a single number sets both.
struct Pair2 {
  std::int64_t h = 0;
  std::int64_t w = 0;
  constexpr Pair2() = default;
  constexpr Pair2(std::int64_t v) : h(v), w(v) {}  // NOLINT: implicit by design
  constexpr Pair2(std::int64_t h_, std::int64_t w_) : h(h_), w(w_) {}
  friend bool operator==(const Pair2&, const Pair2&) = default;
};

struct Conv2dParams {  // NCHW input, [K, C/groups, R, S] weight, optional bias [K] as 3rd input
  Pair2 stride = 1;
  Pair2 padding = 0;
  Pair2 dilation = 1;
  std::int64_t groups = 1;
  friend bool operator==(const Conv2dParams&, const Conv2dParams&) = default;
};

struct AttentionParams {
  bool causal = false;  // query i sees keys j <= i + (Lk - Lq) (aligned to the end, as for decode)
  float scale = 0.0f;   // 0 means 1/sqrt(head_dim)
  friend bool operator==(const AttentionParams&, const AttentionParams&) = default;
};

struct RopeParams {  // rotates pairs (x[2i], x[2i+1]) of the last axis by pos * base^(-2i/D)
  float base = 10000.0f;
  std::int64_t position_offset = 0;  // position of row l (axis -2) is position_offset + l
  friend bool operator==(const RopeParams&, const RopeParams&) = default;
};

struct ReduceParams {
  int axis = -1;
  bool keepdims = false;
  friend bool operator==(const ReduceParams&, const ReduceParams&) = default;
};

struct CastParams {
  DType dtype = DType::f32;
  friend bool operator==(const CastParams&, const CastParams&) = default;
};

using OpParams = std::variant<NoParams, MatmulParams, GemvParams, ScaleParams, ActParams, BiasActParams, AxisParams,
                              NormParams, Conv2dParams, AttentionParams, RopeParams, ReduceParams, CastParams>;

// ---- the op table ----
enum class OpKind {
#define TRINE_OP(name, min_in, max_in, Params) name,
#include "trine/ops.def"
#undef TRINE_OP
};
inline constexpr int TRINE_OP_COUNT = 30;
#define TRINE_OP(name, min_in, max_in, Params) +1
static_assert(0
#include "trine/ops.def"
                  == TRINE_OP_COUNT,
              "ops.def changed: update TRINE_OP_COUNT and every backend");
#undef TRINE_OP

struct OpInfo {
  OpKind kind;
  const char* name;
  int min_inputs;
  int max_inputs;
};
const OpInfo& op_info(OpKind op) noexcept;

// The work of one call, for cost models and benchmarks: floating-point operations, and bytes read
// plus written. Validates like the op itself (throws the same errors).
struct OpCost {
  double flops = 0;
  double bytes = 0;
};
OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

// Run any op of the table by kind (what the free functions below call). Optional inputs may be
// passed as undefined tensors.
Tensor run_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

enum class GeluForm { erf, tanh };

// ---- one free function per op, sync and async (the list: op_functions.def) ----
#define TRINE_FN(name, params, args) Tensor name params;
#include "trine/op_functions.def"
#undef TRINE_FN
inline Tensor swish(const Tensor& x) { return silu(x); }

// The same functions returning at once with a Future. Inputs may be Futures (of earlier async ops):
// the op orders itself after them on the device without blocking the caller. Safe to call from
// many threads at once.
namespace async {
#define TRINE_FN(name, params, args) \
  inline Future<Tensor> name params { return detail::launch_async([&] { return ::trine::name args; }); }
#include "trine/op_functions.def"
#undef TRINE_FN
inline Future<Tensor> swish(const Tensor& x) { return ::trine::async::silu(x); }
// Any op of the table by kind, like trine::run_op.
inline Future<Tensor> run_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  return detail::launch_async([&] { return ::trine::run_op(op, inputs, params); });
}
}  // namespace async

}  // namespace trine
