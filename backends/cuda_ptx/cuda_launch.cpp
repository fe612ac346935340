// Op calls to generated kernels: the plan (family, config, parameters, problem sizes) for each op
// of the table, and the launch through the Driver API table.
#include "backends/cuda_ptx/cuda_launch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cuda_ptx/driver/check.hpp"
#include "backends/cuda_ptx/kernels/registry.hpp"
#include "trine/error.hpp"

namespace trine::cuda {
namespace {

using i64 = std::int64_t;

// Kernel arguments: each in its own 8-byte slot, in the kernel's parameter order.
class Args {
 public:
  template <class T>
  void add(T v) {
    static_assert(sizeof(T) <= 8);
    std::array<unsigned char, 8> slot{};
    std::memcpy(slot.data(), &v, sizeof(T));
    slots_.push_back(slot);
  }
  void add_ptr(const Tensor& t) { add<CUdeviceptr>(device_ptr(t)); }
  void add_ptr_or_null(const detail::OpCall& c, std::size_t i) {
    add<CUdeviceptr>(i < c.inputs.size() && c.inputs[i].defined() ? device_ptr(c.inputs[i]) : 0);
  }
  std::vector<void*> pointers() {
    std::vector<void*> p;
    for (auto& s : slots_) p.push_back(s.data());
    return p;
  }
  static CUdeviceptr device_ptr(const Tensor& t) {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(t.storage()->handle())) +
           static_cast<CUdeviceptr>(t.offset()) * dtype_size(t.dtype());
  }

 private:
  std::vector<std::array<unsigned char, 8>> slots_;
};

// One kernel launch.
struct Plan {
  std::string_view family;
  std::string config;
  std::vector<i64> sizes;  // the generator's geometry input
  Args args;
};

// A call that needs more than one launch, or a memset, says so here.
struct Steps {
  std::vector<Plan> launches;
  bool zero_output = false;  // an empty sum: the output is zeros
};

bool contiguous_inputs(const detail::OpCall& c) {
  for (const auto& t : c.inputs)
    if (t.defined() && !t.is_contiguous()) return false;
  return true;
}

// A view's dims and element strides with size-1 dims dropped and mergeable neighbours merged, at
// most 6 (leading 1s added): what the gather kernel addresses. False when more remain.
bool collapse6(const Tensor& t, std::array<i64, 6>& d, std::array<i64, 6>& s) {
  std::vector<std::array<i64, 2>> dims;  // size, stride
  for (int i = 0; i < t.rank(); ++i)
    if (t.shape()[i] != 1) dims.push_back({t.shape()[i], t.strides()[i]});
  for (std::size_t i = dims.size(); i-- > 1;) {
    if (dims[i - 1][1] == dims[i][1] * dims[i][0]) {
      dims[i - 1] = {dims[i - 1][0] * dims[i][0], dims[i][1]};
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (dims.size() > 6) return false;
  d.fill(1);
  s.fill(0);
  const std::size_t pad = 6 - dims.size();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    d[pad + i] = dims[i][0];
    s[pad + i] = dims[i][1];
  }
  return true;
}

// Device state a plan may need: dot's partial sums, rope's tables. Null when only asking whether
// a kernel exists (supports()).
struct Resources {
  const DriverApi* api = nullptr;
  CUstream stream = nullptr;
  DeviceKernels* kernels = nullptr;
};

const char* elem(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

// [outer, n, inner] around `axis`.
void split(const Shape& s, int axis, i64& outer, i64& n, i64& inner) {
  if (axis < 0) axis += s.rank();
  outer = inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  n = s[axis];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
}

// Output dims and both inputs' strides, size-1 dims dropped and mergeable neighbours merged, at
// most 4 dims (leading 1s added): what the binary kernel addresses.
bool collapse4(const detail::OpCall& c, std::array<i64, 4>& d, std::array<i64, 4>& sa, std::array<i64, 4>& sb) {
  const Shape& os = c.output.shape();
  const Tensor av = c.inputs[0].broadcast_to(os), bv = c.inputs[1].broadcast_to(os);
  std::vector<std::array<i64, 3>> dims;  // size, a stride, b stride
  for (int i = 0; i < os.rank(); ++i)
    if (os[i] != 1) dims.push_back({os[i], av.strides()[i], bv.strides()[i]});
  for (std::size_t i = dims.size(); i-- > 1;) {
    auto& outer = dims[i - 1];
    const auto& inner = dims[i];
    if (outer[1] == inner[1] * inner[0] && outer[2] == inner[2] * inner[0]) {
      outer = {outer[0] * inner[0], inner[1], inner[2]};
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (dims.size() > 4) return false;
  d = {1, 1, 1, 1};
  sa = sb = {0, 0, 0, 0};
  const std::size_t pad = 4 - dims.size();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    d[pad + i] = dims[i][0];
    sa[pad + i] = dims[i][1];
    sb[pad + i] = dims[i][2];
  }
  return true;
}

// The matmul kernel for these dtypes, layout and size: tensor cores for f16/bf16 pairs laid out for
// ldmatrix on sm_80+, the simple form for outputs of one 16x16 block, the tiled form otherwise
// (every dtype pair: each operand is widened to f32 as it is staged).
std::pair<std::string_view, std::string> matmul_kernel(DType a, DType b, i64 sa_k, i64 sb_n, int sm, bool aligned,
                                                       i64 m, i64 n) {
  if (a == b && a != DType::f32 && sm >= 80 && sa_k == 1 && sb_n == 1 && aligned) {
    return {std::string_view("matmul_mma"), std::string(elem(a))};
  }
  const bool simple_exists = a == b || (a == DType::f32 && b == DType::bf16);
  if (simple_exists && m <= 16 && n <= 16) return {std::string_view("matmul_simple"), std::string(elem(a)) + "_" + elem(b)};
  return {std::string_view("matmul_tiled"), std::string(elem(a)) + "_" + elem(b) + "_64"};
}

std::optional<Steps> plan_matmul(const detail::OpCall& c, int sm) {
  const auto& p = std::get<MatmulParams>(c.params);
  const Tensor& a = c.inputs[0];
  const Tensor& b = c.inputs[1];
  const Shape& os = c.output.shape();
  const int orank = os.rank(), nb = orank - 2;
  const i64 m = os[orank - 2], n = os[orank - 1], k = p.trans_a ? a.dim(-2) : a.dim(-1);
  Steps steps;
  if (c.output.numel() == 0) return steps;
  if (k == 0) {
    steps.zero_output = true;
    return steps;
  }
  if (m > UINT32_MAX || n > UINT32_MAX || k > UINT32_MAX || nb > 2) return std::nullopt;
  // Batch dims as [outer, inner] with each operand's strides (0 where it broadcasts).
  auto batch_stride = [&](const Tensor& t, int out_dim) -> i64 {
    const int d = out_dim - (nb - (t.rank() - 2));
    return d >= 0 && t.shape()[d] != 1 ? t.strides()[d] : 0;
  };
  const i64 outer = nb == 2 ? os[0] : 1, inner = nb >= 1 ? os[nb - 1] : 1;
  if (outer * inner > 65535) return std::nullopt;
  const i64 sa_m = p.trans_a ? a.strides()[a.rank() - 1] : a.strides()[a.rank() - 2];
  const i64 sa_k = p.trans_a ? a.strides()[a.rank() - 2] : a.strides()[a.rank() - 1];
  const i64 sb_k = p.trans_b ? b.strides()[b.rank() - 1] : b.strides()[b.rank() - 2];
  const i64 sb_n = p.trans_b ? b.strides()[b.rank() - 2] : b.strides()[b.rank() - 1];
  const i64 sa_outer = nb == 2 ? batch_stride(a, 0) : 0, sb_outer = nb == 2 ? batch_stride(b, 0) : 0;
  const i64 sa_inner = nb >= 1 ? batch_stride(a, nb - 1) : 0, sb_inner = nb >= 1 ? batch_stride(b, nb - 1) : 0;
  const bool aligned = (Args::device_ptr(a) % 16 == 0) && (Args::device_ptr(b) % 16 == 0) && sa_m % 8 == 0 &&
                       sb_k % 8 == 0 && sa_outer % 8 == 0 && sa_inner % 8 == 0 && sb_outer % 8 == 0 &&
                       sb_inner % 8 == 0;
  auto kernel = matmul_kernel(a.dtype(), b.dtype(), sa_k, sb_n, sm, aligned, m, n);
  Plan plan{kernel.first, kernel.second, {outer * inner, m, n, k}, {}};
  plan.args.add_ptr(a);
  plan.args.add_ptr(b);
  plan.args.add_ptr(c.output);
  for (i64 v : {m, n, k}) plan.args.add(static_cast<std::uint32_t>(v));
  for (i64 v : {sa_m, sa_k, sb_k, sb_n}) plan.args.add(v);
  plan.args.add(static_cast<std::uint32_t>(inner));
  for (i64 v : {sa_outer, sa_inner, sb_outer, sb_inner}) plan.args.add(v);
  steps.launches.push_back(std::move(plan));
  return steps;
}

// The launches for a call, or none when no generated kernel serves it (then supports() is false).
// `gathered`: plan as if every strided input had been made contiguous (what supports() asks before
// the backend inserts the gathers).
std::optional<Steps> plan(const detail::OpCall& c, int sm, const Resources& res, bool gathered) {
  const i64 n_out = c.output.numel();
  auto contiguous = [&](const detail::OpCall& call) { return gathered || contiguous_inputs(call); };
  Steps steps;
  auto one = [&](std::string_view family, std::string config, std::vector<i64> sizes) -> Plan& {
    steps.launches.push_back(Plan{family, std::move(config), std::move(sizes), {}});
    return steps.launches.back();
  };
  switch (c.op) {
    case OpKind::matmul: return plan_matmul(c, sm);
    case OpKind::gemv: {
      const auto& p = std::get<GemvParams>(c.params);
      const Tensor& a = c.inputs[0];
      if (!contiguous(c) || a.dim(0) * a.dim(1) == 0 || a.dim(p.trans ? 0 : 1) > UINT32_MAX) return std::nullopt;
      const i64 m = n_out, k = c.inputs[1].numel();
      auto& pl = one("gemv", p.trans ? "t" : "n", {m, k});
      pl.args.add_ptr(a);
      pl.args.add_ptr(c.inputs[1]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(m));
      pl.args.add(static_cast<std::uint32_t>(k));
      pl.args.add(static_cast<std::uint64_t>(a.dim(1)));
      return steps;
    }
    case OpKind::dot: {
      // Each CTA writes one partial sum; reduce.sum_row adds them in a fixed order.
      if (!contiguous(c)) return std::nullopt;
      const i64 n = c.inputs[0].numel();
      if (n == 0) {
        steps.zero_output = true;
        return steps;
      }
      const std::uint32_t blocks = kernels::find_generator("dot")->geometry("partial", std::vector<i64>{n}).grid[0];
      const CUdeviceptr partials = res.kernels ? res.kernels->dot_partials(*res.api) : 0;
      {
        auto& pl = one("dot", "partial", {n});
        pl.args.add_ptr(c.inputs[0]);
        pl.args.add_ptr(c.inputs[1]);
        pl.args.add(partials);
        pl.args.add(static_cast<std::uint64_t>(n));
      }
      auto& sum = one("reduce", "sum_row", {1, blocks, 1});
      sum.args.add(partials);
      sum.args.add_ptr(c.output);
      sum.args.add(std::uint64_t{1});
      sum.args.add(blocks);
      sum.args.add(std::uint64_t{1});
      return steps;
    }
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div: {
      if (n_out == 0) return steps;
      std::array<i64, 4> d{}, sa{}, sb{};
      if (!collapse4(c, d, sa, sb)) return std::nullopt;
      const bool dense = c.inputs[0].shape() == c.output.shape() && c.inputs[1].shape() == c.output.shape() &&
                         contiguous_inputs(c);
      auto& pl = one("binary", std::string(op_info(c.op).name) + (dense ? "_contig" : "_bcast"), {n_out});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.inputs[1]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(n_out));
      for (int i = 1; i < 4; ++i) pl.args.add(static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]));
      for (i64 s : sa) pl.args.add(s);
      for (i64 s : sb) pl.args.add(s);
      return steps;
    }
    case OpKind::scale:
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh:
    case OpKind::clip: {
      if (!contiguous(c)) return std::nullopt;
      if (n_out == 0) return steps;
      float alpha = 0, beta = 0;
      if (c.op == OpKind::scale) {
        alpha = std::get<ScaleParams>(c.params).alpha;
        beta = std::get<ScaleParams>(c.params).beta;
      } else {
        alpha = std::get<ActParams>(c.params).alpha;
        beta = std::get<ActParams>(c.params).beta;
      }
      auto& pl = one("unary", op_info(c.op).name, {n_out});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(n_out));
      pl.args.add(alpha);
      pl.args.add(beta);
      return steps;
    }
    case OpKind::bias_act: {
      if (!contiguous(c)) return std::nullopt;
      if (n_out == 0) return steps;
      const auto& p = std::get<BiasActParams>(c.params);
      auto& pl = one("bias_act", activation_name(p.act), {n_out});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.inputs[1]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(n_out));
      pl.args.add(static_cast<std::uint64_t>(c.inputs[0].dim(-1)));
      pl.args.add(p.alpha);
      pl.args.add(p.beta);
      return steps;
    }
    case OpKind::softmax:
    case OpKind::log_softmax:
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: {
      if (!contiguous(c)) return std::nullopt;
      const bool soft = c.op == OpKind::softmax || c.op == OpKind::log_softmax;
      const int axis = soft ? std::get<AxisParams>(c.params).axis : std::get<ReduceParams>(c.params).axis;
      i64 outer, r, inner;
      split(c.inputs[0].shape(), axis, outer, r, inner);
      if (r > UINT32_MAX) return std::nullopt;
      auto& pl = one(soft ? "softmax" : "reduce", std::string(op_info(c.op).name) + (inner == 1 ? "_row" : "_col"),
                     {outer, r, inner});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(outer));
      pl.args.add(static_cast<std::uint32_t>(r));
      pl.args.add(static_cast<std::uint64_t>(inner));
      return steps;
    }
    case OpKind::layernorm:
    case OpKind::rmsnorm: {
      if (!contiguous(c)) return std::nullopt;
      const i64 n = c.inputs[0].dim(-1), rows = n_out / n;
      if (n > UINT32_MAX) return std::nullopt;
      auto& pl = one("norm", op_info(c.op).name, {rows, n});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr_or_null(c, 1);
      pl.args.add_ptr_or_null(c, 2);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(rows));
      pl.args.add(static_cast<std::uint32_t>(n));
      pl.args.add(std::get<NormParams>(c.params).eps);
      return steps;
    }
    case OpKind::conv2d: {
      if (!contiguous(c)) return std::nullopt;
      const auto& p = std::get<Conv2dParams>(c.params);
      const Shape& xs = c.inputs[0].shape();
      const Shape& ws = c.inputs[1].shape();
      const Shape& os = c.output.shape();
      if (xs[0] * xs[1] * xs[2] > UINT32_MAX || os[0] * os[2] * os[3] > UINT32_MAX) return std::nullopt;
      auto& pl = one("conv2d", "f32_64", {xs[0], ws[0] / p.groups, os[2] * os[3], p.groups});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.inputs[1]);
      pl.args.add_ptr_or_null(c, 2);
      pl.args.add_ptr(c.output);
      for (i64 v : {xs[0], xs[1], xs[2], xs[3], ws[0], os[2], os[3], ws[2], ws[3], p.stride.h, p.stride.w,
                    p.padding.h, p.padding.w, p.dilation.h, p.dilation.w, p.groups})
        pl.args.add(static_cast<std::uint32_t>(v));
      return steps;
    }
    case OpKind::attention: {
      if (!contiguous(c)) return std::nullopt;
      const auto& p = std::get<AttentionParams>(c.params);
      const i64 d = c.inputs[0].dim(-1), dv = c.inputs[2].dim(-1), lq = c.inputs[0].dim(-2), lk = c.inputs[1].dim(-2);
      if (d > 128 || dv > 128 || lq > UINT32_MAX || lk > UINT32_MAX) return std::nullopt;
      const i64 batch = c.inputs[0].numel() / (lq * d);
      if (batch > 65535 || (p.causal && lq > lk)) return std::nullopt;
      // Head dims of 64 and 128 have their own kernels; others run zero-padded to 64 or 128.
      const bool exact = (d == 64 || d == 128) && (dv == 64 || dv == 128);
      const std::string config = exact ? "d" + std::to_string(d) + (dv != d ? "_v" + std::to_string(dv) : "")
                                       : (std::max(d, dv) <= 64 ? "pad64" : "pad128");
      auto& pl = one("attention", config, {batch, lq, lk});
      for (int i = 0; i < 3; ++i) pl.args.add_ptr(c.inputs[static_cast<std::size_t>(i)]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint32_t>(lq));
      pl.args.add(static_cast<std::uint32_t>(lk));
      pl.args.add(static_cast<std::uint32_t>(p.causal ? 1 : 0));
      pl.args.add(p.scale != 0.0f ? p.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
      if (!exact) {
        pl.args.add(static_cast<std::uint32_t>(d));
        pl.args.add(static_cast<std::uint32_t>(dv));
      }
      return steps;
    }
    case OpKind::rope: {
      if (!contiguous(c)) return std::nullopt;
      const auto& p = std::get<RopeParams>(c.params);
      const i64 d = c.inputs[0].dim(-1), len = c.inputs[0].dim(-2);
      const CUdeviceptr table = res.kernels ? res.kernels->rope_frequencies(*res.api, res.stream, d, p.base) : 0;
      auto& pl = one("rope", "f32", {n_out / 2});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.output);
      pl.args.add(table);
      pl.args.add(static_cast<std::uint64_t>(n_out / 2));
      pl.args.add(static_cast<std::uint64_t>(len));
      pl.args.add(static_cast<std::uint64_t>(d / 2));
      pl.args.add(static_cast<std::int64_t>(p.position_offset));
      return steps;
    }
    case OpKind::copy:
    case OpKind::cast: {
      if (n_out == 0) return steps;
      const DType from = c.inputs[0].dtype(), to = c.output.dtype();
      if (from == to && !c.inputs[0].is_contiguous()) {
        // A strided view copied: the gather kernel over the view's (collapsed) dims.
        std::array<i64, 6> d{}, st{};
        if (!collapse6(c.inputs[0], d, st)) return std::nullopt;
        auto& pl = one("cast", dtype_size(from) == 4 ? "gather_b32" : "gather_b16", {n_out});
        pl.args.add_ptr(c.inputs[0]);
        pl.args.add_ptr(c.output);
        pl.args.add(static_cast<std::uint64_t>(n_out));
        for (std::size_t i = 1; i < 6; ++i) pl.args.add(static_cast<std::uint64_t>(d[i]));
        for (i64 v : st) pl.args.add(v);
        return steps;
      }
      if (!contiguous(c)) return std::nullopt;
      std::string config = from == to ? (dtype_size(from) == 4 ? "copy_b32" : "copy_b16")
                                      : std::string(elem(from)) + "_to_" + elem(to);
      auto& pl = one("cast", config, {n_out});
      pl.args.add_ptr(c.inputs[0]);
      pl.args.add_ptr(c.output);
      pl.args.add(static_cast<std::uint64_t>(n_out));
      return steps;
    }
  }
  return std::nullopt;
}

ptx::Target target_for(int sm) {
  ptx::Target best = ptx::Target::sm_75;
  for (ptx::Target t : ptx::all_targets)
    if (ptx::target_sm(t) <= sm) best = t;
  return best;
}

}  // namespace

CUfunction DeviceKernels::function(const DriverApi& api, std::string_view family, const std::string& config, int sm) {
  const ptx::Target target = target_for(sm);
  const std::string key = std::string(family) + "/" + config + "/" + std::string(ptx::target_name(target));
  auto it = loaded_.find(key);
  if (it != loaded_.end()) return it->second.function;
  const kernels::Generator* gen = kernels::find_generator(family);
  if (!gen) throw Error(ErrorCode::internal, "[cuda] no kernel generator named " + std::string(family));
  Loaded l;
  l.module = load_module(&api, gen->generate(config, target), key);
  const std::string entry = kernels::kernel_name(family, config);
  TRINE_CU(&api, "cuda", cuModuleGetFunction, &l.function, l.module, entry.c_str());
  loaded_.emplace(key, l);
  return l.function;
}

CUdeviceptr DeviceKernels::dot_partials(const DriverApi& api) {
  if (!dot_partials_) {
    // The dot kernel's largest grid: the partials of its biggest launch.
    const std::uint32_t most = kernels::find_generator("dot")->geometry("partial", std::vector<i64>{INT64_MAX / 2}).grid[0];
    TRINE_CU(&api, "dot", cuMemAlloc, &dot_partials_, std::size_t{most} * sizeof(float));
  }
  return dot_partials_;
}

CUdeviceptr DeviceKernels::rope_frequencies(const DriverApi& api, CUstream stream, std::int64_t d, float base) {
  const auto key = std::pair{d, base};
  if (auto it = rope_.find(key); it != rope_.end()) return it->second.device;
  if (rope_.size() >= 64) {
    // Many distinct (D, base): drop the tables once the stream has passed every kernel reading them.
    TRINE_CU(&api, "rope", cuStreamSynchronize, stream);
    for (auto& [k, t] : rope_) api.cuMemFree(t.device);
    rope_.clear();
  }
  Table t;
  t.host.resize(static_cast<std::size_t>(d / 2));
  for (std::int64_t i = 0; i < d / 2; ++i) {
    t.host[static_cast<std::size_t>(i)] =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(d));
  }
  const std::size_t bytes = t.host.size() * sizeof(double);
  TRINE_CU(&api, "rope", cuMemAlloc, &t.device, bytes);
  if (CUresult r = api.cuMemcpyHtoDAsync(t.device, t.host.data(), bytes, stream); r != CUDA_SUCCESS) {
    api.cuMemFree(t.device);
    check_driver(&api, r, "rope", "cuMemcpyHtoDAsync");
  }
  // The map node keeps `host` where the copy reads it until the table is dropped (after a sync).
  return rope_.emplace(key, std::move(t)).first->second.device;
}

void DeviceKernels::release(const DriverApi& api) noexcept {
  for (auto& [key, l] : loaded_) api.cuModuleUnload(l.module);
  loaded_.clear();
  if (dot_partials_) api.cuMemFree(dot_partials_);
  dot_partials_ = 0;
  for (auto& [k, t] : rope_) api.cuMemFree(t.device);
  rope_.clear();
}

std::vector<std::size_t> needs_gather(const detail::OpCall& call, int sm) {
  std::vector<std::size_t> out;
  if (plan(call, sm, Resources{}, false)) return out;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (t.defined() && !t.is_contiguous()) out.push_back(i);
  }
  return out;
}

std::string refusal(const detail::OpCall& call, int sm) {
  (void)sm;
  switch (call.op) {
    case OpKind::attention: {
      const i64 d = call.inputs[0].dim(-1), dv = call.inputs[2].dim(-1);
      if (d > 128 || dv > 128)
        return "the cuda attention kernels take head dims up to 128 (a row per warp in registers), got D " +
               std::to_string(d) + ", Dv " + std::to_string(dv);
      break;
    }
    case OpKind::matmul:
      if (call.output.rank() > 4) return "the cuda matmul kernels take at most 2 batch dims";
      break;
    default: break;
  }
  for (const Tensor& t : call.inputs) {
    std::array<i64, 6> d{}, st{};
    if (t.defined() && !t.is_contiguous() && !collapse6(t, d, st))
      return "a strided input has more than 6 dims that do not merge (the gather kernel's limit)";
  }
  return "no generated kernel serves this call (sizes over 2^32 or a grid over 65535 blocks in y/z)";
}

bool can_launch(const detail::OpCall& call, int sm) {
  if (plan(call, sm, Resources{}, false)) return true;
  // Strided inputs gathered into contiguous temporaries first: each must fit the gather kernel.
  bool strided = false;
  for (const Tensor& t : call.inputs) {
    if (!t.defined() || t.is_contiguous()) continue;
    std::array<i64, 6> d{}, st{};
    if (!collapse6(t, d, st)) return false;
    strided = true;
  }
  return strided && plan(call, sm, Resources{}, true).has_value();
}

// Families whose kernels loop over their elements with a grid-stride loop, so that any grid
// covers the work: their grid is capped at what the device keeps resident (8 CTAs of 256 threads
// per SM, 2048 threads, the most any target holds).
bool grid_stride_family(std::string_view family) {
  return family == "unary" || family == "binary" || family == "bias_act" || family == "cast" || family == "rope";
}

void launch(const DriverApi& api, CUstream stream, const DeviceShape& device, const detail::OpCall& call,
            DeviceKernels& kernels) {
  const int sm = device.sm;
  const char* name = op_info(call.op).name;
  auto steps = plan(call, sm, Resources{&api, stream, &kernels}, false);
  if (!steps) throw Error(ErrorCode::unsupported, std::string("[") + name + "] no cuda kernel for this call");
  if (steps->zero_output) {
    TRINE_CU(&api, name, cuMemsetD8Async, Args::device_ptr(call.output), 0,
             static_cast<std::size_t>(call.output.numel()) * dtype_size(call.output.dtype()), stream);
  }
  for (auto& p : steps->launches) {
    const kernels::Generator* gen = kernels::find_generator(p.family);
    kernels::Launch g = gen->geometry(p.config, p.sizes);
    if (grid_stride_family(p.family)) {
      g.grid[0] = std::min<std::uint32_t>(g.grid[0], static_cast<std::uint32_t>(std::max(1, device.multiprocessors) * 8));
    }
    CUfunction f = kernels.function(api, p.family, p.config, sm);
    auto params = p.args.pointers();
    TRINE_CU(&api, name, cuLaunchKernel, f, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
             g.dynamic_shared_bytes, stream, params.data(), nullptr);
  }
}

}  // namespace trine::cuda
