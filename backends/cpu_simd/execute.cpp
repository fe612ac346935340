// Turns a validated op call into kernel arguments: data pointers, strides, the [outer, n, inner]
// views, and the one clearly named step that makes strided inputs contiguous where a kernel wants it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backends/assert.hpp"
#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/thread_pool.hpp"
#include "trine/error.hpp"

namespace trine::cpu {
namespace {

std::uint8_t* base_ptr(const Tensor& t) {
  return static_cast<std::uint8_t*>(t.storage()->backend().host_pointer(t.storage()->handle())) +
         t.offset() * static_cast<i64>(dtype_size(t.dtype()));
}

// dst (contiguous, dst_dtype) = src (any strides, any dtype). Work is split over flat element
// ranges, so a single long row uses every thread too. A plain transpose (the last dim strided,
// the one before it contiguous) goes through blocks transposed in registers by the kernel.
void strided_convert(const KernelTable& k, const Tensor& src, std::uint8_t* dst, DType dst_dtype) {
  const i64 n = src.numel();
  if (n == 0) return;
  const int rank = src.rank();
  const Shape shape = src.shape();
  const Strides strides = src.strides();
  const i64 inner = rank ? shape[rank - 1] : 1;
  const i64 inner_stride = rank ? strides[rank - 1] : 1;
  const i64 ses = static_cast<i64>(dtype_size(src.dtype()));
  const i64 des = static_cast<i64>(dtype_size(dst_dtype));
  const std::uint8_t* sbase = base_ptr(src);
  const DType from = src.dtype();
  // Element offset of the first element of row r (rows = all dims but the last).
  auto row_offset = [&](i64 r, int last_dim) {
    i64 off = 0;
    for (int d = last_dim; d >= 0; --d) {
      off += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return off;
  };

  if (rank >= 2 && inner_stride != 1 && strides[rank - 2] == 1 && inner >= 8 && shape[rank - 2] >= 8) {
    // 64 destination rows by 256 columns: both sides of a block fit in L2, and its 256 source rows
    // (one page each when rows are long) in the TLB.
    constexpr i64 tile = 64, cb_len = 256;
    const i64 rows = shape[rank - 2];
    const i64 mats = n / (rows * inner);
    const bool stream = n * des >= stream_transpose_bytes();
    const i64 row_tiles = (rows + tile - 1) / tile;
    parallel_for(mats * row_tiles, 1, [&](i64 t0, i64 t1) {
      for (i64 t = t0; t < t1; ++t) {
        const i64 m = t / row_tiles;
        const i64 r0 = (t % row_tiles) * tile;
        const i64 moff = row_offset(m, rank - 3);
        for (i64 c0 = 0; c0 < inner; c0 += cb_len) {
          k.transpose(from, dst_dtype, sbase + (moff + r0 + c0 * inner_stride) * ses, inner_stride,
                      dst + ((m * rows + r0) * inner + c0) * des, inner, std::min(tile, rows - r0),
                      std::min(cb_len, inner - c0), stream);
        }
      }
    });
    return;
  }

  parallel_for(n, 1 << 15, [&](i64 e0, i64 e1) {
    i64 e = e0;
    while (e < e1) {
      const i64 r = e / inner;
      const i64 c = e % inner;
      const i64 count = std::min(inner - c, e1 - e);
      k.convert(from, dst_dtype, sbase + (row_offset(r, rank - 2) + c * inner_stride) * ses, inner_stride,
                dst + e * des, count);
      e += count;
    }
  });
}

// The one step that makes a strided f32 input contiguous; `keep` holds the copy alive.
const float* contiguous_f32(const KernelTable& k, const Tensor& t, Tensor& keep) {
  if (!t.defined()) return nullptr;
  // Only matmul takes f16/bf16 (it reads them through GemmArgs); a contiguous f16 input here would
  // be read as f32.
  TRINE_ASSERT(t.dtype() == DType::f32,
               std::string("[cpu] a kernel was handed a ") + dtype_name(t.dtype()) + " input where it reads f32");
  if (t.is_contiguous()) return reinterpret_cast<const float*>(base_ptr(t));
  keep = Tensor::empty(t.shape(), DType::f32, t.device());
  strided_convert(k, t, base_ptr(keep), DType::f32);
  return reinterpret_cast<const float*>(base_ptr(keep));
}

float* out_f32(const detail::OpCall& call) { return reinterpret_cast<float*>(base_ptr(call.output)); }

void run_unary(const KernelTable& k, const detail::OpCall& call, Activation act) {
  const i64 n = call.output.numel();
  if (n == 0) return;
  const auto& p = std::get<ActParams>(call.params);
  Tensor keep;
  k.unary(act, p.alpha, p.beta, contiguous_f32(k, call.inputs[0], keep), out_f32(call), n);
}

// [outer, n, inner] around `axis` of `shape` (negative counts from the end; validated already).
void split_axis(const Shape& shape, int axis, i64& outer, i64& n, i64& inner) {
  if (axis < 0) axis += shape.rank();
  outer = 1;
  inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape[i];
}

void run_matmul(const KernelTable& k, const detail::OpCall& call) {
  const auto& p = std::get<MatmulParams>(call.params);
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Shape& os = call.output.shape();
  const int orank = os.rank();
  GemmArgs g;
  g.M = os[orank - 2];
  g.N = os[orank - 1];
  g.K = p.trans_a ? a.dim(-2) : a.dim(-1);
  g.batch = 1;
  for (int i = 0; i < orank - 2; ++i) g.batch *= os[i];
  if (call.output.numel() == 0) return;
  float* c = out_f32(call);
  if (g.K == 0) {
    std::memset(c, 0, static_cast<std::size_t>(call.output.numel()) * sizeof(float));
    return;
  }
  // Batch offsets: each operand's batch dims broadcast against the output's.
  std::vector<i64> a_off(static_cast<std::size_t>(g.batch)), b_off(static_cast<std::size_t>(g.batch));
  const int nb = orank - 2;
  for (i64 bi = 0; bi < g.batch; ++bi) {
    i64 rem = bi, ao = 0, bo = 0;
    for (int d = nb - 1; d >= 0; --d) {
      i64 idx = rem % os[d];
      rem /= os[d];
      int da = d - (nb - (a.rank() - 2));
      int db = d - (nb - (b.rank() - 2));
      if (da >= 0 && a.shape()[da] != 1) ao += idx * a.strides()[da];
      if (db >= 0 && b.shape()[db] != 1) bo += idx * b.strides()[db];
    }
    a_off[static_cast<std::size_t>(bi)] = ao;
    b_off[static_cast<std::size_t>(bi)] = bo;
  }
  g.a = base_ptr(a);
  g.a_dtype = a.dtype();
  g.a_rs = p.trans_a ? a.strides()[a.rank() - 1] : a.strides()[a.rank() - 2];
  g.a_cs = p.trans_a ? a.strides()[a.rank() - 2] : a.strides()[a.rank() - 1];
  g.a_batch_offsets = a_off.data();
  g.b = base_ptr(b);
  g.b_dtype = b.dtype();
  g.b_rs = p.trans_b ? b.strides()[b.rank() - 1] : b.strides()[b.rank() - 2];
  g.b_cs = p.trans_b ? b.strides()[b.rank() - 2] : b.strides()[b.rank() - 1];
  g.b_batch_offsets = b_off.data();
  g.c = c;
  g.c_rs = g.N;
  g.c_bs = g.M * g.N;
  k.gemm(g);
}

void run_binary(const KernelTable& k, const detail::OpCall& call, BinaryOp op) {
  const auto& in = call.inputs;
  if (call.output.numel() == 0) return;
  BinaryArgs b;
  b.op = op;
  const Shape& os = call.output.shape();
  Tensor av = in[0].broadcast_to(os), bv = in[1].broadcast_to(os);
  b.rank = os.rank();
  for (int i = 0; i < os.rank(); ++i) {
    b.shape[i] = os[i];
    b.a_strides[i] = os[i] == 1 ? 0 : av.strides()[i];
    b.b_strides[i] = os[i] == 1 ? 0 : bv.strides()[i];
  }
  if (b.rank == 0) {  // a scalar result is a one-element vector to the kernel
    b.rank = 1;
    b.shape[0] = 1;
  }
  b.a = reinterpret_cast<const float*>(base_ptr(in[0]));
  b.b = reinterpret_cast<const float*>(base_ptr(in[1]));
  b.y = out_f32(call);
  k.binary(b);
}

void run_softmax(const KernelTable& k, const detail::OpCall& call, bool log) {
  i64 outer, n, inner;
  split_axis(call.inputs[0].shape(), std::get<AxisParams>(call.params).axis, outer, n, inner);
  Tensor keep;
  k.softmax(log, contiguous_f32(k, call.inputs[0], keep), out_f32(call), outer, n, inner);
}

void run_reduce(const KernelTable& k, const detail::OpCall& call, ReduceOp op) {
  i64 outer, n, inner;
  split_axis(call.inputs[0].shape(), std::get<ReduceParams>(call.params).axis, outer, n, inner);
  Tensor keep;
  k.reduce(op, contiguous_f32(k, call.inputs[0], keep), out_f32(call), outer, n, inner);
}

void execute_op(const KernelTable& k, const detail::OpCall& call) {
  const auto& in = call.inputs;
  const i64 n_out = call.output.numel();
  Tensor keep0, keep1, keep2;
  switch (call.op) {
    case OpKind::matmul: run_matmul(k, call); return;
    case OpKind::gemv: {
      const auto& p = std::get<GemvParams>(call.params);
      const Tensor& a = in[0];
      GemvArgs g;
      g.M = n_out;
      g.K = in[1].numel();
      if (g.M == 0) return;
      if (g.K == 0) {
        std::memset(out_f32(call), 0, static_cast<std::size_t>(g.M) * sizeof(float));
        return;
      }
      g.a = reinterpret_cast<const float*>(base_ptr(a));
      g.a_rs = p.trans ? a.strides()[1] : a.strides()[0];
      g.a_cs = p.trans ? a.strides()[0] : a.strides()[1];
      g.x = contiguous_f32(k, in[1], keep1);
      g.y = out_f32(call);
      k.gemv(g);
      return;
    }
    case OpKind::dot: {
      const i64 n = in[0].numel();
      *out_f32(call) = n == 0 ? 0.0f : k.dot(contiguous_f32(k, in[0], keep0), contiguous_f32(k, in[1], keep1), n);
      return;
    }
    // Each op names its kernel operation: a new op added to ops.def breaks this switch
    // (-Werror=switch) instead of falling into a neighbour's kernel.
    case OpKind::add: run_binary(k, call, BinaryOp::add); return;
    case OpKind::sub: run_binary(k, call, BinaryOp::sub); return;
    case OpKind::mul: run_binary(k, call, BinaryOp::mul); return;
    case OpKind::div: run_binary(k, call, BinaryOp::div); return;
    case OpKind::scale: {
      if (n_out == 0) return;
      const auto& p = std::get<ScaleParams>(call.params);
      k.scale(p.alpha, p.beta, contiguous_f32(k, in[0], keep0), out_f32(call), n_out);
      return;
    }
    case OpKind::bias_act: {
      if (n_out == 0) return;
      const auto& p = std::get<BiasActParams>(call.params);
      const i64 cols = in[0].dim(-1);
      k.bias_act(p.act, p.alpha, p.beta, contiguous_f32(k, in[0], keep0), contiguous_f32(k, in[1], keep1), out_f32(call),
                 n_out / cols, cols);
      return;
    }
    case OpKind::relu: run_unary(k, call, Activation::relu); return;
    case OpKind::leaky_relu: run_unary(k, call, Activation::leaky_relu); return;
    case OpKind::elu: run_unary(k, call, Activation::elu); return;
    case OpKind::sigmoid: run_unary(k, call, Activation::sigmoid); return;
    case OpKind::tanh: run_unary(k, call, Activation::tanh); return;
    case OpKind::silu: run_unary(k, call, Activation::silu); return;
    case OpKind::gelu: run_unary(k, call, Activation::gelu); return;
    case OpKind::gelu_tanh: run_unary(k, call, Activation::gelu_tanh); return;
    case OpKind::clip: run_unary(k, call, Activation::clip); return;
    case OpKind::softmax: run_softmax(k, call, /*log=*/false); return;
    case OpKind::log_softmax: run_softmax(k, call, /*log=*/true); return;
    case OpKind::layernorm: {
      const i64 n = in[0].dim(-1);
      const float eps = std::get<NormParams>(call.params).eps;
      const float* gamma = in.size() > 1 ? contiguous_f32(k, in[1], keep1) : nullptr;
      const float* beta = in.size() > 2 ? contiguous_f32(k, in[2], keep2) : nullptr;
      k.layernorm(contiguous_f32(k, in[0], keep0), gamma, beta, out_f32(call), n_out / n, n, eps);
      return;
    }
    case OpKind::rmsnorm: {
      const i64 n = in[0].dim(-1);
      const float* gamma = in.size() > 1 ? contiguous_f32(k, in[1], keep1) : nullptr;
      k.rmsnorm(contiguous_f32(k, in[0], keep0), gamma, out_f32(call), n_out / n, n,
                std::get<NormParams>(call.params).eps);
      return;
    }
    case OpKind::conv2d: {
      const auto& p = std::get<Conv2dParams>(call.params);
      Conv2dArgs c;
      const Shape& xs = in[0].shape();
      const Shape& ws = in[1].shape();
      const Shape& os = call.output.shape();
      c.N = xs[0], c.C = xs[1], c.H = xs[2], c.W = xs[3];
      c.K = ws[0], c.R = ws[2], c.S = ws[3];
      c.P = os[2], c.Q = os[3];
      c.stride_h = p.stride.h, c.stride_w = p.stride.w;
      c.pad_h = p.padding.h, c.pad_w = p.padding.w;
      c.dil_h = p.dilation.h, c.dil_w = p.dilation.w;
      c.groups = p.groups;
      c.x = contiguous_f32(k, in[0], keep0);
      c.w = contiguous_f32(k, in[1], keep1);
      c.bias = in.size() > 2 ? contiguous_f32(k, in[2], keep2) : nullptr;
      c.y = out_f32(call);
      k.conv2d(c);
      return;
    }
    case OpKind::attention: {
      const auto& p = std::get<AttentionParams>(call.params);
      AttentionArgs a;
      a.Lq = in[0].dim(-2);
      a.D = in[0].dim(-1);
      a.Lk = in[1].dim(-2);
      a.Dv = in[2].dim(-1);
      a.batch = in[0].numel() / (a.Lq * a.D);
      a.scale = p.scale != 0.0f ? p.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.D)));
      a.causal = p.causal;
      a.q = contiguous_f32(k, in[0], keep0);
      a.k = contiguous_f32(k, in[1], keep1);
      a.v = contiguous_f32(k, in[2], keep2);
      a.y = out_f32(call);
      k.attention(a);
      return;
    }
    case OpKind::rope: {
      const auto& p = std::get<RopeParams>(call.params);
      const i64 d = in[0].dim(-1), l = in[0].dim(-2);
      k.rope(contiguous_f32(k, in[0], keep0), out_f32(call), n_out / (l * d), l, d, p.base, p.position_offset);
      return;
    }
    case OpKind::sum: run_reduce(k, call, ReduceOp::sum); return;
    case OpKind::mean: run_reduce(k, call, ReduceOp::mean); return;
    case OpKind::max: run_reduce(k, call, ReduceOp::max); return;
    case OpKind::copy:
    case OpKind::cast: strided_convert(k, in[0], base_ptr(call.output), call.output.dtype()); return;
  }
  TRINE_ASSERT(!"an OpKind outside ops.def", "[cpu] execute() was handed an op it does not know");
}

// Error text for an allocation that failed inside op `op`: "[op] ..." whatever the allocating
// helper called itself ("[empty]" for a temporary tensor, "[gemm]" for packing scratch).
std::string out_of_memory_message(OpKind op, std::string_view what) {
  if (!what.empty() && what.front() == '[') {
    if (const auto close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return std::string("[") + op_info(op).name + "] out of memory in the cpu kernel's temporaries: " + std::string(what);
}

// "[op] text". Built with += : GCC 12 warns falsely on operator+ chains here (GCC bug 105329).
std::string in_op(OpKind op, const char* text) {
  std::string s = "[";
  s += op_info(op).name;
  s += "] ";
  s += text;
  return s;
}

}  // namespace

void execute(const KernelTable& k, const detail::OpCall& call) {
  const std::string_view name = op_info(call.op).name;
  TRINE_ASSERT(call.output.defined() && call.output.is_contiguous() && call.output.device().kind == DeviceKind::cpu,
               in_op(call.op, "the cpu backend was handed an output it cannot write in place"));
  TRINE_ASSERT(static_cast<int>(call.inputs.size()) >= op_info(call.op).min_inputs,
               in_op(call.op, "the cpu backend was handed fewer inputs than the op takes"));
  // Kernels and their helpers allocate with std containers and Tensor::empty; whatever fails, the
  // caller hears an out_of_memory naming this op.
  try {
    execute_op(k, call);
  } catch (const std::bad_alloc& e) {
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, e.what()));
  } catch (const std::length_error& e) {  // a std::vector asked for more than max_size()
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, e.what()));
  } catch (const Error& e) {
    const std::string_view what = e.what();
    if (e.code() != ErrorCode::out_of_memory || (what.size() > name.size() + 1 && what.front() == '[' &&
                                                 what.substr(1, name.size()) == name && what[name.size() + 1] == ']'))
      throw;
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, what));
  }
}

}  // namespace trine::cpu
