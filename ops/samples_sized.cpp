// The samples of the calibration (ladder, sized), the tour (sized) and trine-bench (bench), and
// the tensors of any sample (make_input): see samples.hpp. One switch per use, no default.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "ops/samples.hpp"
#include "ops/samples_build.hpp"
#include "trine/error.hpp"

namespace trine::samples {
namespace {

using namespace build;

// ---- bench rows ----

std::string count_label(i64 n) {
  char buf[32];
  if (n >= (1 << 20) && n % (1 << 20) == 0) {
    std::snprintf(buf, sizeof(buf), "n=%lldM", static_cast<long long>(n >> 20));
  } else if (n >= 1024 && n % 1024 == 0) {
    std::snprintf(buf, sizeof(buf), "n=%lldK", static_cast<long long>(n >> 10));
  } else {
    std::snprintf(buf, sizeof(buf), "n=%lld", static_cast<long long>(n));
  }
  return buf;
}

}  // namespace

std::vector<std::int64_t> ladder(OpKind op, bool quick) {
  switch (op) {
    case OpKind::matmul:
      return quick ? std::vector<i64>{8, 24, 64, 160, 384} : std::vector<i64>{8, 24, 64, 128, 256, 512, 1024};
    case OpKind::conv2d: return quick ? std::vector<i64>{4, 16, 48} : std::vector<i64>{4, 12, 32, 64, 112};
    case OpKind::attention: return quick ? std::vector<i64>{8, 64, 256} : std::vector<i64>{8, 32, 128, 512, 1024};
    case OpKind::gemv: return quick ? std::vector<i64>{16, 128, 1024} : std::vector<i64>{16, 128, 512, 2048, 4096};
    default:  // the memory-bound ops, by elements
      return quick ? std::vector<i64>{64, 1024, 16384, 131072, 1 << 20}
                   : std::vector<i64>{64, 512, 4096, 32768, 262144, 1 << 20, 1 << 22, 1 << 24};
  }
}

Sample sized(OpKind op, std::int64_t n) {
  // Row ops on rows of 4096 (a transformer's hidden size, as trine-bench's grid sweeps them): the
  // cost model knows sizes, not shapes, and calibrated on rows of 1024 it predicted lavapipe's
  // reductions on rows of 4096 2-3x too slow (a workgroup per row does more per row there).
  const i64 cols = std::min<i64>(n, 4096), rows = std::max<i64>(1, n / 4096);
  switch (op) {
    case OpKind::matmul: return call({in({n, n}), in({n, n})}, MatmulParams{});
    case OpKind::gemv: return call({in({n, n}), in({n})}, GemvParams{});
    case OpKind::dot: return call({in({n}), in({n})}, NoParams{});
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: return call({in({n}), in({n})}, NoParams{});
    case OpKind::div: return call({in({n}), in({n}, 0.5f, 2.0f)}, NoParams{});
    case OpKind::scale: return call({in({n})}, ScaleParams{2.0f, 1.0f});
    case OpKind::bias_act: return call({in({rows, cols}, -4, 4), in({cols})}, BiasActParams{Activation::gelu});
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::elu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh: return call({in({n}, -6, 6)}, act_params(op));
    case OpKind::clip: return call({in({n}, -6, 6)}, ActParams{-0.5f, 0.5f});
    case OpKind::softmax:
    case OpKind::log_softmax: return call({in({rows, cols}, -10, 10)}, AxisParams{-1});
    case OpKind::layernorm: return call({in({rows, cols}), in({cols}), in({cols})}, NormParams{});
    case OpKind::rmsnorm: return call({in({rows, cols}), in({cols})}, NormParams{});
    case OpKind::conv2d: return call({in({1, 16, n, n}), in({16, 16, 3, 3}), none()}, Conv2dParams{1, 1, 1, 1});
    case OpKind::attention: {
      const Shape s{1, 4, n, 64};
      return call({in(s, -2, 2), in(s, -2, 2), in(s)}, AttentionParams{true, 0.0f});
    }
    case OpKind::rope: return call({in({std::max<i64>(1, n / 64), 64})}, RopeParams{});
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: return call({in({rows, cols})}, ReduceParams{-1, false});
    case OpKind::copy: return call({in({n})}, NoParams{});
    case OpKind::cast: return call({in({n})}, CastParams{DType::f16});
    case OpKind::minimum:
    case OpKind::maximum: return call({in({n}), in({n})}, NoParams{});
    case OpKind::where: return call({ints({n}, 0, 2), in({n}), in({n})}, NoParams{});
    case OpKind::exp:
    case OpKind::abs:
    case OpKind::neg: return call({in({n}, -6, 6)}, ActParams{});
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt: return call({in({n}, 0.01f, 100)}, ActParams{});
    case OpKind::pow: return call({in({n}, 0, 10)}, ActParams{1.5f, 0});
    case OpKind::argmax: return call({in({rows, cols})}, ReduceParams{-1, false});
    // rows of 4096 (an embedding table's width), as many as n fills
    case OpKind::gather: return call({in({1024, 4096}), ints({std::max<i64>(1, n / 4096)}, 0, 1024)}, NoParams{});
    // a KV cache of n elements grown by one position of 128 per head (8 heads)
    case OpKind::concat: {
      const i64 len = std::max<i64>(1, n / 1024);
      return call({in({8, len, 128}), in({8, 1, 128})}, AxisParams{1});
    }
  }
  return {};
}

namespace {

std::vector<BenchRow> bench_f32(OpKind op, bool quick) {
  std::vector<BenchRow> out;
  auto push = [&](std::string size, std::vector<Input> inputs, OpParams params) {
    out.push_back({std::move(size), call(std::move(inputs), params)});
  };
  auto pick = [&](std::vector<i64> q, std::vector<i64> full) { return quick ? q : full; };
  const std::vector<i64> counts = pick({1024, 1 << 18}, {1024, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24});
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::dot:
    case OpKind::minimum:
    case OpKind::maximum:
    case OpKind::where:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::abs:
    case OpKind::neg:
    case OpKind::pow:
      for (auto n : counts) push(count_label(n), sized(op, n).inputs, sized(op, n).params);
      return out;
    case OpKind::argmax:
      for (i64 rows : pick({1, 256}, {1, 64, 1024}))
        push(std::to_string(rows) + "x32000 (logits)", {in({rows, 32000})}, ReduceParams{-1, false});
      return out;
    case OpKind::gather:
      for (i64 n : pick({1, 128}, {1, 32, 128, 2048}))
        push(std::to_string(n) + " rows of 32000x4096", {in({32000, 4096}), ints({n}, 0, 32000)}, NoParams{});
      return out;
    case OpKind::concat:
      for (i64 len : pick({128, 2048}, {128, 1024, 4096}))
        push("32x" + std::to_string(len) + "x128 + 1 (KV append)", {in({32, len, 128}), in({32, 1, 128})},
             AxisParams{1});
      return out;
    case OpKind::bias_act:
      for (i64 rows : pick({1, 64}, {1, 16, 256, 2048}))
        push(std::to_string(rows) + "x4096", {in({rows, 4096}), in({4096})}, BiasActParams{Activation::gelu});
      return out;
    case OpKind::softmax:
    case OpKind::log_softmax:
      for (i64 rows : pick({1, 256}, {1, 64, 1024, 4096}))
        push(std::to_string(rows) + "x4096", {in({rows, 4096})}, AxisParams{-1});
      return out;
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max:
      for (i64 rows : pick({1, 256}, {1, 64, 1024, 4096}))
        push(std::to_string(rows) + "x4096", {in({rows, 4096})}, ReduceParams{-1, false});
      return out;
    case OpKind::layernorm:
      for (i64 rows : pick({1, 128}, {1, 16, 512, 2048}))
        push(std::to_string(rows) + "x4096", {in({rows, 4096}), in({4096}), in({4096})}, NormParams{});
      return out;
    case OpKind::rmsnorm:
      for (i64 rows : pick({1, 128}, {1, 16, 512, 2048}))
        push(std::to_string(rows) + "x4096", {in({rows, 4096}), in({4096})}, NormParams{});
      return out;
    case OpKind::gemv:
      push("256x256", {in({256, 256}), in({256})}, GemvParams{});
      push("4096x4096 (decode)", {in({4096, 4096}), in({4096})}, GemvParams{});
      if (!quick) {
        push("1024x1024", {in({1024, 1024}), in({1024})}, GemvParams{});
        push("11008x4096 (decode, up)", {in({11008, 4096}), in({4096})}, GemvParams{});
        push("4096x11008 (decode, down)", {in({4096, 11008}), in({11008})}, GemvParams{});
      }
      // Quantized weights (GGUF's [out, in]), dequantized in the kernel: GB/s counts their bytes.
      for (DType q : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k}) {
        const std::string name = dtype_name(q);
        push("4096x4096 " + name + " (decode)", {qin({4096, 4096}, q), in({4096})}, GemvParams{});
        if (!quick) push("11008x4096 " + name + " (decode, up)", {qin({11008, 4096}, q), in({4096})}, GemvParams{});
      }
      return out;
    case OpKind::matmul:
      for (i64 n : pick({32, 256}, {32, 128, 256, 512, 1024}))
        push(std::to_string(n) + "^3", {in({n, n}), in({n, n})}, MatmulParams{});
      if (!quick) push("128x4096x4096 (prefill)", {in({128, 4096}), in({4096, 4096})}, MatmulParams{});
      // x [128, 4096] against quantized weights [4096 out, 4096 in] (a @ w^T, GGUF's orientation).
      if (!quick) {
        for (DType q : {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k})
          push(std::string("128x4096x4096 ") + dtype_name(q) + " (prefill)", {in({128, 4096}), qin({4096, 4096}, q)},
               MatmulParams{});
      }
      return out;
    case OpKind::conv2d: {
      const Conv2dParams same{1, 1, 1, 1};
      push("C16 32x32 3x3", {in({1, 16, 32, 32}), in({16, 16, 3, 3}), none()}, same);
      if (!quick) push("C64 56x56 3x3", {in({1, 64, 56, 56}), in({64, 64, 3, 3}), none()}, same);
      return out;
    }
    case OpKind::attention: {
      const AttentionParams causal{true, 0.0f};
      auto heads = [&](i64 l, i64 d) {
        return std::vector<Input>{in({1, 8, l, d}), in({1, 8, l, d}), in({1, 8, l, d})};
      };
      push("8 heads L=128 D=64 causal", heads(128, 64), causal);
      if (!quick) {
        push("8 heads L=2048 D=64 causal", heads(2048, 64), causal);
        push("8 heads L=2048 D=128 causal", heads(2048, 128), causal);
      }
      return out;
    }
    case OpKind::rope:
      for (i64 rows : pick({16, 1024}, {16, 1024, 8192}))
        push(std::to_string(rows) + "x128", {in({rows, 128})}, RopeParams{});
      return out;
    case OpKind::scale:
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
    case OpKind::cast:
      for (auto n : counts) push(count_label(n), {in({n})}, sized(op, n).params);
      return out;
  }
  return out;
}

}  // namespace

// The f32 rows, then for a memory-bound op whose floating inputs may be 16-bit (the copy family
// aside) its largest row again with them f16, and bf16: the same bytes halved, which its speed
// against the f32 row shows (issue 32's >= 1.8x past the last-level cache).
std::vector<BenchRow> bench(OpKind op, bool quick) {
  std::vector<BenchRow> out = bench_f32(op, quick);
  const OpInfo& info = op_info(op);
  if (out.empty() || !info.takes_16bit || info.bound != OpBound::memory || info.family == OpFamily::copy) return out;
  const BenchRow largest = out.back();
  for (DType t : {DType::f16, DType::bf16}) {
    BenchRow row = largest;
    row.size += std::string(" ") + dtype_name(t);
    for (std::size_t i = 0; i < row.sample.inputs.size(); ++i) {
      Input& x = row.sample.inputs[i];
      if (x.dtype == DType::f32 && !(op == OpKind::where && i == 0)) x.dtype = t;
    }
    out.push_back(std::move(row));
  }
  return out;
}

Tensor make_input(const Input& input, std::uint64_t seed, std::optional<Device> device) {
  if (input.absent) return {};
  if (dtype_is_quantized(input.dtype)) {
    // Quantized weights: blocks of seeded random bytes (every bit pattern of the weights, scales and
    // mins), each block's f16 scale(s) then set to a seeded value whose products with values in
    // [low, high) stay small; made on the host, contiguous.
    if (input.layout != Layout::contiguous)
      throw Error(ErrorCode::invalid_argument, "[samples] quantized weights are made contiguous only");
    const DType q = input.dtype;
    const std::size_t bb = dtype_block_bytes(q);
    std::vector<std::uint8_t> bytes(dtype_bytes(q, input.shape.numel()));
    std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    auto next = [&] {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      return s;
    };
    for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      const std::uint64_t v = next();
      std::memcpy(bytes.data() + i, &v, 8);
    }
    const float unit = 1.0f / (64.0f * std::max(1.0f, std::max(std::fabs(input.low), std::fabs(input.high))));
    for (std::size_t b = 0; b < bytes.size(); b += bb) {
      const std::uint16_t d = f32_to_f16(unit * static_cast<float>(next() % 1000) / 1000.0f);
      const std::uint16_t dmin = f32_to_f16(unit * static_cast<float>(next() % 1000) / 1000.0f);
      std::memcpy(bytes.data() + b + (q == DType::q6_k ? 208 : 0), &d, 2);
      if (q == DType::q4_k || q == DType::q5_k) std::memcpy(bytes.data() + b + 2, &dmin, 2);
    }
    return Tensor::from_blocks(bytes, input.shape, q, device);
  }
  if (input.step > 0) {  // integers made on the host, scaled by step (contiguous only)
    if (input.layout != Layout::contiguous)
      throw Error(ErrorCode::invalid_argument, "[samples] values in steps are made contiguous only");
    Input ints = input;
    ints.step = 0;
    ints.dtype = DType::i32;
    ints.low = std::ceil(input.low / input.step);
    ints.high = std::ceil(input.high / input.step);
    const std::vector<std::int32_t> k = make_input(ints, seed, std::nullopt).to_vector<std::int32_t>();
    std::vector<float> v(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) v[i] = static_cast<float>(k[i]) * input.step;
    return Tensor::from(v, input.shape, DType::f32, device);
  }
  const Shape& shape = input.shape;
  const int r = shape.rank();
  if (input.layout == Layout::strided && r >= 1) {
    Shape wide = shape;
    wide[r - 1] = 2 * shape[r - 1];
    const Tensor w = Tensor::random(wide, seed, input.low, input.high, input.dtype, device);
    return w.slice(-1, 0, wide[r - 1], 2);
  }
  if (input.layout == Layout::transposed && r >= 2) {
    Shape swapped = shape;
    std::swap(swapped[r - 1], swapped[r - 2]);
    return Tensor::random(swapped, seed, input.low, input.high, input.dtype, device).transpose(-2, -1);
  }
  return Tensor::random(shape, seed, input.low, input.high, input.dtype, device);
}

std::vector<Tensor> make_inputs(const Sample& sample, std::uint64_t seed, std::optional<Device> device) {
  std::vector<Tensor> out;
  out.reserve(sample.inputs.size());
  for (std::size_t i = 0; i < sample.inputs.size(); ++i) out.push_back(make_input(sample.inputs[i], seed + i, device));
  return out;
}

}  // namespace trine::samples
