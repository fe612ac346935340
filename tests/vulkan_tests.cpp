// The Vulkan backend on whatever Vulkan device 0 is (lavapipe in CI), under the validation layer
// (ctest sets TRINE_VULKAN_VALIDATION=1): every op it runs against the reference oracle, the ops it
// does not run refused as unsupported, async chains, a batch's transfer counts, out of memory and
// the maxStorageBufferRange limit. Any validation message fails the test that caused it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/debug.hpp"
#if __has_include(<vulkan/vulkan_raii.hpp>)
#include "backends/vulkan/vk_check.hpp"
#define TRINE_TEST_VK_CHECK 1
#endif
#include "tensor/storage.hpp"
#include "tests/harness.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

const Device k_vk{DeviceKind::vulkan, 0};

// Not a skip: a machine without a Vulkan device fails here with the reason.
void require_vulkan() {
  for (const auto& s : backend_status()) {
    if (s.kind != DeviceKind::vulkan) continue;
    INFO("vulkan backend: " << s.reason);
    REQUIRE(s.available);
  }
}

// Every validation message since the last call fails the current test.
void require_no_validation_messages() {
  const auto messages = vulkan::take_validation_messages();
  std::string all;
  for (const auto& m : messages) all += m + "\n";
  INFO(all);
  REQUIRE(messages.empty());
}

std::uint64_t seq() {
  static std::uint64_t n = 1000;
  return ++n;
}

enum class Layout { contiguous, strided, transposed };

// A vulkan tensor of `shape` (values uniform in [low, high)), laid out as asked: strided takes every
// other element of a wider tensor along the last axis; transposed is the transpose of the swapped shape.
Tensor input(const Shape& shape, float low = -1.0f, float high = 1.0f, Layout layout = Layout::contiguous) {
  if (layout == Layout::strided && shape.rank() >= 1) {
    Shape wide = shape;
    wide[shape.rank() - 1] *= 2;
    return Tensor::random(wide, seq(), low, high, DType::f32, k_vk).slice(-1, 0, wide[shape.rank() - 1], 2);
  }
  if (layout == Layout::transposed && shape.rank() >= 2) {
    Shape swapped = shape;
    std::swap(swapped[shape.rank() - 1], swapped[shape.rank() - 2]);
    return Tensor::random(swapped, seq(), low, high, DType::f32, k_vk).transpose(-2, -1);
  }
  return Tensor::random(shape, seq(), low, high, DType::f32, k_vk);
}

// The conformance harness's check on the vulkan inputs (oracle, bounds, guards, inputs unchanged),
// then: no validation message.
void check(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, const std::string& label) {
  for (const auto& t : inputs) REQUIRE((!t.defined() || t.device() == k_vk));
  test::check_op(op, inputs, params, label);
  require_no_validation_messages();
}

std::string label(const std::vector<Tensor>& in, const std::string& extra = "") {
  std::string s;
  for (const auto& t : in) s += (t.defined() ? t.str() : std::string("none")) + " ";
  return s + extra;
}

const std::vector<std::int64_t> k_sizes = {1, 2, 3, 7, 31, 32, 33, 64, 127, 256, 1000, 4099, 65537};

// vulkan:0's line in trine-info ("...; maxStorageBufferRange 128 MiB; ...").
std::string capabilities() {
  for (const auto& d : devices())
    if (d.device == k_vk) return d.capabilities;
  return std::string();
}

// The most one shader binding addresses on vulkan:0, in bytes.
std::uint64_t max_binding() {
  const std::string caps = capabilities();
  const auto at = caps.find("maxStorageBufferRange ");
  REQUIRE(at != std::string::npos);
  return std::stoull(caps.substr(at + 22)) << 20;
}

}  // namespace

TEST_CASE("vulkan device 0 is present and describes itself", "[vulkan]") {
  require_vulkan();
  bool found = false;
  for (const auto& d : devices()) {
    if (d.device != k_vk) continue;
    found = true;
    INFO(d.name << ": " << d.capabilities);
    CHECK(d.capabilities.find("maxStorageBufferRange") != std::string::npos);
    CHECK(d.capabilities.find("subgroup") != std::string::npos);
  }
  REQUIRE(found);
  require_no_validation_messages();
}

TEST_CASE("vulkan: uploads and readbacks round-trip, views included", "[vulkan]") {
  require_vulkan();
  for (auto n : k_sizes) {
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 3.0f;
    Tensor t = Tensor::from(host, {n}, DType::f32, k_vk);
    REQUIRE(t.to_vector() == host);
  }
  Tensor m = Tensor::arange(0, 35, 1, DType::f32, k_vk).reshape({5, 7});
  auto tv = m.transpose().to_vector();  // copy op on the device, then a readback
  REQUIRE(tv.size() == 35);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j) REQUIRE(tv[static_cast<std::size_t>(i * 5 + j)] == static_cast<float>(j * 7 + i));
  require_no_validation_messages();
}

TEST_CASE("vulkan: activations and scale against the reference", "[vulkan]") {
  require_vulkan();
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
  shapes.push_back({3, 1 << 20});  // large: more workgroups than one grid dimension holds at 1 per group
  for (const auto& a : acts) {
    for (const auto& s : shapes) {
      std::vector<Tensor> in{input(s, -6.0f, 6.0f)};
      check(a.op, in, a.p, label(in));
    }
    std::vector<Tensor> wide{input({1000}, -40.0f, 40.0f)};
    check(a.op, wide, a.p, label(wide, "range +-40"));
    std::vector<Tensor> view{input({33, 31}, -6.0f, 6.0f, Layout::transposed)};
    check(a.op, view, a.p, label(view, "transposed view"));
    std::vector<Tensor> empty{Tensor::empty({0}, DType::f32, k_vk)};
    check(a.op, empty, a.p, label(empty, "zero-size"));
    // Contiguous views that start inside their storage: aligned to a vec4 or not.
    Tensor base = input({1009}, -6.0f, 6.0f);
    for (std::int64_t start : {1, 4, 5}) {
      std::vector<Tensor> off{base.slice(0, start, 1009)};
      check(a.op, off, a.p, label(off, "offset " + std::to_string(start)));
    }
  }
  for (const auto& s : shapes) {
    std::vector<Tensor> in{input(s)};
    check(OpKind::scale, in, ScaleParams{-2.5f, 0.25f}, label(in));
  }
  std::vector<Tensor> view{input({64, 65}, -1, 1, Layout::strided)};
  check(OpKind::scale, view, ScaleParams{3.0f, 0.0f}, label(view, "strided"));
}

TEST_CASE("vulkan: add, sub, mul, div with broadcasting", "[vulkan]") {
  require_vulkan();
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
                                                       {{1000, 1000}, {1000, 1000}}};
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div}) {
    for (const auto& [sa, sb] : shapes) {
      std::vector<Tensor> in{input(sa), op == OpKind::div ? input(sb, 0.5f, 2.0f) : input(sb)};
      check(op, in, NoParams{}, label(in));
    }
    std::vector<Tensor> views{input({33, 31}, -1, 1, Layout::transposed), input({31}, 0.5f, 2.0f, Layout::strided)};
    check(op, views, NoParams{}, label(views, "views"));
    std::vector<Tensor> empty{Tensor::empty({0, 3}, DType::f32, k_vk), input({3})};
    check(op, empty, NoParams{}, label(empty, "zero-size"));
  }
}

TEST_CASE("vulkan: bias_act with every activation, and copy", "[vulkan]") {
  require_vulkan();
  const Activation acts[] = {Activation::identity,  Activation::relu, Activation::leaky_relu, Activation::elu,
                             Activation::sigmoid,   Activation::tanh, Activation::silu,       Activation::gelu,
                             Activation::gelu_tanh, Activation::clip};
  for (Activation act : acts) {
    BiasActParams p{act, act == Activation::clip ? -0.5f : 0.1f, act == Activation::clip ? 0.5f : 0.0f};
    for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 3}, {31, 33}, {64, 1000}, {1000, 127}}) {
      std::vector<Tensor> in{input({r, c}, -4.0f, 4.0f), input({c})};
      check(OpKind::bias_act, in, p, label(in, activation_name(act)));
    }
    std::vector<Tensor> in{input({2, 5, 33}, -1, 1, Layout::strided), input({33}, -1, 1, Layout::strided)};
    check(OpKind::bias_act, in, p, label(in, std::string(activation_name(act)) + " strided"));
  }
  for (Layout l : {Layout::contiguous, Layout::strided, Layout::transposed}) {
    for (Shape s : {Shape{1}, Shape{7, 33}, Shape{2, 3, 127, 5}, Shape{0, 4}}) {
      std::vector<Tensor> in{input(s, -1, 1, l)};
      check(OpKind::copy, in, NoParams{}, label(in));
    }
  }
  std::vector<Tensor> big{input({1 << 22}, -1, 1, Layout::strided)};
  check(OpKind::copy, big, NoParams{}, "large strided");
}

TEST_CASE("vulkan: sum, mean, max over an axis", "[vulkan]") {
  require_vulkan();
  for (OpKind op : {OpKind::sum, OpKind::mean, OpKind::max}) {
    for (auto n :
         {std::int64_t{1}, std::int64_t{2}, std::int64_t{7}, std::int64_t{33}, std::int64_t{127}, std::int64_t{1000}}) {
      for (int axis : {0, 1, -1}) {
        std::vector<Tensor> in{input({3, n, 5})};
        check(op, in, ReduceParams{axis, false}, label(in, "axis " + std::to_string(axis)));
      }
      std::vector<Tensor> in{input({n})};
      check(op, in, ReduceParams{0, true}, label(in, "keepdims"));
    }
    std::vector<Tensor> view{input({33, 64}, -1, 1, Layout::transposed)};
    check(op, view, ReduceParams{-1, true}, label(view, "transposed view"));
    std::vector<Tensor> big{input({64, 100000})};
    check(op, big, ReduceParams{-1, false}, label(big, "large"));
  }
}

TEST_CASE("vulkan: softmax and log_softmax over any axis", "[vulkan]") {
  require_vulkan();
  for (OpKind op : {OpKind::softmax, OpKind::log_softmax}) {
    for (auto n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{31}, std::int64_t{128}, std::int64_t{1000}}) {
      std::vector<Tensor> in{input({3, n}, -10.0f, 10.0f)};
      check(op, in, AxisParams{-1}, label(in));
      std::vector<Tensor> col{input({n, 5}, -10.0f, 10.0f)};
      check(op, col, AxisParams{0}, label(col, "axis 0"));
    }
    std::vector<Tensor> mid{input({4, 33, 7}, -10.0f, 10.0f)};
    check(op, mid, AxisParams{1}, label(mid, "axis 1"));
    std::vector<Tensor> view{input({31, 64}, -10.0f, 10.0f, Layout::transposed)};
    check(op, view, AxisParams{-1}, label(view, "transposed view"));
    std::vector<Tensor> big{input({16, 32000}, -20.0f, 20.0f)};
    check(op, big, AxisParams{-1}, label(big, "large"));
  }
  // Special values: -inf entries give 0, a row of -inf gives NaN, 1e30 is exact.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> host = {1e30f, 0.0f, -inf, 2.0f, -inf, -inf, -inf, -inf};
  std::vector<Tensor> sp{Tensor::from(host, {2, 4}, DType::f32, k_vk)};
  check(OpKind::softmax, sp, AxisParams{-1}, "special values");
  check(OpKind::log_softmax, sp, AxisParams{-1}, "special values");
}

TEST_CASE("vulkan: layernorm and rmsnorm", "[vulkan]") {
  require_vulkan();
  for (auto n :
       {std::int64_t{1}, std::int64_t{2}, std::int64_t{7}, std::int64_t{33}, std::int64_t{256}, std::int64_t{1000}}) {
    for (std::int64_t rows : {1, 5}) {
      Tensor x = input({rows, n}, -3.0f, 5.0f), g = input({n}), b = input({n});
      check(OpKind::layernorm, {x, g, b}, NormParams{1e-5f}, label({x}, "gamma beta"));
      check(OpKind::layernorm, {x}, NormParams{1e-5f}, label({x}, "plain"));
      check(OpKind::layernorm, {x, g}, NormParams{1e-3f}, label({x}, "gamma"));
      check(OpKind::rmsnorm, {x, g}, NormParams{1e-6f}, label({x}, "gamma"));
      check(OpKind::rmsnorm, {x}, NormParams{1e-6f}, label({x}, "plain"));
    }
  }
  Tensor x = input({2, 3, 4096}, -1, 1, Layout::strided), g = input({4096});
  check(OpKind::layernorm, {x, g, Tensor()}, NormParams{}, "strided large, gamma only");
  check(OpKind::rmsnorm, {x, g}, NormParams{}, "strided large");
}

TEST_CASE("vulkan: matmul, gemv and dot", "[vulkan]") {
  require_vulkan();
  auto mm = [](const Shape& as, const Shape& bs, MatmulParams p, Layout la = Layout::contiguous,
               Layout lb = Layout::contiguous) {
    std::vector<Tensor> in{input(as, -1, 1, la), input(bs, -1, 1, lb)};
    check(OpKind::matmul, in, p, label(in, std::string(p.trans_a ? "ta " : "") + (p.trans_b ? "tb" : "")));
  };
  for (auto s : {std::int64_t{1}, std::int64_t{2}, std::int64_t{7}, std::int64_t{31}, std::int64_t{32},
                 std::int64_t{33}, std::int64_t{64}, std::int64_t{127}}) {
    mm({s, s}, {s, s}, {});
    mm({s, 33}, {33, 7}, {});
    mm({1, s}, {s, 31}, {});
    mm({3, 1}, {1, s}, {});
  }
  mm({3, 1000}, {1000, 7}, {});
  mm({129, 257}, {257, 65}, {});
  mm({384, 512}, {512, 320}, {});  // large
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Shape as = ta ? Shape{33, 31} : Shape{31, 33};
      Shape bs = tb ? Shape{7, 33} : Shape{33, 7};
      mm(as, bs, {ta, tb});
      mm(as, bs, {ta, tb}, Layout::transposed, Layout::strided);
    }
  }
  mm({2, 3, 17, 9}, {9, 5}, {});
  mm({2, 1, 7, 9}, {1, 4, 9, 6}, {});
  mm({4, 31, 33}, {4, 33, 32}, {}, Layout::transposed);
  mm({5, 33, 31}, {5, 7, 33}, {true, true});
  // f16 / bf16 inputs, f32 result
  auto mm_t = [](const Shape& as, const Shape& bs, DType ta, DType tb, bool transposed_b) {
    Tensor a = Tensor::random(as, seq(), -1, 1, ta, k_vk);
    Shape bsw = bs;
    if (transposed_b) std::swap(bsw[bs.rank() - 1], bsw[bs.rank() - 2]);
    Tensor b = Tensor::random(bsw, seq(), -1, 1, tb, k_vk);
    if (transposed_b) b = b.transpose(-2, -1);
    std::vector<Tensor> in{a, b};
    check(OpKind::matmul, in, MatmulParams{}, label(in));
  };
  mm_t({31, 64}, {64, 33}, DType::f16, DType::f16, false);
  mm_t({31, 64}, {64, 33}, DType::bf16, DType::bf16, true);
  mm_t({2, 7, 65}, {65, 9}, DType::f16, DType::f32, false);
  mm_t({128, 256}, {256, 96}, DType::bf16, DType::f16, false);
  mm({3, 0}, {0, 4}, {});
  mm({0, 5}, {5, 4}, {});
  for (auto m : {std::int64_t{1}, std::int64_t{7}, std::int64_t{33}, std::int64_t{1000}}) {
    for (auto k : {std::int64_t{1}, std::int64_t{7}, std::int64_t{33}, std::int64_t{1000}}) {
      for (bool trans : {false, true}) {
        std::vector<Tensor> in{input(trans ? Shape{k, m} : Shape{m, k}), input({k})};
        check(OpKind::gemv, in, GemvParams{trans}, label(in, trans ? "trans" : ""));
      }
    }
  }
  std::vector<Tensor> gv{input({127, 255}, -1, 1, Layout::transposed), input({255}, -1, 1, Layout::strided)};
  check(OpKind::gemv, gv, GemvParams{false}, label(gv, "views"));
  std::vector<Tensor> gl{input({2048, 4096}), input({4096})};
  check(OpKind::gemv, gl, GemvParams{false}, label(gl, "large"));
  for (auto n : k_sizes) {
    std::vector<Tensor> in{input({n}), input({n})};
    check(OpKind::dot, in, NoParams{}, label(in));
  }
  std::vector<Tensor> dv{input({1000}, -1, 1, Layout::strided), input({1000})};
  check(OpKind::dot, dv, NoParams{}, label(dv, "strided"));
  std::vector<Tensor> big{input({1 << 20}), input({1 << 20})};
  check(OpKind::dot, big, NoParams{}, label(big, "large"));
}

TEST_CASE("vulkan: copy and cast between f32, f16 and bf16, bit-exact", "[vulkan]") {
  require_vulkan();
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (Layout l : {Layout::contiguous, Layout::strided, Layout::transposed}) {
      for (Shape s : {Shape{1}, Shape{7, 33}, Shape{2, 3, 127, 5}, Shape{0, 4}}) {
        Tensor base = Tensor::random(s, seq(), -1, 1, t, k_vk);
        if (l == Layout::strided && s.rank() >= 1) {
          Shape wide = s;
          wide[s.rank() - 1] *= 2;
          base = Tensor::random(wide, seq(), -1, 1, t, k_vk).slice(-1, 0, wide[s.rank() - 1], 2);
        } else if (l == Layout::transposed && s.rank() >= 2) {
          Shape sw = s;
          std::swap(sw[s.rank() - 1], sw[s.rank() - 2]);
          base = Tensor::random(sw, seq(), -1, 1, t, k_vk).transpose(-2, -1);
        }
        std::vector<Tensor> in{base};
        check(OpKind::copy, in, NoParams{}, label(in));
        for (DType to : {DType::f32, DType::f16, DType::bf16})
          check(OpKind::cast, in, CastParams{to}, label(in, std::string("to ") + dtype_name(to)));
      }
    }
  }
  std::vector<Tensor> wide{input({1001}, -1e5f, 1e5f)};
  check(OpKind::cast, wide, CastParams{DType::f16}, "to f16 with overflow to inf");
  check(OpKind::cast, wide, CastParams{DType::bf16}, "to bf16");
  // f16 subnormals, the largest finite values, ties, inf and NaN
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> sp = {0.0f,    -0.0f,         6e-8f,         3e-8f,          2.9e-8f,   1e-5f,
                           6.1e-5f, 65504.0f,      65519.0f,      65520.0f,       -70000.0f, inf,
                           -inf,    std::nanf(""), 1.0009765625f, 1.00146484375f, 3e38f};
  std::vector<Tensor> special{Tensor::from(sp, {static_cast<std::int64_t>(sp.size())}, DType::f32, k_vk)};
  for (DType to : {DType::f16, DType::bf16})
    check(OpKind::cast, special, CastParams{to}, std::string("special values to ") + dtype_name(to));
}

TEST_CASE("vulkan: conv2d, attention and rope", "[vulkan]") {
  require_vulkan();
  struct C {
    std::int64_t n, c, h, w, k, r, s;
    Conv2dParams p;
    bool bias;
  };
  const std::vector<C> convs = {{1, 1, 1, 1, 1, 1, 1, {}, false},
                                {1, 1, 5, 5, 1, 3, 3, {}, true},
                                {2, 3, 7, 7, 4, 3, 3, {1, 1, 1, 1}, true},
                                {1, 3, 13, 11, 5, 3, 3, {2, 1, 1, 1}, false},
                                {1, 4, 31, 33, 8, 5, 5, {{2, 1}, {2, 0}, 1, 1}, true},
                                {2, 4, 17, 17, 6, 3, 3, {1, 2, 2, 2}, true},
                                {1, 8, 32, 32, 8, 3, 3, {1, 1, 1, 8}, true},
                                {1, 6, 9, 9, 4, 1, 1, {2, 0, 1, 1}, true},
                                {1, 3, 2, 2, 2, 3, 3, {1, 1, 1, 1}, true},
                                {2, 32, 56, 56, 64, 3, 3, {1, 1, 1, 1}, true}};
  for (const auto& c : convs) {
    std::vector<Tensor> in{input({c.n, c.c, c.h, c.w}), input({c.k, c.c / c.p.groups, c.r, c.s}),
                           c.bias ? input({c.k}) : Tensor()};
    check(OpKind::conv2d, in, c.p, label(in, "groups " + std::to_string(c.p.groups)));
  }
  std::vector<Tensor> cv{input({1, 3, 9, 11}, -1, 1, Layout::transposed), input({4, 3, 3, 3}, -1, 1, Layout::strided)};
  check(OpKind::conv2d, cv, Conv2dParams{1, 1, 1, 1}, label(cv, "views"));

  struct A {
    Shape lead;
    std::int64_t lq, lk, d, dv;
    bool causal;
    float scale;
  };
  const std::vector<A> atts = {{{1}, 1, 1, 1, 1, true, 0},          {{2, 3}, 7, 7, 8, 8, false, 0},
                               {{2, 3}, 7, 7, 8, 8, true, 0},       {{1, 2}, 5, 13, 16, 8, true, 0},
                               {{1, 2}, 5, 13, 16, 8, false, 0.3f}, {{3}, 31, 33, 64, 64, true, 0},
                               {{2}, 1, 1000, 64, 64, true, 0},     {{1}, 257, 257, 32, 32, false, 0}};
  for (const auto& a : atts) {
    Shape qs = a.lead, ks = a.lead, vs = a.lead;
    qs.push_back(a.lq), qs.push_back(a.d);
    ks.push_back(a.lk), ks.push_back(a.d);
    vs.push_back(a.lk), vs.push_back(a.dv);
    std::vector<Tensor> in{input(qs, -2, 2), input(ks, -2, 2), input(vs)};
    check(OpKind::attention, in, AttentionParams{a.causal, a.scale}, label(in, a.causal ? "causal" : ""));
  }
  std::vector<Tensor> av{input({2, 9, 16}, -1, 1, Layout::strided), input({2, 11, 16}, -1, 1, Layout::transposed),
                         input({2, 11, 8}, -1, 1, Layout::strided)};
  check(OpKind::attention, av, AttentionParams{true, 0}, label(av, "views"));

  for (auto l : {std::int64_t{1}, std::int64_t{3}, std::int64_t{31}, std::int64_t{256}}) {
    for (auto d : {std::int64_t{2}, std::int64_t{8}, std::int64_t{62}, std::int64_t{128}}) {
      std::vector<Tensor> in{input({2, l, d})};
      check(OpKind::rope, in, RopeParams{10000.0f, 0}, label(in));
      check(OpKind::rope, in, RopeParams{500000.0f, 17}, label(in, "base 5e5 offset 17"));
    }
  }
  std::vector<Tensor> rv{input({2, 4, 33, 64}, -1, 1, Layout::strided)};
  check(OpKind::rope, rv, RopeParams{10000.0f, 1000}, label(rv, "strided, offset 1000"));
  std::vector<Tensor> rb{input({8, 1000, 128})};
  check(OpKind::rope, rb, RopeParams{}, label(rb, "large"));
}

TEST_CASE("vulkan: long reductions are split, never cut short by the driver's loop limit", "[vulkan]") {
  require_vulkan();
  // lavapipe stops a shader loop near 65535 iterations; these lengths need more than that per
  // invocation unless the reduction is split across workgroups.
  const std::int64_t n = std::int64_t{1} << 24;
  Tensor ones = Tensor::full({n}, 1.0f, DType::f32, k_vk);
  REQUIRE(sum(ones, 0).item() == static_cast<float>(n));
  REQUIRE(mean(ones, 0).item() == 1.0f);
  REQUIRE(dot(ones, ones).item() == static_cast<float>(n));
  std::vector<Tensor> in{input({3, 9'000'001})};
  for (OpKind op : {OpKind::sum, OpKind::max}) check(op, in, ReduceParams{-1, false}, label(in, "split"));
  std::vector<Tensor> mv{input({2, 1 << 23}), input({1 << 23})};
  check(OpKind::gemv, mv, GemvParams{false}, label(mv, "split"));
}

TEST_CASE("vulkan: what the driver's loop limit keeps from running is refused clearly", "[vulkan]") {
  require_vulkan();
  if (capabilities().find("shader loops cut") == std::string::npos) {
    WARN("this device has no loop limit: nothing to refuse");
    return;
  }
  Tensor row = Tensor::zeros({1, 1 << 23}, DType::f32, k_vk);
  const auto submissions = transfer_stats(k_vk).submissions;
  try {
    (void)softmax(row);
    FAIL("a softmax row of 2^23 ran where loops are cut short");
  } catch (const Error& e) {
    INFO(e.what());
    REQUIRE(e.code() == ErrorCode::unsupported);
    REQUIRE(std::string(e.what()).find("[softmax]") != std::string::npos);
    REQUIRE(std::string(e.what()).find("loop") != std::string::npos);
  }
  CHECK(transfer_stats(k_vk).submissions == submissions);  // refused by supports(), never submitted
  std::vector<Tensor> in{input({4, 100})};
  check(OpKind::softmax, in, AxisParams{-1}, "after the refusal");
}

TEST_CASE("vulkan: the pipeline cache is written, reused by a second process, and a corrupt one survived", "[vulkan]") {
  require_vulkan();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trine-pipeline-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // This test binary again, in a process of its own, running one quick test that makes pipelines.
  const std::string run = "XDG_CACHE_HOME=" + dir.string() + " TRINE_VULKAN_VALIDATION=1 " +
                          fs::read_symlink("/proc/self/exe").string() +
                          " \"vulkan: uploads and readbacks round-trip*\" > /dev/null 2>&1";
  auto cache_file = [&] {
    fs::path found;
    if (fs::exists(dir / "trine"))
      for (const auto& e : fs::directory_iterator(dir / "trine"))
        if (e.path().extension() == ".pipelines") found = e.path();
    return found;
  };
  REQUIRE(std::system(run.c_str()) == 0);
  const fs::path file = cache_file();
  REQUIRE(!file.empty());
  // A header at least: lavapipe keeps no pipelines in it (Mesa caches compiled shaders on its own).
  REQUIRE(fs::file_size(file) >= 32);
  REQUIRE(std::system(run.c_str()) == 0);  // starts from it
  {
    std::ofstream corrupt(file, std::ios::binary | std::ios::trunc);
    corrupt << "not a pipeline cache, and far too short for one's header: ignored, never trusted";
  }
  REQUIRE(std::system(run.c_str()) == 0);
  std::ifstream in(file, std::ios::binary);
  std::uint32_t header[2] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  REQUIRE(header[1] == 1);  // rewritten: VK_PIPELINE_CACHE_HEADER_VERSION_ONE
  fs::remove_all(dir);
}

TEST_CASE("vulkan: cases not written yet are refused as unsupported, naming the op", "[vulkan]") {
  require_vulkan();
  // matmul with more than 3 batch dimensions: the op table's, not yet this backend's. Refused,
  // never computed wrong.
  Tensor a = input({2, 1, 2, 1, 4, 8}), b = input({8, 3});
  try {
    (void)matmul(a, b);
    FAIL("a matmul with 4 batch dimensions ran on vulkan");
  } catch (const Error& e) {
    INFO(e.what());
    REQUIRE(e.code() == ErrorCode::unsupported);
    REQUIRE(std::string(e.what()).find("[matmul]") != std::string::npos);
    REQUIRE(std::string(e.what()).find("vulkan:0") != std::string::npos);
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: async ops chain through futures without blocking", "[vulkan]") {
  require_vulkan();
  Tensor x = input({4099}, -3.0f, 3.0f);
  const auto host = x.to_vector();
  Future<Tensor> a = async::relu(x);
  Future<Tensor> b = async::sigmoid(a);
  Future<Tensor> c = async::add(b, a);
  Future<Tensor> d = async::scale(c, 2.0f, -1.0f);
  const auto got = d.get().to_vector();
  REQUIRE(got.size() == host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double r = host[i] < 0 ? 0.0 : host[i];
    const double expect = 2.0 * (1.0 / (1.0 + std::exp(-r)) + r) - 1.0;
    REQUIRE(std::abs(got[i] - expect) <= 1e-5 * (1 + std::abs(expect)));
  }
  // Many in flight at once, results dropped while running: nothing blocks or leaks.
  std::vector<Future<Tensor>> many;
  for (int i = 0; i < 64; ++i) many.push_back(async::tanh(i % 2 ? Tensor(many.back()) : x));
  many.back().wait();
  many.clear();
  synchronize();
  require_no_validation_messages();
}

TEST_CASE("vulkan: work after a submission with host steps pending waits for them without blocking", "[vulkan]") {
  require_vulkan();
  // A submitted batch ends with a readback done on the host after the device finishes; an async op
  // on the batch's output must wait for that (its writer) without blocking the caller: it goes
  // through the backend's submit thread.
  std::vector<float> host(5000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97) * 0.1f - 4.0f;
  for (int round = 0; round < 20; ++round) {
    Batch batch(k_vk);
    Tensor y = relu(batch.upload(host, {5000}));
    BatchRead out = batch.read(y);
    Future<void> done = batch.submit();
    Future<Tensor> z = async::scale(y, 2.0f, 0.0f);
    Future<Tensor> w = async::add(z, y);
    const auto got = w.get().to_vector();
    done.wait();
    const auto read = out.get();
    for (std::size_t i = 0; i < host.size(); ++i) {
      const float r = host[i] < 0 ? 0.0f : host[i];
      REQUIRE(read[i] == r);
      REQUIRE(got[i] == 3.0f * r);
    }
  }
  synchronize();
  require_no_validation_messages();
}

TEST_CASE("vulkan: a batch of N ops is one upload, one readback and one submission", "[vulkan]") {
  require_vulkan();
  std::vector<float> host(4096);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::sin(static_cast<float>(i)) * 3.0f;
  Batch batch(k_vk);
  Tensor x = batch.upload(host, {64, 64});
  Tensor y = x;
  for (int i = 0; i < 16; ++i) y = i % 2 ? tanh(y) : scale(relu(y), 0.5f, 0.1f);
  BatchRead out = batch.read(y);
  batch.run();  // places the batch
  const TransferStats before = transfer_stats(k_vk);
  batch.run();
  const TransferStats after = transfer_stats(k_vk);
  REQUIRE(after.uploads - before.uploads == 1);
  REQUIRE(after.readbacks - before.readbacks == 1);
  REQUIRE(after.submissions - before.submissions == 1);
  REQUIRE(after.device_copies - before.device_copies == 0);
  // The same chain as sync calls.
  Tensor e = Tensor::from(host, {64, 64}, DType::f32, k_vk);
  for (int i = 0; i < 16; ++i) e = i % 2 ? tanh(e) : scale(relu(e), 0.5f, 0.1f);
  REQUIRE(out.get() == e.to_vector());
  require_no_validation_messages();
}

TEST_CASE("vulkan: out of memory is an error and the device works after", "[vulkan]") {
  require_vulkan();
  const std::int64_t too_many = std::int64_t{1} << 40;  // 4 TiB of f32: over any heap here
  try {
    (void)Tensor::empty({too_many}, DType::f32, k_vk);
    FAIL("a 4 TiB allocation succeeded");
  } catch (const Error& e) {
    INFO(e.what());
    REQUIRE(e.code() == ErrorCode::out_of_memory);
    REQUIRE(std::string(e.what()).find("vulkan:0") != std::string::npos);
  }
  std::vector<Tensor> in{input({1000})};
  check(OpKind::relu, in, ActParams{}, "after out of memory");
}

TEST_CASE("vulkan: memory is cached by the device-generic cache, which stats and clear_cache see", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = memory::stats(k_vk);
  CHECK(before.cached_bytes == 0);
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1 << 20}, DType::f32, k_vk);  // 4 MiB
    first = t.storage()->handle();
  }
  CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{4} << 20);
  // Small blocks too (each Vulkan allocation is a driver call), unlike the cpu's.
  const auto cached = memory::stats(k_vk).cached_bytes;
  { Tensor small = Tensor::empty({16}, DType::f32, k_vk); }
  CHECK(memory::stats(k_vk).cached_bytes == cached + 64);
  {
    // A slightly smaller tensor of the same size class takes the block, its guards moved.
    Tensor again = Tensor::full({(1 << 20) - 1000}, 1.0f, DType::f32, k_vk);
    CHECK(again.storage()->handle() == first);
    CHECK(memory::stats(k_vk).hits >= before.hits + 1);
    if (capabilities().find("host-visible coherent") != std::string::npos) CHECK(debug::guards_intact(again));
    CHECK(relu(again).to_vector().back() == 1.0f);
  }
  // The recorder's temporaries (here the contiguous copy of a strided input) come from it too, and
  // go back to it once their submission has completed.
  Tensor strided = input({1 << 18, 3}, -1, 1, Layout::strided);
  memory::clear_cache(k_vk);
  const auto misses = memory::stats(k_vk).misses;
  CHECK(sum(strided, 0).to_vector().size() == 3);
  CHECK(memory::stats(k_vk).misses >= misses + 1);
  CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{3} << 20);
  if (capabilities().find("device-local") != std::string::npos) {
    // Storage the host cannot map (TRINE_VULKAN_FORCE_STAGING, a discrete GPU): transfers go through
    // staging buffers, cached there too, apart from storage.
    memory::clear_cache(k_vk);
    const std::vector<float> host(std::size_t{1} << 20, 2.0f);
    CHECK(Tensor::from(host, {1 << 20}, DType::f32, k_vk).to_vector() == host);
    CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{8} << 20);  // the tensor and a staging buffer
    const auto staged = memory::stats(k_vk);
    CHECK(Tensor::from(host, {1 << 20}, DType::f32, k_vk).to_vector() == host);
    CHECK(memory::stats(k_vk).hits >= staged.hits + 2);
  }
  memory::clear_cache(k_vk);
  CHECK(memory::stats(k_vk).cached_bytes == 0);
  // Out of memory releases what the cache holds, retries once, and fails cleanly.
  { Tensor held = Tensor::empty({1 << 20}, DType::f32, k_vk); }
  const auto releases = memory::stats(k_vk).releases;
  CHECK_THROWS_AS(Tensor::empty({std::int64_t{1} << 40}, DType::f32, k_vk), Error);
  CHECK(memory::stats(k_vk).releases == releases + 1);
  CHECK(memory::stats(k_vk).cached_bytes == 0);
  std::vector<Tensor> after{input({1000})};
  check(OpKind::relu, after, ActParams{}, "after out of memory");
}

TEST_CASE("vulkan: tensors over maxStorageBufferRange: bound in pieces, or refused clearly", "[vulkan]") {
  require_vulkan();
  // 40M floats = 160 MB, over lavapipe's 128 MiB binding limit.
  const std::int64_t n = 40'000'000;
  Tensor x = Tensor::random({n}, seq(), -2.0f, 2.0f, DType::f32, k_vk);
  const auto host = x.to_vector();
  // The contiguous activations bind their tensors in pieces: right answers, aligned start or not.
  for (std::int64_t start : {0, 3}) {
    const auto got = scale(x.slice(0, start, n), 2.0f, 1.0f).to_vector();
    REQUIRE(got.size() == static_cast<std::size_t>(n - start));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      bad += got[i] != 2.0f * host[i + static_cast<std::size_t>(start)] + 1.0f;
    INFO("start " << start);
    REQUIRE(bad == 0);
  }
  if (capabilities().find("maxStorageBufferRange 128 MiB") != std::string::npos) {
    // An op that does not split its bindings yet: refused with the reason, never a wrong answer.
    try {
      (void)add(x, x);
      FAIL("add over maxStorageBufferRange ran");
    } catch (const Error& e) {
      INFO(e.what());
      REQUIRE(e.code() == ErrorCode::unsupported);
      REQUIRE(std::string(e.what()).find("[add]") != std::string::npos);
      REQUIRE(std::string(e.what()).find("maxStorageBufferRange") != std::string::npos);
    }
  }
  // The device is still fine.
  std::vector<Tensor> in{input({33})};
  check(OpKind::relu, in, ActParams{}, "after the refusal");
}

TEST_CASE("vulkan: a call over maxStorageBufferRange is refused before it is submitted, naming the limit", "[vulkan]") {
  require_vulkan();
  // gemv binds its matrix whole: 11008x4096 f32 (180 MB) is over lavapipe's 128 MiB.
  const std::uint64_t limit = max_binding();
  const std::int64_t cols = 4096;
  const std::int64_t rows = std::max<std::int64_t>(11008, static_cast<std::int64_t>(limit / (cols * 4)) + 1);
  Tensor a;
  try {
    a = Tensor::empty({rows, cols}, DType::f32, k_vk);
  } catch (const Error& e) {
    WARN("no memory for a matrix over maxStorageBufferRange here: " << e.what());
    return;
  }
  Tensor x = input({cols});
  const auto submissions = transfer_stats(k_vk).submissions;
  try {
    (void)gemv(a, x);
    FAIL("a gemv over maxStorageBufferRange ran");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::unsupported);
    const std::string what = e.what();
    CHECK(what.find("[gemv] is not supported on vulkan:0") != std::string::npos);  // from supports()
    CHECK(what.find("pinned") != std::string::npos);
    CHECK(what.find("maxStorageBufferRange (" + std::to_string(limit) + " bytes)") != std::string::npos);
  }
  CHECK(transfer_stats(k_vk).submissions == submissions);
  // A batch pinned to the device refuses it while recording, with the same reason.
  Batch batch(k_vk);
  Tensor xb = batch.upload(x.to_vector(), {cols});
  try {
    (void)gemv(a, xb);
    FAIL("a gemv over maxStorageBufferRange was recorded");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("maxStorageBufferRange") != std::string::npos);
  }
  // Within the limit, the same op runs.
  std::vector<Tensor> in{input({64, cols}), x};
  check(OpKind::gemv, in, GemvParams{false}, "after the refusal");
}

#if defined(TRINE_TEST_VK_CHECK)
TEST_CASE("vulkan: a failing Vulkan call is a trine::Error naming the call and the VkResult", "[vulkan]") {
  auto fail_with = [](vk::Result r) { vk::throwResultException(r, "vkSomething"); };
  try {
    TRINE_VK(fail_with(vk::Result::eErrorDeviceLost));
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::driver_error);
    REQUIRE(std::string(e.what()).find("VK_ERROR_DEVICE_LOST") != std::string::npos);
    REQUIRE(std::string(e.what()).find("fail_with(vk::Result::eErrorDeviceLost)") != std::string::npos);
  }
  try {
    TRINE_VK(fail_with(vk::Result::eErrorOutOfDeviceMemory));
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::out_of_memory);
    REQUIRE(std::string(e.what()).find("VK_ERROR_OUT_OF_DEVICE_MEMORY") != std::string::npos);
  }
}
#endif
