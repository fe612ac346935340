// Every op's checks, output shape and dtype, and work, as the rules its row in ops.def names.
// A rule is a function of the call's inputs and its parameter struct: shape_* gives the output
// shape and makes every shape and parameter check, dtype_* checks the input dtypes and gives the
// output's, flops_* counts the work. A new op names existing rules in its row, or adds its own here.
#include "ops/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "trine/error.hpp"

namespace trine::detail {
namespace {

using std::int64_t;

std::string op_tag(OpKind op) { return std::string("[") + op_info(op).name + "]"; }

[[noreturn]] void fail(ErrorCode code, OpKind op, std::span<const Tensor> inputs, const std::string& what) {
  throw Error(code, op_tag(op) + " " + what + " (inputs: " + describe_call(inputs) + ")");
}

// Holds the pieces every rule needs so each rule below reads as its rule.
struct Check {
  OpKind op;
  std::span<const Tensor> in;

  const char* name() const { return op_info(op).name; }
  const Tensor& at(std::size_t i) const { return in[i]; }
  bool has(std::size_t i) const { return i < in.size() && in[i].defined(); }

  [[noreturn]] void shape_error(const std::string& what) const { fail(ErrorCode::invalid_shape, op, in, what); }
  [[noreturn]] void arg_error(const std::string& what) const { fail(ErrorCode::invalid_argument, op, in, what); }
  [[noreturn]] void dtype_error(const std::string& what) const { fail(ErrorCode::dtype_mismatch, op, in, what); }

  void rank_eq(std::size_t i, const char* what, int r) const {
    if (has(i) && at(i).rank() != r) {
      shape_error(std::string(what) + " must have rank " + std::to_string(r) + ", got " + at(i).shape().str());
    }
  }
  void rank_ge(std::size_t i, const char* what, int r) const {
    if (has(i) && at(i).rank() < r) {
      shape_error(std::string(what) + " must have rank >= " + std::to_string(r) + ", got " + at(i).shape().str());
    }
  }
  void nonempty() const {
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (has(i) && at(i).numel() == 0)
        shape_error("zero-size dimension in " + at(i).shape().str() + " is not accepted");
    }
  }
  int axis(int a, int rank) const {
    int r = a < 0 ? a + rank : a;
    if (r < 0 || r >= rank) arg_error("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    return r;
  }
  void vector_of(std::size_t i, const char* what, int64_t n) const {
    if (has(i) && (at(i).rank() != 1 || at(i).dim(0) != n)) {
      shape_error(std::string(what) + " must be [" + std::to_string(n) + "], got " + at(i).shape().str());
    }
  }
  double out_numel(const Shape& out) const { return static_cast<double>(out.numel()); }
};

void check_activation_params(const Check& c, Activation act, float alpha, float beta) {
  if (act == Activation::clip && !(alpha <= beta)) {
    c.arg_error("clip needs low <= high, got low " + std::to_string(alpha) + ", high " + std::to_string(beta));
  }
}

// ---- dtype rules ----

// Every defined input f32, the result f32: for an op whose kernels read f32 only so far (none of
// the table's today; docs/adding-an-op.md).
template <class P>
DType dtype_float(const Check& c, const P&) {
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    if (c.has(i) && c.at(i).dtype() != DType::f32) {
      c.dtype_error("input " + std::to_string(i) + " must be f32, got " + dtype_name(c.at(i).dtype()) +
                    " (cast it first)");
    }
  }
  return DType::f32;
}

// Inputs [first, last) (last: to the end): each f32, f16 or bf16; the result their promoted dtype
// (the shared dtype, f32 when they differ).
DType promoted_inputs(const Check& c, std::size_t first, std::size_t last = SIZE_MAX) {
  DType out = DType::f32;
  bool any = false;
  for (std::size_t i = first; i < std::min(last, c.in.size()); ++i) {
    if (!c.has(i)) continue;
    const DType d = c.at(i).dtype();
    if (!dtype_is_float(d))
      c.dtype_error("input " + std::to_string(i) + " must be f32, f16 or bf16, got " + dtype_name(d));
    out = any ? dtype_promote(out, d) : d;
    any = true;
  }
  return out;
}

// Every defined input f32, f16 or bf16, computed in f32; the result in the promoted dtype.
template <class P>
DType dtype_promoted(const Check& c, const P&) {
  return promoted_inputs(c, 0);
}

// The result's dtype of an op that takes out_dtype: that one (f32, f16 or bf16), or else the
// inputs' promoted dtype.
DType out_dtype_or(const Check& c, const std::optional<DType>& out, DType promoted) {
  if (!out) return promoted;
  if (!dtype_is_float(*out))
    c.dtype_error(std::string("out_dtype must be f32, f16 or bf16, got ") + dtype_name(*out));
  return *out;
}

// matmul, gemv, conv2d: f32, f16 or bf16 inputs in any mix; the result out_dtype, or their promoted
// dtype. matmul's b and gemv's a may be quantized weights: the result is then out_dtype or the other
// input's dtype.
template <class P>
DType dtype_out(const Check& c, const P& p) {
  const std::size_t weight = c.op == OpKind::matmul ? 1 : c.op == OpKind::gemv ? 0 : SIZE_MAX;
  if (weight != SIZE_MAX && c.has(weight) && dtype_is_quantized(c.at(weight).dtype()))
    return out_dtype_or(c, p.out_dtype, promoted_inputs(c, 1 - weight, 2 - weight));
  return out_dtype_or(c, p.out_dtype, promoted_inputs(c, 0));
}

// attention's: q, k and v f32, f16 or bf16, the result out_dtype or their promoted dtype; the
// optional valid (input 3), the number of keys that count, an i32, and the optional mask (input 4)
// of any floating dtype: neither counts in the result's dtype.
DType dtype_attention(const Check& c, const AttentionParams& p) {
  if (c.has(3) && c.at(3).dtype() != DType::i32)
    c.dtype_error(std::string("valid (input 3, the number of valid keys) must be i32, got ") +
                  dtype_name(c.at(3).dtype()));
  if (c.has(4) && !dtype_is_float(c.at(4).dtype()))
    c.dtype_error(std::string("mask (input 4, added to the scaled scores) must be f32, f16 or bf16, got ") +
                  dtype_name(c.at(4).dtype()));
  return out_dtype_or(c, p.out_dtype, promoted_inputs(c, 0, 3));
}

// Quantized weights are matmul's and gemv's alone: the data-movement ops refuse them.
void no_quantized(const Check& c) {
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    if (c.has(i) && dtype_is_quantized(c.at(i).dtype())) {
      c.dtype_error("input " + std::to_string(i) + " is " + dtype_name(c.at(i).dtype()) +
                    ": quantized weights go to matmul and gemv only (dequantize them for anything else: "
                    "to_vector(), or trine::quant::dequantize)");
    }
  }
}

// Any dtype but the quantized ones; the result keeps input 0's.
template <class P>
DType dtype_any(const Check& c, const P&) {
  no_quantized(c);
  return c.at(0).dtype();
}

// Any dtype but the quantized ones, the same for every input; the result keeps it.
template <class P>
DType dtype_same(const Check& c, const P&) {
  no_quantized(c);
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    if (c.at(i).dtype() != c.at(0).dtype()) {
      c.dtype_error("every input must have input 0's dtype " + std::string(dtype_name(c.at(0).dtype())) + ", input " +
                    std::to_string(i) + " is " + dtype_name(c.at(i).dtype()));
    }
  }
  return c.at(0).dtype();
}

// where(cond, a, b): cond of any dtype (true where nonzero), a and b f32, f16 or bf16; the result
// their promoted dtype.
DType dtype_where(const Check& c, const NoParams&) {
  no_quantized(c);
  return promoted_inputs(c, 1);
}

// f32, f16 or bf16 values; the result is their indices, i32.
DType dtype_argmax(const Check& c, const ReduceParams& p) {
  dtype_promoted(c, p);
  return DType::i32;
}

// gather(table, indices): a table of any dtype, i32 indices; the result keeps the table's dtype.
DType dtype_gather(const Check& c, const NoParams&) {
  no_quantized(c);
  if (c.at(1).dtype() != DType::i32)
    c.dtype_error(std::string("indices must be i32, got ") + dtype_name(c.at(1).dtype()) +
                  " (make them with Tensor::from of int32 data, or cast)");
  return c.at(0).dtype();
}

// rope(x, position?): x f32, f16 or bf16, the result x's dtype; the position i32 (not promoted
// with x: it is a position, not a value).
DType dtype_rope(const Check& c, const RopeParams&) {
  if (c.in.size() > 1) {
    if (!c.has(1)) c.arg_error("the position is undefined (rope(x, params) is rope without one)");
    if (c.at(1).dtype() != DType::i32)
      c.dtype_error(std::string("the position must be i32, got ") + dtype_name(c.at(1).dtype()) +
                    " (make it with Tensor::from of int32 data, or cast)");
  }
  const DType d = c.at(0).dtype();
  if (!dtype_is_float(d)) c.dtype_error(std::string("input 0 (x) must be f32, f16 or bf16, got ") + dtype_name(d));
  return d;
}

DType dtype_cast(const Check& c, const CastParams& p) {
  no_quantized(c);
  if (dtype_is_quantized(p.dtype)) {
    c.dtype_error(std::string("cannot cast to ") + dtype_name(p.dtype) +
                  ": quantize with trine::quant::quantize and wrap the blocks with Tensor::from_blocks");
  }
  return p.dtype;
}

// ---- shape rules ----

template <class P>
Shape shape_same(const Check& c, const P& p) {
  if constexpr (std::is_same_v<P, ActParams>) {
    if (const auto act = op_activation(c.op)) check_activation_params(c, *act, p.alpha, p.beta);
  }
  return c.at(0).shape();
}

// Numpy broadcasting of every input.
template <class P>
Shape shape_broadcast(const Check& c, const P&) {
  Shape out = c.at(0).shape();
  for (std::size_t i = 1; i < c.in.size(); ++i)
    out = broadcast_shapes(c.name(), out, c.at(i).shape(), describe_call(c.in));
  return out;
}

Shape shape_matmul(const Check& c, const MatmulParams& p) {
  c.rank_ge(0, "a", 2);
  c.rank_ge(1, "b", 2);
  const Tensor& a = c.at(0);
  const Tensor& b = c.at(1);
  // Quantized weights [N, K] in GGUF's orientation (a row per output feature): a @ b^T.
  const bool quantized = dtype_is_quantized(b.dtype());
  if (quantized) {
    c.rank_eq(1, "b (quantized weights [N, K])", 2);
    if (p.trans_b) {
      c.arg_error(
          "trans_b with quantized weights: b is already read as [N, K], a row per output feature "
          "(a @ b^T), as GGUF stores it");
    }
  }
  int64_t m = p.trans_a ? a.dim(-1) : a.dim(-2);
  int64_t ka = p.trans_a ? a.dim(-2) : a.dim(-1);
  int64_t kb = quantized || p.trans_b ? b.dim(-1) : b.dim(-2);
  int64_t n = quantized || p.trans_b ? b.dim(-2) : b.dim(-1);
  if (ka != kb) {
    c.shape_error("inner dimensions differ: " + std::to_string(ka) + " vs " + std::to_string(kb) +
                  (p.trans_a || p.trans_b ? " (after trans flags)" : ""));
  }
  Shape ba(a.shape().dims().first(static_cast<std::size_t>(a.rank() - 2)));
  Shape bb(b.shape().dims().first(static_cast<std::size_t>(b.rank() - 2)));
  Shape out = broadcast_shapes(c.name(), ba, bb, describe_call(c.in));
  if (out.rank() + 2 > Shape::max_rank) c.shape_error("result rank exceeds 8");
  out.push_back(m);
  out.push_back(n);
  return out;
}

Shape shape_gemv(const Check& c, const GemvParams& p) {
  c.rank_eq(0, "a", 2);
  c.rank_eq(1, "x", 1);
  if (p.trans && dtype_is_quantized(c.at(0).dtype()))
    c.arg_error("trans with quantized weights: their rows are the outputs (GGUF's [N, K]), so A x only");
  int64_t m = p.trans ? c.at(0).dim(1) : c.at(0).dim(0);
  int64_t k = p.trans ? c.at(0).dim(0) : c.at(0).dim(1);
  if (k != c.at(1).dim(0)) {
    c.shape_error("a has " + std::to_string(k) + " columns" + (p.trans ? " (transposed)" : "") + " but x has " +
                  std::to_string(c.at(1).dim(0)) + " elements");
  }
  return Shape{m};
}

Shape shape_dot(const Check& c, const NoParams&) {
  c.rank_eq(0, "x", 1);
  c.rank_eq(1, "y", 1);
  if (c.at(0).dim(0) != c.at(1).dim(0)) c.shape_error("lengths differ");
  return Shape{};
}

Shape shape_bias_act(const Check& c, const BiasActParams& p) {
  c.rank_ge(0, "x", 1);
  c.vector_of(1, "bias", c.at(0).dim(-1));
  check_activation_params(c, p.act, p.alpha, p.beta);
  return c.at(0).shape();
}

Shape shape_axis(const Check& c, const AxisParams& p) {
  c.rank_ge(0, "x", 1);
  c.axis(p.axis, c.at(0).rank());
  c.nonempty();
  return c.at(0).shape();
}

Shape shape_norm(const Check& c, const NormParams& p) {
  c.rank_ge(0, "x", 1);
  c.nonempty();
  c.vector_of(1, "gamma", c.at(0).dim(-1));
  c.vector_of(2, "beta", c.at(0).dim(-1));
  if (!(p.eps > 0.0f) || !std::isfinite(p.eps))
    c.arg_error("eps must be positive and finite, got " + std::to_string(p.eps));
  return c.at(0).shape();
}

Shape shape_conv2d(const Check& c, const Conv2dParams& p) {
  c.rank_eq(0, "x", 4);
  c.rank_eq(1, "w", 4);
  c.nonempty();
  const Shape& xs = c.at(0).shape();
  const Shape& ws = c.at(1).shape();
  int64_t n = xs[0], ch = xs[1], h = xs[2], w = xs[3];
  int64_t k = ws[0], r = ws[2], s = ws[3];
  if (p.groups < 1) c.arg_error("groups must be >= 1, got " + std::to_string(p.groups));
  if (ch % p.groups != 0 || k % p.groups != 0) {
    c.arg_error("channels " + std::to_string(ch) + " and filters " + std::to_string(k) +
                " must be divisible by groups " + std::to_string(p.groups));
  }
  if (ws[1] != ch / p.groups) {
    c.shape_error("w must be [K, C/groups = " + std::to_string(ch / p.groups) + ", R, S], got " + ws.str());
  }
  if (p.stride.h < 1 || p.stride.w < 1 || p.dilation.h < 1 || p.dilation.w < 1) {
    c.arg_error("stride and dilation must be >= 1");
  }
  if (p.padding.h < 0 || p.padding.w < 0) c.arg_error("padding must be >= 0");
  c.vector_of(2, "bias", k);
  int64_t eff_r = p.dilation.h * (r - 1) + 1;
  int64_t eff_s = p.dilation.w * (s - 1) + 1;
  if (h + 2 * p.padding.h < eff_r || w + 2 * p.padding.w < eff_s) {
    c.shape_error("kernel " + std::to_string(eff_r) + "x" + std::to_string(eff_s) +
                  " (dilated) is larger than the padded input " + std::to_string(h + 2 * p.padding.h) + "x" +
                  std::to_string(w + 2 * p.padding.w));
  }
  int64_t out_h = (h + 2 * p.padding.h - eff_r) / p.stride.h + 1;
  int64_t out_w = (w + 2 * p.padding.w - eff_s) / p.stride.w + 1;
  return Shape{n, k, out_h, out_w};
}

Shape shape_attention(const Check& c, const AttentionParams& p) {
  c.rank_ge(0, "q", 2);
  const Tensor& q = c.at(0);
  const Tensor& k = c.at(1);
  const Tensor& v = c.at(2);
  if (k.rank() != q.rank() || v.rank() != q.rank()) c.shape_error("q, k and v must have the same rank");
  // Grouped-query attention: k and v may have fewer heads (dim -3) than q, a divisor of q's.
  const int heads_dim = q.rank() >= 3 ? q.rank() - 3 : -1;
  for (int i = 0; i < q.rank() - 2; ++i) {
    if (i == heads_dim) continue;
    if (k.shape()[i] != q.shape()[i] || v.shape()[i] != q.shape()[i])
      c.shape_error("leading dims of q, k, v differ (only dim -3, the heads, may differ)");
  }
  if (heads_dim >= 0) {
    const int64_t hq = q.shape()[heads_dim], hkv = k.shape()[heads_dim];
    if (v.shape()[heads_dim] != hkv)
      c.shape_error("k and v head counts (dim -3) differ: " + std::to_string(hkv) + ", " +
                    std::to_string(v.shape()[heads_dim]));
    if (hkv == 0 ? hq != 0 : hq % hkv != 0)
      c.shape_error("q's heads (dim -3) " + std::to_string(hq) + " are not a multiple of k's and v's " +
                    std::to_string(hkv));
  }
  if (k.dim(-1) != q.dim(-1)) c.shape_error("q and k head dims differ");
  if (v.dim(-2) != k.dim(-2)) c.shape_error("k and v sequence lengths differ");
  // Its value is read when the op runs (it may be on a device, or not computed yet): the kernel
  // checks it lies in [1, Lk] ([Lq, Lk] when causal).
  if (c.has(3) && c.at(3).numel() != 1)
    c.shape_error("valid (input 3, the number of valid keys) must have exactly one element, got " +
                  c.at(3).shape().str());
  if (c.has(4)) {  // the mask: [..., Lq, Lk], its leading dims each 1 or q's
    const Tensor& m = c.at(4);
    const std::string want = "mask (input 4) must be [..., Lq, Lk] = [..., " + std::to_string(q.dim(-2)) + ", " +
                             std::to_string(k.dim(-2)) + "] of rank 2 to " + std::to_string(q.rank()) +
                             ", each leading dim 1 or q's, got " + m.shape().str();
    if (m.rank() < 2 || m.rank() > q.rank() || m.dim(-2) != q.dim(-2) || m.dim(-1) != k.dim(-2)) c.shape_error(want);
    for (int d = 3; d <= m.rank(); ++d) {
      if (m.dim(-d) != 1 && m.dim(-d) != q.dim(-d)) c.shape_error(want);
    }
  }
  c.nonempty();
  if (!std::isfinite(p.scale)) c.arg_error("scale must be finite");
  if (p.window < 0) c.arg_error("window must be >= 0 (0: none), got " + std::to_string(p.window));
  if (p.window > 0 && !p.causal)
    c.arg_error("window " + std::to_string(p.window) + " needs causal (a sliding window is defined for causal only)");
  if (p.causal && q.dim(-2) > k.dim(-2)) {
    c.shape_error("causal attention needs Lq <= Lk, got Lq " + std::to_string(q.dim(-2)) + ", Lk " +
                  std::to_string(k.dim(-2)));
  }
  Shape out = q.shape();
  out[out.rank() - 1] = v.dim(-1);
  return out;
}

Shape shape_rope(const Check& c, const RopeParams& p) {
  c.rank_ge(0, "x", 2);
  if (c.has(1) && c.at(1).numel() != 1) c.shape_error("the position must be one element, got " + c.at(1).shape().str());
  c.nonempty();
  if (c.at(0).dim(-1) % 2 != 0) c.arg_error("last dim must be even, got " + std::to_string(c.at(0).dim(-1)));
  if (!(p.base > 0.0f) || !std::isfinite(p.base)) c.arg_error("base must be positive and finite");
  if (p.pairs != RopePairs::interleaved && p.pairs != RopePairs::halves) c.arg_error("pairs is not a RopePairs value");
  return c.at(0).shape();
}

// table [V, D], indices [N] -> [N, D]. Which indices are in range is the kernel's to check: the
// indices may still be on a device, or not computed yet.
Shape shape_gather(const Check& c, const NoParams&) {
  c.rank_eq(0, "table", 2);
  c.rank_eq(1, "indices", 1);
  if (c.at(0).dim(0) == 0 && c.at(1).dim(0) > 0) c.shape_error("the table has no rows to gather");
  return Shape{c.at(1).dim(0), c.at(0).dim(1)};
}

// Every input of the same rank, dims equal but along the axis, where they add up.
Shape shape_concat(const Check& c, const AxisParams& p) {
  const Tensor& first = c.at(0);
  c.rank_ge(0, "input 0", 1);
  const int a = c.axis(p.axis, first.rank());
  Shape out = first.shape();
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    const Tensor& t = c.at(i);
    if (!t.defined()) c.arg_error("input " + std::to_string(i) + " is undefined");
    bool fits = t.rank() == first.rank();
    for (int d = 0; fits && d < first.rank(); ++d) fits = d == a || t.dim(d) == first.dim(d);
    if (!fits) {
      c.shape_error("input " + std::to_string(i) + " " + t.shape().str() + " does not fit input 0 " +
                    first.shape().str() + " along axis " + std::to_string(p.axis) +
                    " (same rank, same dims but the axis)");
    }
    out[a] += t.dim(a);
  }
  return out;
}

Shape shape_reduce(const Check& c, const ReduceParams& p) {
  c.rank_ge(0, "x", 1);
  int a = c.axis(p.axis, c.at(0).rank());
  c.nonempty();
  Shape out;
  for (int i = 0; i < c.at(0).rank(); ++i) {
    if (i != a) {
      out.push_back(c.at(0).shape()[i]);
    } else if (p.keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// ---- work rules: floating-point operations per call ----

// flops_N: N operations per output element (the element-wise ops and the row ops)
#define TRINE_FLOPS_PER_OUTPUT(n)                                \
  template <class P>                                             \
  double flops_##n(const Check& c, const P&, const Shape& out) { \
    return n * c.out_numel(out);                                 \
  }
TRINE_FLOPS_PER_OUTPUT(0)
TRINE_FLOPS_PER_OUTPUT(1)
TRINE_FLOPS_PER_OUTPUT(2)
TRINE_FLOPS_PER_OUTPUT(4)
TRINE_FLOPS_PER_OUTPUT(5)
TRINE_FLOPS_PER_OUTPUT(6)
TRINE_FLOPS_PER_OUTPUT(8)
#undef TRINE_FLOPS_PER_OUTPUT

double flops_matmul(const Check& c, const MatmulParams& p, const Shape& out) {
  const Tensor& a = c.at(0);
  return 2.0 * c.out_numel(out) * static_cast<double>(p.trans_a ? a.dim(-2) : a.dim(-1));
}

// gemv and dot: a multiply-add per element of the first input
template <class P>
double flops_gemv(const Check& c, const P&, const Shape&) {
  return 2.0 * static_cast<double>(c.at(0).numel());
}

double flops_conv2d(const Check& c, const Conv2dParams&, const Shape& out) {
  const Tensor& w = c.at(1);
  return 2.0 * c.out_numel(out) * static_cast<double>(w.dim(1) * w.dim(2) * w.dim(3));
}

double flops_attention(const Check& c, const AttentionParams& p, const Shape&) {
  const Tensor& q = c.at(0);
  const Tensor& k = c.at(1);
  const Tensor& v = c.at(2);
  // Per query row of q: grouped-query attention shares k and v among q heads, not the work.
  const double lq = static_cast<double>(q.dim(-2)), lk = static_cast<double>(k.dim(-2));
  double seen = lk;  // keys a query sees, on average
  if (p.causal && p.window > 0 && static_cast<double>(p.window) < lk) {
    // The query at position pos (Lk - Lq .. Lk - 1) sees min(window, pos + 1) keys.
    const double w = static_cast<double>(p.window);
    const double first = lk - lq, cut = std::max(first, std::min(lk, w - 1));  // pos < cut sees pos + 1
    seen = ((cut - first) * (first + cut + 1) / 2 + (lk - cut) * w) / lq;
  } else if (p.causal) {
    seen *= 0.5;
  }
  const double pairs = static_cast<double>(q.numel() / q.dim(-1)) * seen;
  return 2.0 * pairs * static_cast<double>(q.dim(-1) + v.dim(-1));
}

// an operation per input element
template <class P>
double flops_reduce(const Check& c, const P&, const Shape&) {
  return static_cast<double>(c.at(0).numel());
}

}  // namespace

std::string describe_call(std::span<const Tensor> inputs) {
  std::string s;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    s += inputs[i].defined() ? inputs[i].str() : std::string("none");
  }
  return s;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b, const std::string& context) {
  int r = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank());
    int ib = i - (r - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1;
    int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] shapes " + a.str() + " and " + b.str() +
                                                " do not broadcast (inputs: " + context + ")");
    }
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

InferredOutput infer_op(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  const OpInfo& info = op_info(op);
  const Check c{op, inputs};
  const int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    c.arg_error("takes " + std::to_string(info.min_inputs) + ".." + std::to_string(info.max_inputs) + " inputs, got " +
                std::to_string(n_in));
  }
  for (int i = 0; i < info.min_inputs; ++i) {
    if (!inputs[static_cast<std::size_t>(i)].defined()) c.arg_error("input " + std::to_string(i) + " is undefined");
  }
  if (params.index() != info.params_index) c.arg_error("wrong parameter struct for this op");
  // Which device runs the call, and moving inputs there, is the dispatcher's (dispatch/dispatcher.cpp).
  switch (op) {
#define TRINE_OP(name, family, min_in, max_in, Params, shape_rule, dtype_rule, flops_rule, bound) \
  case OpKind::name: {                                                                            \
    const auto& p = *std::get_if<Params>(&params);                                                \
    const DType dtype = dtype_rule(c, p);                                                         \
    return {shape_rule(c, p), dtype};                                                             \
  }
#include "trine/ops.def"
  }
  throw Error(ErrorCode::internal, op_tag(op) + " is outside ops.def");
}

OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const InferredOutput& result) {
  OpCost cost;
  for (const auto& t : inputs) {
    if (t.defined()) cost.bytes += static_cast<double>(dtype_bytes(t.dtype(), t.numel()));
  }
  cost.bytes += static_cast<double>(dtype_bytes(result.dtype, result.shape.numel()));
  const Check c{op, inputs};
  switch (op) {
#define TRINE_OP(name, family, min_in, max_in, Params, shape_rule, dtype_rule, flops_rule, bound) \
  case OpKind::name:                                                                              \
    cost.flops = flops_rule(c, *std::get_if<Params>(&params), result.shape);                      \
    break;
#include "trine/ops.def"
  }
  return cost;
}

}  // namespace trine::detail
