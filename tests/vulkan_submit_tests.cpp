// How the Vulkan backend submits: a submission seen before is replayed from its kept recording,
// and one over the work budget is split into several command buffers; and which variant of the
// workgroup reductions it runs (subgroup operations or shared memory only). ctest runs these under the
// validation layer, and once more (vulkan_split) with TRINE_VULKAN_SUBMIT_BUDGET=1, where every op
// gets a command buffer of its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "backends/vulkan/debug.hpp"
#include "tests/vulkan_harness.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::test::k_vk;
using trine::test::require_no_validation_messages;
using trine::test::require_vulkan;

namespace {

std::vector<float> values(std::size_t n, std::uint64_t seed) {
  return Tensor::random({static_cast<std::int64_t>(n)}, seed).to_vector();
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

TransferStats since(const TransferStats& before) {
  TransferStats now = transfer_stats(k_vk);
  now.uploads -= before.uploads;
  now.readbacks -= before.readbacks;
  now.submissions -= before.submissions;
  now.replays -= before.replays;
  now.driver_submits -= before.driver_submits;
  return now;
}

// The budget ctest gave this run: 0 when unset (the device's default, far above these tests).
std::uint64_t budget() {
  const char* v = std::getenv("TRINE_VULKAN_SUBMIT_BUDGET");
  return v ? std::stoull(v) : 0;
}

// x -> softmax(rope(scale(x) @ w)): an op whose recording uploads a table of its own (rope) and
// one that reads a tensor made outside the batch (w).
struct Chain {
  static constexpr std::int64_t rows = 2, seq = 6, dim = 8;
  Tensor w = Tensor::random({dim, dim}, 77, -1, 1, DType::f32, k_vk);
  static Tensor apply(const Tensor& x, const Tensor& w) { return softmax(rope(matmul(scale(x, 0.5f, 0.1f), w))); }
  std::vector<float> eager(const std::vector<float>& in) const {
    return apply(Tensor::from(in, {rows, seq, dim}, DType::f32, k_vk), w).to_vector();
  }
};

}  // namespace

TEST_CASE("a batch run again replays its recorded command buffers, with the new inputs", "[vulkan][vulkan_submit]") {
  require_vulkan();
  Chain c;
  const std::size_t n = Chain::rows * Chain::seq * Chain::dim;
  Batch batch(k_vk);
  Tensor x = batch.upload(values(n, 1), {Chain::rows, Chain::seq, Chain::dim});
  BatchRead out = batch.read(Chain::apply(x, c.w));
  const std::uint64_t ops = 4;
  for (std::uint64_t run = 0; run < 5; ++run) {
    const auto in = values(n, 10 + run);
    const auto expect = c.eager(in);  // the same shaders, called one by one
    const TransferStats before = transfer_stats(k_vk);
    batch.run({in});
    const TransferStats d = since(before);
    INFO("run " << run);
    CHECK(same(out.get(), expect));
    CHECK(d.submissions == 1);
    CHECK(d.uploads == 1);  // counted on replays too
    CHECK(d.readbacks == 1);
    CHECK(d.replays == (run > 0 ? 1u : 0u));  // the first run records; every later one replays
    CHECK(d.driver_submits == (budget() == 1 ? ops : 1u));
  }
  require_no_validation_messages();
}

TEST_CASE("a kept recording is dropped by clear_cache, and the next run records anew", "[vulkan][vulkan_submit]") {
  require_vulkan();
  Chain c;
  const std::size_t n = Chain::rows * Chain::seq * Chain::dim;
  Batch batch(k_vk);
  Tensor x = batch.upload(values(n, 2), {Chain::rows, Chain::seq, Chain::dim});
  BatchRead out = batch.read(Chain::apply(x, c.w));
  batch.run();
  TransferStats before = transfer_stats(k_vk);
  batch.run();
  CHECK(since(before).replays == 1);
  memory::clear_cache(k_vk);
  const auto in = values(n, 3);
  before = transfer_stats(k_vk);
  batch.run({in});
  CHECK(since(before).replays == 0);
  CHECK(same(out.get(), c.eager(in)));
  before = transfer_stats(k_vk);
  batch.run({in});
  CHECK(since(before).replays == 1);
  CHECK(same(out.get(), c.eager(in)));
  require_no_validation_messages();
}

TEST_CASE("a replay waits for the previous run of the same recording", "[vulkan][vulkan_submit]") {
  require_vulkan();
  // Two futures of one batch in flight at once: the second may not reuse the command buffers and
  // temporaries the first still runs on (it is recorded anew, or replayed once the first is done).
  const std::int64_t n = 1 << 18;
  Batch batch(k_vk);
  Tensor x = batch.upload(values(static_cast<std::size_t>(n), 4), {n});
  Tensor y = x;
  for (int i = 0; i < 8; ++i) y = scale(y, 1.5f, -0.25f);
  BatchRead out = batch.read(y);
  batch.run();
  const auto expect = [&](const std::vector<float>& in) {
    Tensor t = Tensor::from(in, {n}, DType::f32, k_vk);
    for (int i = 0; i < 8; ++i) t = scale(t, 1.5f, -0.25f);
    return t.to_vector();
  };
  for (std::uint64_t seed = 5; seed < 9; ++seed) {
    const auto in = values(static_cast<std::size_t>(n), seed);
    Future<void> a = batch.submit({in});
    Future<void> b = batch.submit();  // the same inputs again, right behind it
    a.get();
    b.get();
    CHECK(same(out.get(), expect(in)));
  }
  require_no_validation_messages();
}

TEST_CASE("a batch over the work budget runs as several command buffers, in order", "[vulkan][vulkan_submit]") {
  require_vulkan();
  const std::int64_t n = 1 << 12;
  const auto in = values(static_cast<std::size_t>(n), 6);
  Batch batch(k_vk);
  Tensor x = batch.upload(in, {n});
  Tensor y = x;
  const int ops = 12;
  for (int i = 0; i < ops; ++i) y = (i % 2) ? relu(y) : scale(y, -1.25f, 0.5f);
  BatchRead out = batch.read(y);
  const TransferStats before = transfer_stats(k_vk);
  batch.run();
  const TransferStats d = since(before);
  CHECK(d.submissions == 1);
  CHECK(d.driver_submits == (budget() == 1 ? static_cast<std::uint64_t>(ops) : 1u));
  std::vector<float> expect = in;
  for (int i = 0; i < ops; ++i)
    for (float& v : expect) v = (i % 2) ? std::max(v, 0.0f) : -1.25f * v + 0.5f;
  const auto got = out.get();
  REQUIRE(got.size() == expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(expect[i]).margin(1e-5));
  require_no_validation_messages();
}

TEST_CASE("TRINE_VULKAN_SUBMIT_BUDGET that is not a positive integer fails every submission, naming it",
          "[vulkan_budget_bad][.]") {
  // Run by ctest with TRINE_VULKAN_SUBMIT_BUDGET=12x.
  require_vulkan();
  try {
    const Tensor x = Tensor::from(values(16, 7), {16}, DType::f32, k_vk);
    (void)relu(x).to_vector();
    FAIL("no error for TRINE_VULKAN_SUBMIT_BUDGET=" << std::getenv("TRINE_VULKAN_SUBMIT_BUDGET"));
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("TRINE_VULKAN_SUBMIT_BUDGET"));
  }
}

TEST_CASE("the workgroup reductions run their subgroup variant exactly where the device says so",
          "[vulkan][vulkan_submit]") {
  require_vulkan();
  // lavapipe (software) says off unless TRINE_VULKAN_SUBGROUPS=1 (ctest vulkan_subgroups), and
  // a GPU with subgroup arithmetic says on.
  std::string caps;
  for (const auto& d : devices())
    if (d.device == k_vk) caps = d.capabilities;
  INFO(caps);
  REQUIRE(caps.find(", reductions ") != std::string::npos);
  const bool on = caps.find(", reductions on") != std::string::npos;
  const char* env = std::getenv("TRINE_VULKAN_SUBGROUPS");
  if (env) CHECK(on == (std::string(env) == "1"));
  // A sum over 3 rows of 1000 (a workgroup per row) and a softmax and rmsnorm likewise.
  const Tensor x = Tensor::from(values(3000, 8), {3, 1000}, DType::f32, k_vk);
  const auto host = x.to_vector();
  const auto s = sum(x, 1).to_vector();
  (void)softmax(x).to_vector();
  (void)rmsnorm(x).to_vector();
  for (int r = 0; r < 3; ++r) {
    double want = 0;
    for (int k = 0; k < 1000; ++k) want += host[static_cast<std::size_t>(r * 1000 + k)];
    CHECK(s[static_cast<std::size_t>(r)] == Approx(want).margin(1e-3));
  }
  const auto used = vulkan::shaders_dispatched();
  // in whichever float-controls form the device runs (common.glsl)
  auto ran = [&](const char* name) {
    return std::any_of(used.begin(), used.end(), [&](const std::string& u) {
      return u == name || u == std::string(name) + "_ieee" || u == std::string(name) + "_ieee_denorm";
    });
  };
  for (const char* base : {"reduce", "softmax", "norm"}) {
    INFO(base);
    CHECK(ran((std::string(base) + "_subgroup").c_str()) == on);
  }
  require_no_validation_messages();
}

// Run by ctest vulkan_subgroups_env_bad with TRINE_VULKAN_SUBGROUPS=yes: the Vulkan backend does
// not start, and every use of a vulkan device says why.
TEST_CASE("a TRINE_VULKAN_SUBGROUPS other than 0 or 1 is an error naming the variable",
          "[vulkan_subgroups_env_bad][.]") {
  const std::string expected = "TRINE_VULKAN_SUBGROUPS must be 0 or 1, got 'yes'";
  bool seen = false;
  for (const auto& s : backend_status()) {
    if (s.kind != DeviceKind::vulkan || !s.built) continue;
    seen = true;
    CHECK(!s.available);
    CHECK_THAT(s.reason, Catch::Contains(expected));
  }
  REQUIRE(seen);
  try {
    (void)relu(Tensor::full({8}, 1.0f, DType::f32, k_vk));
    FAIL("an op on vulkan:0 ran with TRINE_VULKAN_SUBGROUPS=yes");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::device_unavailable);
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
}

TEST_CASE("vulkan: the shaders run in the float-controls form the device supports", "[vulkan]") {
  require_vulkan();
  // trine-info's line says which form the device runs (DeviceCaps::shader_form): both preserves,
  // NaN/inf only, or none; every shader dispatched on it must be that form (common.glsl), or a driver
  // without SignedZeroInfNanPreserve may fold isnan() away (NVIDIA's did: relu(NaN) gave 0).
  std::string caps;
  for (const DeviceInfo& d : devices())
    if (d.device == k_vk) caps = d.capabilities;
  const std::string form = caps.find("shaders keep NaN/inf and subnormals") != std::string::npos ? "_ieee_denorm"
                           : caps.find("shaders keep NaN/inf (subnormals may flush)") != std::string::npos ? "_ieee"
                                                                                                           : "";
  INFO(caps);
  const Tensor x = Tensor::from(std::vector<float>{std::nanf(""), -1.0f, 2.0f, -0.0f}, {4}, DType::f32, k_vk);
  const auto y = relu(x).to_vector();
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == 2.0f);
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  const auto used = vulkan::shaders_dispatched();
  REQUIRE_FALSE(used.empty());
  for (const std::string& name : used) {
    INFO(name);
    if (form.empty()) {
      CHECK_FALSE(ends_with(name, "_ieee"));
      CHECK_FALSE(ends_with(name, "_ieee_denorm"));
    } else {
      CHECK(ends_with(name, form));
    }
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: gemv reads f16 and bf16 weights in place (gemv_b16), at any offset and odd K, x and y f32 or 16-bit",
          "[vulkan]") {
  require_vulkan();
  // A decode's weights stay 16-bit: not cast into an f32 temporary on every call. Views start at
  // either half of a word (an odd K, an odd row offset), so rows straddle words both ways.
  for (DType d : {DType::f16, DType::bf16}) {
    for (const auto& [m, k, skip] : {std::tuple{37, 301, 1}, {64, 4096, 0}, {5, 1, 3}, {3, 2, 1}}) {
      INFO(dtype_name(d) << " " << m << "x" << k << " from row " << skip);
      const Tensor whole = Tensor::random({m + skip, k}, 500 + static_cast<std::uint64_t>(k), -1, 1, d, k_vk);
      const Tensor a = whole.slice(0, skip, m + skip);  // offset skip * k elements: odd for odd k
      for (DType xd : {DType::f32, d}) {                // x f32: y f32; x 16-bit too: y 16-bit, rounded once
        INFO("x " << dtype_name(xd));
        const Tensor x = Tensor::random({k}, 600, -1, 1, xd, k_vk);
        const Tensor y = gemv(a, x);
        REQUIRE(y.dtype() == xd);
        const auto got = y.to_vector();
        const auto av = a.to_vector(), xv = x.to_vector();  // the 16-bit values, exactly, as floats
        for (int i = 0; i < m; ++i) {
          double want = 0, mag = 0;
          for (int j = 0; j < k; ++j) {
            const double t =
                static_cast<double>(av[static_cast<std::size_t>(i * k + j)]) * xv[static_cast<std::size_t>(j)];
            want += t;
            mag += std::fabs(t);
          }
          // f32 sums of k products: a few rounding steps of the magnitude; a 16-bit y one rounding
          // more, half an ulp of the result (2^-11 for f16, 2^-8 for bf16)
          const double round = xd == DType::f32 ? 0 : std::fabs(want) * (d == DType::f16 ? 0x1p-11 : 0x1p-8);
          CHECK(std::fabs(got[static_cast<std::size_t>(i)] - want) <= 1e-6 * mag + round + 1e-30);
        }
      }
    }
  }
  const auto used = vulkan::shaders_dispatched();
  CHECK(std::any_of(used.begin(), used.end(), [](const std::string& s) { return s.rfind("gemv_b16", 0) == 0; }));
  require_no_validation_messages();
}

TEST_CASE("vulkan: matmul with 16-bit B rows reads them in place (matmul_rows_b16), A of any dtype", "[vulkan]") {
  require_vulkan();
  // x @ W with W f16/bf16 [K, N], row-contiguous, N a multiple of 4: a decode's projection. A is f32,
  // or 16-bit at an odd offset (a row view); B starts at a multiple of 4 elements.
  for (DType bd : {DType::f16, DType::bf16}) {
    for (DType ad : {DType::f32, DType::f16, DType::bf16}) {
      for (const auto& [m, k, n] : {std::tuple{1, 64, 12}, {3, 33, 260}, {17, 5, 4}}) {
        INFO(dtype_name(ad) << " @ " << dtype_name(bd) << " " << m << "x" << k << "x" << n);
        const Tensor aw = Tensor::random({m + 1, k}, 700 + static_cast<std::uint64_t>(k), -1, 1, ad, k_vk);
        const Tensor a = aw.slice(0, 1, m + 1);  // offset k: odd for odd k
        const Tensor b = Tensor::random({k, n}, 800 + static_cast<std::uint64_t>(n), -1, 1, bd, k_vk);
        const auto got = matmul(a, b, MatmulParams{.out_dtype = DType::f32}).to_vector();
        const auto av = a.to_vector(), bv = b.to_vector();
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double want = 0, mag = 0;
            for (int q = 0; q < k; ++q) {
              const double t = static_cast<double>(av[static_cast<std::size_t>(i * k + q)]) *
                               bv[static_cast<std::size_t>(q * n + j)];
              want += t;
              mag += std::fabs(t);
            }
            CHECK(std::fabs(got[static_cast<std::size_t>(i * n + j)] - want) <= 1e-6 * mag + 1e-30);
          }
      }
    }
  }
  const auto used = vulkan::shaders_dispatched();
  CHECK(std::any_of(used.begin(), used.end(), [](const std::string& s) { return s.rfind("matmul_rows_b16", 0) == 0; }));
  require_no_validation_messages();
}
