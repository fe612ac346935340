// How the Vulkan backend submits: a submission seen before is replayed from its kept recording,
// and one over the work budget is split into several command buffers; and which variant of the
// workgroup reductions it runs (subgroup operations or shared memory only). ctest runs these under the
// validation layer, and once more (vulkan_split) with TRINE_VULKAN_SUBMIT_BUDGET=1, where every op
// gets a command buffer of its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
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

namespace {

// `v` as a vulkan tensor of dtype `dt` and shape `s`, contiguous from element 1 of a storage one
// element longer: a 16-bit view that starts in the middle of a 32-bit word.
Tensor mid_word(const std::vector<float>& v, const Shape& s, DType dt) {
  std::vector<float> w(v.size() + 1, 0.0f);
  std::copy(v.begin(), v.end(), w.begin() + 1);
  const auto n = static_cast<std::int64_t>(w.size());
  Tensor t = Tensor::from(w, {n}, dt, k_vk).slice(0, 1, n).reshape(s);
  REQUIRE(t.offset() == 1);
  REQUIRE(t.is_contiguous());
  return t;
}

// Vulkan's result against the cpu's for the same 16-bit inputs: both compute in f32 and round once,
// so they agree but where their f32 values (summed in other orders) straddle a rounding: one unit
// in the last place of the 16-bit dtype, plus `abs_tol` for sums that cancel. Infinities and NaN
// (the special values and overflow) must match exactly.
void check_close16(const Tensor& got, const Tensor& want, double abs_tol = 0) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector(), w = want.to_vector();
  const int bits = got.dtype() == DType::f16 ? 10 : got.dtype() == DType::bf16 ? 7 : 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
    if (std::isnan(w[i]) || std::isinf(w[i]) || bits == 0) {
      CHECK((g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))));
      continue;
    }
    const double mag = std::max(std::fabs(static_cast<double>(w[i])), std::ldexp(1.0, -14));  // f16's least normal
    const double ulp = std::ldexp(1.0, std::ilogb(mag) - bits);
    CHECK(std::fabs(static_cast<double>(g[i]) - w[i]) <= ulp + abs_tol);
  }
}

// The dispatches of `shaders` so far (vulkan::dispatches_of), once the work so far has been recorded.
std::uint64_t dispatches(std::initializer_list<const char*> shaders) {
  synchronize();
  std::uint64_t n = 0;
  for (const char* s : shaders) n += vulkan::dispatches_of(s);
  return n;
}

// Random values in [-1, 1] with the special ones at the given places.
std::vector<float> with_specials(std::size_t n, std::uint64_t seed,
                                 std::initializer_list<std::pair<std::size_t, float>> at) {
  auto v = values(n, seed);
  for (const auto& [i, x] : at) v[i] = x;
  return v;
}

constexpr float k_inf = std::numeric_limits<float>::infinity();
const float k_nan = std::nanf("");

// Runs `op` on the vulkan tensors and on their copies on the cpu, checks that it dispatched one of
// `shaders` and no cast or strided copy (it read and wrote the 16-bit tensors itself), and returns
// both results.
template <class Op>
std::pair<Tensor, Tensor> run_16bit(const std::vector<Tensor>& in, std::initializer_list<const char*> shaders, Op op) {
  std::vector<Tensor> host;
  for (const Tensor& t : in) host.push_back(t.to(Device::cpu()));
  const std::uint64_t own = dispatches(shaders), casts = dispatches({"copy", "binary_b16", "binary"});
  Tensor got = op(in);
  CHECK(dispatches(shaders) > own);
  CHECK(dispatches({"copy", "binary_b16", "binary"}) == casts);
  return {got, op(host)};
}

}  // namespace

TEST_CASE("vulkan: softmax and log_softmax read and write f16 and bf16 in place", "[vulkan][dtypes][softmax]") {
  require_vulkan();
  const std::initializer_list<const char*> shaders = {"softmax", "softmax_subgroup", "softmax_rows"};
  for (DType dt : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    // rows of 301 (longer than a workgroup, odd: rows share words) from a mid-word offset, with
    // inf, -inf and NaN rows; 300 rows of 5 (an invocation per row on lavapipe); the first axis
    // (inner > 1: neighbouring elements belong to other rows)
    const auto big = with_specials(3 * 301, 10, {{5, k_inf}, {301 + 7, -k_inf}, {602 + 300, k_nan}});
    for (bool log_form : {false, true}) {
      INFO((log_form ? "log_softmax" : "softmax"));
      auto f = [&](int axis) {
        return [=](const std::vector<Tensor>& t) { return log_form ? log_softmax(t[0], axis) : softmax(t[0], axis); };
      };
      auto [g1, w1] = run_16bit({mid_word(big, {3, 301}, dt)}, shaders, f(-1));
      check_close16(g1, w1);
      auto [g2, w2] = run_16bit({mid_word(values(1500, 11), {300, 5}, dt)}, shaders, f(-1));
      check_close16(g2, w2);
      auto [g3, w3] = run_16bit({mid_word(values(7 * 9, 12), {7, 9}, dt)}, shaders, f(0));
      check_close16(g3, w3);
    }
    // log_softmax past the f16 range: 65504 - (-65504) overflows to -inf
    auto [g, w] = run_16bit({mid_word({65504.0f, -65504.0f, 0.0f}, {1, 3}, dt)}, shaders,
                            [](const std::vector<Tensor>& t) { return log_softmax(t[0]); });
    check_close16(g, w);
    if (dt == DType::f16) CHECK(g.to_vector()[1] == -k_inf);
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: layernorm and rmsnorm read and write f16 and bf16 in place", "[vulkan][dtypes][norm]") {
  require_vulkan();
  const std::initializer_list<const char*> shaders = {"norm", "norm_subgroup"};
  for (DType dt : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    for (std::int64_t n : {301, 5}) {
      INFO("rows of " << n);
      const std::int64_t rows = n == 5 ? 7 : 3;
      // a row with inf (NaN out), and one whose results overflow f16 (gamma 60000 times ~16)
      auto x = with_specials(static_cast<std::size_t>(rows * n), 20, {{1, k_inf}});
      for (std::int64_t k = 0; k < n; ++k) x[static_cast<std::size_t>(n + k)] = k == 0 ? 1.0f : 0.0f;
      auto gv = values(static_cast<std::size_t>(n), 21);
      gv[0] = 60000.0f;
      const Tensor xt = mid_word(x, {rows, n}, dt), gt = mid_word(gv, {n}, dt),
                   bt = mid_word(values(static_cast<std::size_t>(n), 22), {n}, dt);
      auto [g1, w1] = run_16bit({xt, gt}, shaders, [](const std::vector<Tensor>& t) { return rmsnorm(t[0], t[1]); });
      check_close16(g1, w1);
      auto [g2, w2] =
          run_16bit({xt, gt, bt}, shaders, [](const std::vector<Tensor>& t) { return layernorm(t[0], t[1], t[2]); });
      check_close16(g2, w2);
      auto [g3, w3] = run_16bit({xt}, shaders, [](const std::vector<Tensor>& t) { return layernorm(t[0]); });
      check_close16(g3, w3);
      if (dt == DType::f16 && n == 301) CHECK(g1.to_vector()[301] == k_inf);
    }
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: sum mean max and argmax read f16 and bf16 in place", "[vulkan][dtypes][reduce]") {
  require_vulkan();
  const std::initializer_list<const char*> shaders = {"reduce", "reduce_subgroup", "reduce_rows"};
  auto sum_ = [](int axis) { return [=](const std::vector<Tensor>& t) { return sum(t[0], axis); }; };
  auto mean_ = [](int axis) { return [=](const std::vector<Tensor>& t) { return mean(t[0], axis); }; };
  auto max_ = [](int axis) { return [=](const std::vector<Tensor>& t) { return max(t[0], axis); }; };
  auto argmax_ = [](int axis) { return [=](const std::vector<Tensor>& t) { return argmax(t[0], axis); }; };
  for (DType dt : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    // rows of 301 from a mid-word offset: a NaN row, an inf row, and a row of 60000s whose sum
    // overflows f16 (summed in f32, rounded once to inf)
    auto x = with_specials(5 * 301, 30, {{3, k_nan}, {301 + 9, k_inf}});
    for (std::size_t k = 0; k < 301; ++k) x[2 * 301 + k] = 60000.0f;
    const Tensor rows = mid_word(x, {5, 301}, dt);
    // 300 outputs of 7 (an invocation per output on lavapipe), and the first axis (inner > 1)
    const Tensor many = mid_word(values(300 * 7, 31), {300, 7}, dt);
    for (const Tensor& t : {rows, many}) {
      for (int axis : {-1, 0}) {
        INFO(t.shape().str() << " axis " << axis);
        auto [g1, w1] = run_16bit({t}, shaders, sum_(axis));
        check_close16(g1, w1, 1e-4);
        auto [g2, w2] = run_16bit({t}, shaders, mean_(axis));
        check_close16(g2, w2, 1e-6);
        auto [g3, w3] = run_16bit({t}, shaders, max_(axis));
        check_close16(g3, w3);
        auto [g4, w4] = run_16bit({t}, shaders, argmax_(axis));
        CHECK(g4.dtype() == DType::i32);
        CHECK(g4.to_vector<std::int32_t>() == w4.to_vector<std::int32_t>());
      }
    }
    auto [g, w] = run_16bit({rows}, shaders, sum_(-1));
    if (dt == DType::f16) CHECK(g.to_vector()[2] == k_inf);
    // a row longer than one workgroup loops over on lavapipe (2^21 elements): cut into chunks whose
    // partial results (f32, argmax's with their indices) a second dispatch reduces into 16-bit y
    const std::size_t long_n = (std::size_t{1} << 21) + 3;
    auto lv = values(long_n, 32);
    lv[long_n - 2] = 1.5f;  // the largest, in the last chunk
    const Tensor longrow = mid_word(lv, {1, static_cast<std::int64_t>(long_n)}, dt);
    auto [g5, w5] = run_16bit({longrow}, shaders, sum_(-1));
    check_close16(g5, w5, 1e-1);
    auto [g6, w6] = run_16bit({longrow}, shaders, argmax_(-1));
    CHECK(g6.to_vector<std::int32_t>() == w6.to_vector<std::int32_t>());
    CHECK(g6.to_vector<std::int32_t>()[0] == static_cast<std::int32_t>(long_n - 2));
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: rope reads and writes f16 and bf16 in place in both pair forms with or without a position",
          "[vulkan][dtypes]") {
  require_vulkan();
  for (DType dt : {DType::f16, DType::bf16}) {
    // D = 6 (D/2 odd: a word's halves from two pairs) and 8, from a mid-word offset; values near
    // f16's largest, whose rotations may overflow to inf, and a NaN
    for (std::int64_t d : {6, 8}) {
      for (RopePairs pairs : {RopePairs::interleaved, RopePairs::halves}) {
        INFO(dtype_name(dt) << " D " << d << (pairs == RopePairs::halves ? " halves" : " interleaved"));
        auto v = with_specials(static_cast<std::size_t>(2 * 5 * d), 40, {{0, 60000.0f}, {1, -60000.0f}, {9, k_nan}});
        const Tensor x = mid_word(v, {2, 5, d}, dt);
        const Tensor pos = Tensor::from(std::vector<std::int32_t>{1000}, {1}, k_vk);
        RopeParams p;
        p.pairs = pairs;
        p.position_offset = 3;
        auto [g1, w1] = run_16bit({x}, {"rope"}, [&](const std::vector<Tensor>& t) { return rope(t[0], p); });
        check_close16(g1, w1);
        auto [g2, w2] =
            run_16bit({x, pos}, {"rope"}, [&](const std::vector<Tensor>& t) { return rope(t[0], t[1], p); });
        check_close16(g2, w2);
      }
    }
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: where moves f16 and bf16 values in place with a cond of any dtype over several dispatches",
          "[vulkan][dtypes]") {
  require_vulkan();
  for (DType dt : {DType::f16, DType::bf16}) {
    for (DType ct : {DType::f32, DType::i32, dt}) {
      INFO(dtype_name(dt) << " cond " << dtype_name(ct));
      // rank 7 with alternating broadcasts (no dims merge): two dispatches of 3375 elements, the
      // second starting mid-word; a and b from mid-word offsets, with NaN and inf moved as they are
      const Shape out{2, 3, 5, 3, 5, 3, 5};
      std::vector<float> cv(2 * 5 * 5 * 5);
      for (std::size_t i = 0; i < cv.size(); ++i) cv[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : -2.0f;
      cv[3] = -0.0f;  // zero
      const Tensor cond =
          ct == DType::i32 ? Tensor::from(std::vector<std::int32_t>(cv.begin(), cv.end()), {2, 1, 5, 1, 5, 1, 5}, k_vk)
                           : Tensor::from(cv, {2, 1, 5, 1, 5, 1, 5}, ct, k_vk);
      const Tensor a = mid_word(with_specials(3 * 3 * 3 * 5, 50, {{0, k_nan}, {2, k_inf}}), {1, 3, 1, 3, 1, 3, 5}, dt);
      const Tensor b = mid_word(values(static_cast<std::size_t>(out.numel()), 51), out, dt);
      auto [g, w] = run_16bit({cond, a, b}, {"binary_where"},
                              [](const std::vector<Tensor>& t) { return where(t[0], t[1], t[2]); });
      check_close16(g, w);
    }
  }
  require_no_validation_messages();
}
