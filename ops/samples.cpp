// The conformance samples of every op (see samples.hpp): each family's cases, and one switch with
// no default, so a new op names its cases here or the build fails. The other uses' samples (the
// calibration's ladder, the tour's size, trine-bench's rows) are in samples_sized.cpp.
#include "ops/samples.hpp"

#include "ops/samples_build.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace trine::samples {
namespace {

using namespace build;

// ---- conformance, by family (the products', matmul, gemv and dot: samples_products.cpp) ----

void binary_cases(OpKind op, std::vector<Sample>& out) {
  // div: keep the divisor away from 0 so the comparison measures arithmetic, not blow-ups
  const float lo = op == OpKind::div ? 0.5f : -1.0f, hi = op == OpKind::div ? 2.0f : 1.0f;
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
                                                       // broadcast both ways over 6 dims that do not
                                                       // merge: more than the cuda kernel's 4 a launch
                                                       {{2, 1, 3, 1, 5, 1}, {1, 4, 1, 2, 1, 6}},
                                                       {{256, 1000}, {1000}},
                                                       {{1000, 1000}, {1000, 1000}},
                                                       // rows long enough for non-temporal stores
                                                       // (ctest's *_streamed), each starting unaligned
                                                       {{5, 2053}, {2053}},
                                                       {{4099}, {}},
                                                       {{}, {4099}}};
  for (const auto& [sa, sb] : shapes) out.push_back({{in(sa), in(sb, lo, hi)}, NoParams{}, ""});
  out.push_back({{view({33, 31}, L::transposed), view({31}, L::strided, lo, hi)}, NoParams{}, "views"});
  // transposed views large enough for the tiled path, with partial tiles in both dims
  const std::vector<std::pair<Input, Input>> tiled = {
      {view({130, 67}, L::transposed), view({130, 67}, L::contiguous, lo, hi)},
      {view({130, 67}, L::contiguous), view({130, 67}, L::transposed, lo, hi)},
      {view({70, 129}, L::transposed), view({70, 129}, L::transposed, lo, hi)},
      {view({3, 70, 45}, L::transposed), view({45}, L::contiguous, lo, hi)},
      {view({130, 67}, L::transposed), view({130, 1}, L::contiguous, lo, hi)},
  };
  for (const auto& [x, y] : tiled) out.push_back({{x, y}, NoParams{}, "transposed, tiled"});
  out.push_back({{in({0, 3}), in({3})}, NoParams{}, "zero-size"});
}

std::vector<Shape> unary_shapes() {
  std::vector<Shape> shapes;
  for (auto n : k_sizes) shapes.push_back({n});
  shapes.push_back({31, 33});
  shapes.push_back({3, 1 << 20});  // large
  return shapes;
}

void activation_cases(OpKind op, const ActParams& p, std::vector<Sample>& out) {
  for (const auto& s : unary_shapes()) out.push_back({{in(s, -6, 6)}, p, ""});
  out.push_back({{in({1000}, -40, 40)}, p, "range +-40"});
  // far tails: normal results of e^x-sized factors (sigmoid(-72.8) = 2.4e-32, silu(-91.2) = -2.3e-38)
  // and the subnormal ones past them
  out.push_back({{in({4096}, -100, 100)}, p, "range +-100"});
  out.push_back({{view({33, 31}, L::transposed, -6, 6)}, p, "transposed view"});
  out.push_back({{in({0})}, p, "zero-size"});
  (void)op;
}

void scale_cases(std::vector<Sample>& out) {
  for (const auto& s : unary_shapes()) out.push_back({{in(s)}, ScaleParams{-2.5f, 0.25f}, ""});
  out.push_back({{view({64, 65}, L::strided)}, ScaleParams{3.0f, 0.0f}, "strided"});
}

void bias_act_cases(std::vector<Sample>& out) {
  for (int a = 0; a < TRINE_ACTIVATION_COUNT; ++a) {
    const auto act = static_cast<Activation>(a);
    const BiasActParams p{act, act == Activation::clip ? -0.5f : 0.1f, act == Activation::clip ? 0.5f : 0.0f};
    for (auto [r, c] : {std::pair<i64, i64>{1, 1}, {7, 3}, {31, 33}, {64, 1000}, {1000, 127}, {3, 2053}})
      out.push_back({{in({r, c}, -4, 4), in({c})}, p, activation_name(act)});
    out.push_back(
        {{view({2, 5, 33}, L::strided), view({33}, L::strided)}, p, std::string(activation_name(act)) + " strided"});
  }
}

void softmax_cases(std::vector<Sample>& out) {
  auto add = [&](Input x, int axis, std::string note) { out.push_back({{std::move(x)}, AxisParams{axis}, note}); };
  for (auto n : k_sizes) {
    add(in({3, n}, -10, 10), -1, "");
    add(in({n, 5}, -10, 10), 0, "axis 0");
  }
  add(in({4, 33, 7}, -10, 10), 1, "axis 1");
  // far tails: rows like [0, -80, -87, -90], whose e^-87 (1.6e-38) is normal and e^-90 is not
  add(in({7, 33}, -95, 0), -1, "far tails");
  add(in({40, 5}, -95, 0), 0, "far tails, axis 0");
  // rows of integers from -90 to 0: x - max exact, e^-87 and e^-88 among the entries
  add(steps({64, 4}, -90, 1, 1), -1, "integer rows down to -90");
  add(view({31, 64}, L::transposed, -10, 10), -1, "transposed view");
  // many rows (Vulkan's softmax_rows.comp, an invocation per row): the last axis, a middle axis
  // with inner > 1, and a transposed view
  add(in({300, 33}, -10, 10), -1, "many rows");
  add(in({3, 41, 131}, -10, 10), 1, "axis 1, many rows");
  add(view({17, 260}, L::transposed, -10, 10), -1, "transposed view, many rows");
  // rows of one L2-resident pass (the cpu's cached path; streamed, through a scratch row), and rows
  // split into segments
  add(in({5, 4099}, -10, 10), -1, "rows of 4099");
  add(in({2, 70001}, -10, 10), -1, "rows of 70001");
  add(in({16, 32000}, -20, 20), -1, "large");
  // rows longer than one block of any kernel's scratch: the sum must be carried across blocks
  add(in({3, 32768}, -20, 20), -1, "rows of 32768");
  // a non-last axis whose inner size is above the vector width, with a remainder: the strided
  // path that runs vectors across the inner dim
  for (i64 inner : {37, 130}) {
    add(in({3, 50, inner}, -10, 10), 1, "axis 1, inner " + std::to_string(inner));
    add(view({33, 2, inner}, L::strided, -10, 10), 0, "axis 0, strided, inner " + std::to_string(inner));
  }
}

// Rows whose squares leave the f32 range, which the norms redo on the row scaled by a power of two:
// x^2 past FLT_MAX (from 1.8e19), a large offset, and a sum of x past it (3e37 over 1000); tiny rows
// whose squares underflow (subnormal below 1e-19, zero below 1e-23), with the smallest eps (1.4e-45,
// subnormal) so that it does not swamp their variance, or a normal one that does; rows of one
// element (constant rows: 0 times the scaled row's 1 / sqrt(eps s^2), which is past FLT_MAX).
struct ExtremeRows {
  float low, high, eps;
  const char* note;
};
std::vector<ExtremeRows> extreme_rows() {
  return {{-1e19f, 1e19f, 1e-5f, "huge rows, 1e19"},
          {-4e19f, 4e19f, 1e-5f, "huge rows, 4e19"},
          {2e25f, 4e25f, 1e-5f, "huge rows about 3e25"},
          {1e37f, 3e37f, 1e-6f, "huge rows whose sum overflows"},
          {-1e-30f, 1e-30f, 1.4e-45f, "tiny rows, 1e-30, eps 1.4e-45"},
          {-3e-21f, 3e-21f, 1.4e-45f, "tiny rows, 3e-21, eps 1.4e-45"},
          {4e-22f, 6e-22f, 1.4e-45f, "tiny rows about 5e-22, eps 1.4e-45"},
          {-1e-30f, 1e-30f, 1e-5f, "tiny rows, 1e-30, eps 1e-5"}};
}

void layernorm_cases(std::vector<Sample>& out) {
  for (auto n : k_sizes) {
    for (i64 rows : {1, 5}) {
      const Input x = in({rows, n}, -3, 5);
      out.push_back({{x, in({n}), in({n})}, NormParams{1e-5f}, "gamma beta"});
      out.push_back({{x}, NormParams{1e-5f}, "plain"});
      out.push_back({{x, in({n})}, NormParams{1e-3f}, "gamma"});
    }
  }
  // rows long enough for non-temporal stores (ctest's streamed_*), each starting unaligned
  out.push_back({{in({3, 2053}, -3, 5), in({2053}), in({2053})}, NormParams{1e-5f}, "gamma beta, rows of 2053"});
  for (const ExtremeRows& e : extreme_rows())
    for (i64 n : {1, 7, 64, 1000})
      out.push_back({{in({3, n}, e.low, e.high), in({n}), in({n})}, NormParams{e.eps}, e.note});
  out.push_back({{view({2, 3, 4096}, L::strided), in({4096}), none()}, NormParams{}, "strided large, gamma only"});
}

void rmsnorm_cases(std::vector<Sample>& out) {
  for (auto n : k_sizes) {
    for (i64 rows : {1, 5}) {
      const Input x = in({rows, n}, -3, 5);
      out.push_back({{x, in({n})}, NormParams{1e-6f}, "gamma"});
      out.push_back({{x}, NormParams{1e-6f}, "plain"});
    }
  }
  out.push_back({{in({3, 2053}, -3, 5), in({2053})}, NormParams{1e-6f}, "gamma, rows of 2053"});
  for (const ExtremeRows& e : extreme_rows())
    for (i64 n : {1, 7, 64, 1000}) out.push_back({{in({3, n}, e.low, e.high), in({n})}, NormParams{e.eps}, e.note});
  out.push_back({{view({2, 3, 4096}, L::strided), in({4096})}, NormParams{}, "strided large"});
}

void conv2d_cases(std::vector<Sample>& out) {
  struct C {
    i64 n, c, h, w, k, r, s;
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
      {1, 3, 2, 2, 2, 3, 3, {1, 1, 1, 1}, true},  // kernel larger than the input, fits with padding
      {1, 3, 64, 64, 16, 7, 7, {2, 3, 1, 1}, true},
      {2, 32, 56, 56, 64, 3, 3, {1, 1, 1, 1}, true},          // large
      {1, 4, 21, 45, 6, 5, 5, {{1, 2}, {2, 2}, 1, 2}, true},  // column stride 2 (vector even-lane gather), groups
      {1, 4, 21, 45, 2, 5, 5, {{1, 2}, {2, 2}, 1, 2}, true},  // 1 output channel per group: im2col on every ISA
      {1, 3, 17, 29, 4, 3, 3, {3, 1, 1, 1}, false},           // stride 3
      // stride 1 with R*S > 1: the cpu's direct kernel (8 or 4 output channels x 3 vectors of pixels)
      {1, 5, 20, 23, 8, 3, 3, {1, 1, 1, 1}, true},
      {2, 3, 18, 17, 12, 5, 5, {1, 2, 1, 1}, false},      // 12 channels: a partial block of 8 with AVX-512
      {1, 4, 19, 21, 8, 3, 3, {1, 2, 2, 1}, true},        // dilation 2
      {1, 6, 16, 33, 10, 3, 3, {1, {0, 1}, 1, 2}, true},  // groups 2 (5 channels each: partial blocks), padding 0 x 1
      {1, 3, 9, 16, 4, 3, 5, {1, {1, 2}, 1, 1}, false},   // 3 x 5 kernel
      // stride_w 2: the direct kernel over even/odd column phases, a row at a time; rows of 35,
      // 20 and 60 outputs end in 3, 2 and 3 + 1 vectors with AVX-512 (fewer lanes: other splits)
      {1, 3, 45, 70, 8, 7, 7, {2, 3, 1, 1}, true},  // the 7x7 stride-2 stem, small
      {2, 5, 11, 40, 12, 3, 3, {2, 1, 1, 1}, false},
      {1, 4, 9, 120, 8, 3, 3, {2, 1, 1, 1}, true},
      {1, 4, 15, 50, 6, 3, 3, {2, 1, {1, 2}, 1}, true},             // dilation 2 along rows: every tap in phase 0
      {1, 6, 20, 41, 10, 3, 4, {{3, 2}, {0, 2}, {2, 3}, 2}, true},  // stride 3 x 2, dilation 2 x 3, groups
      // column stride 2 or more with 32 or more output channels a group: the cpu's direct_channels
      // kernel on every ISA (blocks of 8, 16 or 32 channels as the lanes, 6 or 8 pixels a tile);
      // partial channel blocks, partial tiles
      {1, 3, 45, 70, 40, 7, 7, {2, 3, 1, 1}, true},                 // the stem: 35 outputs a row
      {2, 8, 19, 24, 36, 3, 3, {{1, 2}, 1, 1, 1}, false},           // stride 1 x 2, batch 2
      {1, 6, 20, 41, 64, 3, 4, {{3, 2}, {0, 2}, {2, 3}, 2}, true},  // stride 3 x 2, dilation 2 x 3, groups 2
      {1, 4, 17, 40, 33, 5, 5, {3, 2, 1, 1}, false},                // stride 3: 14 outputs a row
      // depthwise (groups == channels): the cpu's direct kernel; widths around the vector widths
      {1, 2, 5, 5, 2, 3, 3, {1, 1, 1, 2}, true},
      {2, 7, 9, 17, 7, 3, 3, {1, 1, 1, 7}, false},
      {1, 13, 8, 33, 13, 3, 3, {2, 1, 1, 13}, true},          // stride 2, odd width
      {1, 5, 16, 31, 5, 5, 5, {{1, 2}, {2, 1}, 1, 5}, true},  // stride 1 x 2, asymmetric padding
      {1, 4, 15, 16, 8, 3, 3, {1, 2, 2, 4}, true},            // dilation 2, channel multiplier 2
      {1, 3, 20, 65, 3, 7, 7, {2, 3, 1, 3}, false},           // 7x7 stride 2
      {1, 6, 1, 1, 6, 1, 1, {1, 0, 1, 6}, true},
      {1, 64, 28, 28, 64, 3, 3, {1, 1, 1, 64}, true},  // large
      // 3x3 stride 1: the cpu's Winograd paths by its shape rule (tests/ops_tests.cpp checks which),
      // partial tiles at the bottom and right edges; TRINE_CPU_WINOGRAD=2 / 4 (ctest) forces them
      // on every 3x3 stride-1 case here, the small ones included
      {2, 32, 30, 29, 32, 3, 3, {1, 1, 1, 1}, true},        // F(4x4): 30 x 29 outputs, tiles of 2 and 1 at the edges
      {1, 32, 33, 29, 40, 3, 3, {1, {0, 1}, 1, 1}, false},  // F(4x4): 31 x 29, padding 0 x 1
      {1, 64, 28, 30, 64, 3, 3, {1, 1, 1, 2}, true},        // F(4x4): groups 2 (32 channels each)
      {1, 32, 29, 31, 40, 3, 3, {1, 0, 1, 1}, false},       // F(2x2): 27 x 29, no padding
      {2, 48, 14, 15, 48, 3, 3, {1, 1, 1, 3}, true},        // F(2x2): groups 3 (16 channels each), 14 x 15
      {1, 32, 12, 72, 32, 3, 3, {1, 1, 1, 1}, true},  // F(4x4): rows of 72 = 64 (AVX-512's in-register phases) + 8
      {1, 16, 8, 50, 16, 3, 3, {1, 1, 1, 1}, false},  // F(2x2): rows of 50 = 32 (in registers) + 18
      {1, 8, 3, 40, 8, 3, 3, {1, 0, 1, 1}, true},     // one output row (forced Winograd only)
      {2, 5, 4, 6, 7, 3, 3, {1, 0, 1, 1}, false},     // 2 x 4 outputs (forced Winograd only)
  };
  for (const auto& c : cases) {
    const std::string note = "stride " + std::to_string(c.p.stride.h) + "," + std::to_string(c.p.stride.w) + " pad " +
                             std::to_string(c.p.padding.h) + "," + std::to_string(c.p.padding.w) + " dil " +
                             std::to_string(c.p.dilation.h) + " groups " + std::to_string(c.p.groups);
    out.push_back(
        {{in({c.n, c.c, c.h, c.w}), in({c.k, c.c / c.p.groups, c.r, c.s}), c.bias ? in({c.k}) : none()}, c.p, note});
  }
  out.push_back(
      {{view({1, 3, 9, 11}, L::transposed), view({4, 3, 3, 3}, L::strided)}, Conv2dParams{1, 1, 1, 1}, "views"});
  // out_dtype: 16-bit inputs to an f32 result, f32 inputs to a 16-bit one
  Conv2dParams to_f32{1, 1, 1, 1};
  to_f32.out_dtype = DType::f32;
  Conv2dParams to_bf16{2, 0, 1, 1};
  to_bf16.out_dtype = DType::bf16;
  out.push_back({{in({1, 4, 9, 10}, -1, 1, L::contiguous, DType::f16),
                  in({5, 4, 3, 3}, -1, 1, L::contiguous, DType::f16), in({5}, -1, 1, L::contiguous, DType::f16)},
                 to_f32,
                 "f16, out f32"});
  out.push_back({{in({2, 3, 11, 8}), in({4, 3, 3, 3})}, to_bf16, "stride 2, out bf16"});
}

void attention_cases(std::vector<Sample>& out) {
  struct A {
    Shape lead;
    i64 lq, lk, d, dv;
    bool causal;
    float scale;
    bool cpu_only = false;
  };
  const std::vector<A> cases = {{{1}, 1, 1, 1, 1, false, 0},
                                {{1}, 1, 1, 1, 1, true, 0},
                                {{2, 3}, 7, 7, 8, 8, false, 0},
                                {{2, 3}, 7, 7, 8, 8, true, 0},
                                {{1, 2}, 5, 13, 16, 8, true, 0},
                                {{1, 2}, 5, 13, 16, 8, false, 0.3f},
                                {{3}, 31, 33, 64, 64, false, 0},
                                {{3}, 31, 33, 64, 64, true, 0},
                                {{1, 4}, 127, 127, 64, 32, true, 0},
                                {{2}, 1, 1000, 64, 64, true, 0},
                                // Dv over 64 (Vulkan: two blocks of 64 value columns, the second partial; 70 keys: a
                                // partial second tile of 64 keys)
                                {{2}, 9, 70, 16, 100, true, 0},
                                // Several of the cpu's 128-key tiles per query block, causal and not, with the blocks
                                // shared among threads. The other devices have no path these reach that 127 x 127 and
                                // the decode shapes miss (Vulkan: tiles of 64 keys; cuda: 32-key tiles), and they were
                                // 60% of the GPU-assisted validation run on lavapipe and of the emulated run.
                                {{1, 8}, 256, 256, 64, 64, true, 0, true},
                                {{1}, 1000, 1000, 32, 32, false, 0, true},
                                // decode with few query blocks and many keys: the cpu splits the keys (flash-decoding)
                                {{2}, 1, 4099, 64, 64, false, 0},
                                {{1, 3}, 3, 2500, 40, 24, true, 0}};
  for (const auto& a : cases) {
    Shape qs = a.lead, ks = a.lead, vs = a.lead;
    qs.push_back(a.lq), qs.push_back(a.d);
    ks.push_back(a.lk), ks.push_back(a.d);
    vs.push_back(a.lk), vs.push_back(a.dv);
    out.push_back({{in(qs, -2, 2), in(ks, -2, 2), in(vs)},
                   AttentionParams{a.causal, a.scale},
                   a.causal ? "causal" : "",
                   a.cpu_only});
  }
  out.push_back({{view({2, 9, 16}, L::strided), view({2, 11, 16}, L::transposed), view({2, 11, 8}, L::strided)},
                 AttentionParams{true, 0},
                 "views"});
  // Grouped-query attention (k and v with fewer heads, dim -3: q head h reads kv head h / 2) and the
  // causal sliding window: 9 queries at positions 31..39 with window 5 start their keys at 27..35,
  // across cuda's 32-key tiles and inside the cpu's 4-row query blocks.
  out.push_back({{in({2, 4, 3, 8}, -2, 2), in({2, 2, 5, 8}, -2, 2), in({2, 2, 5, 8})}, AttentionParams{}, "gqa"});
  out.push_back({{in({1, 2, 9, 8}, -2, 2), in({1, 2, 40, 8}, -2, 2), in({1, 2, 40, 8})},
                 AttentionParams{.causal = true, .window = 5},
                 "causal window 5"});
  out.push_back({{in({2, 4, 3, 8}, -2, 2), in({2, 2, 5, 8}, -2, 2), in({2, 2, 5, 4})},
                 AttentionParams{.causal = true, .window = 2},
                 "gqa causal window 2"});
  // out_dtype: 16-bit q, k and v to an f32 result, f32 ones to a 16-bit result
  out.push_back({{in({2, 5, 16}, -2, 2, L::contiguous, DType::bf16), in({2, 9, 16}, -2, 2, L::contiguous, DType::bf16),
                  in({2, 9, 8}, -1, 1, L::contiguous, DType::bf16)},
                 AttentionParams{.causal = true, .out_dtype = DType::f32},
                 "bf16, out f32"});
  out.push_back({{in({2, 5, 16}, -2, 2), in({2, 9, 16}, -2, 2), in({2, 9, 8})},
                 AttentionParams{.out_dtype = DType::f16},
                 "out f16"});
}

void rope_cases(std::vector<Sample>& out) {
  for (i64 l : {1, 3, 31, 256}) {
    for (i64 d : {2, 8, 62, 128}) {
      out.push_back({{in({2, l, d})}, RopeParams{10000.0f, 0}, ""});
      out.push_back({{in({2, l, d})}, RopeParams{500000.0f, 17}, "base 5e5 offset 17"});
    }
  }
  out.push_back({{view({2, 4, 33, 64}, L::strided)}, RopeParams{10000.0f, 1000}, "strided, offset 1000"});
  out.push_back({{in({8, 1000, 128})}, RopeParams{}, "large"});
  // More outer rows than an item takes (16), and positions that end in a partial block (8192
  // floats of cos/sin rows: 64 positions of D = 128, or of 126, padded to 128); D = 126 also leaves
  // a partial vector a row, which keeps the output's stores normal.
  out.push_back({{in({37, 70, 128})}, RopeParams{10000.0f, 5}, "position blocks"});
  out.push_back({{in({19, 45, 126})}, RopeParams{10000.0f, 5}, "position blocks"});
  // Hugging Face's halves form: a vector's worth of pairs and less (D/2 = 4 and 3), an offset, f16
  // storage. Not a grid: both forms share the rest of each kernel.
  out.push_back({{in({2, 3, 8})}, RopeParams{10000.0f, 0, RopePairs::halves}, "halves"});
  out.push_back({{in({5, 6})}, RopeParams{100.0f, 9, RopePairs::halves}, "halves, offset 9"});
  out.push_back(
      {{in({3, 5, 20}, -1, 1, L::contiguous, DType::f16)}, RopeParams{10000.0f, 2, RopePairs::halves}, "halves, f16"});
}

void reduce_cases(std::vector<Sample>& out) {
  auto add = [&](Input x, int axis, bool keep, std::string note) {
    out.push_back({{std::move(x)}, ReduceParams{axis, keep}, std::move(note)});
  };
  for (auto n : k_sizes) {
    for (int axis : {0, 1, -1}) add(in({3, n, 5}), axis, false, "axis " + std::to_string(axis));
    add(in({n}), 0, true, "keepdims");
  }
  add(view({33, 64}, L::transposed), -1, true, "transposed view");
  add(in({64, 100000}), -1, false, "large");
  // the segmented strided reduce: a middle axis with a large inner size, contiguous and through
  // strided and transposed views
  for (Layout l : {L::contiguous, L::strided, L::transposed}) {
    add(view({4, 33, 1000}, l), 1, false, std::string("axis 1 ") + layout_name(l));
    add(view({257, 130}, l), 0, true, std::string("axis 0 ") + layout_name(l));
  }
  // the cpu's column chunks: two of 2048 and 4 columns left over, over two segments of rows
  // (256 and 44, one block of partials and part of one)
  add(in({300, 4100}), 0, false, "axis 0, column chunks");
}

void copy_cases(OpKind op, std::vector<Sample>& out) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
    for (Layout l : {L::contiguous, L::strided, L::transposed}) {
      // {9, 17}, {2, 37, 70} and {130, 67} take the tiled transpose with edges in both dims
      for (Shape s :
           {Shape{1}, Shape{7, 33}, Shape{2, 3, 127, 5}, Shape{0, 4}, Shape{9, 17}, Shape{2, 37, 70}, Shape{130, 67}}) {
        // i32: integers past 2^24 (which f32 rounds) and both signs
        const Input x = t == DType::i32 ? in(s, -3e7f, 3e7f, l, t) : in(s, -1, 1, l, t);
        if (op == OpKind::copy) {
          out.push_back({{x}, NoParams{}, layout_name(l)});
        } else {
          for (DType to : {DType::f32, DType::f16, DType::bf16, DType::i32})
            out.push_back({{x}, CastParams{to}, std::string(layout_name(l)) + " to " + dtype_name(to)});
        }
      }
    }
  }
  if (op == OpKind::copy) {
    out.push_back({{view({1 << 22}, L::strided)}, NoParams{}, "large strided"});
  } else {
    out.push_back({{in({1000}, -1e5f, 1e5f)}, CastParams{DType::f16}, "to f16 with overflow to inf"});
    out.push_back({{in({1000}, -1e5f, 1e5f)}, CastParams{DType::bf16}, "to bf16"});
    out.push_back({{in({1000}, -3e9f, 3e9f)}, CastParams{DType::i32}, "to i32, saturating"});
  }
}

// minimum and maximum: the binary grid; where: the condition broadcast against both sides too.
void where_cases(std::vector<Sample>& out) {
  const std::vector<std::array<Shape, 3>> shapes = {{Shape{1}, Shape{1}, Shape{1}},
                                                    {Shape{1000}, Shape{1000}, Shape{1000}},
                                                    {Shape{31, 33}, Shape{33}, Shape{31, 1}},
                                                    {Shape{31, 1}, Shape{31, 33}, Shape{}},
                                                    {Shape{2, 1, 5}, Shape{3, 1}, Shape{2, 3, 5}},
                                                    {Shape{5, 2053}, Shape{5, 2053}, Shape{2053}},
                                                    {Shape{0, 3}, Shape{3}, Shape{1}}};
  for (const auto& [c, a, b] : shapes) {
    out.push_back({{ints(c, -1, 2), in(a), in(b)}, NoParams{}, "i32 cond"});
    out.push_back({{in(c), in(a), in(b)}, NoParams{}, "f32 cond"});
  }
  // broadcast over 6 dims that do not merge: more than the cuda kernel's 4 a launch
  out.push_back({{ints({2, 1, 3, 1, 5, 1}, -1, 2), in({1, 4, 1, 2, 1, 6}), in({4, 1, 1, 1, 6})}, NoParams{}, "6 dims"});
  out.push_back(
      {{ints({33, 31}, 0, 2, L::transposed), view({33, 31}, L::strided), view({31}, L::strided)}, NoParams{}, "views"});
}

// exp, log, sqrt, rsqrt, abs, neg, pow: the activations' grid over each one's domain, and its edges
void math_cases(OpKind op, std::vector<Sample>& out) {
  auto grid = [&](float lo, float hi, ActParams p, std::string note) {
    for (const auto& s : unary_shapes()) out.push_back({{in(s, lo, hi)}, p, note});
    out.push_back({{view({33, 31}, L::transposed, lo, hi)}, p, note + " transposed view"});
  };
  switch (op) {
    case OpKind::exp:
      grid(-6, 6, {}, "");
      out.push_back({{in({4096}, -110, 90)}, ActParams{}, "past overflow (88.72) and into subnormal results"});
      out.push_back({{in({4096}, -1e-6f, 1e-6f)}, ActParams{}, "near 0"});
      break;
    case OpKind::log:
      grid(0, 10, {}, "");
      out.push_back({{in({4096}, -1, 1)}, ActParams{}, "negatives (NaN)"});
      out.push_back({{in({4096}, 0.99f, 1.01f)}, ActParams{}, "near 1"});
      out.push_back({{in({4096}, 1e-38f, 1e-30f)}, ActParams{}, "tiny, subnormals"});
      out.push_back({{in({4096}, 1e30f, 3e38f)}, ActParams{}, "huge"});
      break;
    case OpKind::sqrt:
    case OpKind::rsqrt:
      grid(0, 100, {}, "");
      out.push_back({{in({4096}, -1, 1)}, ActParams{}, "negatives (NaN)"});
      out.push_back({{in({4096}, 1e-38f, 1e-30f)}, ActParams{}, "tiny, subnormals"});
      break;
    case OpKind::abs:
    case OpKind::neg: grid(-6, 6, {}, ""); break;
    case OpKind::pow:
      grid(0, 10, {2.0f, 0}, "^2");
      grid(-3, 3, {3.0f, 0}, "^3, odd with negative bases");
      for (float p : {0.5f, -1.5f, 2.7f, -1.0f, 0.0f, 40.0f})
        out.push_back({{in({1000}, -3, 3)}, ActParams{p, 0}, "exponent " + std::to_string(p)});
      out.push_back({{in({1000}, 0, 1e-3f)}, ActParams{-13.0f, 0}, "overflow to inf"});
      break;
    default: break;
  }
  out.push_back({{in({0})}, ActParams{op == OpKind::pow ? 2.0f : 0.0f, 0}, "zero-size"});
}

void argmax_cases(std::vector<Sample>& out) {
  auto add = [&](Input x, int axis, bool keep, std::string note) {
    out.push_back({{std::move(x)}, ReduceParams{axis, keep}, std::move(note)});
  };
  for (auto n : k_sizes) {
    for (int axis : {0, 1, -1}) add(in({3, n, 5}), axis, false, "axis " + std::to_string(axis));
    add(in({n}), 0, true, "keepdims");
    // values that tie: the first index of the largest
    add(steps({4, n}, -3, 3, 1), -1, false, "ties");
    add(steps({n, 6}, -3, 3, 1), 0, false, "ties, axis 0");
  }
  add(view({33, 64}, L::transposed), -1, true, "transposed view");
  add(in({64, 100000}), -1, false, "large");
  add(steps({3, 70001}, -2, 2, 1), -1, false, "long rows of ties");
  for (Layout l : {L::contiguous, L::strided, L::transposed}) {
    add(view({4, 33, 1000}, l), 1, false, std::string("axis 1 ") + layout_name(l));
    add(view({257, 130}, l), 0, true, std::string("axis 0 ") + layout_name(l));
  }
}

void gather_cases(std::vector<Sample>& out) {
  for (i64 v : {1, 7, 1000}) {
    for (i64 d : {1, 7, 64, 4096}) {
      for (i64 n : {1, 5, 300}) out.push_back({{in({v, d}), ints({n}, 0, static_cast<float>(v))}, NoParams{}, ""});
    }
  }
  out.push_back({{in({50, 33}, -1, 1, L::contiguous, DType::f16), ints({17}, 0, 50)}, NoParams{}, "f16 table"});
  out.push_back({{ints({50, 9}, -100, 100), ints({17}, 0, 50)}, NoParams{}, "i32 table"});
  out.push_back({{view({40, 33}, L::transposed), ints({65}, 0, 40, L::strided)}, NoParams{}, "views"});
  out.push_back({{in({10, 8}), ints({0}, 0, 10)}, NoParams{}, "no indices"});
}

void concat_cases(std::vector<Sample>& out) {
  auto add = [&](std::vector<Input> xs, int axis, std::string note) {
    out.push_back({std::move(xs), AxisParams{axis}, std::move(note)});
  };
  for (int axis : {0, 1, 2, -1}) {
    add({in({2, 3, 4})}, axis, "one input");
    const int a = axis < 0 ? axis + 3 : axis;
    auto along = [&](i64 len) {
      Shape s{2, 3, 4};
      s[a] = len;
      return s;
    };
    add({in(along(1)), in(along(5)), in(along(2))}, axis, "three inputs");
    add({in(along(0)), in(along(3))}, axis, "an empty input");
  }
  // the KV-cache append: [heads, L, D] + [heads, 1, D] along the positions
  add({in({8, 127, 64}), in({8, 1, 64})}, 1, "KV-cache append");
  add({in({8, 127, 64}, -1, 1, L::contiguous, DType::f16), in({8, 1, 64}, -1, 1, L::contiguous, DType::f16)}, 1,
      "f16 KV-cache append");
  add({ints({5, 7}, -100, 100), ints({5, 2}, -100, 100)}, 1, "i32");
  // 16-bit elements at odd places: words of the output that two inputs share, views, and one input
  // filling the output
  add({in({3, 5}, -1, 1, L::contiguous, DType::f16), in({3, 2}, -1, 1, L::transposed, DType::f16),
       in({3, 3}, -1, 1, L::strided, DType::f16)},
      1, "f16 of odd widths, views");
  add({in({7, 5}, -1, 1, L::strided, DType::bf16), in({7, 0}, -1, 1, L::contiguous, DType::bf16)}, -1,
      "bf16 strided, filling the output");
  add({view({33, 31}, L::transposed), view({33, 9}, L::strided), in({33, 1})}, -1, "views");
  std::vector<Input> many;
  for (int i = 0; i < 40; ++i) many.push_back(in({3, 1 + i % 4}));
  add(many, 1, "40 inputs");
  add({in({2, 1 << 20}), in({2, 1000})}, -1, "large");
}

}  // namespace

const char* layout_name(Layout layout) noexcept {
  switch (layout) {
    case Layout::contiguous: return "contiguous";
    case Layout::strided: return "strided";
    case Layout::transposed: return "transposed";
  }
  return "?";
}

// f16 and bf16 copies of an op's f32 cases: for each format, the largest case (many staged pieces,
// every thread), the first case with a view, and the smallest; then the largest with its floating
// inputs in mixed formats (input 0 f16, the others bf16: an f32 result). matmul and the copy family
// list their 16-bit cases themselves.
void sixteen_bit_cases(OpKind op, std::vector<Sample>& out) {
  const OpInfo& info = op_info(op);
  if (!info.takes_16bit || info.family == OpFamily::matmul || info.family == OpFamily::copy || out.empty()) return;
  auto elems = [](const Sample& s) {
    i64 n = 0;
    for (const Input& x : s.inputs) n += x.absent ? 0 : x.shape.numel();
    return n;
  };
  const std::vector<Sample> f32 = out;
  std::size_t largest = 0, smallest = 0, view = f32.size();
  for (std::size_t i = 0; i < f32.size(); ++i) {
    if (f32[i].cpu_only) continue;
    if (elems(f32[i]) > elems(f32[largest]) || f32[largest].cpu_only) largest = i;
    if (elems(f32[i]) < elems(f32[smallest]) || f32[smallest].cpu_only) smallest = i;
    for (const Input& x : f32[i].inputs)
      if (view == f32.size() && x.layout != L::contiguous && x.dtype == DType::f32) view = i;
  }
  // The largest copies reach the cpu's own 16-bit loops over long rows; the GPU backends read and
  // write 16-bit through the same kernels at every size (their f32 kernels between casts, so far:
  // backends/widen.hpp), which the view and smallest copies cover at a fraction of the emulator's
  // time.
  auto copy = [&](std::size_t i, DType first, DType rest, const char* what, bool cpu_only) {
    if (i >= f32.size()) return;
    Sample s = f32[i];
    bool first_float = true;
    for (std::size_t k = 0; k < s.inputs.size(); ++k) {
      Input& x = s.inputs[k];
      if (x.dtype != DType::f32 || (op == OpKind::where && k == 0)) continue;  // i32 indices, where's cond
      x.dtype = first_float ? first : rest;
      first_float = false;
    }
    s.note = std::string(what) + (s.note.empty() ? "" : ", ") + s.note;
    s.cpu_only = s.cpu_only || cpu_only;
    out.push_back(std::move(s));
  };
  for (DType t : {DType::f16, DType::bf16}) {
    const std::string name = dtype_name(t);
    copy(largest, t, t, (name + " in and out, the largest case").c_str(), true);
    copy(view, t, t, (name + " view").c_str(), false);
    copy(smallest, t, t, name.c_str(), false);
  }
  // rope's second input, its position, is an i32: its samples have one floating input, no mix
  if (info.max_inputs > 1 && op != OpKind::rope) {
    copy(largest, DType::f16, DType::bf16, "f16 with bf16: an f32 result, the largest case", true);
    copy(smallest, DType::f16, DType::bf16, "f16 with bf16: an f32 result", false);
  }
}

std::vector<Sample> conformance(OpKind op) {
  std::vector<Sample> out;
  switch (op) {
    case OpKind::matmul: matmul_cases(out); break;
    case OpKind::gemv: gemv_cases(out); break;
    case OpKind::dot: dot_cases(out); break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div: binary_cases(op, out); break;
    case OpKind::scale: scale_cases(out); break;
    case OpKind::bias_act: bias_act_cases(out); break;
    case OpKind::relu:
    case OpKind::leaky_relu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::gelu_tanh:
    case OpKind::clip: activation_cases(op, act_params(op), out); break;
    case OpKind::elu:
      activation_cases(op, {1.0f, 0.0f}, out);
      activation_cases(op, {0.5f, 0.0f}, out);
      break;
    case OpKind::softmax:
    case OpKind::log_softmax: softmax_cases(out); break;
    case OpKind::layernorm: layernorm_cases(out); break;
    case OpKind::rmsnorm: rmsnorm_cases(out); break;
    case OpKind::conv2d: conv2d_cases(out); break;
    case OpKind::attention: attention_cases(out); break;
    case OpKind::rope: rope_cases(out); break;
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max: reduce_cases(out); break;
    case OpKind::copy:
    case OpKind::cast: copy_cases(op, out); break;
    case OpKind::minimum:
    case OpKind::maximum: binary_cases(op, out); break;
    case OpKind::where: where_cases(out); break;
    case OpKind::exp:
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::abs:
    case OpKind::neg:
    case OpKind::pow: math_cases(op, out); break;
    case OpKind::argmax: argmax_cases(out); break;
    case OpKind::gather: gather_cases(out); break;
    case OpKind::concat: concat_cases(out); break;
  }
  sixteen_bit_cases(op, out);
  return out;
}

}  // namespace trine::samples
