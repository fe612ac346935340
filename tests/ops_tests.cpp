// Differential tests: every op of the table against the reference over a grid of shapes, strided
// views, broadcasts and dtypes, on the device under test (TRINE_TEST_DEVICE, default cpu). ctest
// runs this suite once per CPU ISA (TRINE_CPU_ISA), single-threaded, with a fresh seed, and once
// per further device named in TRINE_TEST_DEVICES. Error bounds: tests/reference/bounds.hpp.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/harness.hpp"
#include "trine/debug.hpp"

using namespace trine;
using trine::test::check_op;
using trine::test::make_input;
using trine::test::View;

namespace {

const std::vector<std::int64_t> k_sizes = {1, 2, 3, 7, 31, 32, 33, 64, 127, 256, 1000};

std::string shape_label(const std::vector<Tensor>& in, const std::string& extra = "") {
  std::string s;
  for (const auto& t : in) s += (t.defined() ? t.str() : std::string("none")) + " ";
  return s + extra;
}

std::uint64_t seq() {
  static std::uint64_t n = 0;
  return ++n;
}

}  // namespace

TEST_CASE("matmul over a shape grid, batches, transposes and dtypes", "[ops][matmul]") {
  auto run = [](const Shape& as, const Shape& bs, MatmulParams p, View va = View::contiguous,
                View vb = View::contiguous, DType ta = DType::f32, DType tb = DType::f32) {
    std::vector<Tensor> in{make_input(as, seq(), va, ta), make_input(bs, seq(), vb, tb)};
    check_op(OpKind::matmul, in, p, shape_label(in, std::string(p.trans_a ? "ta " : "") + (p.trans_b ? "tb" : "")));
  };
  for (auto s : k_sizes) {
    if (s <= 256) run({s, s}, {s, s}, {});
    run({s, 33}, {33, 7}, {});
    run({1, s}, {s, 31}, {});
    run({3, 1}, {1, s}, {});
  }
  run({3, 1000}, {1000, 7}, {});
  run({1000, 3}, {3, 5}, {});
  run({129, 257}, {257, 65}, {});
  run({384, 512}, {512, 320}, {});  // large: several cache blocks in every dimension
  // More rows than any ISA's packed A block (mc <= 1536, mc_l3 about 1020 at kc 512): B packed a
  // whole block at a time, over several A blocks; more columns than any B block (nc_l2 <= 1024,
  // nc <= 1365): several, the last one partial. Fewer rows than one A block: B packed one
  // micro-panel at a time.
  run({1543, 24}, {24, 1500}, {});
  run({7, 19}, {19, 2900}, {});
  // More rows than one A block in L2 (mc: 504-510 rows with these machines' 2 MiB L2, fewer with a
  // smaller L2), with several kc passes accumulating into C: wide (AVX-512 keeps each A panel in
  // L1 while a B block streams past, over two B blocks) and narrow (each B panel serves an A
  // block's panels, over two or more A blocks, one B block packed once a pass)
  run({530, 700}, {700, 600}, {});
  run({1100, 530}, {530, 200}, {});
  // At least 512^3 multiply-adds with AVX-512: 12-row tiles (gemm_tall_rows), with a partial last
  // tile, several A blocks, row-major f32 A through the 8x8 transposes (and their scalar k tail),
  // column-major f16 A and row-major bf16 A widened while packing
  run({1031, 131}, {131, 1000}, {});
  run({700, 203}, {700, 997}, {true, false}, View::contiguous, View::strided, DType::f16, DType::f32);
  run({203, 700}, {700, 997}, {}, View::contiguous, View::contiguous, DType::bf16, DType::f32);
  // Vulkan's matmul_rows.comp (row-contiguous f32, N a multiple of 4): each row count it picks (1, 2,
  // 4, 8, 16 rows per workgroup) with M past it, one and two vec4 columns per invocation with N past
  // a workgroup's columns, and broadcast batches
  run({1, 300}, {300, 64}, {});
  run({3, 19}, {19, 12}, {});
  run({37, 29}, {29, 1028}, {});
  run({2, 1, 21, 19}, {1, 3, 19, 8}, {});
  // transpose flags and transposed / strided views
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Shape as = ta ? Shape{33, 31} : Shape{31, 33};
      Shape bs = tb ? Shape{7, 33} : Shape{33, 7};
      run(as, bs, {ta, tb});
      run(as, bs, {ta, tb}, View::transposed, View::strided);
    }
  }
  run({64, 96}, {96, 80}, {}, View::strided, View::transposed);
  // batched with broadcast batch dims
  run({2, 3, 17, 9}, {9, 5}, {});
  run({2, 1, 7, 9}, {1, 4, 9, 6}, {});
  run({4, 31, 33}, {4, 33, 32}, {false, false}, View::transposed, View::contiguous);
  run({5, 33, 31}, {5, 7, 33}, {true, true});
  // f16 / bf16 inputs, f32 result
  run({31, 64}, {64, 33}, {}, View::contiguous, View::contiguous, DType::f16, DType::f16);
  run({31, 64}, {64, 33}, {}, View::contiguous, View::transposed, DType::bf16, DType::bf16);
  run({2, 7, 65}, {65, 9}, {}, View::contiguous, View::contiguous, DType::f16, DType::f32);
  run({128, 256}, {256, 96}, {}, View::contiguous, View::contiguous, DType::bf16, DType::f16);
  // 16-bit operands widened to f32 while packing: row-major A past one 256-k chunk, column-major A
  run({19, 300}, {300, 40}, {}, View::contiguous, View::contiguous, DType::f16, DType::bf16);
  run({64, 31}, {64, 33}, {true, false}, View::contiguous, View::contiguous, DType::f16, DType::f16);
  // bf16 x bf16 (the cpu's AVX512-BF16 kernel where the CPU has it): odd K, partial tiles of 12 x 32,
  // transposes, strided views, broadcast batches, two KC passes (K > 1024) and two A blocks
  run({7, 17}, {17, 33}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  run({1, 129}, {129, 2}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  run({33, 64}, {300, 64}, {false, true}, View::strided, View::contiguous, DType::bf16, DType::bf16);
  run({65, 31}, {65, 40}, {true, false}, View::contiguous, View::transposed, DType::bf16, DType::bf16);
  run({2, 3, 13, 7}, {7, 29}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  run({40, 1100}, {1100, 70}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  run({300, 64}, {64, 45}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  // AMX (32 x 32 blocks, k in steps of 32): two threads, three KC passes, partial blocks both ways
  run({129, 1500}, {1500, 97}, {}, View::contiguous, View::contiguous, DType::bf16, DType::bf16);
  // K == 0: an empty sum is zero
  run({3, 0}, {0, 4}, {});
  run({0, 5}, {5, 4}, {});
}

TEST_CASE("gemv and dot", "[ops][gemv][dot]") {
  for (auto m : k_sizes) {
    for (auto k : {std::int64_t{1}, std::int64_t{7}, std::int64_t{33}, std::int64_t{1000}}) {
      for (bool trans : {false, true}) {
        Shape as = trans ? Shape{k, m} : Shape{m, k};
        std::vector<Tensor> in{make_input(as, seq()), make_input({k}, seq())};
        check_op(OpKind::gemv, in, GemvParams{trans}, shape_label(in, trans ? "trans" : ""));
      }
    }
  }
  {
    std::vector<Tensor> in{make_input({127, 255}, seq(), View::transposed), make_input({255}, seq(), View::strided)};
    check_op(OpKind::gemv, in, GemvParams{false}, shape_label(in, "transposed view"));
  }
  {
    std::vector<Tensor> in{make_input({2048, 4096}, seq()), make_input({4096}, seq())};
    check_op(OpKind::gemv, in, GemvParams{false}, shape_label(in, "large"));
  }
  // few long rows: K is split over the threads in blocks (row-major, column-major, strided A)
  for (View v : {View::contiguous, View::transposed, View::strided}) {
    for (bool trans : {false, true}) {
      Shape as = trans ? Shape{20011, 5} : Shape{5, 20011};
      std::vector<Tensor> in{make_input(as, seq(), v), make_input({20011}, seq())};
      check_op(OpKind::gemv, in, GemvParams{trans},
               shape_label(in, std::string("few long rows ") + trine::test::view_name(v)));
    }
  }
  for (auto n : k_sizes) {
    std::vector<Tensor> in{make_input({n}, seq()), make_input({n}, seq())};
    check_op(OpKind::dot, in, NoParams{}, shape_label(in));
  }
  {
    std::vector<Tensor> in{make_input({1000}, seq(), View::strided), make_input({1000}, seq())};
    check_op(OpKind::dot, in, NoParams{}, shape_label(in, "strided"));
    std::vector<Tensor> big{make_input({1 << 20}, seq()), make_input({1 << 20}, seq())};
    check_op(OpKind::dot, big, NoParams{}, shape_label(big, "large"));
  }
}

TEST_CASE("add, sub, mul, div with broadcasting", "[ops][binary]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{1}, {1}},
                                                       {{7}, {7}},
                                                       {{1000}, {1000}},
                                                       {{31, 33}, {31, 33}},
                                                       {{31, 33}, {33}},
                                                       {{33}, {31, 33}},
                                                       {{31, 1}, {1, 33}},
                                                       {{127, 64}, {127, 1}},
                                                       {{}, {64}},
                                                       {{3, 7}, {}},
                                                       {{2, 1, 3, 5}, {4, 1, 5}},
                                                       {{1, 1, 1}, {2, 3, 4}},
                                                       {{256, 1000}, {1000}},
                                                       {{1000, 1000}, {1000, 1000}},
                                                       // rows long enough for non-temporal stores
                                                       // (ctest's *_streamed), each starting unaligned
                                                       {{5, 2053}, {2053}},
                                                       {{4099}, {}},
                                                       {{}, {4099}}};
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) {
    for (const auto& [sa, sb] : shapes) {
      // div: keep the divisor away from 0 so the comparison measures arithmetic, not blow-ups
      std::vector<Tensor> in{
          make_input(sa, seq()),
          op == OpKind::div ? make_input(sb, seq(), View::contiguous, DType::f32, 0.5f, 2.0f) : make_input(sb, seq())};
      check_op(op, in, NoParams{}, shape_label(in));
    }
    std::vector<Tensor> in{make_input({33, 31}, seq(), View::transposed),
                           make_input({31}, seq(), View::strided, DType::f32, 0.5f, 2.0f)};
    check_op(op, in, NoParams{}, shape_label(in, "views"));
    // transposed views large enough for the tiled path, with partial tiles in both dims
    const float lo = op == OpKind::div ? 0.5f : -1.0f, hi = op == OpKind::div ? 2.0f : 1.0f;
    const std::vector<std::pair<std::pair<Shape, View>, std::pair<Shape, View>>> tiled = {
        {{{130, 67}, View::transposed}, {{130, 67}, View::contiguous}},
        {{{130, 67}, View::contiguous}, {{130, 67}, View::transposed}},
        {{{70, 129}, View::transposed}, {{70, 129}, View::transposed}},
        {{{3, 70, 45}, View::transposed}, {{45}, View::contiguous}},
        {{{130, 67}, View::transposed}, {{130, 1}, View::contiguous}},
    };
    for (const auto& [x, y] : tiled) {
      std::vector<Tensor> t{make_input(x.first, seq(), x.second),
                            make_input(y.first, seq(), y.second, DType::f32, lo, hi)};
      check_op(op, t, NoParams{}, shape_label(t, "transposed, tiled"));
    }
    std::vector<Tensor> empty{make_input({0, 3}, seq()), make_input({3}, seq())};
    check_op(op, empty, NoParams{}, shape_label(empty, "zero-size"));
  }
}

TEST_CASE("scale and the activations, element-wise", "[ops][unary]") {
  struct Act {
    OpKind op;
    ActParams p;
  };
  const std::vector<Act> acts = {{OpKind::relu, {}},       {OpKind::leaky_relu, {0.01f, 0}},
                                 {OpKind::elu, {1.0f, 0}}, {OpKind::elu, {0.5f, 0}},
                                 {OpKind::sigmoid, {}},    {OpKind::tanh, {}},
                                 {OpKind::silu, {}},       {OpKind::gelu, {}},
                                 {OpKind::gelu_tanh, {}},  {OpKind::clip, {-0.5f, 0.75f}}};
  std::vector<Shape> shapes;
  for (auto n : k_sizes) shapes.push_back({n});
  shapes.push_back({31, 33});
  shapes.push_back({3, 1 << 20});  // large
  for (const auto& a : acts) {
    for (const auto& s : shapes) {
      std::vector<Tensor> in{make_input(s, seq(), View::contiguous, DType::f32, -6.0f, 6.0f)};
      check_op(a.op, in, a.p, shape_label(in));
    }
    std::vector<Tensor> wide{make_input({1000}, seq(), View::contiguous, DType::f32, -40.0f, 40.0f)};
    check_op(a.op, wide, a.p, shape_label(wide, "range +-40"));
    std::vector<Tensor> view{make_input({33, 31}, seq(), View::transposed, DType::f32, -6.0f, 6.0f)};
    check_op(a.op, view, a.p, shape_label(view, "transposed view"));
    std::vector<Tensor> empty{make_input({0}, seq())};
    check_op(a.op, empty, a.p, shape_label(empty, "zero-size"));
  }
  for (const auto& s : shapes) {
    std::vector<Tensor> in{make_input(s, seq())};
    check_op(OpKind::scale, in, ScaleParams{-2.5f, 0.25f}, shape_label(in));
  }
  std::vector<Tensor> view{make_input({64, 65}, seq(), View::strided)};
  check_op(OpKind::scale, view, ScaleParams{3.0f, 0.0f}, shape_label(view, "strided"));
}

TEST_CASE("bias_act with every activation", "[ops][bias_act]") {
  const Activation acts[] = {Activation::identity,  Activation::relu, Activation::leaky_relu, Activation::elu,
                             Activation::sigmoid,   Activation::tanh, Activation::silu,       Activation::gelu,
                             Activation::gelu_tanh, Activation::clip};
  for (Activation act : acts) {
    BiasActParams p{act, act == Activation::clip ? -0.5f : 0.1f, act == Activation::clip ? 0.5f : 0.0f};
    for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 3}, {31, 33}, {64, 1000}, {1000, 127}, {3, 2053}}) {
      std::vector<Tensor> in{make_input({r, c}, seq(), View::contiguous, DType::f32, -4.0f, 4.0f),
                             make_input({c}, seq())};
      check_op(OpKind::bias_act, in, p, shape_label(in, activation_name(act)));
    }
    std::vector<Tensor> in{make_input({2, 5, 33}, seq(), View::strided), make_input({33}, seq(), View::strided)};
    check_op(OpKind::bias_act, in, p, shape_label(in, std::string(activation_name(act)) + " strided"));
  }
}

TEST_CASE("softmax and log_softmax over any axis", "[ops][softmax]") {
  for (OpKind op : {OpKind::softmax, OpKind::log_softmax}) {
    for (auto n : k_sizes) {
      std::vector<Tensor> in{make_input({3, n}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
      check_op(op, in, AxisParams{-1}, shape_label(in));
      std::vector<Tensor> col{make_input({n, 5}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
      check_op(op, col, AxisParams{0}, shape_label(col, "axis 0"));
    }
    std::vector<Tensor> mid{make_input({4, 33, 7}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
    check_op(op, mid, AxisParams{1}, shape_label(mid, "axis 1"));
    std::vector<Tensor> view{make_input({31, 64}, seq(), View::transposed, DType::f32, -10.0f, 10.0f)};
    check_op(op, view, AxisParams{-1}, shape_label(view, "transposed view"));
    // many rows (Vulkan's softmax_rows.comp, an invocation per row): the last axis, a middle axis
    // with inner > 1, and a transposed view
    std::vector<Tensor> rows{make_input({300, 33}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
    check_op(op, rows, AxisParams{-1}, shape_label(rows, "many rows"));
    std::vector<Tensor> rows_mid{make_input({3, 41, 131}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
    check_op(op, rows_mid, AxisParams{1}, shape_label(rows_mid, "axis 1, many rows"));
    std::vector<Tensor> rows_view{make_input({17, 260}, seq(), View::transposed, DType::f32, -10.0f, 10.0f)};
    check_op(op, rows_view, AxisParams{-1}, shape_label(rows_view, "transposed view, many rows"));
    // rows of one L2-resident pass (the cpu's cached path; streamed, through a scratch row), and rows
    // split into segments
    std::vector<Tensor> mid_rows{make_input({5, 4099}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
    check_op(op, mid_rows, AxisParams{-1}, shape_label(mid_rows, "rows of 4099"));
    std::vector<Tensor> split_rows{make_input({2, 70001}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
    check_op(op, split_rows, AxisParams{-1}, shape_label(split_rows, "rows of 70001"));
    std::vector<Tensor> big{make_input({16, 32000}, seq(), View::contiguous, DType::f32, -20.0f, 20.0f)};
    check_op(op, big, AxisParams{-1}, shape_label(big, "large"));
    // rows longer than one block of any kernel's scratch: the sum must be carried across blocks
    std::vector<Tensor> longest{make_input({3, 32768}, seq(), View::contiguous, DType::f32, -20.0f, 20.0f)};
    check_op(op, longest, AxisParams{-1}, shape_label(longest, "rows of 32768"));
    // a non-last axis whose inner size is above the vector width, with a remainder: the strided
    // path that runs vectors across the inner dim
    for (std::int64_t inner : {37, 130}) {
      std::vector<Tensor> in{make_input({3, 50, inner}, seq(), View::contiguous, DType::f32, -10.0f, 10.0f)};
      check_op(op, in, AxisParams{1}, shape_label(in, "axis 1, inner " + std::to_string(inner)));
      std::vector<Tensor> first{make_input({33, 2, inner}, seq(), View::strided, DType::f32, -10.0f, 10.0f)};
      check_op(op, first, AxisParams{0}, shape_label(first, "axis 0, strided, inner " + std::to_string(inner)));
    }
  }
}

TEST_CASE("layernorm and rmsnorm", "[ops][norm]") {
  for (auto n : k_sizes) {
    for (std::int64_t rows : {1, 5}) {
      std::vector<Tensor> x{make_input({rows, n}, seq(), View::contiguous, DType::f32, -3.0f, 5.0f)};
      Tensor g = make_input({n}, seq()), b = make_input({n}, seq());
      check_op(OpKind::layernorm, {x[0], g, b}, NormParams{1e-5f}, shape_label(x, "gamma beta"));
      check_op(OpKind::layernorm, {x[0]}, NormParams{1e-5f}, shape_label(x, "plain"));
      check_op(OpKind::layernorm, {x[0], g}, NormParams{1e-3f}, shape_label(x, "gamma"));
      check_op(OpKind::rmsnorm, {x[0], g}, NormParams{1e-6f}, shape_label(x, "gamma"));
      check_op(OpKind::rmsnorm, {x[0]}, NormParams{1e-6f}, shape_label(x, "plain"));
    }
  }
  {  // rows long enough for non-temporal stores (ctest's streamed_*), each starting unaligned
    Tensor x = make_input({3, 2053}, seq(), View::contiguous, DType::f32, -3.0f, 5.0f);
    Tensor g = make_input({2053}, seq()), b = make_input({2053}, seq());
    check_op(OpKind::layernorm, {x, g, b}, NormParams{1e-5f}, shape_label({x}, "gamma beta, rows of 2053"));
    check_op(OpKind::rmsnorm, {x, g}, NormParams{1e-6f}, shape_label({x}, "gamma, rows of 2053"));
  }
  Tensor x = make_input({2, 3, 4096}, seq(), View::strided);
  Tensor g = make_input({4096}, seq());
  check_op(OpKind::layernorm, {x, g, Tensor()}, NormParams{}, "strided large, gamma only");
  check_op(OpKind::rmsnorm, {x, g}, NormParams{}, "strided large");
}

TEST_CASE("conv2d: stride, padding, dilation, groups, bias", "[ops][conv2d]") {
  struct C {
    std::int64_t n, c, h, w, k, r, s;
    Conv2dParams p;
    bool bias;
  };
  const std::vector<C> cases = {
      {1, 1, 1, 1, 1, 1, 1, {}, false},
      {1, 1, 5, 5, 1, 3, 3, {}, true},
      {2, 3, 7, 7, 4, 3, 3, {1, 1, 1, 1}, true},
      {1, 3, 13, 11, 5, 3, 3, {2, 1, 1, 1}, false},
      {1, 4, 31, 33, 8, 5, 5, {{2, 1}, {2, 0}, 1, 1}, true},
      {2, 4, 17, 17, 6, 3, 3, {1, 2, 2, 2}, true},
      {1, 8, 32, 32, 8, 3, 3, {1, 1, 1, 8}, true},  // depthwise
      {1, 6, 9, 9, 4, 1, 1, {}, false},             // 1x1
      {1, 6, 9, 9, 4, 1, 1, {2, 0, 1, 1}, true},    // strided 1x1
      {1, 2, 3, 3, 3, 3, 3, {1, 0, 1, 1}, true},    // kernel equal to the input
      // Winograd F(4x4) (forced) pads a 2-column row into phases of which the last has no input
      // column: it must be zeros, not what the 9 x 9 case before it left in the same scratch
      {1, 3, 9, 9, 2, 3, 3, {1, 1, 1, 1}, true},
      {1, 3, 2, 2, 2, 3, 3, {1, 1, 1, 1}, true},    // kernel larger than the input, fits with padding
      {1, 3, 64, 64, 16, 7, 7, {2, 3, 1, 1}, true},
      {2, 32, 56, 56, 64, 3, 3, {1, 1, 1, 1}, true},  // large
      {1, 4, 21, 45, 6, 5, 5, {{1, 2}, {2, 2}, 1, 2}, true},  // column stride 2 (vector even-lane gather), groups
      {1, 4, 21, 45, 2, 5, 5, {{1, 2}, {2, 2}, 1, 2}, true},  // the same with 1 output channel per group: im2col on every ISA
      {1, 3, 17, 29, 4, 3, 3, {3, 1, 1, 1}, false},           // stride 3
      // stride 1 with R*S > 1: the cpu's direct kernel (8 or 4 output channels x 3 vectors of pixels)
      {1, 5, 20, 23, 8, 3, 3, {1, 1, 1, 1}, true},
      {2, 3, 18, 17, 12, 5, 5, {1, 2, 1, 1}, false},          // 12 channels: a partial block of 8 with AVX-512
      {1, 4, 19, 21, 8, 3, 3, {1, 2, 2, 1}, true},            // dilation 2
      {1, 6, 16, 33, 10, 3, 3, {1, {0, 1}, 1, 2}, true},      // groups 2 (5 channels each: partial blocks), padding 0 x 1
      {1, 3, 9, 16, 4, 3, 5, {1, {1, 2}, 1, 1}, false},       // 3 x 5 kernel
      // stride_w 2: the direct kernel over even/odd column phases, a row at a time; rows of 35,
      // 20 and 60 outputs end in 3, 2 and 3 + 1 vectors with AVX-512 (fewer lanes: other splits)
      {1, 3, 45, 70, 8, 7, 7, {2, 3, 1, 1}, true},            // the 7x7 stride-2 stem, small
      {2, 5, 11, 40, 12, 3, 3, {2, 1, 1, 1}, false},
      {1, 4, 9, 120, 8, 3, 3, {2, 1, 1, 1}, true},
      {1, 4, 15, 50, 6, 3, 3, {2, 1, {1, 2}, 1}, true},       // dilation 2 along rows: every tap in phase 0
      {1, 6, 20, 41, 10, 3, 4, {{3, 2}, {0, 2}, {2, 3}, 2}, true},  // stride 3 x 2, dilation 2 x 3, groups
      // column stride 2 or more with 32 or more output channels a group: the cpu's direct_channels
      // kernel on every ISA (blocks of 8, 16 or 32 channels as the lanes, 6 or 8 pixels a tile);
      // partial channel blocks, partial tiles
      {1, 3, 45, 70, 40, 7, 7, {2, 3, 1, 1}, true},           // the stem: 35 outputs a row
      {2, 8, 19, 24, 36, 3, 3, {{1, 2}, 1, 1, 1}, false},     // stride 1 x 2, batch 2
      {1, 6, 20, 41, 64, 3, 4, {{3, 2}, {0, 2}, {2, 3}, 2}, true},  // stride 3 x 2, dilation 2 x 3, groups 2
      {1, 4, 17, 40, 33, 5, 5, {3, 2, 1, 1}, false},          // stride 3: 14 outputs a row
      // depthwise (groups == channels): the cpu's direct kernel; widths around the vector widths
      {1, 2, 5, 5, 2, 3, 3, {1, 1, 1, 2}, true},
      {2, 7, 9, 17, 7, 3, 3, {1, 1, 1, 7}, false},
      {1, 13, 8, 33, 13, 3, 3, {2, 1, 1, 13}, true},         // stride 2, odd width
      {1, 5, 16, 31, 5, 5, 5, {{1, 2}, {2, 1}, 1, 5}, true},  // stride 1 x 2, asymmetric padding
      {1, 4, 15, 16, 8, 3, 3, {1, 2, 2, 4}, true},           // dilation 2, channel multiplier 2
      {1, 3, 20, 65, 3, 7, 7, {2, 3, 1, 3}, false},          // 7x7 stride 2
      {1, 6, 1, 1, 6, 1, 1, {1, 0, 1, 6}, true},
      {1, 64, 28, 28, 64, 3, 3, {1, 1, 1, 64}, true},  // large
      // 3x3 stride 1: the cpu's Winograd paths by its shape rule (checked below), partial tiles at
      // the bottom and right edges; TRINE_CPU_WINOGRAD=2 / 4 (ctest) forces them on every 3x3
      // stride-1 case here, the small ones included
      {2, 32, 30, 29, 32, 3, 3, {1, 1, 1, 1}, true},          // F(4x4): 30 x 29 outputs, tiles of 2 and 1 at the edges
      {1, 32, 33, 29, 40, 3, 3, {1, {0, 1}, 1, 1}, false},    // F(4x4): 31 x 29, padding 0 x 1
      {1, 64, 28, 30, 64, 3, 3, {1, 1, 1, 2}, true},          // F(4x4): groups 2 (32 channels each)
      {1, 32, 29, 31, 40, 3, 3, {1, 0, 1, 1}, false},         // F(2x2): 27 x 29, no padding
      {2, 48, 14, 15, 48, 3, 3, {1, 1, 1, 3}, true},          // F(2x2): groups 3 (16 channels each), 14 x 15
      {1, 32, 12, 72, 32, 3, 3, {1, 1, 1, 1}, true},          // F(4x4): rows of 72 = 64 (AVX-512's in-register phases) + 8
      {1, 16, 8, 50, 16, 3, 3, {1, 1, 1, 1}, false},          // F(2x2): rows of 50 = 32 (in registers) + 18
      {1, 8, 3, 40, 8, 3, 3, {1, 0, 1, 1}, true},             // one output row (forced Winograd only)
      {2, 5, 4, 6, 7, 3, 3, {1, 0, 1, 1}, false},             // 2 x 4 outputs (forced Winograd only)
  };
  for (const auto& c : cases) {
    std::vector<Tensor> in{make_input({c.n, c.c, c.h, c.w}, seq()),
                           make_input({c.k, c.c / c.p.groups, c.r, c.s}, seq()),
                           c.bias ? make_input({c.k}, seq()) : Tensor()};
    std::string extra = "stride " + std::to_string(c.p.stride.h) + "," + std::to_string(c.p.stride.w) + " pad " +
                        std::to_string(c.p.padding.h) + "," + std::to_string(c.p.padding.w) + " dil " +
                        std::to_string(c.p.dilation.h) + " groups " + std::to_string(c.p.groups);
    check_op(OpKind::conv2d, in, c.p, shape_label(in, extra));
  }
  // The shape rule sends the cases above to the Winograd paths (unless TRINE_CPU_WINOGRAD overrides it).
  if (test::test_device().kind == DeviceKind::cpu && !std::getenv("TRINE_CPU_WINOGRAD")) {
    CHECK(debug::cpu_conv2d_path({2, 32, 30, 29}, {32, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
    CHECK(debug::cpu_conv2d_path({1, 32, 33, 29}, {40, 32, 3, 3}, Conv2dParams{1, {0, 1}, 1, 1}) == "winograd_f4");
    CHECK(debug::cpu_conv2d_path({1, 64, 28, 30}, {64, 32, 3, 3}, Conv2dParams{1, 1, 1, 2}) == "winograd_f4");
    CHECK(debug::cpu_conv2d_path({1, 32, 29, 31}, {40, 32, 3, 3}, Conv2dParams{1, 0, 1, 1}) == "winograd_f2");
    CHECK(debug::cpu_conv2d_path({2, 48, 14, 15}, {48, 16, 3, 3}, Conv2dParams{1, 1, 1, 3}) == "winograd_f2");
    CHECK(debug::cpu_conv2d_path({1, 32, 12, 72}, {32, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
    CHECK(debug::cpu_conv2d_path({1, 16, 8, 50}, {16, 16, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f2");
    CHECK(debug::cpu_conv2d_path({2, 32, 56, 56}, {64, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
    CHECK(debug::cpu_conv2d_path({1, 5, 20, 23}, {8, 5, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "direct");
    // stride 2 with 6 output channels, fewer than any ISA's channel block: the pixels-as-lanes kernel
    CHECK(debug::cpu_conv2d_path({1, 3, 45, 70}, {6, 3, 7, 7}, Conv2dParams{2, 3, 1, 1}) == "direct");
    CHECK(debug::cpu_conv2d_path({1, 3, 45, 70}, {40, 3, 7, 7}, Conv2dParams{2, 3, 1, 1}) == "direct_channels");
    CHECK(debug::cpu_conv2d_path({1, 6, 20, 41}, {64, 3, 3, 4}, Conv2dParams{{3, 2}, {0, 2}, {2, 3}, 2}) ==
          "direct_channels");
  }
  std::vector<Tensor> view{make_input({1, 3, 9, 11}, seq(), View::transposed),
                           make_input({4, 3, 3, 3}, seq(), View::strided)};
  check_op(OpKind::conv2d, view, Conv2dParams{1, 1, 1, 1}, shape_label(view, "views"));
}

TEST_CASE("attention, causal and not", "[ops][attention]") {
  struct A {
    Shape lead;
    std::int64_t lq, lk, d, dv;
    bool causal;
    float scale;
    bool cpu_only = false;
  };
  const std::vector<A> cases = {
      {{1}, 1, 1, 1, 1, false, 0},     {{1}, 1, 1, 1, 1, true, 0},      {{2, 3}, 7, 7, 8, 8, false, 0},
      {{2, 3}, 7, 7, 8, 8, true, 0},   {{1, 2}, 5, 13, 16, 8, true, 0}, {{1, 2}, 5, 13, 16, 8, false, 0.3f},
      {{3}, 31, 33, 64, 64, false, 0}, {{3}, 31, 33, 64, 64, true, 0},  {{1, 4}, 127, 127, 64, 32, true, 0},
      {{2}, 1, 1000, 64, 64, true, 0},
      // Dv over 64 (Vulkan: two blocks of 64 value columns, the second partial; 70 keys: a partial
      // second tile of 64 keys)
      {{2}, 9, 70, 16, 100, true, 0},
      // Several of the cpu's 128-key tiles per query block, causal and not, with the blocks shared
      // among threads. The other devices have no path these reach that 127 x 127 and the decode
      // shapes miss (Vulkan: tiles of 64 keys; cuda: 32-key tiles), and they were 60% of the
      // GPU-assisted validation run on lavapipe and of the emulated run.
      {{1, 8}, 256, 256, 64, 64, true, 0, true}, {{1}, 1000, 1000, 32, 32, false, 0, true},
      // decode with few query blocks and many keys: the cpu splits the keys (flash-decoding)
      {{2}, 1, 4099, 64, 64, false, 0}, {{1, 3}, 3, 2500, 40, 24, true, 0}};
  const bool on_cpu = trine::test::test_device().kind == DeviceKind::cpu;
  for (const auto& a : cases) {
    if (a.cpu_only && !on_cpu) {
      std::printf("attention %lld x %lld, D %lld: cpu-only case (multi-tile cpu path), not run on %s\n",
                  static_cast<long long>(a.lq), static_cast<long long>(a.lk), static_cast<long long>(a.d),
                  trine::test::test_device().str().c_str());
      continue;
    }
    Shape qs = a.lead, ks = a.lead, vs = a.lead;
    qs.push_back(a.lq), qs.push_back(a.d);
    ks.push_back(a.lk), ks.push_back(a.d);
    vs.push_back(a.lk), vs.push_back(a.dv);
    std::vector<Tensor> in{make_input(qs, seq(), View::contiguous, DType::f32, -2, 2),
                           make_input(ks, seq(), View::contiguous, DType::f32, -2, 2), make_input(vs, seq())};
    check_op(OpKind::attention, in, AttentionParams{a.causal, a.scale}, shape_label(in, a.causal ? "causal" : ""));
  }
  std::vector<Tensor> view{make_input({2, 9, 16}, seq(), View::strided),
                           make_input({2, 11, 16}, seq(), View::transposed),
                           make_input({2, 11, 8}, seq(), View::strided)};
  check_op(OpKind::attention, view, AttentionParams{true, 0}, shape_label(view, "views"));
}

TEST_CASE("rope", "[ops][rope]") {
  for (auto l : {std::int64_t{1}, std::int64_t{3}, std::int64_t{31}, std::int64_t{256}}) {
    for (auto d : {std::int64_t{2}, std::int64_t{8}, std::int64_t{62}, std::int64_t{128}}) {
      std::vector<Tensor> in{make_input({2, l, d}, seq())};
      check_op(OpKind::rope, in, RopeParams{10000.0f, 0}, shape_label(in));
      check_op(OpKind::rope, in, RopeParams{500000.0f, 17}, shape_label(in, "base 5e5 offset 17"));
    }
  }
  std::vector<Tensor> view{make_input({2, 4, 33, 64}, seq(), View::strided)};
  check_op(OpKind::rope, view, RopeParams{10000.0f, 1000}, shape_label(view, "strided, offset 1000"));
  std::vector<Tensor> big{make_input({8, 1000, 128}, seq())};
  check_op(OpKind::rope, big, RopeParams{}, shape_label(big, "large"));
  // More outer rows than an item takes (16), and positions that end in a partial block (8192
  // floats of cos/sin rows: 64 positions of D = 128, or of 126, padded to 128); D = 126 also leaves
  // a partial vector a row, which keeps the output's stores normal.
  std::vector<Tensor> blocks{make_input({37, 70, 128}, seq())};
  check_op(OpKind::rope, blocks, RopeParams{10000.0f, 5}, shape_label(blocks, "position blocks"));
  std::vector<Tensor> blocks_pad{make_input({19, 45, 126}, seq())};
  check_op(OpKind::rope, blocks_pad, RopeParams{10000.0f, 5}, shape_label(blocks_pad, "position blocks"));
}

TEST_CASE("sum, mean, max over an axis", "[ops][reduce]") {
  for (OpKind op : {OpKind::sum, OpKind::mean, OpKind::max}) {
    for (auto n : k_sizes) {
      for (int axis : {0, 1, -1}) {
        std::vector<Tensor> in{make_input({3, n, 5}, seq())};
        check_op(op, in, ReduceParams{axis, false}, shape_label(in, "axis " + std::to_string(axis)));
      }
      std::vector<Tensor> in{make_input({n}, seq())};
      check_op(op, in, ReduceParams{0, true}, shape_label(in, "keepdims"));
    }
    std::vector<Tensor> view{make_input({33, 64}, seq(), View::transposed)};
    check_op(op, view, ReduceParams{-1, true}, shape_label(view, "transposed view"));
    std::vector<Tensor> big{make_input({64, 100000}, seq())};
    check_op(op, big, ReduceParams{-1, false}, shape_label(big, "large"));
    // the segmented strided reduce: a middle axis with a large inner size, contiguous and through
    // strided and transposed views
    for (View v : {View::contiguous, View::strided, View::transposed}) {
      std::vector<Tensor> mid{make_input({4, 33, 1000}, seq(), v)};
      check_op(op, mid, ReduceParams{1, false}, shape_label(mid, std::string("axis 1 ") + trine::test::view_name(v)));
      std::vector<Tensor> lead{make_input({257, 130}, seq(), v)};
      check_op(op, lead, ReduceParams{0, true}, shape_label(lead, std::string("axis 0 ") + trine::test::view_name(v)));
    }
    // the cpu's column chunks: two of 2048 and 4 columns left over, over two segments of rows
    // (256 and 44, one block of partials and part of one)
    std::vector<Tensor> cols{make_input({300, 4100}, seq())};
    check_op(op, cols, ReduceParams{0, false}, shape_label(cols, "axis 0, column chunks"));
  }
}

TEST_CASE("copy and cast", "[ops][copy][cast]") {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (View v : {View::contiguous, View::strided, View::transposed}) {
      // {9, 17}, {2, 37, 70} and {130, 67} take the tiled transpose with edges in both dims
      for (Shape s : {Shape{1}, Shape{7, 33}, Shape{2, 3, 127, 5}, Shape{0, 4}, Shape{9, 17}, Shape{2, 37, 70},
                      Shape{130, 67}}) {
        std::vector<Tensor> in{make_input(s, seq(), v, t)};
        check_op(OpKind::copy, in, NoParams{}, shape_label(in, trine::test::view_name(v)));
        for (DType to : {DType::f32, DType::f16, DType::bf16}) {
          check_op(OpKind::cast, in, CastParams{to}, shape_label(in, std::string("to ") + dtype_name(to)));
        }
      }
    }
  }
  std::vector<Tensor> wide{make_input({1000}, seq(), View::contiguous, DType::f32, -1e5f, 1e5f)};
  check_op(OpKind::cast, wide, CastParams{DType::f16}, "to f16 with overflow to inf");
  check_op(OpKind::cast, wide, CastParams{DType::bf16}, "to bf16");
  std::vector<Tensor> big{make_input({1 << 22}, seq(), View::strided)};
  check_op(OpKind::copy, big, NoParams{}, "large strided");
}
