// Reductions, softmax and norms on Vulkan: one workgroup per output row over a contiguous
// [outer, n, inner] view (strided inputs are made contiguous on the device first).
#include <string>

#include "backends/vulkan/context.hpp"
#include "backends/vulkan/ops.hpp"
#include "trine/error.hpp"

namespace trine::vulkan {
namespace {

constexpr std::uint32_t k_wg = 128;

struct ReducePush {
  std::uint32_t outer, n, inner, x_off, v_off, pad, y_off, chunks, chunk_len;
  float scale;
};
struct SoftmaxPush {
  std::uint32_t outer, n, inner, x_off, log_form;
};
struct NormPush {
  std::uint32_t rows, n, x_off, g_off, b_off, has_gamma, has_beta, rms;
  float eps;
};

struct Split {
  std::uint32_t outer = 1, n = 1, inner = 1;
};

// x's shape as [outer, n, inner] around `axis`.
Split split(const Shape& s, int axis) {
  const int a = axis < 0 ? axis + s.rank() : axis;
  Split r;
  std::uint64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= static_cast<std::uint64_t>(s[i]);
  for (int i = a + 1; i < s.rank(); ++i) inner *= static_cast<std::uint64_t>(s[i]);
  r.outer = static_cast<std::uint32_t>(outer);
  r.inner = static_cast<std::uint32_t>(inner);
  r.n = s.rank() ? static_cast<std::uint32_t>(s[a]) : 1;
  return r;
}

// The longest stretch of the reduced axis one workgroup reduces: past it, the axis is cut into
// chunks (record_reduction).
std::uint64_t chunk_len_for(const DeviceCaps& caps, std::uint32_t n) {
  return caps.loop_budget ? std::uint64_t{k_wg} * (caps.loop_budget / 2) : std::uint64_t{n} + 1;
}

// Whether a row op runs one invocation per row (reduce_rows.comp, softmax_rows.comp) rather than a
// workgroup per row: on software devices (lavapipe runs a barrier as a coroutine switch, and
// invocations walking their own rows read memory a CPU caches well; on a GPU those reads would not
// coalesce), from 256 rows (enough 64-row workgroups for every thread), and where the loop over
// the row (`loop` iterations) fits the device's loop budget.
// A workgroup-reduction shader (reduce, softmax, norm), or its subgroup variant where the device
// uses those.
const char* reduction_shader(const DeviceCaps& caps, const char* plain, const char* subgroup) {
  return caps.subgroup_reductions ? subgroup : plain;
}

bool rows_per_invocation(const DeviceCaps& caps, std::uint64_t rows, std::uint64_t loop) {
  return caps.software && rows >= 256 && (caps.loop_budget == 0 || loop <= caps.loop_budget);
}

// softmax.comp and norm.comp pass over a row three times, k_wg elements per step.
std::uint64_t row_loop(std::uint32_t n) { return 3 * ((std::uint64_t{n} + k_wg - 1) / k_wg); }

}  // namespace

void limits_reduction(Limits& l, std::uint64_t x_range, std::uint64_t v_range, const Tensor& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner) {
  const std::uint64_t outputs = std::uint64_t{outer} * inner;
  if (outputs == 0) return;  // no dispatch
  const std::uint64_t chunk_len = chunk_len_for(l.caps(), n);
  const std::uint64_t partial = n > chunk_len ? outputs * ((n + chunk_len - 1) / chunk_len) * 4 : 0;
  if (partial) l.temporary(partial);  // allocated before the dispatches
  l.bind(x_range, "input 0");
  if (v_range) l.bind(v_range, "input 1");
  if (partial) l.bind(bound_bytes(partial), "the partial results");
  l.bind(y, "the output");
}

// Records y[o] = reduce over k of x[o, k] (times v[k] for op 3); x contiguous as [outer, n, inner].
// An axis longer than one workgroup may loop over (the device's loop budget) is cut into chunks,
// each reduced into a temporary, and the partial results reduced by a second dispatch.
void record_reduction(Recorder& rec, const TensorRef& x, const TensorRef* v, const TensorRef& y, std::uint32_t outer,
                      std::uint32_t n, std::uint32_t inner, std::uint32_t op) {
  const std::uint64_t chunk_len = chunk_len_for(rec.caps(), n);
  const std::uint32_t first_op = op == 1 ? 0 : op;  // mean: sums, divided once at the end
  const float scale = op == 1 ? 1.0f / static_cast<float>(n) : 1.0f;
  const std::uint64_t outputs = std::uint64_t{outer} * inner;
  if (n <= chunk_len) {
    ReducePush p{outer, n, inner, x.offset, v ? v->offset : 0, first_op, y.offset, 1, n, scale};
    if (rows_per_invocation(rec.caps(), outputs, n)) {
      rec.dispatch("reduce_rows", {bind_in(x), bind_in(v ? *v : x), bind_out(y)}, &p, sizeof(p), (outputs + 63) / 64,
                   {first_op});
      return;
    }
    rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
                 {bind_in(x), bind_in(v ? *v : x), bind_out(y)}, &p, sizeof(p), outputs, {k_wg, first_op});
    return;
  }
  const auto chunks = static_cast<std::uint32_t>((n + chunk_len - 1) / chunk_len);
  Allocation* partial = rec.temporary(static_cast<std::size_t>(outputs * chunks * 4));  // bound whole
  ReducePush p1{
      outer, n, inner, x.offset, v ? v->offset : 0, first_op, 0, chunks, static_cast<std::uint32_t>(chunk_len), 1.0f};
  rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
               {bind_in(x), bind_in(v ? *v : x), {partial, true}}, &p1, sizeof(p1), outputs * chunks, {k_wg, first_op});
  const std::uint32_t second_op = op == 2 ? 2 : 0;
  ReducePush p2{static_cast<std::uint32_t>(outputs), chunks, 1, 0, 0, second_op, y.offset, 1, chunks, scale};
  rec.dispatch(reduction_shader(rec.caps(), "reduce", "reduce_subgroup"),
               {{partial, false}, {partial, false}, bind_out(y)}, &p2, sizeof(p2), outputs, {k_wg, second_op});
}

bool supports_reduce(const detail::OpCall& call) {
  for (const auto& t : call.inputs)
    if (t.defined() && t.dtype() != DType::f32) return false;
  return true;
}

void limits_reduce(Limits& l, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.output;
  switch (call.op) {
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: {
      const Split s = split(x.shape(), std::get<ReduceParams>(call.params).axis);
      return limits_reduction(l, l.contiguous_f32(x, "input 0"), 0, y, s.outer, s.n, s.inner);
    }
    case OpKind::softmax:
    case OpKind::log_softmax: {
      const Split s = split(x.shape(), std::get<AxisParams>(call.params).axis);
      l.loop(row_loop(s.n), [&] { return "a row of " + std::to_string(s.n); });
      const std::uint64_t rx = l.contiguous_f32(x, "input 0");
      if (std::uint64_t{s.outer} * s.inner == 0) return;
      l.bind(rx, "input 0");
      return l.bind(y, "the output");
    }
    case OpKind::layernorm:
    case OpKind::rmsnorm: {
      const Split s = split(x.shape(), -1);
      l.loop(row_loop(s.n), [&] { return "a row of " + std::to_string(s.n); });
      const std::uint64_t rx = l.contiguous_f32(x, "input 0");
      const bool has_g = call.inputs.size() > 1 && call.inputs[1].defined();
      const bool has_b = call.op == OpKind::layernorm && call.inputs.size() > 2 && call.inputs[2].defined();
      const std::uint64_t rg = has_g ? l.contiguous_f32(call.inputs[1], "gamma") : rx;
      const std::uint64_t rb = has_b ? l.contiguous_f32(call.inputs[2], "beta") : rx;
      if (s.outer == 0) return;
      l.bind(rx, "input 0");
      l.bind(rg, "gamma");
      l.bind(rb, "beta");
      return l.bind(y, "the output");
    }
    default: return;
  }
}

void record_reduce(Recorder& rec, const detail::OpCall& call) {
  const Tensor& x = call.inputs[0];
  const TensorRef y = ref_of(call.output);
  switch (call.op) {
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: {
      const auto& rp = std::get<ReduceParams>(call.params);
      const Split s = split(x.shape(), rp.axis);
      const std::uint32_t op = call.op == OpKind::sum ? 0 : call.op == OpKind::mean ? 1 : 2;
      return record_reduction(rec, contiguous_f32(rec, x), nullptr, y, s.outer, s.n, s.inner, op);
    }
    case OpKind::softmax:
    case OpKind::log_softmax: {
      const Split s = split(x.shape(), std::get<AxisParams>(call.params).axis);
      const TensorRef rx = contiguous_f32(rec, x);
      SoftmaxPush p{s.outer, s.n, s.inner, rx.offset, call.op == OpKind::log_softmax ? 1u : 0u};
      const std::uint64_t rows = std::uint64_t{s.outer} * s.inner;
      if (rows_per_invocation(rec.caps(), rows, 3 * std::uint64_t{s.n})) {
        return rec.dispatch("softmax_rows", {bind_in(rx), bind_out(y)}, &p, sizeof(p), (rows + 63) / 64);
      }
      return rec.dispatch(reduction_shader(rec.caps(), "softmax", "softmax_subgroup"), {bind_in(rx), bind_out(y)}, &p,
                          sizeof(p), rows, {k_wg});
    }
    case OpKind::layernorm:
    case OpKind::rmsnorm: {
      const Split s = split(x.shape(), -1);
      const TensorRef rx = contiguous_f32(rec, x);
      const bool has_g = call.inputs.size() > 1 && call.inputs[1].defined();
      const bool has_b = call.op == OpKind::layernorm && call.inputs.size() > 2 && call.inputs[2].defined();
      const TensorRef rg = has_g ? contiguous_f32(rec, call.inputs[1]) : rx;
      const TensorRef rb = has_b ? contiguous_f32(rec, call.inputs[2]) : rx;
      NormPush p{s.outer,
                 s.n,
                 rx.offset,
                 rg.offset,
                 rb.offset,
                 has_g,
                 has_b,
                 call.op == OpKind::rmsnorm,
                 std::get<NormParams>(call.params).eps};
      return rec.dispatch(reduction_shader(rec.caps(), "norm", "norm_subgroup"),
                          {bind_in(rx), bind_in(rg), bind_in(rb), bind_out(y)}, &p, sizeof(p), s.outer, {k_wg});
    }
    default: break;
  }
  throw Error(ErrorCode::internal, std::string("[") + op_info(call.op).name + "] routed to the reduce family");
}

}  // namespace trine::vulkan
