// The harness checked itself: the oracle's own decoding of raw storage, and that the error measure
// with each op's bound (tests/reference/bounds.hpp) fails results that are wrong in the ways
// kernels go wrong (one bad element, a small uniform bias, a dropped term, a wrong index) while
// passing the reference rounded to f32.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/reference/bounds.hpp"
#include "tests/reference/bridge.hpp"
#include "tests/reference/reference.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::ref::Array;

namespace {

// Deterministic values in [lo, hi) without trine's generator (a plain LCG).
Array values(const std::vector<std::int64_t>& shape, std::uint64_t seed, double lo = -1, double hi = 1) {
  Array a;
  a.shape = shape;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (std::int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    // An f32 value, as inputs are.
    a.data.push_back(static_cast<float>(lo + (hi - lo) * static_cast<double>(s >> 11) * 0x1p-53));
  }
  return a;
}

// The best an f32 kernel can return: the reference rounded to f32.
std::vector<double> rounded(const Array& a) {
  std::vector<double> out;
  for (double v : a.data) out.push_back(static_cast<float>(v));
  return out;
}

double error_of(const std::vector<double>& out, const Array& expect) { return ref::compare(out, expect).error; }

double bound_of(OpKind op, const OpParams& params, const Array& expect) {
  return ref::error_bound(op, params, expect.terms);
}

}  // namespace

TEST_CASE("the oracle decodes f32, f16 and bf16 bits itself", "[harness]") {
  using ref::decode_binary;
  CHECK(decode_binary(0x3C00, 5, 10) == 1.0);
  CHECK(decode_binary(0xC000, 5, 10) == -2.0);
  CHECK(decode_binary(0x7BFF, 5, 10) == 65504.0);
  CHECK(decode_binary(0x0001, 5, 10) == std::ldexp(1.0, -24));  // the smallest subnormal
  CHECK(decode_binary(0x0400, 5, 10) == std::ldexp(1.0, -14));  // the smallest normal
  CHECK(decode_binary(0x7C00, 5, 10) == std::numeric_limits<double>::infinity());
  CHECK(decode_binary(0xFC00, 5, 10) == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(decode_binary(0x7E00, 5, 10)));
  CHECK(decode_binary(0x3F80, 8, 7) == 1.0);
  CHECK(decode_binary(0x4049, 8, 7) == 3.140625);
  CHECK(decode_binary(0x0001, 8, 7) == std::ldexp(1.0, -133));
  CHECK(decode_binary(0x3F800000, 8, 23) == 1.0);
  CHECK(decode_binary(0x3EAAAAAB, 8, 23) == static_cast<double>(1.0f / 3.0f));
  CHECK(decode_binary(0x00000001, 8, 23) == std::ldexp(1.0, -149));
  CHECK(decode_binary(0x80000000, 8, 23) == 0.0);
  CHECK(std::signbit(decode_binary(0x80000000, 8, 23)));
}

TEST_CASE("the oracle reads views with its own index arithmetic", "[harness]") {
  const std::vector<float> v = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO(dtype_name(t));
    Tensor x = Tensor::from(v, {3, 4}, t);  // small integers: exact in every dtype
    Array whole = ref::from_tensor(x);
    CHECK(whole.shape == std::vector<std::int64_t>{3, 4});
    CHECK(whole.data == std::vector<double>(v.begin(), v.end()));
    Array tr = ref::from_tensor(x.transpose());
    CHECK(tr.shape == std::vector<std::int64_t>{4, 3});
    CHECK(tr.data == std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    Array sl = ref::from_tensor(x.slice(1, 1, 4, 2));  // columns 1 and 3: an offset and a stride
    CHECK(sl.data == std::vector<double>{1, 3, 5, 7, 9, 11});
    Array rows = ref::from_tensor(x.slice(0, 1, 3).transpose());
    CHECK(rows.data == std::vector<double>{4, 8, 5, 9, 6, 10, 7, 11});
    Array scalar = ref::from_tensor(x.slice(0, 2, 3).slice(1, 3, 4).reshape({}));
    CHECK(scalar.data == std::vector<double>{11});
  }
}

TEST_CASE("the measure passes the reference rounded to f32 and normalizes cancelling sums", "[harness]") {
  // A sum that cancels to nearly nothing: an error of one f32 rounding per term is no error.
  Array x{{4}, {1.0, 1e-7, -1.0, 3e-8}};
  Array s = ref::sum(x, 0, true);
  CHECK(error_of(rounded(s), s) == 0);
  std::vector<double> off = {s.data[0] + 2.0 * ref::f32_eps};  // what reordering the sum in f32 can give
  CHECK(error_of(off, s) <= bound_of(OpKind::sum, ReduceParams{0, true}, s));
  // NaN and inf must agree.
  Array r{{2}, {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}};
  CHECK(ref::compare({std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}, r)
            .specials_match);
  CHECK_FALSE(ref::compare({0.0, std::numeric_limits<double>::infinity()}, r).specials_match);
  CHECK_FALSE(ref::compare({std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}, r)
                  .specials_match);
  // A finite reference beyond f32's range is the infinity an f32 result must give.
  Array huge{{2}, {1e39, -0x1.ffffffp127}};  // the second: a tie with 2^128, to even: inf
  CHECK(ref::compare({std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}, huge)
            .specials_match);
  CHECK_FALSE(ref::compare({FLT_MAX, -std::numeric_limits<double>::infinity()}, huge).specials_match);
  Array largest{{1}, {0x1.fffffe7p127}};  // below the halfway point: rounds to FLT_MAX
  CHECK(ref::compare({FLT_MAX}, largest).error == 0);
  // An i32 result is compared exactly: 2^24 + 1 and 2^31 - 1 are not what f32 rounds them to.
  Array ints{{2}, {16777217.0, 2147483647.0}};
  CHECK(ref::compare({16777217.0, 2147483647.0}, ints, DType::i32).error == 0);
  CHECK(ref::compare({16777216.0, 2147483647.0}, ints, DType::i32).error > 0);
}

TEST_CASE("the measure fails a 10x error in one probability near 1e-9", "[harness]") {
  Array x = values({4, 64}, 1, -1, 1);
  x.data[64 + 5] = -17.5;  // row 1: exp(-17.5 - max) / sum is about 1e-9
  const AxisParams axis{-1};
  Array p = ref::softmax(x, -1);
  REQUIRE(p.data[64 + 5] < 3e-9);
  REQUIRE(p.data[64 + 5] > 3e-10);
  std::vector<double> out = rounded(p);
  const double bound = bound_of(OpKind::softmax, axis, p);
  CHECK(error_of(out, p) <= bound);
  out[64 + 5] *= 10;
  CHECK(error_of(out, p) > bound);
  // log_softmax: the same element off by log(10)
  Array lp = ref::log_softmax(x, -1);
  std::vector<double> lout = rounded(lp);
  lout[64 + 5] += std::log(10.0);
  CHECK(error_of(lout, lp) > bound_of(OpKind::log_softmax, axis, lp));
}

TEST_CASE("the measure fails a uniform 3e-5 relative bias", "[harness]") {
  auto biased = [](const Array& a) {
    std::vector<double> out;
    for (double v : a.data) out.push_back(static_cast<float>(v * (1 + 3e-5)));
    return out;
  };
  const Array a = values({31, 64}, 2), b = values({64, 33}, 3);
  const Array mm = ref::matmul(a, b);
  CHECK(error_of(biased(mm), mm) > bound_of(OpKind::matmul, MatmulParams{}, mm));
  const Array big = values({16, 32000}, 4, -20, 20);
  const Array sm = ref::softmax(big, -1);
  CHECK(error_of(biased(sm), sm) > bound_of(OpKind::softmax, AxisParams{-1}, sm));
  const Array wide = values({1000}, 5, -6, 6);
  for (OpKind op : {OpKind::gelu, OpKind::sigmoid, OpKind::tanh, OpKind::silu, OpKind::elu}) {
    const ActParams p{1.0f, 0.0f};
    const Array y = ref::run(op, {wide}, p);
    INFO(op_info(op).name);
    CHECK(error_of(biased(y), y) > bound_of(op, p, y));
  }
  const Array rows = values({5, 1000}, 6, -3, 5);
  const Array ln = ref::layernorm(rows, ref::absent(), ref::absent(), 1e-5);
  CHECK(error_of(biased(ln), ln) > bound_of(OpKind::layernorm, NormParams{}, ln));
  const Array rn = ref::rmsnorm(rows, ref::absent(), 1e-5);
  CHECK(error_of(biased(rn), rn) > bound_of(OpKind::rmsnorm, NormParams{}, rn));
  const Array total = ref::sum(rows, -1, false);
  CHECK(error_of(biased(total), total) > bound_of(OpKind::sum, ReduceParams{}, total));
  // Even one rounding's worth of bias fails the exact ops.
  const Array r = ref::relu(wide);
  CHECK(error_of(biased(r), r) > bound_of(OpKind::relu, ActParams{}, r));
}

TEST_CASE("the measure fails a dropped tail element", "[harness]") {
  // matmul with K = 33, a kernel that forgets the last k (a remainder loop that never runs)
  const Array a = values({17, 33}, 7), b = values({33, 9}, 8);
  const Array mm = ref::matmul(a, b);
  Array a_short = a;
  for (int i = 0; i < 17; ++i) a_short.data[static_cast<std::size_t>(i * 33 + 32)] = 0;
  CHECK(error_of(rounded(ref::matmul(a_short, b)), mm) > bound_of(OpKind::matmul, MatmulParams{}, mm));
  // dot of 1000: the last element left out
  const Array x = values({1000}, 9), y = values({1000}, 10);
  const Array d = ref::dot(x, y);
  Array x_short = x;
  x_short.data.back() = 0;
  CHECK(error_of(rounded(ref::dot(x_short, y)), d) > bound_of(OpKind::dot, NoParams{}, d));
  // a row sum of 127 missing its tail
  const Array row = values({3, 127}, 11);
  const Array s = ref::sum(row, -1, false);
  Array row_short = row;
  for (int i = 0; i < 3; ++i) row_short.data[static_cast<std::size_t>(i * 127 + 126)] = 0;
  CHECK(error_of(rounded(ref::sum(row_short, -1, false)), s) > bound_of(OpKind::sum, ReduceParams{}, s));
  // softmax of a row of 1000 whose normalizing sum misses the last exp
  Array z = values({1, 1000}, 12, -10, 10);
  z.data.back() = 9.5;  // a term that matters: a dropped tiny exp is below any f32 result's resolution
  const Array sm = ref::softmax(z, -1);
  double m = -std::numeric_limits<double>::infinity(), total = 0;
  for (double v : z.data) m = std::max(m, v);
  for (std::size_t i = 0; i + 1 < z.data.size(); ++i) total += std::exp(z.data[i] - m);
  std::vector<double> out;
  for (double v : z.data) out.push_back(static_cast<float>(std::exp(v - m) / total));
  CHECK(error_of(out, sm) > bound_of(OpKind::softmax, AxisParams{-1}, sm));
}

TEST_CASE("the measure fails a wrong index", "[harness]") {
  // gemv transposed read as if not: a[k][i] taken as a[i][k] on a square matrix
  const Array a = values({64, 64}, 13), x = values({64}, 14);
  const Array y = ref::gemv(a, x, GemvParams{true});
  CHECK(error_of(rounded(ref::gemv(a, x, GemvParams{false})), y) > bound_of(OpKind::gemv, GemvParams{true}, y));
  // matmul with b's columns off by one
  const Array p = values({9, 31}, 15), q = values({31, 8}, 16);
  const Array mm = ref::matmul(p, q);
  Array q_shift = q;
  for (int k = 0; k < 31; ++k) {
    for (int j = 0; j < 8; ++j)
      q_shift.data[static_cast<std::size_t>(k * 8 + j)] = q.data[static_cast<std::size_t>(k * 8 + (j + 1) % 8)];
  }
  CHECK(error_of(rounded(ref::matmul(p, q_shift)), mm) > bound_of(OpKind::matmul, MatmulParams{}, mm));
  // two neighbours of an element-wise result swapped
  const Array e = values({100}, 17, -6, 6);
  const Array g = ref::gelu(e);
  std::vector<double> out = rounded(g);
  std::swap(out[40], out[41]);
  CHECK(error_of(out, g) > bound_of(OpKind::gelu, ActParams{}, g));
  // a cast that rounds ties the wrong way, by one ulp of f16
  const Array c = ref::cast(values({100}, 18, -4, 4), DType::f16);
  std::vector<double> cout = rounded(c);
  cout[7] = std::nextafter(static_cast<float>(cout[7]), 10.0f);
  CHECK(error_of(cout, c) > bound_of(OpKind::cast, CastParams{DType::f16}, c));
}

TEST_CASE("the oracle's scales are the magnitudes of the terms", "[harness]") {
  const Array x{{3}, {1, -2, 0.5}}, y{{3}, {4, 1, -2}};
  const Array d = ref::dot(x, y);  // 4 - 2 - 1
  CHECK(d.data == std::vector<double>{1});
  CHECK(d.scale == std::vector<double>{7});
  CHECK(d.terms == 3);
  const Array s = ref::sum(Array{{2, 2}, {1, -1, 3, 2}}, 0, false);
  CHECK(s.data == std::vector<double>{4, 1});
  CHECK(s.scale == std::vector<double>{4, 3});
  CHECK(s.terms == 2);
  const Array a = ref::add(x, y);  // one rounding: measured against |a + b| itself
  CHECK(a.scale.empty());
  const Array p = ref::softmax(Array{{2}, {0, -3}}, -1);
  REQUIRE(p.scale.size() == 2);
  CHECK(p.scale[0] == Approx(p.data[0]));
  CHECK(p.scale[1] == Approx(4 * p.data[1]));  // p (1 + |x - max|)
  const Array mm = ref::matmul(Array{{1, 2}, {1, -1}}, Array{{2, 2}, {2, 3, 2, 5}});
  CHECK(mm.data == std::vector<double>{0, -2});
  CHECK(mm.scale == std::vector<double>{4, 8});
}
