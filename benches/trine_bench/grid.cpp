// trine-bench's sweep: sizes per op family, and the transformer shapes users run.
#include "benches/trine_bench/grid.hpp"

#include <cstdio>

namespace trine_bench {
namespace {

using trine::OpKind;
using trine::Shape;
using trine::Tensor;

std::string count_label(std::int64_t n) {
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

// Host tensors (no device: the dispatcher places them), deterministic values.
std::function<std::vector<Tensor>()> host(std::vector<Shape> shapes, float low = -1.0f, float high = 1.0f) {
  return [shapes = std::move(shapes), low, high] {
    std::vector<Tensor> out;
    std::uint64_t seed = 1;
    for (const auto& s : shapes) {
      if (s.rank() == 0) {
        out.emplace_back();  // an optional input left out
      } else {
        out.push_back(Tensor::random(s, seed++, low, high));
      }
    }
    return out;
  };
}

trine::OpParams unary_params(OpKind op) {
  switch (op) {
    case OpKind::leaky_relu: return trine::ActParams{0.01f, 0.0f};
    case OpKind::elu: return trine::ActParams{1.0f, 0.0f};
    case OpKind::clip: return trine::ActParams{-0.5f, 0.5f};
    case OpKind::scale: return trine::ScaleParams{2.0f, 1.0f};
    case OpKind::copy: return trine::NoParams{};
    case OpKind::cast: return trine::CastParams{trine::DType::f16};
    default: return trine::ActParams{};
  }
}

void add_op(std::vector<Case>& out, OpKind op, bool quick) {
  auto push = [&](std::string size, std::vector<Shape> shapes, trine::OpParams params, bool compute = false) {
    out.push_back({op, std::move(size), host(std::move(shapes)), params, compute});
  };
  const std::vector<std::int64_t> counts =
      quick ? std::vector<std::int64_t>{1024, 1 << 18} : std::vector<std::int64_t>{1024, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
      for (auto n : counts) push(count_label(n), {{n}, {n}}, trine::NoParams{});
      return;
    case OpKind::dot:
      for (auto n : counts) push(count_label(n), {{n}, {n}}, trine::NoParams{});
      return;
    case OpKind::bias_act:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{1, 64} : std::vector<std::int64_t>{1, 16, 256, 2048})
        push(std::to_string(rows) + "x4096", {{rows, 4096}, {4096}}, trine::BiasActParams{trine::Activation::gelu});
      return;
    case OpKind::softmax:
    case OpKind::log_softmax:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{1, 256} : std::vector<std::int64_t>{1, 64, 1024, 4096})
        push(std::to_string(rows) + "x4096", {{rows, 4096}}, trine::AxisParams{-1});
      return;
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{1, 256} : std::vector<std::int64_t>{1, 64, 1024, 4096})
        push(std::to_string(rows) + "x4096", {{rows, 4096}}, trine::ReduceParams{-1, false});
      return;
    case OpKind::layernorm:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{1, 128} : std::vector<std::int64_t>{1, 16, 512, 2048})
        push(std::to_string(rows) + "x4096", {{rows, 4096}, {4096}, {4096}}, trine::NormParams{});
      return;
    case OpKind::rmsnorm:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{1, 128} : std::vector<std::int64_t>{1, 16, 512, 2048})
        push(std::to_string(rows) + "x4096", {{rows, 4096}, {4096}}, trine::NormParams{});
      return;
    case OpKind::gemv:
      push("256x256", {{256, 256}, {256}}, trine::GemvParams{});
      push("4096x4096 (decode)", {{4096, 4096}, {4096}}, trine::GemvParams{});
      if (!quick) {
        push("1024x1024", {{1024, 1024}, {1024}}, trine::GemvParams{});
        push("11008x4096 (decode, up)", {{11008, 4096}, {4096}}, trine::GemvParams{});
        push("4096x11008 (decode, down)", {{4096, 11008}, {11008}}, trine::GemvParams{});
      }
      return;
    case OpKind::matmul:
      for (std::int64_t n : quick ? std::vector<std::int64_t>{32, 256} : std::vector<std::int64_t>{32, 128, 256, 512, 1024})
        push(std::to_string(n) + "^3", {{n, n}, {n, n}}, trine::MatmulParams{}, true);
      if (!quick) push("128x4096x4096 (prefill)", {{128, 4096}, {4096, 4096}}, trine::MatmulParams{}, true);
      return;
    case OpKind::conv2d: {
      const trine::Conv2dParams same{1, 1, 1, 1};
      push("C16 32x32 3x3", {{1, 16, 32, 32}, {16, 16, 3, 3}, {}}, same, true);
      if (!quick) push("C64 56x56 3x3", {{1, 64, 56, 56}, {64, 64, 3, 3}, {}}, same, true);
      return;
    }
    case OpKind::attention: {
      const trine::AttentionParams causal{true, 0.0f};
      push("8 heads L=128 D=64 causal", {{1, 8, 128, 64}, {1, 8, 128, 64}, {1, 8, 128, 64}}, causal, true);
      if (!quick) {
        push("8 heads L=2048 D=64 causal", {{1, 8, 2048, 64}, {1, 8, 2048, 64}, {1, 8, 2048, 64}}, causal, true);
        push("8 heads L=2048 D=128 causal", {{1, 8, 2048, 128}, {1, 8, 2048, 128}, {1, 8, 2048, 128}}, causal, true);
      }
      return;
    }
    case OpKind::rope:
      for (std::int64_t rows : quick ? std::vector<std::int64_t>{16, 1024} : std::vector<std::int64_t>{16, 1024, 8192})
        push(std::to_string(rows) + "x128", {{rows, 128}}, trine::RopeParams{});
      return;
    default:  // the element-wise ops of one input: activations, scale, clip, copy, cast
      if (trine::op_info(op).max_inputs != 1) {
        std::fprintf(stderr, "trine-bench: no sizes for op %s yet (benches/trine_bench/grid.cpp)\n", trine::op_info(op).name);
        return;
      }
      for (auto n : counts) push(count_label(n), {{n}}, unary_params(op));
      return;
  }
}

}  // namespace

bool op_from_name(const std::string& name, trine::OpKind& out) {
  for (std::size_t k = 0; k < trine::TRINE_OP_COUNT; ++k) {
    const auto op = static_cast<OpKind>(k);
    if (name == trine::op_info(op).name) {
      out = op;
      return true;
    }
  }
  return false;
}

std::vector<Case> make_grid(const std::vector<trine::OpKind>& ops, bool quick) {
  std::vector<Case> out;
  if (ops.empty()) {
    for (std::size_t k = 0; k < trine::TRINE_OP_COUNT; ++k) add_op(out, static_cast<OpKind>(k), quick);
  } else {
    for (auto op : ops) add_op(out, op, quick);
  }
  return out;
}

}  // namespace trine_bench
