// The cpu_simd kernels' own checks: norms at the edges of the f32 range against a double
// computation, the kernel table's completeness check, allocation failures named after the op, and
// the release-on assert. ctest runs this once per ISA (TRINE_CPU_ISA).
#include <sys/resource.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "backends/assert.hpp"
#include "backends/cpu_simd/kernel_table.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

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

TEST_CASE("rmsnorm and layernorm are right where squares leave the f32 range", "[kernels]") {
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
      const auto t = trine::Tensor::from(x, {rows, n});
      INFO("magnitude " << c.magnitude << " offset " << c.offset << " eps " << c.eps << " n " << n << " isa "
                        << trine::debug::cpu_isa());
      const auto rms = trine::rmsnorm(t, {}, c.eps).to_vector();
      CHECK(worst_error(rms, rmsnorm_double(x, n, c.eps), n) < 1e-5);
      if (n > 1) {
        const auto ln = trine::layernorm(t, {}, {}, c.eps).to_vector();
        CHECK(worst_error(ln, layernorm_double(x, n, c.eps), n) < 1e-5);
      }
    }
  }
}

TEST_CASE("rmsnorm and layernorm keep infinities and NaN as before", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.0f, inf, 2.0f, 3.0f, 1.0f, std::nanf(""), 2.0f, 3.0f};
  const auto y = trine::rmsnorm(trine::Tensor::from(x, {2, 4})).to_vector();
  CHECK(y[0] == 0.0f);
  CHECK(std::isnan(y[1]));
  for (int j = 4; j < 8; ++j) CHECK(std::isnan(y[static_cast<std::size_t>(j)]));
  const auto z = trine::layernorm(trine::Tensor::from(x, {2, 4})).to_vector();
  for (float v : z) CHECK(std::isnan(v));
}

TEST_CASE("require_complete names a missing kernel", "[kernels]") {
  // SSE4.2 is the oldest ISA the kernels are built for: a CPU running the tests has it.
  trine::cpu::KernelTable t = trine::cpu::sse4_2::table();
  CHECK_NOTHROW(trine::cpu::require_complete(t));
  t.rope = nullptr;
  try {
    trine::cpu::require_complete(t);
    FAIL("a table without rope passed");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::internal);
    CHECK_THAT(e.what(), Catch::Contains("'rope'") && Catch::Contains("sse4_2"));
  }
}

TEST_CASE("TRINE_ASSERT throws Error(internal) with its place and condition", "[kernels]") {
  const int rows = 0;
  try {
    TRINE_ASSERT(rows > 0, "[test] rows must be positive");
    FAIL("the assert did not fire");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::internal);
    const std::string what = e.what();
    CHECK(what.rfind("[test] rows must be positive", 0) == 0);
    CHECK_THAT(what, Catch::Contains("`rows > 0`") && Catch::Contains("tests/kernels_tests.cpp:"));
  }
  CHECK_NOTHROW([] { TRINE_ASSERT(1 + 1 == 2, "[test] arithmetic"); }());
}

TEST_CASE("an allocation that fails inside a kernel is out_of_memory named after the op", "[kernels]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("skipped: sanitizer runtimes reserve more address space than the limit this test sets");
  return;
#else
  // A transposed input makes relu copy it to a contiguous temporary as large as the output. Under
  // an address-space limit with room for the output but not the copy, the temporary fails.
  const std::int64_t rows = 4096, cols = 8192;  // 128 MiB
  const auto x = trine::Tensor::zeros({rows, cols}).transpose();
  (void)trine::relu(trine::Tensor::zeros({64, 64}).transpose());  // warm up: first-use allocations
  std::size_t vm_kib = 0;
  {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoul(line.substr(7));
  }
  REQUIRE(vm_kib > 0);
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  const rlim_t bytes = static_cast<rlim_t>(rows * cols * 4);
  rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(vm_kib) * 1024 + bytes + bytes / 2;
  REQUIRE(setrlimit(RLIMIT_AS, &lim) == 0);
  std::string what;
  trine::ErrorCode code = trine::ErrorCode::internal;
  bool threw = false;
  try {
    (void)trine::relu(x);
  } catch (const trine::Error& e) {
    threw = true;
    what = e.what();
    code = e.code();
  } catch (...) {
    what = "an exception other than trine::Error";
  }
  setrlimit(RLIMIT_AS, &old);
  INFO(what);
  REQUIRE(threw);
  CHECK(code == trine::ErrorCode::out_of_memory);
  CHECK(what.rfind("[relu] ", 0) == 0);
  // The device stays usable.
  CHECK(trine::relu(trine::Tensor::full({4}, -1.0f)).to_vector() == std::vector<float>(4, 0.0f));
#endif
}
