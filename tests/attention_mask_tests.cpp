// attention's mask input (issue 34): f32 [..., Lq, Lk] added to the scaled scores before the
// softmax, broadcast over q's leading dims (the heads included). Tagged "[batch]", which every test
// device runs (cpu, vulkan:0 on lavapipe, cuda:0 on the emulator). The expected values come from a
// plain double-precision loop here, and from trine's own causal attention for a -inf triangle.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

using test::code_of;

constexpr float inf = std::numeric_limits<float>::infinity();

using test::seeded_values;

// q [B, Hq, Lq, D] over k, v [B, Hkv, Lk, D]; D = 8 (cuda's zero-padded kernel), Lk = 40 (past
// cuda's 32-key tile).
constexpr std::int64_t D = 8, Lk = 40;

struct Problem {
  std::int64_t B, Hq, Hkv, Lq;
  std::vector<float> q, k, v;
};
Problem problem(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t Lq, std::uint32_t seed) {
  return {B,
          Hq,
          Hkv,
          Lq,
          seeded_values(static_cast<std::size_t>(B * Hq * Lq * D), seed),
          seeded_values(static_cast<std::size_t>(B * Hkv * Lk * D), seed + 1),
          seeded_values(static_cast<std::size_t>(B * Hkv * Lk * D), seed + 2)};
}

// softmax(q k^T / sqrt(D) + mask) v in double over keys [0, n), causal aligned to n; the mask is
// [mb, mh, Lq, Lk] with mb in {1, B}, mh in {1, Hq} (broadcast where 1), or none.
std::vector<float> reference(const Problem& p, const std::vector<float>* mask, std::int64_t mb, std::int64_t mh,
                             bool causal = false, std::int64_t n = Lk) {
  std::vector<float> out(static_cast<std::size_t>(p.B * p.Hq * p.Lq * D));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (std::int64_t b = 0; b < p.B; ++b)
    for (std::int64_t h = 0; h < p.Hq; ++h) {
      const std::int64_t kvh = b * p.Hkv + h / (p.Hq / p.Hkv);
      for (std::int64_t i = 0; i < p.Lq; ++i) {
        const std::int64_t keys = causal ? i + (n - p.Lq) + 1 : n;
        std::vector<double> s(static_cast<std::size_t>(keys));
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d)
            dot += static_cast<double>(p.q[static_cast<std::size_t>(((b * p.Hq + h) * p.Lq + i) * D + d)]) *
                   p.k[static_cast<std::size_t>((kvh * Lk + j) * D + d)];
          double x = dot * scale;
          if (mask)
            x += (*mask)[static_cast<std::size_t>((((mb > 1 ? b : 0) * mh + (mh > 1 ? h : 0)) * p.Lq + i) * Lk + j)];
          s[static_cast<std::size_t>(j)] = x;
          mx = std::max(mx, x);
        }
        double l = 0;
        for (auto& x : s) l += (x = std::exp(x - mx));  // an all -inf row: NaN, as softmax gives
        for (std::int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < keys; ++j)
            acc += s[static_cast<std::size_t>(j)] * p.v[static_cast<std::size_t>((kvh * Lk + j) * D + c)];
          out[static_cast<std::size_t>(((b * p.Hq + h) * p.Lq + i) * D + c)] = static_cast<float>(acc / l);
        }
      }
    }
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(std::abs(got[i] - want[i]) <= 1e-5f * (1.0f + std::abs(want[i])));
  }
}

struct On {
  Tensor q, k, v;
};
On on(const Problem& p, Device dev) {
  return {Tensor::from(p.q, {p.B, p.Hq, p.Lq, D}, DType::f32, dev),
          Tensor::from(p.k, {p.B, p.Hkv, Lk, D}, DType::f32, dev),
          Tensor::from(p.v, {p.B, p.Hkv, Lk, D}, DType::f32, dev)};
}

// A mask of `count` elements in [-2, 2) with every seventh element -inf (never a whole row).
std::vector<float> mask_values(std::int64_t count, std::uint32_t seed) {
  std::vector<float> m = seeded_values(static_cast<std::size_t>(count), seed);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = i % 7 == 3 ? -inf : 2.0f * m[i];
  return m;
}

}  // namespace

TEST_CASE("attention with an additive mask, broadcast over the heads, on the device under test",
          "[batch][attention_mask]") {
  const Device dev = test::test_device();
  SECTION("[Lq, Lk], [1, Hq, Lq, Lk], [B, 1, Lq, Lk] and [B, Hq, Lq, Lk] masks with GQA; with valid and causal") {
    const Problem p = problem(2, 2, 1, 3, 1);
    const On t = on(p, dev);
    const std::vector<float> m2 = mask_values(3 * Lk, 5);
    const Tensor mask2 = Tensor::from(m2, {3, Lk}, DType::f32, dev);
    check_close(attention(t.q, t.k, t.v, Tensor(), mask2).to_vector(), reference(p, &m2, 1, 1), "[Lq, Lk]");
    for (auto [mb, mh] : {std::pair<std::int64_t, std::int64_t>{1, 2}, {2, 1}, {2, 2}}) {
      const std::vector<float> m = mask_values(mb * mh * 3 * Lk, static_cast<std::uint32_t>(6 + mb * mh));
      const Tensor mask = Tensor::from(m, {mb, mh, 3, Lk}, DType::f32, dev);
      const std::string what = "[" + std::to_string(mb) + ", " + std::to_string(mh) + ", 3, 40]";
      check_close(attention(t.q, t.k, t.v, Tensor(), mask).to_vector(), reference(p, &m, mb, mh), what);
      // with valid n = 33 (only mask columns < 33 read) and causal
      check_close(attention(t.q, t.k, t.v, Tensor::from({33}, dev), mask, {.causal = true}).to_vector(),
                  reference(p, &m, mb, mh, true, 33), what + ", valid 33, causal");
    }
    // NaN past n in the mask changes nothing: those columns are never read
    std::vector<float> tail = m2;
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 20; j < Lk; ++j) tail[static_cast<std::size_t>(i * Lk + j)] = std::nanf("");
    check_close(
        attention(t.q, t.k, t.v, Tensor::from({20}, dev), Tensor::from(tail, {3, Lk}, DType::f32, dev)).to_vector(),
        reference(p, &m2, 1, 1, false, 20), "NaN in the mask past valid 20");
    // the async form
    check_close(async::attention(t.q, t.k, t.v, Tensor(), mask2).get().to_vector(), reference(p, &m2, 1, 1), "async");
  }
  SECTION("a -inf upper triangle is causal; a row all -inf is NaN") {
    const Problem p = problem(1, 2, 2, 3, 11);
    const On t = on(p, dev);
    std::vector<float> tri(static_cast<std::size_t>(3 * Lk), 0.0f);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = i + (Lk - 3) + 1; j < Lk; ++j) tri[static_cast<std::size_t>(i * Lk + j)] = -inf;
    check_close(attention(t.q, t.k, t.v, Tensor(), Tensor::from(tri, {1, 1, 3, Lk}, DType::f32, dev)).to_vector(),
                attention(t.q, t.k, t.v, {.causal = true}).to_vector(), "-inf triangle");
    std::vector<float> dead = mask_values(3 * Lk, 12);
    for (std::int64_t j = 0; j < Lk; ++j) dead[static_cast<std::size_t>(Lk + j)] = -inf;  // row 1
    check_close(attention(t.q, t.k, t.v, Tensor(), Tensor::from(dead, {3, Lk}, DType::f32, dev)).to_vector(),
                reference(p, &dead, 1, 1), "row 1 all -inf");
  }
  SECTION("a long cache (the cpu splits its keys): -inf from key n on is valid n") {
    constexpr std::int64_t long_k = 2100, n = 1500;
    const Tensor q = Tensor::from(seeded_values(2 * D, 61), {1, 2, 1, D}, DType::f32, dev);
    const Tensor k = Tensor::from(seeded_values(long_k * D, 62), {1, 1, long_k, D}, DType::f32, dev);
    const Tensor v = Tensor::from(seeded_values(long_k * D, 63), {1, 1, long_k, D}, DType::f32, dev);
    std::vector<float> cut(static_cast<std::size_t>(long_k), 0.0f);
    for (std::int64_t j = n; j < long_k; ++j) cut[static_cast<std::size_t>(j)] = -inf;
    check_close(attention(q, k, v, Tensor(), Tensor::from(cut, {1, long_k}, DType::f32, dev)).to_vector(),
                attention(q, k, v, Tensor::from({static_cast<std::int32_t>(n)}, dev)).to_vector(), "-inf past 1500");
  }
  SECTION("a batch recorded once, the mask an upload: each run its own mask") {
    const Problem p = problem(1, 2, 1, 3, 21);
    const On t = on(p, dev);
    Batch batch(dev);
    const Tensor bq = batch.upload(p.q, {1, 2, 3, D});
    const Tensor bm = batch.upload(std::vector<float>(static_cast<std::size_t>(2 * 3 * Lk)), {1, 2, 3, Lk});
    BatchRead y = batch.read(attention(bq, t.k, t.v, Tensor(), bm));
    for (std::uint32_t seed : {31u, 32u}) {
      const std::vector<float> m = mask_values(2 * 3 * Lk, seed);
      batch.run({p.q, m});
      check_close(y.get(), reference(p, &m, 1, 2), "run with mask seed " + std::to_string(seed));
    }
  }
  SECTION("errors at the call: a mask not floating, of the wrong shape, not broadcasting") {
    const Problem p = problem(1, 2, 1, 3, 41);
    const On t = on(p, dev);
    const std::string device = " on " + dev.str();
    auto fails = [&](const Tensor& mask, ErrorCode code, const std::string& says) {
      try {
        (void)attention(t.q, t.k, t.v, Tensor(), mask);
        FAIL("mask " << mask.str() << " ran");
      } catch (const Error& e) {
        CHECK(e.code() == code);
        CHECK_THAT(e.what(), Catch::Contains("[attention]") && Catch::Contains("mask") && Catch::Contains(says) &&
                                 Catch::Contains("f32[1, 2, 3, 8]" + device));
      }
    };
    fails(Tensor::zeros({3, Lk}, DType::i32, dev), ErrorCode::dtype_mismatch, "i32");
    fails(Tensor::zeros({3, Lk - 1}, DType::f32, dev), ErrorCode::invalid_shape, "[3, 39]");
    fails(Tensor::zeros({Lk, 3}, DType::f32, dev), ErrorCode::invalid_shape, "[40, 3]");
    fails(Tensor::zeros({3, 3, Lk}, DType::f32, dev), ErrorCode::invalid_shape, "[3, 3, 40]");
    fails(Tensor::zeros({1, 1, 1, 3, Lk}, DType::f32, dev), ErrorCode::invalid_shape, "[1, 1, 1, 3, 40]");
    // dims above the heads mixing 1 and q's: the cpu runs it; cuda and vulkan index the mask by
    // two strides and refuse it, pinned, with the reason
    const Tensor q5 = Tensor::zeros({2, 3, 2, 3, D}, DType::f32, dev),
                 k5 = Tensor::zeros({2, 3, 1, Lk, D}, DType::f32, dev);
    const Tensor mixed = Tensor::zeros({2, 1, 1, 3, Lk}, DType::f32, dev);
    if (dev.kind == DeviceKind::cpu) {
      CHECK(attention(q5, k5, k5, Tensor(), mixed).shape() == Shape{2, 3, 2, 3, D});
    } else {
      try {
        (void)attention(q5, k5, k5, Tensor(), mixed);
        FAIL("a mixed mask ran on " << dev.str());
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::unsupported);
        CHECK_THAT(e.what(), Catch::Contains("dims above the heads") && Catch::Contains("[2, 1, 1, 3, 40]"));
      }
    }
  }
}

#ifdef TRINE_VULKAN_BUILT
// attention.comp's MASK form, alone and with VALID, under the Vulkan suites (validation on;
// GPU-assisted in vulkan_gpuav).
TEST_CASE("vulkan: attention's MASK shader form, with and without VALID", "[vulkan][attention_mask]") {
  const Device vk{DeviceKind::vulkan, 0};
  const Problem p = problem(1, 2, 1, 3, 51);
  const On t = on(p, vk);
  const std::vector<float> m = mask_values(2 * 3 * Lk, 52);
  const Tensor mask = Tensor::from(m, {2, 3, Lk}, DType::f32, vk);
  check_close(attention(t.q, t.k, t.v, Tensor(), mask).to_vector(), reference(p, &m, 1, 2), "vulkan, mask");
  check_close(attention(t.q, t.k, t.v, Tensor::from({33}, vk), mask, {.causal = true}).to_vector(),
              reference(p, &m, 1, 2, true, 33), "vulkan, mask, valid 33");
}
#endif
