// Checks of the reference oracle itself against small cases worked out by hand.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "reference/reference.hpp"

using trine::ref::Array;
namespace ref = trine::ref;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaN must meet NaN and an infinity the same infinity; everything else agrees to `tol`, relative.
void require_values(const Array& got, const std::vector<std::int64_t>& shape, const std::vector<double>& want,
                    double tol = 1e-12) {
  REQUIRE(got.shape == shape);
  REQUIRE(got.data.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.data[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got.data[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got.data[i] == want[i]);
    } else {
      CHECK(got.data[i] == Approx(want[i]).epsilon(tol).margin(tol));
    }
  }
}

double round_f16(double v) {
  return ref::run(trine::OpKind::cast, {Array{{}, {v}}}, trine::CastParams{trine::DType::f16}).data[0];
}
double round_bf16(double v) { return ref::round_to_dtype(v, trine::DType::bf16); }

}  // namespace

// ---- matmul family ----

TEST_CASE("reference matmul of a 2x3 by a 3x2", "[reference]") {
  const Array a{{2, 3}, {1, 2, 3, 4, 5, 6}};
  const Array b{{3, 2}, {7, 8, 9, 10, 11, 12}};
  require_values(ref::matmul(a, b), {2, 2}, {58, 64, 139, 154});
}

TEST_CASE("reference matmul transposes the last two dims of a flagged input", "[reference]") {
  const Array a_t{{3, 2}, {1, 4, 2, 5, 3, 6}};     // a^T of the case above
  const Array b_t{{2, 3}, {7, 9, 11, 8, 10, 12}};  // b^T
  const Array a{{2, 3}, {1, 2, 3, 4, 5, 6}};
  const Array b{{3, 2}, {7, 8, 9, 10, 11, 12}};
  require_values(ref::matmul(a_t, b, {.trans_a = true}), {2, 2}, {58, 64, 139, 154});
  require_values(ref::matmul(a, b_t, {.trans_b = true}), {2, 2}, {58, 64, 139, 154});
  require_values(ref::matmul(a_t, b_t, {.trans_a = true, .trans_b = true}), {2, 2}, {58, 64, 139, 154});
  // Square operands make a wrong transpose visible: [[1,2],[3,4]]^T @ I = [[1,3],[2,4]].
  const Array sq{{2, 2}, {1, 2, 3, 4}};
  const Array eye{{2, 2}, {1, 0, 0, 1}};
  require_values(ref::matmul(sq, eye, {.trans_a = true}), {2, 2}, {1, 3, 2, 4});
  require_values(ref::matmul(eye, sq, {.trans_b = true}), {2, 2}, {1, 3, 2, 4});
}

TEST_CASE("reference matmul broadcasts batch dims", "[reference]") {
  // a [2, 1, 2, 2] holds I and 2I; b [3, 2, 2] holds three matrices: out[i][j] = (i + 1) * b[j].
  const Array a{{2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}};
  const std::vector<double> bv = {1, 2, 3, 4, 0, 1, 1, 0, 5, -5, 7, 9};
  const Array b{{3, 2, 2}, bv};
  const Array out = ref::matmul(a, b);
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (double v : bv) want.push_back((i + 1) * v);
  }
  require_values(out, {2, 3, 2, 2}, want);

  // A rank-2 operand broadcasts against every batch of the other.
  const Array swap{{2, 2}, {0, 1, 1, 0}};
  require_values(ref::matmul(b, swap), {3, 2, 2}, {2, 1, 4, 3, 1, 0, 0, 1, -5, 5, 9, 7});
}

TEST_CASE("reference matmul of K == 0 is zeros, other empty dims give empty results", "[reference]") {
  require_values(ref::matmul(Array{{2, 0}, {}}, Array{{0, 3}, {}}), {2, 3}, {0, 0, 0, 0, 0, 0});
  require_values(ref::matmul(Array{{0, 3}, {}}, Array{{3, 2}, {1, 2, 3, 4, 5, 6}}), {0, 2}, {});
  CHECK_THROWS_AS(ref::matmul(Array{{2, 3}, {1, 2, 3, 4, 5, 6}}, Array{{2, 3}, {1, 2, 3, 4, 5, 6}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(ref::matmul(Array{{2, 2, 2}, std::vector<double>(8)}, Array{{3, 2, 2}, std::vector<double>(12)}),
                  std::invalid_argument);
}

TEST_CASE("reference gemv and dot", "[reference]") {
  const Array a{{3, 2}, {1, 2, 3, 4, 5, 6}};
  require_values(ref::gemv(a, Array{{2}, {1, -1}}), {3}, {-1, -1, -1});
  require_values(ref::gemv(a, Array{{3}, {1, 0, 2}}, {.trans = true}), {2}, {11, 14});
  require_values(ref::dot(Array{{3}, {1, 2, 3}}, Array{{3}, {4, 5, 6}}), {}, {32});
  require_values(ref::dot(Array{{0}, {}}, Array{{0}, {}}), {}, {0});
}

// ---- element-wise ----

TEST_CASE("reference broadcast_shapes follows numpy", "[reference]") {
  CHECK(ref::broadcast_shapes({5, 1, 3}, {4, 1}) == std::vector<std::int64_t>{5, 4, 3});
  CHECK(ref::broadcast_shapes({}, {2}) == std::vector<std::int64_t>{2});
  CHECK(ref::broadcast_shapes({0}, {1}) == std::vector<std::int64_t>{0});
  CHECK_THROWS_AS(ref::broadcast_shapes({2, 3}, {4, 3}), std::invalid_argument);
  CHECK_THROWS_AS(ref::broadcast_shapes({0}, {2}), std::invalid_argument);
}

TEST_CASE("reference binary ops broadcast and divide as IEEE does", "[reference]") {
  const Array col{{2, 1}, {1, 2}};
  const Array row{{3}, {10, 20, 30}};
  require_values(ref::add(col, row), {2, 3}, {11, 21, 31, 12, 22, 32});
  require_values(ref::sub(row, col), {2, 3}, {9, 19, 29, 8, 18, 28});
  require_values(ref::mul(col, row), {2, 3}, {10, 20, 30, 20, 40, 60});
  require_values(ref::div(Array{{4}, {1, -1, 0, 6}}, Array{{4}, {0, 0, 0, 4}}), {4}, {kInf, -kInf, kNaN, 1.5});
  require_values(ref::add(Array{{}, {1}}, Array{{}, {2}}), {}, {3});
  require_values(ref::add(Array{{0, 3}, {}}, Array{{3}, {1, 2, 3}}), {0, 3}, {});
  CHECK_THROWS_AS(ref::add(Array{{2}, {1, 2}}, Array{{3}, {1, 2, 3}}), std::invalid_argument);
}

TEST_CASE("reference scale", "[reference]") {
  require_values(ref::scale(Array{{3}, {1, -2, kNaN}}, {.alpha = 2, .beta = 1}), {3}, {3, -3, kNaN});
}

TEST_CASE("reference activations at ordinary points", "[reference]") {
  const double e = std::exp(1.0);
  require_values(ref::relu(Array{{3}, {-1, 0, 2}}), {3}, {0, 0, 2});
  require_values(ref::leaky_relu(Array{{2}, {-10, 5}}, 0.1), {2}, {-1, 5});
  require_values(ref::elu(Array{{2}, {-1, 3}}, 2.0), {2}, {2 * (1 / e - 1), 3});
  require_values(ref::sigmoid(Array{{2}, {0, 1}}), {2}, {0.5, 1 / (1 + 1 / e)});
  require_values(ref::tanh(Array{{1}, {0.5}}), {1}, {std::tanh(0.5)});
  require_values(ref::silu(Array{{2}, {0, 1}}), {2}, {0, 1 / (1 + 1 / e)});
  // Phi(1) = 0.8413447460685429, Phi(-1) = 1 - Phi(1), Phi(-10) = 7.619853024160527e-24.
  require_values(ref::gelu(Array{{2}, {1, -1}}), {2}, {0.8413447460685429, -0.15865525393145707});
  // Far into the negative tail 1 + erf cancels to 0 in doubles; the oracle must keep the digits.
  CHECK(ref::gelu(Array{{1}, {-10}}).data[0] == Approx(-7.619853024160527e-23).epsilon(1e-10));
  const double c = std::sqrt(2 / std::numbers::pi);
  auto gelu_tanh_formula = [&](double x) { return x / 2 * (1 + std::tanh(c * (x + 0.044715 * x * x * x))); };
  require_values(ref::gelu_tanh(Array{{3}, {1, -1, 2.5}}), {3},
                 {gelu_tanh_formula(1), gelu_tanh_formula(-1), gelu_tanh_formula(2.5)});
  require_values(ref::clip(Array{{3}, {-1, 0.5, 2}}, 0, 1), {3}, {0, 0.5, 1});
  CHECK_THROWS_AS(ref::clip(Array{{1}, {0}}, 1, 0), std::invalid_argument);
}

TEST_CASE("reference activations at infinities and NaN", "[reference]") {
  const Array x{{3}, {-kInf, kInf, kNaN}};
  require_values(ref::relu(x), {3}, {0, kInf, kNaN});
  require_values(ref::leaky_relu(x, 0.01), {3}, {-kInf, kInf, kNaN});
  require_values(ref::elu(x, 1.5), {3}, {-1.5, kInf, kNaN});
  require_values(ref::sigmoid(x), {3}, {0, 1, kNaN});
  require_values(ref::tanh(x), {3}, {-1, 1, kNaN});
  require_values(ref::silu(x), {3}, {0, kInf, kNaN});
  require_values(ref::gelu(x), {3}, {0, kInf, kNaN});
  require_values(ref::gelu_tanh(x), {3}, {0, kInf, kNaN});
  require_values(ref::clip(x, -2, 3), {3}, {-2, 3, kNaN});
}

TEST_CASE("reference bias_act adds the bias along the last axis then activates", "[reference]") {
  const Array x{{2, 2}, {1, -2, 3, -4}};
  const Array bias{{2}, {0.5, 3}};
  require_values(ref::bias_act(x, bias, {}), {2, 2}, {1.5, 1, 3.5, -1});
  require_values(ref::bias_act(x, bias, {.act = trine::Activation::relu}), {2, 2}, {1.5, 1, 3.5, 0});
  require_values(ref::bias_act(x, bias, {.act = trine::Activation::clip, .alpha = -2, .beta = 3}), {2, 2},
                 {1.5, 1, 3, -1});
  require_values(ref::bias_act(x, bias, {.act = trine::Activation::leaky_relu, .alpha = 0.5}), {2, 2},
                 {1.5, 1, 3.5, -0.5});
  CHECK_THROWS_AS(ref::bias_act(x, Array{{3}, {1, 2, 3}}, {}), std::invalid_argument);
}

// ---- softmax ----

TEST_CASE("reference softmax of ordinary rows, along any axis", "[reference]") {
  const double l3 = std::log(3.0);
  require_values(ref::softmax(Array{{2, 2}, {0, l3, 5, 5}}), {2, 2}, {0.25, 0.75, 0.5, 0.5});
  require_values(ref::softmax(Array{{2, 2}, {0, 0, l3, 0}}, 0), {2, 2}, {0.25, 0.5, 0.75, 0.5});
  // The middle axis of [1, 2, 2]: columns {0, l3} and {7, 7}.
  require_values(ref::softmax(Array{{1, 2, 2}, {0, 7, l3, 7}}, -2), {1, 2, 2}, {0.25, 0.5, 0.75, 0.5});
  require_values(ref::log_softmax(Array{{2}, {0, l3}}), {2}, {std::log(0.25), std::log(0.75)});
  CHECK_THROWS_AS(ref::softmax(Array{{2}, {0, 0}}, 1), std::invalid_argument);
}

TEST_CASE("reference softmax special rows", "[reference]") {
  // Rows: some -inf, all -inf, huge finite, huge and equal, +inf present, NaN present.
  const Array x{{6, 3}, {0, -kInf, 0, -kInf, -kInf, -kInf, 1e30, 0, -1e30, 1e30, 1e30, 0, kInf, 0, 1, kNaN, 0, 1}};
  require_values(ref::softmax(x), {6, 3},
                 {0.5, 0, 0.5, kNaN, kNaN, kNaN, 1, 0, 0, 0.5, 0.5, 0, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  const double half = std::log(0.5);
  require_values(
      ref::log_softmax(x), {6, 3},
      {half, -kInf, half, kNaN, kNaN, kNaN, 0, -1e30, -2e30, half, half, -1e30, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
}

// ---- norms ----

TEST_CASE("reference layernorm uses the biased variance", "[reference]") {
  const double eps = 1e-5f;                // what NormParams carries
  const double d = std::sqrt(1.25 + eps);  // mean 2.5, biased variance 1.25
  const Array x{{2, 4}, {1, 2, 3, 4, 5, 5, 5, 5}};
  require_values(ref::layernorm(x, ref::absent(), ref::absent(), eps), {2, 4},
                 {-1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d, 0, 0, 0, 0});
  const Array gamma{{4}, {1, 2, 1, 2}};
  const Array beta{{4}, {0, 0, 1, 1}};
  require_values(ref::layernorm(x, gamma, beta, eps), {2, 4},
                 {-1.5 / d, -1.0 / d, 0.5 / d + 1, 3.0 / d + 1, 0, 0, 1, 1});
  // Through run(): beta missing from the vector, and gamma absent while beta is given.
  require_values(ref::run(trine::OpKind::layernorm, {x, gamma}, trine::NormParams{}), {2, 4},
                 {-1.5 / d, -1.0 / d, 0.5 / d, 3.0 / d, 0, 0, 0, 0});
  require_values(ref::run(trine::OpKind::layernorm, {x, ref::absent(), beta}, trine::NormParams{}), {2, 4},
                 {-1.5 / d, -0.5 / d, 0.5 / d + 1, 1.5 / d + 1, 0, 0, 1, 1});
  CHECK_THROWS_AS(ref::layernorm(x, Array{{3}, {1, 1, 1}}, ref::absent(), eps), std::invalid_argument);
  CHECK_THROWS_AS(ref::layernorm(x, ref::absent(), ref::absent(), 0), std::invalid_argument);
}

TEST_CASE("reference rmsnorm", "[reference]") {
  const double eps = 1e-6;
  const double r = std::sqrt(12.5 + eps);  // mean of 9 and 16
  require_values(ref::rmsnorm(Array{{2}, {3, 4}}, ref::absent(), eps), {2}, {3 / r, 4 / r});
  require_values(ref::rmsnorm(Array{{2}, {3, 4}}, Array{{2}, {2, -1}}, eps), {2}, {6 / r, -4 / r});
  require_values(ref::run(trine::OpKind::rmsnorm, {Array{{1, 2}, {0, 0}}}, trine::NormParams{}), {1, 2}, {0, 0});
}

// ---- conv2d ----

TEST_CASE("reference conv2d, plain and with bias", "[reference]") {
  const Array x{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const Array ones{{1, 1, 2, 2}, {1, 1, 1, 1}};
  require_values(ref::conv2d(x, ones, ref::absent()), {1, 1, 2, 2}, {12, 16, 24, 28});
  require_values(ref::conv2d(x, ones, Array{{1}, {-1}}), {1, 1, 2, 2}, {11, 15, 23, 27});
  // Cross-correlation, not convolution: the kernel is not flipped.
  const Array corner{{1, 1, 2, 2}, {1, 0, 0, 0}};
  require_values(ref::conv2d(x, corner, ref::absent()), {1, 1, 2, 2}, {1, 2, 4, 5});
}

TEST_CASE("reference conv2d with padding, stride and dilation", "[reference]") {
  const Array x{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const Array ones{{1, 1, 2, 2}, {1, 1, 1, 1}};
  // P = (3 + 2 - 1 - 1) / 2 + 1 = 2: windows rows {-1,0} and {1,2}, the same for columns.
  require_values(ref::conv2d(x, ones, ref::absent(), {.stride = 2, .padding = 1}), {1, 1, 2, 2}, {1, 5, 11, 28});
  // Dilation 2 spreads the 2x2 kernel over the four corners.
  require_values(ref::conv2d(x, ones, ref::absent(), {.dilation = 2}), {1, 1, 1, 1}, {20});
  // Different strides per axis.
  const Array wide{{1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}};
  const Array one{{1, 1, 1, 1}, {1}};
  require_values(ref::conv2d(wide, one, ref::absent(), {.stride = trine::Pair2(1, 2)}), {1, 1, 2, 2}, {1, 3, 5, 7});
  // Padding on one axis only: a [1, 3] kernel of ones over padded rows.
  const Array row3{{1, 1, 1, 3}, {1, 1, 1}};
  require_values(ref::conv2d(x, row3, ref::absent(), {.padding = trine::Pair2(0, 1)}), {1, 1, 3, 3},
                 {3, 6, 5, 9, 15, 11, 15, 24, 17});
  CHECK_THROWS_AS(ref::conv2d(x, Array{{1, 1, 4, 4}, std::vector<double>(16, 1)}, ref::absent()),
                  std::invalid_argument);
}

TEST_CASE("reference conv2d groups and batches", "[reference]") {
  // Two images; channel 0 all 1 and channel 1 all 10 in the first, doubled in the second.
  std::vector<double> xv;
  for (double s : {1.0, 2.0}) {
    for (double c : {1.0, 10.0}) {
      for (int i = 0; i < 4; ++i) xv.push_back(s * c);
    }
  }
  const Array x{{2, 2, 2, 2}, xv};
  // groups 2: filter k reads only channel k.
  const Array w_grouped{{2, 1, 1, 1}, {2, 3}};
  require_values(ref::conv2d(x, w_grouped, Array{{2}, {0, 1}}, {.groups = 2}), {2, 2, 2, 2},
                 {2, 2, 2, 2, 31, 31, 31, 31, 4, 4, 4, 4, 61, 61, 61, 61});
  // groups 1: every filter reads both channels.
  const Array w_full{{2, 2, 1, 1}, {1, 1, 1, -1}};
  require_values(ref::conv2d(x, w_full, ref::absent()), {2, 2, 2, 2},
                 {11, 11, 11, 11, -9, -9, -9, -9, 22, 22, 22, 22, -18, -18, -18, -18});
  // Four filters over two groups of two channels each: filters 2 and 3 see channels 2 and 3 only.
  const Array x4{{1, 4, 1, 1}, {1, 2, 3, 4}};
  const Array w4{{4, 2, 1, 1}, {1, 0, 0, 1, 1, 0, 0, 1}};
  require_values(ref::conv2d(x4, w4, ref::absent(), {.groups = 2}), {1, 4, 1, 1}, {1, 2, 3, 4});
  CHECK_THROWS_AS(ref::conv2d(x4, w4, ref::absent(), {.groups = 3}), std::invalid_argument);
  CHECK_THROWS_AS(ref::conv2d(x4, w4, ref::absent(), {.groups = 1}), std::invalid_argument);
}

// ---- attention ----

TEST_CASE("reference causal attention: the first query sees one key", "[reference]") {
  const Array q{{2, 1}, {1, 0}};
  const Array k{{2, 1}, {1, 1}};
  const Array v{{2, 2}, {1, 2, 3, 4}};
  // Query 0 sees key 0 only: v[0]. Query 1 scores 0 against both keys: the mean of the rows.
  require_values(ref::attention(q, k, v, {.causal = true}), {2, 2}, {1, 2, 2, 3});
  // Without the mask query 0 weighs both keys by e^1 : e^1, the same mean.
  require_values(ref::attention(q, k, v, {}), {2, 2}, {2, 3, 2, 3});
}

TEST_CASE("reference causal attention aligns the mask to the end", "[reference]") {
  // Lq = 2, Lk = 3: query 0 sees keys 0..1, query 1 all three. Equal scores make plain means.
  const Array q{{2, 1}, {0, 0}};
  const Array k{{3, 1}, {1, 2, 3}};
  const Array v{{3, 1}, {3, 6, 12}};
  require_values(ref::attention(q, k, v, {.causal = true}), {2, 1}, {4.5, 7});
  // A masked value row holding inf must not leak into query 0.
  const Array v_inf{{3, 1}, {3, 6, kInf}};
  require_values(ref::attention(q, k, v_inf, {.causal = true}), {2, 1}, {4.5, kInf});
  CHECK_THROWS_AS(
      ref::attention(Array{{3, 1}, {0, 0, 0}}, Array{{2, 1}, {0, 0}}, Array{{2, 1}, {0, 0}}, {.causal = true}),
      std::invalid_argument);
}

TEST_CASE("reference attention scale, default 1/sqrt(D), and batches", "[reference]") {
  // D = 4: scores are 4 * 1/2 = 2 and 0; the output is the weight of key 0.
  const Array q{{1, 4}, {1, 1, 1, 1}};
  const Array k{{2, 4}, {1, 1, 1, 1, 0, 0, 0, 0}};
  const Array v{{2, 1}, {1, 0}};
  const double e2 = std::exp(2.0);
  require_values(ref::attention(q, k, v, {}), {1, 1}, {e2 / (e2 + 1)});
  const double e1 = std::exp(1.0);
  require_values(ref::attention(q, k, v, {.scale = 0.25f}), {1, 1}, {e1 / (e1 + 1)});
  // Leading dims [2]: each batch uses its own q, k, v.
  const Array qb{{2, 1, 1}, {0, 0}};
  const Array kb{{2, 2, 1}, {0, 0, 0, 0}};
  const Array vb{{2, 2, 1}, {1, 3, 10, 20}};
  require_values(ref::attention(qb, kb, vb, {}), {2, 1, 1}, {2, 15});
  // Two q heads cannot share three kv heads (dim -3 must divide q's).
  CHECK_THROWS_AS(ref::attention(qb, Array{{3, 2, 1}, {0, 0, 0, 0, 0, 0}}, Array{{3, 2, 1}, {0, 0, 0, 0, 0, 0}}, {}),
                  std::invalid_argument);
}

TEST_CASE("reference grouped-query attention and sliding window", "[reference]") {
  // Hq = 4 heads over Hkv = 2: q heads 0, 1 read kv head 0 and heads 2, 3 kv head 1 (h / 2, not h % 2).
  // Equal scores make plain means of the kv head's value rows.
  const Array q{{4, 1, 1}, {0, 0, 0, 0}};
  const Array k{{2, 2, 1}, {0, 0, 0, 0}};
  const Array v{{2, 2, 1}, {1, 3, 10, 20}};
  require_values(ref::attention(q, k, v, {}), {4, 1, 1}, {2, 2, 15, 15});
  // Leading dims before the heads stay equal: [2, 2] q heads over [2, 1] kv heads.
  const Array q2{{2, 2, 1, 1}, {0, 0, 0, 0}};
  const Array k2{{2, 1, 2, 1}, {0, 0, 0, 0}};
  require_values(ref::attention(q2, k2, Array{{2, 1, 2, 1}, {1, 3, 10, 20}}, {}), {2, 2, 1, 1}, {2, 2, 15, 15});
  CHECK_THROWS_AS(ref::attention(Array{{3, 1, 1}, {0, 0, 0}}, k, v, {}), std::invalid_argument);

  // Window 2, causal: query i sees keys i - 1 and i.
  const Array qw{{3, 1}, {0, 0, 0}};
  const Array kw{{3, 1}, {0, 0, 0}};
  const Array vw{{3, 1}, {3, 6, 12}};
  require_values(ref::attention(qw, kw, vw, {.causal = true, .window = 2}), {3, 1}, {3, 4.5, 9});
  require_values(ref::attention(qw, kw, vw, {.causal = true, .window = 1}), {3, 1}, {3, 6, 12});
  require_values(ref::attention(qw, kw, vw, {.causal = true, .window = 3}), {3, 1}, {3, 4.5, 7});
  // Aligned to the end: Lq = 2, Lk = 4 puts the queries at positions 2 and 3.
  const Array vw4{{4, 1}, {2, 4, 8, 16}};
  require_values(ref::attention(Array{{2, 1}, {0, 0}}, Array{{4, 1}, {0, 0, 0, 0}}, vw4, {.causal = true, .window = 2}),
                 {2, 1}, {6, 12});
  CHECK_THROWS_AS(ref::attention(qw, kw, vw, {.window = 2}), std::invalid_argument);
}

// ---- rope ----

TEST_CASE("reference rope rotates interleaved pairs", "[reference]") {
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  // Row 0 is position 0 (unchanged), row 1 position 1 (rotated by 1 radian).
  require_values(ref::rope(Array{{2, 2}, {1, 0, 1, 0}}), {2, 2}, {1, 0, c1, s1});
  // D = 4, base 10000: pair 1 turns at 10000^(-2/4) = 0.01 per position.
  require_values(ref::rope(Array{{1, 4}, {0, 1, 0, 1}}, {.position_offset = 1}), {1, 4},
                 {-s1, c1, -std::sin(0.01), std::cos(0.01)});
  // A custom base: pair 1 of D = 4 turns at 4^(-1/2) = 0.5 per position; position 2 turns it by 1.
  require_values(ref::rope(Array{{1, 4}, {1, 0, 1, 0}}, {.base = 4, .position_offset = 2}), {1, 4},
                 {std::cos(2.0), std::sin(2.0), c1, s1});
  // Leading dims: positions restart at each [L, D] slice.
  require_values(ref::rope(Array{{2, 1, 2}, {1, 0, 1, 0}}, {.position_offset = 1}), {2, 1, 2}, {c1, s1, c1, s1});
  CHECK_THROWS_AS(ref::rope(Array{{1, 3}, {1, 2, 3}}), std::invalid_argument);
}

TEST_CASE("reference rope rotates halves: pair i is (x[i], x[i + D/2])", "[reference]") {
  using trine::RopePairs;
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  // D = 2: one pair, the same in both forms.
  require_values(ref::rope(Array{{2, 2}, {1, 0, 1, 0}}, {.pairs = RopePairs::halves}), {2, 2}, {1, 0, c1, s1});
  // D = 4 at position 1: pair 0 is (x[0], x[2]) turning by 1, pair 1 (x[1], x[3]) by 0.01.
  require_values(ref::rope(Array{{1, 4}, {1, 1, 0, 0}}, {.position_offset = 1, .pairs = RopePairs::halves}), {1, 4},
                 {c1, std::cos(0.01), s1, std::sin(0.01)});
  require_values(ref::rope(Array{{1, 4}, {0, 0, 1, 1}}, {.position_offset = 1, .pairs = RopePairs::halves}), {1, 4},
                 {-s1, -std::sin(0.01), c1, std::cos(0.01)});
  // D = 6 (an odd half), base 8: pair 2 is (x[2], x[5]) and turns at 8^(-4/6) = 1/4 per position.
  require_values(
      ref::rope(Array{{1, 6}, {0, 0, 1, 0, 0, 0}}, {.base = 8, .position_offset = 4, .pairs = RopePairs::halves}),
      {1, 6}, {0, 0, c1, 0, 0, s1});
  // Leading dims: positions restart at each [L, D] slice.
  require_values(
      ref::rope(Array{{2, 1, 4}, {1, 0, 0, 0, 1, 0, 0, 0}}, {.position_offset = 1, .pairs = RopePairs::halves}),
      {2, 1, 4}, {c1, 0, s1, 0, c1, 0, s1, 0});
  CHECK_THROWS_AS(ref::rope(Array{{1, 3}, {1, 2, 3}}, {.pairs = RopePairs::halves}), std::invalid_argument);
}

// ---- reductions ----

TEST_CASE("reference sum, mean and max along an axis", "[reference]") {
  const Array x{{2, 3}, {1, 2, 3, 4, 5, 6}};
  require_values(ref::sum(x, 0), {3}, {5, 7, 9});
  require_values(ref::sum(x, -1, true), {2, 1}, {6, 15});
  require_values(ref::mean(x, 1), {2}, {2, 5});
  require_values(ref::mean(x, 0, true), {1, 3}, {2.5, 3.5, 4.5});
  require_values(ref::max(x, 0), {3}, {4, 5, 6});
  require_values(ref::sum(Array{{3}, {1, 2, 3}}), {}, {6});
  // Middle axis of [2, 2, 2].
  require_values(ref::sum(Array{{2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}}, 1), {2, 2}, {4, 6, 12, 14});
  CHECK_THROWS_AS(ref::sum(x, 2), std::invalid_argument);
  CHECK_THROWS_AS(ref::sum(x, -3), std::invalid_argument);
}

TEST_CASE("reference max propagates NaN and handles -kInf", "[reference]") {
  require_values(ref::max(Array{{2, 3}, {1, kNaN, 3, -kInf, -kInf, -kInf}}), {2}, {kNaN, -kInf});
  require_values(ref::max(Array{{3}, {kNaN, 5, 7}}), {}, {kNaN});
  require_values(ref::sum(Array{{2}, {kInf, -kInf}}), {}, {kNaN});
}

// ---- copy and cast ----

TEST_CASE("reference cast to f16 rounds to nearest even and overflows to kInf", "[reference]") {
  CHECK(round_f16(65504) == 65504);
  CHECK(round_f16(65519) == 65504);
  CHECK(round_f16(65520) == kInf);
  CHECK(round_f16(-65520) == -kInf);
  CHECK(round_f16(1 + std::ldexp(1, -11)) == 1);                          // tie, 1 is even
  CHECK(round_f16(1 + 3 * std::ldexp(1, -11)) == 1 + std::ldexp(1, -9));  // tie, rounds up to even
  CHECK(round_f16(1 + std::ldexp(1, -11) + std::ldexp(1, -20)) == 1 + std::ldexp(1, -10));
  CHECK(round_f16(0.1) == 0.0999755859375);
  CHECK(std::isnan(round_f16(kNaN)));
  CHECK(round_f16(kInf) == kInf);
  // Subnormals: the grid is 2^-24 below 2^-14.
  CHECK(round_f16(std::ldexp(1, -24)) == std::ldexp(1, -24));
  CHECK(round_f16(std::ldexp(1, -25)) == 0);  // tie with 0
  CHECK(round_f16(3 * std::ldexp(1, -26)) == std::ldexp(1, -24));
  CHECK(round_f16(std::ldexp(1, -14) - std::ldexp(1, -26)) == std::ldexp(1, -14));
  const double neg_zero = round_f16(-1e-9);
  CHECK(neg_zero == 0);
  CHECK(std::signbit(neg_zero));
}

TEST_CASE("reference cast to bf16 and f32", "[reference]") {
  CHECK(round_bf16(1 + std::ldexp(1, -8)) == 1);
  CHECK(round_bf16(1 + 3 * std::ldexp(1, -8)) == 1 + std::ldexp(1, -6));
  CHECK(round_bf16(FLT_MAX) == kInf);                               // above the midpoint between bf16's max and 2^128
  CHECK(round_bf16(std::ldexp(255, 120)) == std::ldexp(255, 120));  // bf16's max, (2 - 2^-7) * 2^127
  CHECK(round_bf16(-3.0) == -3.0);
  using trine::DType;
  CHECK(ref::round_to_dtype(1 + std::ldexp(1, -30), DType::f32) == 1);
  CHECK(ref::round_to_dtype(0.1, DType::f32) == static_cast<double>(0.1f));
  CHECK(ref::round_to_dtype(1e39, DType::f32) == kInf);
  CHECK(ref::round_to_dtype(std::ldexp(1, -149), DType::f32) == std::ldexp(1, -149));  // smallest f32 subnormal
  // cast reads f32 first: 1 + 2^-11 + 2^-40 becomes 1 + 2^-11, a tie that goes to 1.
  CHECK(round_f16(1 + std::ldexp(1, -11) + std::ldexp(1, -40)) == 1);
  require_values(ref::cast(Array{{2, 2}, {1, 65520, kNaN, -0.5}}, DType::f16), {2, 2}, {1, kInf, kNaN, -0.5});
  require_values(ref::cast(Array{{0}, {}}, DType::bf16), {0}, {});
}

TEST_CASE("reference copy keeps shape and values", "[reference]") {
  require_values(ref::copy(Array{{2, 1}, {kNaN, -kInf}}), {2, 1}, {kNaN, -kInf});
}

// ---- run() ----

TEST_CASE("reference run dispatches with each op's params", "[reference]") {
  using trine::OpKind;
  const Array x{{2, 2}, {-1, 2, -3, 4}};
  require_values(ref::run(OpKind::matmul, {x, x}, trine::MatmulParams{.trans_a = true}), {2, 2}, {10, -14, -14, 20});
  require_values(ref::run(OpKind::gemv, {x, Array{{2}, {1, 1}}}, trine::GemvParams{.trans = true}), {2}, {-4, 6});
  require_values(ref::run(OpKind::sub, {x, Array{{2}, {1, 2}}}, {}), {2, 2}, {-2, 0, -4, 2});
  require_values(ref::run(OpKind::leaky_relu, {x}, trine::ActParams{.alpha = 0.5f}), {2, 2}, {-0.5, 2, -1.5, 4});
  require_values(ref::run(OpKind::elu, {x}, trine::ActParams{.alpha = 2}), {2, 2},
                 {2 * std::expm1(-1.0), 2, 2 * std::expm1(-3.0), 4});
  require_values(ref::run(OpKind::clip, {x}, trine::ActParams{.alpha = -2, .beta = 3}), {2, 2}, {-1, 2, -2, 3});
  require_values(ref::run(OpKind::scale, {x}, trine::ScaleParams{.alpha = -1, .beta = 1}), {2, 2}, {2, -1, 4, -3});
  require_values(ref::run(OpKind::sum, {x}, trine::ReduceParams{.axis = 0, .keepdims = true}), {1, 2}, {-4, 6});
  require_values(ref::run(OpKind::max, {x}, trine::ReduceParams{.axis = 1}), {2}, {2, 4});
  require_values(ref::run(OpKind::softmax, {Array{{2, 2}, {0, 0, 0, 0}}}, trine::AxisParams{.axis = 0}), {2, 2},
                 {0.5, 0.5, 0.5, 0.5});
  require_values(ref::run(OpKind::rope, {Array{{1, 2}, {1, 0}}}, trine::RopeParams{.position_offset = 1}), {1, 2},
                 {std::cos(1.0), std::sin(1.0)});
  const Array img{{1, 1, 2, 2}, {1, 2, 3, 4}};
  require_values(ref::run(OpKind::conv2d, {img, Array{{1, 1, 1, 1}, {2}}}, trine::Conv2dParams{}), {1, 1, 2, 2},
                 {2, 4, 6, 8});
  require_values(
      ref::run(OpKind::conv2d, {img, Array{{1, 1, 1, 1}, {2}}, Array{{1}, {1}}}, trine::Conv2dParams{.stride = 2}),
      {1, 1, 1, 1}, {3});
  require_values(ref::run(OpKind::cast, {Array{{1}, {65520}}}, trine::CastParams{trine::DType::bf16}), {1}, {65536});
}

TEST_CASE("reference run rejects wrong params and input counts", "[reference]") {
  using trine::OpKind;
  const Array x{{2}, {1, 2}};
  CHECK_THROWS_AS(ref::run(OpKind::relu, {x}, trine::NoParams{}), std::invalid_argument);
  CHECK_THROWS_AS(ref::run(OpKind::matmul, {x, x}, trine::GemvParams{}), std::invalid_argument);
  CHECK_THROWS_AS(ref::run(OpKind::add, {x}, {}), std::invalid_argument);
  CHECK_THROWS_AS(ref::run(OpKind::add, {x, x, x}, {}), std::invalid_argument);
  CHECK_THROWS_AS(ref::run(OpKind::add, {x, ref::absent()}, {}), std::invalid_argument);
  CHECK_THROWS_AS(ref::run(OpKind::copy, {Array{{3}, {1, 2}}}, {}), std::invalid_argument);
}

TEST_CASE("reference matmul of 256^3 is quick enough to be an oracle", "[reference]") {
  std::vector<double> av(256 * 256), bv(256 * 256);
  for (std::size_t i = 0; i < av.size(); ++i) {
    av[i] = static_cast<double>(i % 7) - 3;
    bv[i] = static_cast<double>(i % 5) - 2;
  }
  const Array out = ref::matmul(Array{{256, 256}, av}, Array{{256, 256}, bv});
  // Spot-check one element against a direct sum.
  double want = 0;
  for (int kk = 0; kk < 256; ++kk) want += av[3 * 256 + kk] * bv[kk * 256 + 200];
  CHECK(out.data[3 * 256 + 200] == want);
}
