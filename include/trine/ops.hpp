// The ops: parameter structs, the OpKind enum generated from ops.def, and one free function per op.
// Every function validates its inputs (trine::Error naming the op, shapes and device), runs on the
// device its inputs live on, and returns a new contiguous tensor there. Semantics: docs/ops.md.
// Inputs recorded in a trine::Batch make the call record into that batch instead (batch.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

#include "trine/future.hpp"
#include "trine/tensor.hpp"

namespace trine {

// ---- parameters ----
struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};

// out_dtype (matmul, gemv, conv2d, attention): the result's dtype, f32, f16 or bf16; unset, the
// inputs' promoted dtype (dtype_promote: theirs when they share it, f32 when they mix). The kernel
// computes in f32 and rounds once, as it writes the result.
struct MatmulParams {  // a @ b; trans_* transposes the last two dims of that input first
  bool trans_a = false;
  bool trans_b = false;
  std::optional<DType> out_dtype = std::nullopt;
  friend bool operator==(const MatmulParams&, const MatmulParams&) = default;
};

struct GemvParams {  // y = A x, or A^T x when trans
  bool trans = false;
  std::optional<DType> out_dtype = std::nullopt;
  friend bool operator==(const GemvParams&, const GemvParams&) = default;
};

struct ScaleParams {  // y = alpha * x + beta
  float alpha = 1.0f;
  float beta = 0.0f;
  friend bool operator==(const ScaleParams&, const ScaleParams&) = default;
};

struct ActParams {  // leaky_relu: alpha = slope; elu: alpha; clip: [alpha, beta]
  float alpha = 0.0f;
  float beta = 0.0f;
  friend bool operator==(const ActParams&, const ActParams&) = default;
};

// The activations bias_act's epilogue takes: identity, then every TRINE_ACT row of ops.def in order.
enum class Activation {
  identity,
#define TRINE_ACT(name, flops, formula) name,
#include "trine/ops.def"
};
inline constexpr int TRINE_ACTIVATION_COUNT = 1
#define TRINE_ACT(name, flops, formula) +1
#include "trine/ops.def"
    ;

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

struct NormParams {  // over the last axis; layernorm's and rmsnorm's one default eps
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
  std::optional<DType> out_dtype = std::nullopt;
  friend bool operator==(const Conv2dParams&, const Conv2dParams&) = default;
};

// q [..., Hq, Lq, D], k [..., Hkv, Lk, D], v [..., Hkv, Lk, Dv]: k and v may have fewer heads (dim -3)
// than q (grouped-query attention, Hq a multiple of Hkv): q head h reads kv head h / (Hq / Hkv).
struct AttentionParams {
  bool causal = false;  // query i sees keys j <= i + (Lk - Lq) (aligned to the end, as for decode)
  float scale = 0.0f;   // 0 means 1/sqrt(head_dim)
  // Sliding window, causal only (0: none): query i, at position pos = i + (Lk - Lq), sees the last
  // `window` keys up to its own, pos - window < j <= pos.
  std::int64_t window = 0;
  std::optional<DType> out_dtype = std::nullopt;
  friend bool operator==(const AttentionParams&, const AttentionParams&) = default;
};

// Which elements of the last axis rope rotates together as pair i (i < D/2):
// interleaved: (x[2i], x[2i+1]), the original RoFormer / GPT-J / Meta Llama checkpoint layout;
// halves: (x[i], x[i + D/2]), Hugging Face's Llama-family layout (rotate_half).
enum class RopePairs { interleaved, halves };

struct RopeParams {  // rotates pair i of the last axis (see RopePairs) by pos * base^(-2i/D)
  float base = 10000.0f;
  std::int64_t position_offset = 0;  // position of row l (axis -2) is position_offset + l
  RopePairs pairs = RopePairs::interleaved;
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

// ---- the op table (ops.def): every fact about an op below is read from its row ----
enum class OpKind {
#define TRINE_OP(name, ...) name,
#include "trine/ops.def"
};
inline constexpr int TRINE_OP_COUNT = 0
#define TRINE_OP(name, ...) +1
#include "trine/ops.def"
    ;

// The kernel families: one file of that name in every backend.
enum class OpFamily {
#define TRINE_FAMILY(name) name,
#include "trine/ops.def"
};
inline constexpr int TRINE_FAMILY_COUNT = 0
#define TRINE_FAMILY(name) +1
#include "trine/ops.def"
    ;

// What the dispatcher's cost model charges an op by: its bytes or its flops.
enum class OpBound { memory, compute };

struct OpInfo {
  OpKind kind;
  const char* name;
  int min_inputs;
  int max_inputs;
  OpFamily family;
  OpBound bound;
  std::size_t params_index;  // the alternative of OpParams the op takes
  bool takes_16bit;          // its floating inputs may be f16 or bf16, not f32 only (docs/ops.md, "Dtypes")
};

namespace detail {
template <class P, class V>
struct variant_index;
template <class P, class... Ts>
struct variant_index<P, std::variant<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool same[] = {std::is_same_v<P, Ts>...};
    std::size_t i = 0;
    while (!same[i]) ++i;
    return i;
  }();
};
inline constexpr OpInfo op_infos[] = {
// clang-format off
#define TRINE_OP(name, family, min_in, max_in, Params, shape, dtypes, flops, bound)                \
  {OpKind::name, #name, min_in, max_in, OpFamily::family, OpBound::bound,                           \
   variant_index<Params, OpParams>::value, std::string_view(#dtypes) != "dtype_float"},
#include "trine/ops.def"
// clang-format on
};
inline constexpr const char* family_names[] = {
#define TRINE_FAMILY(name) #name,
#include "trine/ops.def"
};
}  // namespace detail
static_assert(std::size(detail::op_infos) == TRINE_OP_COUNT);

constexpr const OpInfo& op_info(OpKind op) noexcept { return detail::op_infos[static_cast<std::size_t>(op)]; }
constexpr const char* family_name(OpFamily f) noexcept { return detail::family_names[static_cast<std::size_t>(f)]; }

// The op of an activation (nullopt for identity), and the activation of an op (nullopt for an op
// that is not one).
// clang-format off
constexpr std::optional<OpKind> activation_op(Activation a) noexcept {
  switch (a) {
    case Activation::identity: return std::nullopt;
#define TRINE_ACT(name, flops, formula) case Activation::name: return OpKind::name;
#include "trine/ops.def"
  }
  return std::nullopt;
}
constexpr std::optional<Activation> op_activation(OpKind op) noexcept {
  switch (op) {
#define TRINE_ACT(name, flops, formula) case OpKind::name: return Activation::name;
#include "trine/ops.def"
    default: return std::nullopt;  // every other op: not an activation
  }
}
// clang-format on
constexpr const char* activation_name(Activation a) noexcept {
  const auto op = activation_op(a);
  return op ? op_info(*op).name : "identity";
}

// The work of one call, for cost models and benchmarks: floating-point operations, and bytes read
// plus written. Validates like the op itself (throws the same errors).
struct OpCost {
  double flops = 0;
  double bytes = 0;
};
OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params);

// Run any op of the table by kind (what the functions below call). Optional inputs may be passed
// as undefined tensors.
Tensor run_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params);
inline Tensor run_op(OpKind op, std::initializer_list<Tensor> inputs, const OpParams& params) {
  return run_op(op, std::span<const Tensor>(inputs.begin(), inputs.size()), params);
}

namespace detail {
// A public function's inputs as run_op takes them: its tensors, or the one span (or list) it got.
template <class... T>
std::array<Tensor, sizeof...(T)> inputs_of(const T&... t) {
  return {t...};
}
inline std::span<const Tensor> inputs_of(std::span<const Tensor> s) { return s; }
inline std::span<const Tensor> inputs_of(std::initializer_list<Tensor> s) { return {s.begin(), s.size()}; }
}  // namespace detail

enum class GeluForm { erf, tanh };

#define TRINE_UNPAREN(...) __VA_ARGS__

// ---- the public functions of the ops, sync and async (ops.def's TRINE_FN lines) ----
#define TRINE_FN(function, parameters, arguments, op, inputs, params) \
  inline Tensor function parameters { return run_op(op, detail::inputs_of(TRINE_UNPAREN inputs), params); }
#include "trine/ops.def"

// The same functions returning at once with a Future. Inputs may be Futures (of earlier async ops):
// the op orders itself after them on the device without blocking the caller. Safe to call from
// many threads at once.
namespace async {
#define TRINE_FN(function, parameters, arguments, op, inputs, params)         \
  inline Future<Tensor> function parameters {                                 \
    return detail::launch_async([&] { return ::trine::function arguments; }); \
  }
#include "trine/ops.def"
// Any op of the table by kind, like trine::run_op.
inline Future<Tensor> run_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  return detail::launch_async([&] { return ::trine::run_op(op, inputs, params); });
}
}  // namespace async

#undef TRINE_UNPAREN

// ---- writing into a tensor ----
// Writes src into dst's elements in place: dst may be a view (slice, transpose, permute) of a larger
// tensor, whose other elements stay as they are; the result is dst. src broadcasts to dst's shape
// (numpy rules) and converts to dst's dtype as cast() converts; a source that shares dst's memory
// is read as it was before the write. The write runs on dst's device (src is moved there when it
// lives elsewhere) and is ordered like any op: after every earlier op that reads or writes dst's
// memory, before every later one. In a Batch (pinned to a device) it is recorded and repeated by
// every run, also into a tensor made outside the batch, such as a KV cache. Errors: a destination
// that repeats elements (a broadcast view), a source that does not broadcast, an undefined one.
Tensor copy_into(const Tensor& dst, const Tensor& src);
// The same into dst's elements [p, p + src.dim(axis)) along `axis`, p the value of `position` (an i32
// tensor of one element) when the write runs, read on the device: a batch records it once and each
// run writes where that run's position says (upload the position with the batch's other inputs),
// and a position computed on the device needs no readback. src has dst's rank; its other dims
// broadcast to dst's. A position outside [0, dst.dim(axis) - src.dim(axis)] writes nothing and is
// an invalid_argument naming it, raised when the write runs (by the Future, or the batch's run).
Tensor copy_into(const Tensor& dst, const Tensor& src, int axis, const Tensor& position);
namespace async {
inline Future<Tensor> copy_into(const Tensor& dst, const Tensor& src) {
  return detail::launch_async([&] { return ::trine::copy_into(dst, src); });
}
inline Future<Tensor> copy_into(const Tensor& dst, const Tensor& src, int axis, const Tensor& position) {
  return detail::launch_async([&] { return ::trine::copy_into(dst, src, axis, position); });
}
}  // namespace async

// ---- operators: the op functions under their usual spelling ----
// a + b, a - b, a * b, a / b: add, sub, mul, div (element-wise, numpy broadcasting); -a: neg. A
// float operand is a rank-0 tensor of the other operand's dtype (the scalar rounded to it, so an
// f16 tensor stays f16), on its device when that tensor is pinned there. They are the op calls,
// so they record into a Batch and place like any other. Matrix products are a.matmul(b).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(float a, const Tensor& b);
Tensor operator-(const Tensor& a);

}  // namespace trine
