// attention's valid input (issue 34): the number of keys that count, an i32 read when the op runs,
// so that a KV cache allocated at its longest is attended over its written part and a decode step
// recorded once in a Batch is replayed with a new count each token. Tagged "[batch]", which every
// test device runs (cpu, vulkan:0 on lavapipe, cuda:0 on the emulator); the expected values are
// trine's own attention on k and v sliced to the count, which must give the same result.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

using test::code_of;

using test::seeded_values;

// Within a few f32 roundings: the valid form walks the keys in the same order as the sliced one.
void check_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= 1e-6f * (1.0f + std::abs(want[i])));
  }
}

// q [1, 2, Lq, D] over k, v [1, 1, Lk, D]: two q heads share one kv head (grouped-query attention).
// D = 8: cuda's zero-padded kernel; Lk = 40: its 32-key tiles, one and a part.
constexpr std::int64_t D = 8, Lk = 40;

struct Cache {
  Tensor k, v;
};
Cache cache_on(Device dev) {
  return {Tensor::from(seeded_values(Lk * D, 2), {1, 1, Lk, D}, DType::f32, dev),
          Tensor::from(seeded_values(Lk * D, 3), {1, 1, Lk, D}, DType::f32, dev)};
}

std::vector<float> sliced(const Tensor& q, const Cache& c, std::int64_t n, const AttentionParams& p) {
  return attention(q, c.k.slice(-2, 0, n), c.v.slice(-2, 0, n), p).to_vector();
}

void check_bad(auto&& f, std::int64_t n, const std::string& range, Device dev) {
  try {
    f();
    FAIL("valid " << n << " ran");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("[attention]") &&
                             Catch::Contains("valid " + std::to_string(n) + " is outside " + range) &&
                             Catch::Contains("f32[1, 1, 40, 8] on " + dev.str()));
  }
}

}  // namespace

TEST_CASE("attention over the valid keys of a longer cache, eager and async, on the device under test",
          "[batch][attention_valid]") {
  const Device dev = test::test_device();
  const Cache c = cache_on(dev);
  SECTION("the same result as k and v sliced to n: plain, causal, a window; n across a 32-key tile") {
    for (std::int64_t lq : {1, 3}) {
      const Tensor q =
          Tensor::from(seeded_values(static_cast<std::size_t>(2 * lq * D), 1), {1, 2, lq, D}, DType::f32, dev);
      for (const AttentionParams& p :
           {AttentionParams{}, AttentionParams{.causal = true}, AttentionParams{.causal = true, .window = 5}}) {
        for (std::int64_t n : {std::int64_t{3}, std::int64_t{33}, Lk}) {
          const std::string what = "Lq " + std::to_string(lq) + ", n " + std::to_string(n) +
                                   (p.causal ? ", causal" : "") + (p.window ? ", window 5" : "");
          const Tensor valid = Tensor::from({static_cast<std::int32_t>(n)}, dev);
          check_close(attention(q, c.k, c.v, valid, p).to_vector(), sliced(q, c, n, p), what);
        }
      }
    }
    // keys and values past n are never read: NaN there changes nothing
    {
      std::vector<float> kd = seeded_values(Lk * D, 2), vd = seeded_values(Lk * D, 3);
      for (std::size_t i = 20 * D; i < kd.size(); ++i) kd[i] = vd[i] = std::nanf("");
      const Cache nan_tail{Tensor::from(kd, {1, 1, Lk, D}, DType::f32, dev),
                           Tensor::from(vd, {1, 1, Lk, D}, DType::f32, dev)};
      const Tensor q = Tensor::from(seeded_values(2 * 3 * D, 8), {1, 2, 3, D}, DType::f32, dev);
      check_close(attention(q, nan_tail.k, nan_tail.v, Tensor::from({20}, dev), {.causal = true}).to_vector(),
                  sliced(q, c, 20, {.causal = true}), "NaN past n 20");
    }
    // n = 1 (a decode at the first position); a count on the cpu is moved where the op runs
    const Tensor q = Tensor::from(seeded_values(2 * D, 4), {1, 2, 1, D}, DType::f32, dev);
    check_close(attention(q, c.k, c.v, Tensor::from({1})).to_vector(), sliced(q, c, 1, {}), "n 1");
    check_close(async::attention(q, c.k, c.v, Tensor::from({17}, dev), {.causal = true}).get().to_vector(),
                sliced(q, c, 17, {.causal = true}), "async, n 17");
  }
  SECTION("a count outside its range fails when the op runs, naming it, its range and the shapes") {
    const Tensor q = Tensor::from(seeded_values(2 * 3 * D, 5), {1, 2, 3, D}, DType::f32, dev);
    for (std::int32_t n : {0, -1, 41})
      check_bad([&] { (void)attention(q, c.k, c.v, Tensor::from({n}, dev)); }, n, "[1, 40]", dev);
    // causal: the queries are the last Lq of the n keys
    check_bad([&] { (void)attention(q, c.k, c.v, Tensor::from({2}, dev), {.causal = true}); }, 2, "[3, 40]", dev);
    check_bad([&] { (void)async::attention(q, c.k, c.v, Tensor::from({41}, dev)).get(); }, 41, "[1, 40]", dev);
    // the device still works, and the next good count gives its result
    check_close(attention(q, c.k, c.v, Tensor::from({5}, dev)).to_vector(), sliced(q, c, 5, {}), "after the errors");
  }
}

TEST_CASE("attention's valid count in a batch recorded once: each run its own count", "[batch][attention_valid]") {
  const Device dev = test::test_device();
  const Cache c = cache_on(dev);
  const std::vector<float> qdata = seeded_values(2 * D, 6);
  const Tensor q = Tensor::from(qdata, {1, 2, 1, D}, DType::f32, dev);
  SECTION("pinned to the device under test, over a cache made outside it") {
    Batch batch(dev);
    const Tensor bq = batch.upload(qdata, {1, 2, 1, D});
    const Tensor n = batch.upload(std::vector<float>{1.0f}, {1}, DType::i32);
    BatchRead y = batch.read(attention(bq, c.k, c.v, n, {.causal = true}));
    for (std::int64_t step : {10, 33, 10}) {
      batch.run({qdata, std::vector<float>{static_cast<float>(step)}});
      check_close(y.get(), sliced(q, c, step, {.causal = true}), "run with n " + std::to_string(step));
    }
    try {
      batch.run({qdata, std::vector<float>{41.0f}});
      FAIL("valid 41 ran");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("valid 41 is outside [1, 40]") && Catch::Contains("batch entry"));
    }
    CHECK(code_of([&] { (void)y.get(); }) == ErrorCode::invalid_argument);  // the failed run read nothing
    batch.run({qdata, std::vector<float>{7.0f}});                           // the batch and the device still work
    check_close(y.get(), sliced(q, c, 7, {.causal = true}), "after the failed run");
  }
  SECTION("placed automatically, every input uploaded") {
    Batch batch;
    const std::vector<float> kdata = seeded_values(Lk * D, 2), vdata = seeded_values(Lk * D, 3);
    const Tensor bq = batch.upload(qdata, {1, 2, 1, D});
    const Tensor bk = batch.upload(kdata, {1, 1, Lk, D});
    const Tensor bv = batch.upload(vdata, {1, 1, Lk, D});
    const Tensor n = batch.upload(std::vector<float>{1.0f}, {1}, DType::i32);
    BatchRead y = batch.read(attention(bq, bk, bv, n));
    for (std::int64_t step : {40, 12}) {
      batch.run({qdata, kdata, vdata, std::vector<float>{static_cast<float>(step)}});
      check_close(y.get(), sliced(q, c, step, {}), "automatic, n " + std::to_string(step));
    }
  }
}

TEST_CASE("attention's valid input: its dtype and shape are checked at the call", "[errors][attention_valid]") {
  const Tensor q = Tensor::zeros({1, 2, 3, 8}), k = Tensor::zeros({1, 1, 40, 8});
  try {
    (void)attention(q, k, k, Tensor::from({5.0f}));
    FAIL("an f32 count ran");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::dtype_mismatch);
    CHECK_THAT(e.what(), Catch::Contains("[attention]") && Catch::Contains("valid") && Catch::Contains("i32") &&
                             Catch::Contains("f32[1, 1, 40, 8] on cpu"));
  }
  try {
    (void)attention(q, k, k, Tensor::from({5, 6}));
    FAIL("a count of two elements ran");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_shape);
    CHECK_THAT(e.what(), Catch::Contains("[attention]") && Catch::Contains("exactly one element") &&
                             Catch::Contains("[2]") && Catch::Contains("f32[1, 2, 3, 8] on cpu"));
  }
  // the result's dtype is q's, k's and v's, not the count's
  CHECK(attention(q.astype(DType::f16), k.astype(DType::f16), k.astype(DType::f16), Tensor::from({5})).dtype() ==
        DType::f16);
  CHECK(attention(q, k, k, Tensor::from({5})).dtype() == DType::f32);
}

#ifdef TRINE_VULKAN_BUILT
// attention.comp's VALID form under the Vulkan suites (validation on; GPU-assisted in vulkan_gpuav).
TEST_CASE("vulkan: attention's VALID shader form reads the count and reports a bad one", "[vulkan][attention_valid]") {
  const Device vk{DeviceKind::vulkan, 0};
  const Cache c = cache_on(vk);
  const Tensor q = Tensor::from(seeded_values(2 * 3 * D, 7), {1, 2, 3, D}, DType::f32, vk);
  check_close(attention(q, c.k, c.v, Tensor::from({33}, vk), {.causal = true}).to_vector(),
              sliced(q, c, 33, {.causal = true}), "vulkan, n 33");
  check_bad([&] { (void)attention(q, c.k, c.v, Tensor::from({41}, vk)); }, 41, "[1, 40]", vk);
}
#endif
