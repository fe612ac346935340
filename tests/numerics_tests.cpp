// Special values: softmax rows with -k_inf / all -k_inf / huge values, activations at +-k_inf and NaN,
// as docs/ops.md documents them; norms of rows at the edges of the f32 range, on the device under
// test (TRINE_TEST_DEVICE); the transcendental ops, softmax and attention's weights within 4 ulps of
// the exact function of their input, far tails included. Runs once per CPU ISA too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {
constexpr float k_inf = std::numeric_limits<float>::infinity();
const float k_nan = std::numeric_limits<float>::quiet_NaN();

// f32 values on the device under test.
Tensor on_device(const std::vector<float>& x, const Shape& shape) {
  return Tensor::from(x, shape, DType::f32, test::test_device());
}

std::vector<float> run(Tensor (*op)(const Tensor&), const std::vector<float>& x) {
  return op(on_device(x, Shape{static_cast<std::int64_t>(x.size())})).to_vector();
}
}  // namespace

TEST_CASE("softmax of a row containing -inf gives 0 there and stays exact elsewhere", "[numerics]") {
  // lengths that exercise the vector body and the tail
  for (std::int64_t n : {3, 9, 33}) {  // n = 2 would be a row of all -inf
    std::vector<float> x(static_cast<std::size_t>(n), 0.0f);
    x[0] = -k_inf;
    x[static_cast<std::size_t>(n - 1)] = -k_inf;
    auto y = softmax(on_device(x, {1, n})).to_vector();
    auto ly = log_softmax(on_device(x, {1, n})).to_vector();
    CHECK(y[0] == 0.0f);
    CHECK(y[static_cast<std::size_t>(n - 1)] == 0.0f);
    CHECK(ly[0] == -k_inf);
    if (n > 2) {
      CHECK(y[1] == Approx(1.0 / static_cast<double>(n - 2)).epsilon(1e-6));
      CHECK(ly[1] == Approx(-std::log(static_cast<double>(n - 2))).epsilon(1e-6));
    }
  }
}

TEST_CASE("softmax of a row of all -k_inf is NaN (documented: 0/0, as numpy and PyTorch)", "[numerics]") {
  for (std::int64_t n : {1, 5, 40}) {
    std::vector<float> x(static_cast<std::size_t>(n), -k_inf);
    for (float v : softmax(on_device(x, {1, n})).to_vector()) CHECK(std::isnan(v));
    for (float v : log_softmax(on_device(x, {1, n})).to_vector()) CHECK(std::isnan(v));
  }
  // other rows of the same tensor are unaffected
  auto y = softmax(on_device(std::vector<float>{-k_inf, -k_inf, 0.0f, 0.0f}, {2, 2})).to_vector();
  CHECK(std::isnan(y[0]));
  CHECK(y[2] == 0.5f);
  CHECK(y[3] == 0.5f);
}

TEST_CASE("softmax and log_softmax: specials in rows of the cpu's pipelined and cached passes", "[numerics][softmax]") {
  // Rows of 1048 and 4096 floats: whole vectors on every ISA but AVX-512 for 1048 (131 AVX2 vectors,
  // an odd count), so under TRINE_CPU_STREAM_BYTES=0 (ctest's streamed_*) the cpu runs softmax
  // through softmax_rows_pipelined; rows of 20001 (past 2^14, within the cached passes' 2^15, with a
  // tail) through softmax_row_cached; log_softmax takes its cached passes for all three. Rows of
  // 70001 are cut into segments whose statistics are merged, row 1's first segment all -inf. Each
  // row's specials sit next to ordinary rows that must stay exact.
  for (std::int64_t n : {1048, 4096, 20001, 70001}) {
    const std::size_t un = static_cast<std::size_t>(n);
    std::vector<float> x(7 * un);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 100.0f - 5.0f;
    x[1 * un + 3] = -k_inf;  // row 1: -inf weighs 0
    x[1 * un + un - 1] = -k_inf;
    if (n > 32768)
      for (std::size_t j = 0; j < 32768; ++j) x[1 * un + j] = -k_inf;
    for (std::size_t j = 0; j < un; ++j) x[2 * un + j] = -k_inf;  // row 2: all -inf, NaN
    x[3 * un + un - 17] = k_nan;                                  // row 3: a NaN makes the row NaN
    for (std::size_t j = 0; j < un; ++j) x[4 * un + j] = j % 3 == 0 ? 1e30f : -1e30f;  // row 4: huge
    x[6 * un + un / 2] = k_inf;                                                        // row 6: +inf makes the row NaN
    const auto y = softmax(on_device(x, {7, n})).to_vector();
    const auto ly = log_softmax(on_device(x, {7, n})).to_vector();
    auto row = [&](const std::vector<float>& t, std::size_t r) {
      return std::vector<float>(t.begin() + static_cast<std::ptrdiff_t>(r * un),
                                t.begin() + static_cast<std::ptrdiff_t>((r + 1) * un));
    };
    for (std::size_t r : {0u, 1u, 5u}) {
      INFO("row " << r << " of " << n);
      const auto v = row(y, r), lv = row(ly, r);
      double mx = -1e300, sum = 0.0;
      for (std::size_t j = 0; j < un; ++j)
        if (x[r * un + j] > -k_inf) mx = std::max<double>(mx, x[r * un + j]);
      for (std::size_t j = 0; j < un; ++j) sum += std::exp(static_cast<double>(x[r * un + j]) - mx);
      for (std::size_t j = 0; j < un; j += 97) {
        if (x[r * un + j] == -k_inf) continue;
        CHECK(v[j] == Approx(std::exp(static_cast<double>(x[r * un + j]) - mx) / sum).epsilon(1e-5));
        CHECK(lv[j] == Approx(static_cast<double>(x[r * un + j]) - mx - std::log(sum)).epsilon(1e-5).margin(1e-5));
      }
    }
    CHECK(y[1 * un + 3] == 0.0f);
    CHECK(y[1 * un + un - 1] == 0.0f);
    CHECK(ly[1 * un + 3] == -k_inf);
    CHECK(ly[1 * un + un - 1] == -k_inf);
    for (std::size_t r : {2u, 3u, 6u}) {
      INFO("row " << r << " of " << n);
      for (float v : row(y, r)) CHECK(std::isnan(v));
      for (float v : row(ly, r)) CHECK(std::isnan(v));
    }
    const auto big = row(y, 4), lbig = row(ly, 4);
    const double count = static_cast<double>((un + 2) / 3);
    for (std::size_t j = 0; j < un; ++j) {
      INFO("row 4, column " << j << " of " << n);
      CHECK(big[j] == (j % 3 == 0 ? Approx(1.0 / count).epsilon(1e-5) : Approx(0.0)));
      CHECK(lbig[j] == (j % 3 == 0 ? Approx(-std::log(count)).epsilon(1e-5) : Approx(-2e30).epsilon(1e-6)));
    }
  }
}

TEST_CASE("softmax of large values (1e30) is finite and exact", "[numerics]") {
  std::vector<float> x = {1e30f, 1e30f, -1e30f, 1e30f};
  auto y = softmax(on_device(x, {1, 4})).to_vector();
  CHECK(y[0] == Approx(1.0 / 3).epsilon(1e-6));
  CHECK(y[1] == Approx(1.0 / 3).epsilon(1e-6));
  CHECK(y[2] == 0.0f);
  auto ly = log_softmax(on_device(x, {1, 4})).to_vector();
  CHECK(ly[0] == Approx(-std::log(3.0)).epsilon(1e-6));
  CHECK(ly[2] == Approx(-2e30).epsilon(1e-6));
  for (float v : y) CHECK(std::isfinite(v));
  // along a non-last axis too
  auto yc = softmax(on_device(std::vector<float>{1e30f, 0.0f, 1e30f, 0.0f}, {2, 2}), 0).to_vector();
  CHECK(yc[0] == 0.5f);
  CHECK(yc[1] == 0.5f);
}

TEST_CASE("softmax rows with NaN or +inf are NaN", "[numerics]") {
  auto y = softmax(on_device(std::vector<float>{0.0f, k_nan, 1.0f}, {1, 3})).to_vector();
  for (float v : y) CHECK(std::isnan(v));
  auto z = softmax(on_device(std::vector<float>{0.0f, k_inf, 1.0f}, {1, 3})).to_vector();
  for (float v : z) CHECK(std::isnan(v));
}

TEST_CASE("gelu's specials in whole blocks, partial blocks and the tail", "[numerics]") {
  // 5003 floats: gelu's blocks of 64 vectors, its short blocks and the tail each meet every special
  // (on every ISA's vector width), among ordinary values so a special cannot leak into a neighbour.
  const std::size_t n = 5003;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.37f;
  struct Special {
    float in, out;
  };
  const Special specials[] = {{k_inf, k_inf}, {-k_inf, 0.0f}, {-13.0f, -1.0e-37f}, {-13.5f, 0.0f}, {-1e30f, 0.0f},
                              {13.5f, 13.5f}, {1e30f, 1e30f}, {-0.0f, -0.0f},      {0.0f, 0.0f}};
  const std::size_t at[] = {3, 700, 1023, 1024, 2047, 4097, 4900, 4990, 5002};
  std::size_t k = 0;
  for (std::size_t i : at)
    for (const Special& sp : specials) x[(i + 37 * k++) % n] = sp.in;
  for (std::size_t i : at) x[(i + 11) % n] = k_nan;
  const std::vector<float> y = run([](const Tensor& t) { return gelu(t, GeluForm::erf); }, x);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("x[" << i << "] = " << x[i] << ", gelu = " << y[i]);
    if (std::isnan(x[i])) {
      CHECK(std::isnan(y[i]));
    } else if (x[i] == 0.0f) {
      CHECK(y[i] == 0.0f);
      CHECK(std::signbit(y[i]) == std::signbit(x[i]));
    } else if (x[i] == -13.0f) {
      CHECK(y[i] <= 0.0f);  // -8e-38 exactly; the measure ignores differences below 2^-100
      CHECK(y[i] > -1.0e-36f);
    } else if (std::isinf(x[i]) || x[i] > 13.0f) {
      CHECK(y[i] == (x[i] > 0 ? x[i] : 0.0f));
    } else if (x[i] < -13.0f) {  // below 2^-126: 0, or the subnormal (docs/ops.md: such results may flush)
      CHECK(y[i] <= 0.0f);
      CHECK(y[i] > -FLT_MIN);
    } else {
      CHECK(std::isfinite(y[i]));
    }
  }
}

TEST_CASE("activations at +-k_inf and NaN", "[numerics]") {
  // 17 values so the vector body and the tail both see the specials
  std::vector<float> x(17, 0.5f);
  x[0] = k_inf;
  x[1] = -k_inf;
  x[2] = k_nan;
  x[14] = k_inf;
  x[15] = -k_inf;
  x[16] = k_nan;
  auto check = [&](const char* name, Tensor (*op)(const Tensor&), float at_pinf, float at_ninf) {
    INFO(name);
    auto y = run(op, x);
    CHECK(y[0] == at_pinf);
    CHECK(y[14] == at_pinf);
    CHECK(y[1] == at_ninf);
    CHECK(y[15] == at_ninf);
    CHECK(std::isnan(y[2]));
    CHECK(std::isnan(y[16]));
  };
  check(
      "relu", [](const Tensor& t) { return relu(t); }, k_inf, 0.0f);
  check(
      "sigmoid", [](const Tensor& t) { return sigmoid(t); }, 1.0f, 0.0f);
  check(
      "tanh", [](const Tensor& t) { return trine::tanh(t); }, 1.0f, -1.0f);
  check(
      "silu", [](const Tensor& t) { return silu(t); }, k_inf, 0.0f);
  check(
      "gelu erf", [](const Tensor& t) { return gelu(t, GeluForm::erf); }, k_inf, 0.0f);
  check(
      "gelu tanh", [](const Tensor& t) { return gelu(t, GeluForm::tanh); }, k_inf, 0.0f);
  check(
      "elu", [](const Tensor& t) { return elu(t, 1.0f); }, k_inf, -1.0f);
  check(
      "leaky_relu", [](const Tensor& t) { return leaky_relu(t, 0.1f); }, k_inf, -k_inf);
  check(
      "clip", [](const Tensor& t) { return clip(t, -2.0f, 3.0f); }, 3.0f, -2.0f);
}

TEST_CASE("activations just inside the saturating range stay accurate", "[numerics]") {
  std::vector<float> x = {-90.0f, -30.0f, -10.0f, -1e-6f, 0.0f, 1e-6f, 10.0f, 30.0f, 90.0f};
  auto s = run([](const Tensor& t) { return sigmoid(t); }, x);
  auto g = run([](const Tensor& t) { return gelu(t); }, x);
  auto th = run([](const Tensor& t) { return trine::tanh(t); }, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    double xs = x[i];
    CHECK(s[i] == Approx(1.0 / (1.0 + std::exp(-xs))).epsilon(1e-5).margin(1e-30));
    CHECK(g[i] == Approx(0.5 * xs * std::erfc(-xs / std::sqrt(2.0))).epsilon(1e-5).margin(1e-20));
    CHECK(th[i] == Approx(std::tanh(xs)).epsilon(1e-5).margin(1e-30));
    CHECK(std::isfinite(s[i]));
    CHECK(std::isfinite(g[i]));
  }
}

TEST_CASE("max reduction propagates NaN; division by zero is IEEE", "[numerics]") {
  auto m = max(on_device(std::vector<float>{1.0f, k_nan, 3.0f, 2.0f, 0.0f, 1.0f}, {2, 3}), -1).to_vector();
  CHECK(std::isnan(m[0]));
  CHECK(m[1] == 2.0f);
  // rows of 1000 over the last axis: a NaN in the cpu's four-vector body, in its single-vector steps
  // or tail (995, by ISA), and rows without NaN that hold +inf or only -inf
  {
    std::vector<float> r(5 * 1000);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>((i * 37) % 1000) - 500.0f;
    r[0 * 1000 + 3] = k_nan;
    r[1 * 1000 + 517] = k_nan;
    r[2 * 1000 + 995] = k_nan;
    r[3 * 1000 + 998] = k_inf;
    for (std::size_t j = 0; j < 1000; ++j) r[4 * 1000 + j] = -k_inf;
    const auto mr = max(on_device(r, {5, 1000}), -1).to_vector();
    CHECK(std::isnan(mr[0]));
    CHECK(std::isnan(mr[1]));
    CHECK(std::isnan(mr[2]));
    CHECK(mr[3] == k_inf);
    CHECK(mr[4] == -k_inf);
  }
  // over axis 0 of 300 x 4100, where the cpu reads column chunks over two segments of rows: a NaN in
  // the second segment of the second chunk, and one in the columns left over, stay in their columns
  std::vector<float> x(300 * 4100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97);
  x[280 * 4100 + 3000] = k_nan;
  x[5 * 4100 + 4098] = k_nan;
  const auto col = max(on_device(x, {300, 4100}), 0).to_vector();
  for (std::size_t c = 0; c < 4100; ++c) {
    INFO("column " << c);
    if (c == 3000 || c == 4098) {
      CHECK(std::isnan(col[c]));
    } else {
      float want = 0.0f;
      for (std::size_t r = 0; r < 300; ++r) want = std::max(want, x[r * 4100 + c]);
      CHECK(col[c] == want);
    }
  }
  auto d = div(on_device(std::vector<float>{1.0f, -1.0f, 0.0f}, {3}), on_device({0.0f, 0.0f, 0.0f}, {3})).to_vector();
  CHECK(d[0] == k_inf);
  CHECK(d[1] == -k_inf);
  CHECK(std::isnan(d[2]));
}

namespace {

std::vector<float> row_values(std::int64_t rows, std::int64_t n, float magnitude, float offset, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(rows * n));
  std::uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0;  // [-1, 1)
    x = static_cast<float>(offset + magnitude * u);
  }
  return v;
}

// Largest |got - want| over the output, relative to the largest |want| of the row.
double worst_error(const std::vector<float>& got, const std::vector<double>& want, std::int64_t n) {
  double worst = 0.0;
  for (std::size_t r = 0; r * static_cast<std::size_t>(n) < want.size(); ++r) {
    double scale = 0.0;
    for (std::int64_t j = 0; j < n; ++j) scale = std::max(scale, std::abs(want[r * n + j]));
    for (std::int64_t j = 0; j < n; ++j) {
      const double e = std::abs(static_cast<double>(got[r * n + j]) - want[r * n + j]) / scale;
      worst = std::max(worst, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
    }
  }
  return worst;
}

std::vector<double> rmsnorm_double(const std::vector<float>& x, std::int64_t n, float eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    double ms = 0.0;
    for (std::int64_t j = 0; j < n; ++j) ms += static_cast<double>(x[r * n + j]) * x[r * n + j];
    ms /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(ms + eps);
    for (std::int64_t j = 0; j < n; ++j) y[r * n + j] = x[r * n + j] * rstd;
  }
  return y;
}

std::vector<double> layernorm_double(const std::vector<float>& x, std::int64_t n, float eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    double mean = 0.0, var = 0.0;
    for (std::int64_t j = 0; j < n; ++j) mean += x[r * n + j];
    mean /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    var /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (std::int64_t j = 0; j < n; ++j) y[r * n + j] = (x[r * n + j] - mean) * rstd;
  }
  return y;
}

}  // namespace

TEST_CASE("rmsnorm and layernorm are right where squares leave the f32 range", "[numerics][norm]") {
  struct Case {
    float magnitude, offset, eps;
  };
  // Huge rows: x^2 overflows above 1.8e19 and a sum of 64 squares above 2.3e18. Tiny rows: x^2
  // underflows (subnormal below 1e-19, zero below 1e-23); eps = the smallest float keeps them
  // meaningful, since a normal eps would swamp their mean square.
  const Case cases[] = {{2.3e18f, 0.0f, 1e-5f},     {1e19f, 0.0f, 1e-5f},     {4e19f, 0.0f, 1e-5f},
                        {1e25f, 3e25f, 1e-5f},      {1e37f, 0.0f, 1e-5f},     {3e37f, 1e38f, 1e-6f},
                        {1e-30f, 0.0f, 1e-5f},      {1e-30f, 0.0f, 1.4e-45f}, {3e-21f, 0.0f, 1.4e-45f},
                        {1e-22f, 5e-22f, 1.4e-45f}, {1.0f, 0.0f, 1e-5f}};
  const std::int64_t lengths[] = {1, 7, 33, 64, 1000};
  for (const Case& c : cases) {
    for (std::int64_t n : lengths) {
      const std::int64_t rows = 3;
      const auto x = row_values(rows, n, c.magnitude, c.offset, static_cast<std::uint64_t>(n) * 7919u);
      const auto t = on_device(x, {rows, n});
      INFO("magnitude " << c.magnitude << " offset " << c.offset << " eps " << c.eps << " n " << n << " on "
                        << t.device().str() << " (cpu isa " << trine::debug::cpu_isa() << ")");
      const auto rms = trine::rmsnorm(t, {}, c.eps).to_vector();
      CHECK(worst_error(rms, rmsnorm_double(x, n, c.eps), n) < 1e-5);
      if (n > 1) {
        const auto ln = trine::layernorm(t, {}, {}, c.eps).to_vector();
        CHECK(worst_error(ln, layernorm_double(x, n, c.eps), n) < 1e-5);
      }
    }
  }
}

TEST_CASE("rmsnorm and layernorm keep infinities and NaN as before", "[numerics][norm]") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.0f, inf, 2.0f, 3.0f, 1.0f, std::nanf(""), 2.0f, 3.0f};
  const auto t = on_device(x, {2, 4});
  const auto y = trine::rmsnorm(t).to_vector();
  CHECK(y[0] == 0.0f);
  CHECK(std::isnan(y[1]));
  for (int j = 4; j < 8; ++j) CHECK(std::isnan(y[static_cast<std::size_t>(j)]));
  const auto z = trine::layernorm(t).to_vector();
  for (float v : z) CHECK(std::isnan(v));
}

namespace {

// |got - exact| in ulps of the exact value (an ulp of [2^e, 2^(e+1)) is 2^(e - 23)), for exact
// values in the normal range; below it 0 when got is within 2^-126 of it (such results may flush to
// 0), else infinity; past the largest float, 0 for an infinity of the right sign.
double ulps(float got, long double exact) {
  const long double a = std::fabs(exact);
  if (a >= 0x1.fffffe8p127L) return std::isinf(got) && std::signbit(got) == std::signbit(exact) ? 0.0 : INFINITY;
  if (a < 0x1p-126L) return std::fabs(got - exact) <= 0x1p-126L ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  int e = 0;
  std::frexp(static_cast<double>(a), &e);  // a = f 2^e, f in [1/2, 1)
  return static_cast<double>(std::fabs(got - exact) / std::ldexp(1.0L, e - 24));
}

// The largest error of got against exact(x) over x, and where; printed per ISA (the before/after
// tables of issue 31 come from these lines).
struct Worst {
  double worst = 0;
  float at = 0;
  void add(float x, float got, long double exact) {
    const double e = ulps(got, exact);
    if (!(e <= worst)) worst = e, at = x;
  }
  void report(const char* what) const {
    const Device dev = test::test_device();
    const char* isa = std::getenv("TRINE_CPU_ISA");
    std::printf("%-8s %-8s %-26s largest error %8.3g ulps at x = %.9g", dev.str().c_str(),
                dev.kind == DeviceKind::cpu && isa ? isa : "", what, worst, static_cast<double>(at));
    std::printf("\n");
  }
};

long double logistic(long double v) { return 1 / (1 + std::exp(-v)); }
long double gelu_erf_exact(long double v) { return v / 2 * std::erfc(-v / std::sqrt(2.0L)); }
long double gelu_tanh_exact(long double v) {
  const long double c = 2 * std::sqrt(2 / 3.14159265358979323846264338327950288L);
  return v * logistic(c * (v + 0.044715L * v * v * v));
}

// Every 509th f32 in [-100, 100], both signs, and the far-tail points issue 31 named.
std::vector<float> sweep() {
  std::vector<float> x;
  for (std::uint32_t u = 0; u <= 0x42c80000u; u += 509) {
    x.push_back(std::bit_cast<float>(u));
    x.push_back(-std::bit_cast<float>(u));
  }
  for (float v : {-72.8f, -75.6f, -9.4f, -91.2f, -91.8f, -87.0f, -87.3f, -87.5f, -88.7f, -13.0f, -13.1f, -13.2f, -10.0f,
                  -10.3f, -10.4f, -0.25f, 0.25f, -0.625f, 0.625f})
    x.push_back(v);
  return x;
}

// Softmax rows of n values in [lo, hi] from a fixed LCG (the same rows every run).
std::vector<float> rows_lcg(std::size_t count, float lo, float hi, std::uint32_t seed) {
  std::vector<float> v(count);
  for (float& f : v) {
    seed = seed * 1664525u + 1013904223u;
    f = lo + (hi - lo) * static_cast<float>(seed >> 8) * 0x1p-24f;
  }
  return v;
}

// Softmax (or its log) of x[outer, n, inner] along n, in long double from the f32 inputs.
std::vector<long double> softmax_exact(const std::vector<float>& x, std::size_t outer, std::size_t n,
                                       std::size_t inner, bool log) {
  std::vector<long double> y(x.size());
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t c = 0; c < inner; ++c) {
      auto at = [&](std::size_t j) { return o * n * inner + j * inner + c; };
      long double m = -INFINITY, s = 0;
      for (std::size_t j = 0; j < n; ++j) m = std::max<long double>(m, x[at(j)]);
      for (std::size_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - m);
      for (std::size_t j = 0; j < n; ++j) {
        const long double d = x[at(j)] - m;
        y[at(j)] = log ? d - std::log(s) : std::exp(d) / s;
      }
    }
  return y;
}

}  // namespace

TEST_CASE("transcendental ops within 4 ulps of the exact function of the f32 input, far tails included",
          "[numerics][issue31]") {
  // Relative to |f(x)| wherever f(x) is normal: a normal result must not flush, even where an
  // intermediate e^x is subnormal (silu(-91.2) = -2.3e-38), and the argument reduction must not
  // lose |x| 2^-24 (sigmoid(-75.6) was 59.6 ulps off). Results below 2^-126 may flush.
  const Device dev = test::test_device();
  const std::vector<float> x = sweep();
  const auto n = static_cast<std::int64_t>(x.size());
  const Tensor t = Tensor::from(x, {n}, DType::f32, dev);
  struct Op {
    const char* name;
    Activation act;
    float alpha;
    Tensor (*run)(const Tensor&);
    long double (*exact)(long double);
  };
  const Op ops[] = {
      {"sigmoid", Activation::sigmoid, 0, [](const Tensor& v) { return sigmoid(v); }, logistic},
      {"silu", Activation::silu, 0, [](const Tensor& v) { return silu(v); },
       [](long double v) { return v * logistic(v); }},
      {"elu", Activation::elu, 1, [](const Tensor& v) { return elu(v, 1.0f); },
       [](long double v) { return v < 0 ? std::expm1(v) : v; }},
      {"tanh", Activation::tanh, 0, [](const Tensor& v) { return trine::tanh(v); },
       [](long double v) { return std::tanh(v); }},
      {"gelu", Activation::gelu, 0, [](const Tensor& v) { return gelu(v, GeluForm::erf); }, gelu_erf_exact},
      {"gelu_tanh", Activation::gelu_tanh, 0, [](const Tensor& v) { return gelu(v, GeluForm::tanh); },
       gelu_tanh_exact},
      {"exp", Activation::exp, 0, [](const Tensor& v) { return trine::exp(v); },
       [](long double v) { return std::exp(v); }},
      {"pow 3", Activation::pow, 3, [](const Tensor& v) { return trine::pow(v, 3.0f); },
       [](long double v) { return v * v * v; }},
  };
  // bias_act's rows: x + bias rounded to f32 is the activation's input
  const std::int64_t cols = 37, rows = n / cols;
  std::vector<float> bias(static_cast<std::size_t>(cols));
  for (std::size_t c = 0; c < bias.size(); ++c) bias[c] = static_cast<float>(static_cast<int>(c % 5) - 2) * 0.75f;
  const std::vector<float> xr(x.begin(), x.begin() + rows * cols);
  const Tensor tr = Tensor::from(xr, {rows, cols}, DType::f32, dev), tb = Tensor::from(bias, {cols}, DType::f32, dev);
  // gelu (erf) is max(x, 0) - s e^(G(s) - x^2/2) on every backend (backends/gelu_erf_fit.hpp): 3.7
  // ulps on the cpu, 2.8 on cuda, 3.5 on lavapipe (which rounds GLSL's fma twice). The erfc fits
  // before it measured 4.9 on cuda and 7.0 on lavapipe.
  for (const Op& op : ops) {
    Worst w, wb;
    const std::vector<float> y = op.run(t).to_vector();
    for (std::size_t i = 0; i < x.size(); ++i) w.add(x[i], y[i], op.exact(x[i]));
    w.report(op.name);
    CHECK(w.worst <= 4.0);
    if (op.act == Activation::exp || op.act == Activation::pow) continue;
    const std::vector<float> yb = bias_act(tr, tb, op.act, op.alpha).to_vector();
    for (std::size_t i = 0; i < xr.size(); ++i) {
      const float v = xr[i] + bias[i % bias.size()];
      wb.add(v, yb[i], op.exact(v));
    }
    wb.report((std::string("bias_act ") + op.name).c_str());
    CHECK(wb.worst <= 4.0);
  }
  {  // log and pow over the positive half
    std::vector<float> xp;
    for (float v : x)
      if (v > 0) xp.push_back(v);
    const Tensor tp = Tensor::from(xp, {static_cast<std::int64_t>(xp.size())}, DType::f32, dev);
    Worst wl, wp;
    const std::vector<float> yl = trine::log(tp).to_vector(), yp = trine::pow(tp, 2.5f).to_vector();
    for (std::size_t i = 0; i < xp.size(); ++i) {
      wl.add(xp[i], yl[i], std::log(static_cast<long double>(xp[i])));
      wp.add(xp[i], yp[i], std::pow(static_cast<long double>(xp[i]), 2.5L));
    }
    wl.report("log");
    wp.report("pow 2.5");
    CHECK(wl.worst <= 4.0);
    CHECK(wp.worst <= 4.0);
  }
}

TEST_CASE("softmax, log_softmax and attention's weights within 4 ulps of the exact function, far tails included",
          "[numerics][issue31]") {
  // Rows reaching e^-95: e^-87 = 1.6e-38 is normal and must not flush; e^-90 may.
  const Device dev = test::test_device();
  struct Case {
    std::vector<float> x;
    std::size_t outer, n, inner;
  };
  std::vector<Case> cases;
  cases.push_back({{0.0f, -80.0f, -87.0f, -90.0f, -100.0f, -20.5f, -87.3f, -1.0f}, 1, 8, 1});
  cases.push_back({rows_lcg(7 * 33, -95.0f, 0.0f, 1), 7, 33, 1});
  cases.push_back({rows_lcg(3 * 4096, -95.0f, 3.0f, 2), 3, 4096, 1});
  cases.push_back({rows_lcg(70001, -95.0f, -10.0f, 3), 1, 70001, 1});  // segments merged
  cases.push_back({rows_lcg(40 * 5, -95.0f, 0.0f, 4), 1, 40, 5});      // along axis 0: the columns' pass
  cases.push_back({rows_lcg(3 * 50 * 7, -60.0f, 40.0f, 5), 3, 50, 7});
  {  // rows whose first values are -inf or 500 below the rest: cuda's softmax sums them twice (its
     // reference, the largest of the first 32, is too far below the max), rows and columns
    std::vector<float> far = rows_lcg(4 * 100, -95.0f, 0.0f, 6);
    for (std::size_t j = 0; j < 40; ++j) far[j] = -k_inf, far[100 + j] = -500.0f - static_cast<float>(j);
    for (std::size_t j = 0; j < 2; ++j) far[200 + j * 2] = -k_inf, far[300 + j * 2] = -600.0f;
    cases.push_back({std::vector<float>(far.begin(), far.begin() + 200), 2, 100, 1});
    cases.push_back({std::vector<float>(far.begin() + 200, far.end()), 2, 50, 2});
  }
  // Every backend carries x - max exactly into the exponential (TwoSum), log_softmax's x - max
  // into its subtraction, and log_softmax's log of a sum near 1 as log1p of the rest: 4 ulps on
  // every backend. Vulkan on lavapipe measured 4.42 for softmax with a plain sum and the row times
  // 1 / sum; its sum is now a TwoSum pair and the row divided by it: 3.42 (3.85 with the subgroup
  // reductions, TRINE_VULKAN_SUBGROUPS=1). Rounding
  // x - max to f32 first would cost up to |x - max| ulps more (90 at the far tail; cuda's
  // log_softmax and attention measured 1.6e4 and 62.6 ulps that way), and log(sum) of the rounded
  // sum all of a log-probability near 0.
  // cuda (the emulator: the GPU's bits): softmax 2.37, its sum kept relative to one of the row's
  // values so that a new maximum rescales it by a power of two (kernels/softmax.cpp; the online pass
  // before it, one rounded exponential per rise of a lane's running max, measured 6.3); log_softmax
  // 1.26, attention's weights 3.55.
  for (bool log : {false, true}) {
    Worst w;
    for (const Case& c : cases) {
      const Tensor t = Tensor::from(c.x, {static_cast<std::int64_t>(c.outer), static_cast<std::int64_t>(c.n),
                                          static_cast<std::int64_t>(c.inner)},
                                      DType::f32, dev);
      const std::vector<float> y = (log ? log_softmax(t, 1) : softmax(t, 1)).to_vector();
      const std::vector<long double> e = softmax_exact(c.x, c.outer, c.n, c.inner, log);
      for (std::size_t i = 0; i < y.size(); ++i) w.add(c.x[i], y[i], e[i]);
    }
    w.report(log ? "log_softmax" : "softmax");
    CHECK(w.worst <= 4.0);
  }
  // attention with D = 1, q = 1, scale 1: the scores are the keys; V's one-hot rows pick out the
  // weights. Lk = 300 crosses key tiles (the running max's rescale); Lk = 2100 splits the keys.
  Worst w;
  for (std::size_t lk : {std::size_t{8}, std::size_t{300}, std::size_t{2100}}) {
    std::vector<float> k = lk == 8 ? cases[0].x : rows_lcg(lk, -95.0f, 5.0f, static_cast<std::uint32_t>(lk));
    const std::size_t dv = std::min<std::size_t>(lk, 128);  // the GPU kernels take head dims up to 128
    std::vector<float> v(lk * dv, 0.0f);
    for (std::size_t j = 0; j < dv; ++j) v[(j * lk / dv) * dv + j] = 1.0f;  // column j: key j lk / dv
    const auto L = static_cast<std::int64_t>(lk), D = static_cast<std::int64_t>(dv);
    const std::vector<float> y = attention(Tensor::from(std::vector<float>{1.0f}, {1, 1, 1}, DType::f32, dev),
                                           Tensor::from(k, {1, L, 1}, DType::f32, dev), Tensor::from(v, {1, L, D}, DType::f32, dev),
                                           AttentionParams{false, 1.0f})
                                     .to_vector();
    const std::vector<long double> e = softmax_exact(k, 1, lk, 1, false);
    for (std::size_t j = 0; j < dv; ++j) w.add(k[j * lk / dv], y[j], e[j * lk / dv]);
  }
  w.report("attention weights");
  CHECK(w.worst <= 4.0);
  // scale 0.7: each score is the key times 0.7f, whose rounding, carried into the exponential, would
  // cost |score - max| ulps (the cpu measured 38.7 that way); the kernels keep the product exact.
  Worst ws;
  for (std::size_t lk : {std::size_t{300}, std::size_t{2100}}) {
    const std::vector<float> k = rows_lcg(lk, -130.0f, 5.0f, static_cast<std::uint32_t>(lk) + 7);
    const std::size_t dv = 128;
    std::vector<float> v(lk * dv, 0.0f);
    for (std::size_t j = 0; j < dv; ++j) v[(j * lk / dv) * dv + j] = 1.0f;
    const auto L = static_cast<std::int64_t>(lk), D = static_cast<std::int64_t>(dv);
    const float scale = 0.7f;
    const std::vector<float> y = attention(Tensor::from(std::vector<float>{1.0f}, {1, 1, 1}, DType::f32, dev),
                                           Tensor::from(k, {1, L, 1}, DType::f32, dev),
                                           Tensor::from(v, {1, L, D}, DType::f32, dev), AttentionParams{false, scale})
                                     .to_vector();
    long double mx = -1e30L, sum = 0;
    for (float kj : k) mx = std::max(mx, static_cast<long double>(scale) * kj);
    for (float kj : k) sum += std::exp(static_cast<long double>(scale) * kj - mx);
    for (std::size_t j = 0; j < dv; ++j) {
      const float kj = k[j * lk / dv];
      ws.add(kj, y[j], std::exp(static_cast<long double>(scale) * kj - mx) / sum);
    }
  }
  ws.report("attention weights, scale 0.7");
  CHECK(ws.worst <= 4.0);
}
