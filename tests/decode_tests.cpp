// The decode loop of examples/decode.cpp (its model, examples/decode_model.hpp) on the device under
// test, recorded once in a pinned Batch and replayed per token, against the same model in plain
// double precision (tests/reference). Tagged "[decode]", which ctest runs on every test device (cpu,
// vulkan:0 on lavapipe, cuda:0 on the emulator).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "examples/decode_model.hpp"
#include "tests/harness.hpp"
#include "tests/reference/reference.hpp"

using namespace trine;

namespace {

ref::Array array_of(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  const auto dims = t.shape().dims();
  return {{dims.begin(), dims.end()}, std::vector<double>(v.begin(), v.end())};
}

ref::Array reshaped(ref::Array a, std::vector<std::int64_t> shape) {
  a.shape = std::move(shape);
  a.scale.clear();
  return a;
}

// The model in double precision: the weights' f32 values, every op of decode::step in ref::, the
// cache as the list of positions written so far (so attention reads exactly the valid ones).
struct Reference {
  const decode::Config& c;
  ref::Array embed, g1, wq, wk, wv, wo, g2, w1, w3, w2, gf, head;
  std::vector<std::vector<double>> k_rows, v_rows;  // per position, [kv_heads, head_dim]

  Reference(const decode::Config& cfg, const decode::Weights& w)
      : c(cfg), embed(array_of(w.embed)), g1(array_of(w.g1)), wq(array_of(w.wq)), wk(array_of(w.wk)),
        wv(array_of(w.wv)), wo(array_of(w.wo)), g2(array_of(w.g2)), w1(array_of(w.w1)), w3(array_of(w.w3)),
        w2(array_of(w.w2)), gf(array_of(w.gf)), head(array_of(w.head)) {}

  // The cache [kv_heads, n, head_dim] of the n positions written so far.
  ref::Array cache(const std::vector<std::vector<double>>& rows) const {
    const std::int64_t n = static_cast<std::int64_t>(rows.size()), hd = c.head_dim();
    ref::Array a{{c.kv_heads, n, hd}, std::vector<double>(static_cast<std::size_t>(c.kv_heads * n * hd))};
    for (std::int64_t p = 0; p < n; ++p)
      for (std::int64_t h = 0; h < c.kv_heads; ++h)
        for (std::int64_t d = 0; d < hd; ++d)
          a.data[static_cast<std::size_t>((h * n + p) * hd + d)] = rows[static_cast<std::size_t>(p)][static_cast<std::size_t>(h * hd + d)];
    return a;
  }

  std::vector<double> step(int token, std::int64_t p) {
    const double eps = NormParams{}.eps;
    const std::int64_t hd = c.head_dim();
    const RopeParams rp{.base = c.rope_base, .position_offset = p, .pairs = RopePairs::halves};
    const auto row = embed.data.begin() + token * c.dim;
    const ref::Array x{{1, c.dim}, std::vector<double>(row, row + c.dim)};
    const ref::Array h = ref::rmsnorm(x, g1, eps);
    const ref::Array q = ref::rope(reshaped(ref::matmul(h, wq), {c.heads, 1, hd}), rp);
    k_rows.push_back(ref::rope(reshaped(ref::matmul(h, wk), {c.kv_heads, 1, hd}), rp).data);
    v_rows.push_back(ref::matmul(h, wv).data);
    const ref::Array a = ref::attention(q, cache(k_rows), cache(v_rows), {.causal = true});
    const ref::Array x2 = ref::add(x, ref::matmul(reshaped(a, {1, c.dim}), wo));
    const ref::Array n = ref::rmsnorm(x2, g2, eps);
    const ref::Array m = ref::matmul(ref::mul(ref::silu(ref::matmul(n, w1)), ref::matmul(n, w3)), w2);
    return ref::matmul(ref::rmsnorm(ref::add(x2, m), gf, eps), head).data;
  }
};

}  // namespace

TEST_CASE("the decode example's loop, replayed per token, gives the double-precision model's logits", "[decode]") {
  const Device dev = test::test_device();
  decode::Config cfg;
  cfg.max_len = 36;  // past 32 keys: cuda's attention tile
  const decode::Weights w = decode::make_weights(cfg, dev);
  const decode::Cache cache = decode::make_cache(cfg, dev);
  Batch batch(dev);
  const std::vector<float> zero{0.0f};
  const Tensor token = batch.upload(zero, {1}, DType::i32);
  const Tensor position = batch.upload(zero, {1}, DType::i32);
  const Tensor valid = batch.upload(zero, {1}, DType::i32);
  const Tensor logits = decode::step(cfg, w, cache, token, position, valid);
  const BatchRead logits_read = batch.read(logits);
  const BatchRead next_read = batch.read(argmax(logits, -1));

  Reference reference(cfg, w);
  const std::vector<int> prompt{5, 17, 42};
  int t = prompt[0];
  // Every position of the cache: rope's angles and the attention's valid length change each step,
  // up to the cache's end.
  for (std::int64_t p = 0; p < cfg.max_len; ++p) {
    const std::vector<float> in_t{static_cast<float>(t)}, in_p{static_cast<float>(p)}, in_n{static_cast<float>(p + 1)};
    batch.run({in_t, in_p, in_n});
    const std::vector<float> got = logits_read.get();
    const std::vector<double> want = reference.step(t, p);
    REQUIRE(got.size() == want.size());
    double scale = 0.0, worst = 0.0;
    std::size_t best = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::fabs(want[i]));
      worst = std::max(worst, std::fabs(got[i] - want[i]));
      if (want[i] > want[best]) best = i;
    }
    // Six matrix products of 64 to 128 terms, three norms, a softmax over up to 36 keys, rope: the
    // f32 evaluations measured 4.8e-7 (cpu), 4.9e-7 (lavapipe) and 6.2e-7 (cuda, emulated) at
    // logits of order 1.5; 2e-5 leaves room for other orders of summation, while a wrong layout,
    // window or length moves the logits by order 1 (each makes this fail).
    INFO(dev.str() << " position " << p << ": largest |logit| " << scale << ", worst error " << worst);
    CHECK(worst <= 2e-5 * (1.0 + scale));
    // The model's choice: the reference's argmax, unless the two best logits are within the error.
    const int chosen = static_cast<int>(next_read.get()[0]);
    std::vector<double> sorted = want;
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] > 2 * worst) CHECK(chosen == static_cast<int>(best));
    t = p + 1 < static_cast<std::int64_t>(prompt.size()) ? prompt[static_cast<std::size_t>(p + 1)] : chosen;
  }
}
