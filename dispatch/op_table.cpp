// Every op's checks, output shape and cost. No backend is asked anything before these pass.
#include "dispatch/op_table.hpp"

#include <cmath>
#include <string>

#include "backends/backend.hpp"
#include "trine/error.hpp"

namespace trine::detail {
namespace {

using std::int64_t;

std::string op_tag(OpKind op) { return std::string("[") + op_info(op).name + "]"; }

[[noreturn]] void fail(ErrorCode code, OpKind op, std::span<const Tensor> inputs, const std::string& what) {
  throw Error(code, op_tag(op) + " " + what + " (inputs: " + describe_call(op, inputs) + ")");
}

// Holds the pieces every rule needs so each case below reads as its rule.
struct Check {
  OpKind op;
  std::span<const Tensor> in;

  const Tensor& at(std::size_t i) const { return in[i]; }
  bool has(std::size_t i) const { return i < in.size() && in[i].defined(); }

  [[noreturn]] void shape_error(const std::string& what) const { fail(ErrorCode::invalid_shape, op, in, what); }
  [[noreturn]] void arg_error(const std::string& what) const { fail(ErrorCode::invalid_argument, op, in, what); }

  void f32(std::size_t i, const char* name) const {
    if (has(i) && at(i).dtype() != DType::f32) {
      fail(ErrorCode::dtype_mismatch, op, in,
           std::string(name) + " must be f32, got " + dtype_name(at(i).dtype()) + " (cast it first)");
    }
  }
  void rank_eq(std::size_t i, const char* name, int r) const {
    if (has(i) && at(i).rank() != r) {
      shape_error(std::string(name) + " must have rank " + std::to_string(r) + ", got " + at(i).shape().str());
    }
  }
  void rank_ge(std::size_t i, const char* name, int r) const {
    if (has(i) && at(i).rank() < r) {
      shape_error(std::string(name) + " must have rank >= " + std::to_string(r) + ", got " + at(i).shape().str());
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
  void vector_of(std::size_t i, const char* name, int64_t n) const {
    if (!has(i)) return;
    f32(i, name);
    if (at(i).rank() != 1 || at(i).dim(0) != n) {
      shape_error(std::string(name) + " must be [" + std::to_string(n) + "], got " + at(i).shape().str());
    }
  }
};

void check_activation_params(const Check& c, Activation act, float alpha, float beta) {
  if (act == Activation::clip && !(alpha <= beta)) {
    c.arg_error("clip needs low <= high, got low " + std::to_string(alpha) + ", high " + std::to_string(beta));
  }
}

template <class P>
const P& params_as(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  if (const P* p = std::get_if<P>(&params)) return *p;
  fail(ErrorCode::invalid_argument, op, inputs, "wrong parameter struct for this op");
}

}  // namespace

std::string describe_call(OpKind, std::span<const Tensor> inputs) {
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
  Check c{op, inputs};
  int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    c.arg_error("takes " + std::to_string(info.min_inputs) + ".." + std::to_string(info.max_inputs) + " inputs, got " +
                std::to_string(n_in));
  }
  for (int i = 0; i < info.min_inputs; ++i) {
    if (!inputs[static_cast<std::size_t>(i)].defined()) c.arg_error("input " + std::to_string(i) + " is undefined");
  }
  // Which device runs the call, and moving inputs there, is the dispatcher's (dispatch/dispatcher.cpp).

  switch (op) {
    case OpKind::matmul: {
      const auto& p = params_as<MatmulParams>(op, inputs, params);
      c.rank_ge(0, "a", 2);
      c.rank_ge(1, "b", 2);
      const Tensor& a = c.at(0);
      const Tensor& b = c.at(1);
      int64_t m = p.trans_a ? a.dim(-1) : a.dim(-2);
      int64_t ka = p.trans_a ? a.dim(-2) : a.dim(-1);
      int64_t kb = p.trans_b ? b.dim(-1) : b.dim(-2);
      int64_t n = p.trans_b ? b.dim(-2) : b.dim(-1);
      if (ka != kb) {
        c.shape_error("inner dimensions differ: " + std::to_string(ka) + " vs " + std::to_string(kb) +
                      (p.trans_a || p.trans_b ? " (after trans flags)" : ""));
      }
      Shape ba(a.shape().dims().first(static_cast<std::size_t>(a.rank() - 2)));
      Shape bb(b.shape().dims().first(static_cast<std::size_t>(b.rank() - 2)));
      Shape out = broadcast_shapes(info.name, ba, bb, describe_call(op, inputs));
      if (out.rank() + 2 > Shape::max_rank) c.shape_error("result rank exceeds 8");
      out.push_back(m);
      out.push_back(n);
      return {out, DType::f32};
    }
    case OpKind::gemv: {
      const auto& p = params_as<GemvParams>(op, inputs, params);
      c.f32(0, "a");
      c.f32(1, "x");
      c.rank_eq(0, "a", 2);
      c.rank_eq(1, "x", 1);
      int64_t m = p.trans ? c.at(0).dim(1) : c.at(0).dim(0);
      int64_t k = p.trans ? c.at(0).dim(0) : c.at(0).dim(1);
      if (k != c.at(1).dim(0)) {
        c.shape_error("a has " + std::to_string(k) + " columns" + (p.trans ? " (transposed)" : "") + " but x has " +
                      std::to_string(c.at(1).dim(0)) + " elements");
      }
      return {Shape{m}, DType::f32};
    }
    case OpKind::dot: {
      params_as<NoParams>(op, inputs, params);
      c.f32(0, "x");
      c.f32(1, "y");
      c.rank_eq(0, "x", 1);
      c.rank_eq(1, "y", 1);
      if (c.at(0).dim(0) != c.at(1).dim(0)) c.shape_error("lengths differ");
      return {Shape{}, DType::f32};
    }
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div: {
      params_as<NoParams>(op, inputs, params);
      c.f32(0, "a");
      c.f32(1, "b");
      return {broadcast_shapes(info.name, c.at(0).shape(), c.at(1).shape(), describe_call(op, inputs)), DType::f32};
    }
    case OpKind::scale: {
      params_as<ScaleParams>(op, inputs, params);
      c.f32(0, "x");
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::bias_act: {
      const auto& p = params_as<BiasActParams>(op, inputs, params);
      c.f32(0, "x");
      c.rank_ge(0, "x", 1);
      c.vector_of(1, "bias", c.at(0).dim(-1));
      check_activation_params(c, p.act, p.alpha, p.beta);
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh:
    case OpKind::clip: {
      const auto& p = params_as<ActParams>(op, inputs, params);
      c.f32(0, "x");
      if (op == OpKind::clip) check_activation_params(c, Activation::clip, p.alpha, p.beta);
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::softmax:
    case OpKind::log_softmax: {
      const auto& p = params_as<AxisParams>(op, inputs, params);
      c.f32(0, "x");
      c.rank_ge(0, "x", 1);
      c.axis(p.axis, c.at(0).rank());
      c.nonempty();
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::layernorm:
    case OpKind::rmsnorm: {
      const auto& p = params_as<NormParams>(op, inputs, params);
      c.f32(0, "x");
      c.rank_ge(0, "x", 1);
      c.nonempty();
      c.vector_of(1, "gamma", c.at(0).dim(-1));
      c.vector_of(2, "beta", c.at(0).dim(-1));
      if (!(p.eps > 0.0f) || !std::isfinite(p.eps))
        c.arg_error("eps must be positive and finite, got " + std::to_string(p.eps));
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::conv2d: {
      const auto& p = params_as<Conv2dParams>(op, inputs, params);
      c.f32(0, "x");
      c.f32(1, "w");
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
      return {Shape{n, k, out_h, out_w}, DType::f32};
    }
    case OpKind::attention: {
      const auto& p = params_as<AttentionParams>(op, inputs, params);
      c.f32(0, "q");
      c.f32(1, "k");
      c.f32(2, "v");
      c.rank_ge(0, "q", 2);
      const Tensor& q = c.at(0);
      const Tensor& k = c.at(1);
      const Tensor& v = c.at(2);
      if (k.rank() != q.rank() || v.rank() != q.rank()) c.shape_error("q, k and v must have the same rank");
      for (int i = 0; i < q.rank() - 2; ++i) {
        if (k.shape()[i] != q.shape()[i] || v.shape()[i] != q.shape()[i])
          c.shape_error("leading dims of q, k, v differ");
      }
      if (k.dim(-1) != q.dim(-1)) c.shape_error("q and k head dims differ");
      if (v.dim(-2) != k.dim(-2)) c.shape_error("k and v sequence lengths differ");
      c.nonempty();
      if (!std::isfinite(p.scale)) c.arg_error("scale must be finite");
      if (p.causal && q.dim(-2) > k.dim(-2)) {
        c.shape_error("causal attention needs Lq <= Lk, got Lq " + std::to_string(q.dim(-2)) + ", Lk " +
                      std::to_string(k.dim(-2)));
      }
      Shape out = q.shape();
      out[out.rank() - 1] = v.dim(-1);
      return {out, DType::f32};
    }
    case OpKind::rope: {
      const auto& p = params_as<RopeParams>(op, inputs, params);
      c.f32(0, "x");
      c.rank_ge(0, "x", 2);
      c.nonempty();
      if (c.at(0).dim(-1) % 2 != 0) c.arg_error("last dim must be even, got " + std::to_string(c.at(0).dim(-1)));
      if (!(p.base > 0.0f) || !std::isfinite(p.base)) c.arg_error("base must be positive and finite");
      return {c.at(0).shape(), DType::f32};
    }
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: {
      const auto& p = params_as<ReduceParams>(op, inputs, params);
      c.f32(0, "x");
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
      return {out, DType::f32};
    }
    case OpKind::copy: {
      params_as<NoParams>(op, inputs, params);
      return {c.at(0).shape(), c.at(0).dtype()};
    }
    case OpKind::cast: {
      const auto& p = params_as<CastParams>(op, inputs, params);
      return {c.at(0).shape(), p.dtype};
    }
  }
  throw Error(ErrorCode::internal, op_tag(op) + " missing from infer_op");
}

OpCost op_cost(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const InferredOutput& result) {
  OpCost cost;
  for (const auto& t : inputs) {
    if (t.defined()) cost.bytes += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
  }
  const double out = static_cast<double>(result.shape.numel());
  cost.bytes += out * static_cast<double>(dtype_size(result.dtype));
  switch (op) {
    case OpKind::matmul: {
      const auto& p = std::get<MatmulParams>(params);
      const Tensor& a = inputs[0];
      double k = static_cast<double>(p.trans_a ? a.dim(-2) : a.dim(-1));
      cost.flops = 2.0 * out * k;
      break;
    }
    case OpKind::gemv:
    case OpKind::dot: cost.flops = 2.0 * static_cast<double>(inputs[0].numel()); break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::clip: cost.flops = out; break;
    case OpKind::scale:
    case OpKind::bias_act: cost.flops = 2.0 * out; break;
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu: cost.flops = 4.0 * out; break;
    case OpKind::gelu:
    case OpKind::gelu_tanh: cost.flops = 8.0 * out; break;
    case OpKind::softmax:
    case OpKind::log_softmax: cost.flops = 5.0 * out; break;
    case OpKind::layernorm:
    case OpKind::rmsnorm: cost.flops = 6.0 * out; break;
    case OpKind::conv2d: {
      const Tensor& w = inputs[1];
      cost.flops = 2.0 * out * static_cast<double>(w.dim(1) * w.dim(2) * w.dim(3));
      break;
    }
    case OpKind::attention: {
      const Tensor& q = inputs[0];
      const Tensor& k = inputs[1];
      const Tensor& v = inputs[2];
      double pairs = static_cast<double>(q.numel() / q.dim(-1)) * static_cast<double>(k.dim(-2));
      if (std::get<AttentionParams>(params).causal) pairs *= 0.5;
      cost.flops = 2.0 * pairs * static_cast<double>(q.dim(-1) + v.dim(-1));
      break;
    }
    case OpKind::rope: cost.flops = 6.0 * out; break;
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: cost.flops = static_cast<double>(inputs[0].numel()); break;
    case OpKind::copy:
    case OpKind::cast: cost.flops = 0; break;
  }
  return cost;
}

}  // namespace trine::detail
