// A small Llama-style decoder layer, written as a user would write it against trine: the model of
// examples/decode.cpp, and of tests/decode_tests.cpp, which checks its logits against a plain
// double-precision reference.
//
// One step takes the new token's id and its position and returns the logits of the next token:
//   embedding gather -> rmsnorm -> q, k, v projections -> rope (Hugging Face's rotate-halves layout)
//   on q and k -> k and v written into the preallocated cache at the position -> grouped-query
//   attention over the cache's first `valid` positions -> output projection + residual -> rmsnorm ->
//   gated MLP (silu(x W1) * (x W3)) W2 + residual -> rmsnorm -> vocabulary projection.
// Every per-step value (token, position, valid length) is an i32 tensor of one element read on the
// device, so the same code records one trine::Batch that every step replays.
#pragma once

#include <cmath>
#include <cstdint>

#include "trine/trine.hpp"

namespace decode {

struct Config {
  std::int64_t dim = 64;      // D, the hidden size
  std::int64_t heads = 4;     // query heads
  std::int64_t kv_heads = 2;  // key/value heads (grouped-query attention: heads / kv_heads share one)
  std::int64_t mlp = 128;     // the MLP's hidden size
  std::int64_t vocab = 96;
  std::int64_t max_len = 16;  // the cache's positions
  float rope_base = 10000.0f;
  std::int64_t head_dim() const { return dim / heads; }
};

struct Weights {
  trine::Tensor embed;  // [vocab, dim]
  trine::Tensor g1, wq, wk, wv, wo, g2, w1, w3, w2, gf, head;
};

// Uniform weights in +-1/sqrt(fan_in), so that activations stay of order 1; norms' gains near 1.
inline Weights make_weights(const Config& c, trine::Device dev, std::uint64_t seed = 7) {
  auto w = [&](trine::Shape shape, float bound) {
    return trine::Tensor::random(shape, seed++, {.low = -bound, .high = bound, .device = dev});
  };
  auto gain = [&] { return trine::Tensor::random({c.dim}, seed++, {.low = 0.8f, .high = 1.2f, .device = dev}); };
  const float d = 1.0f / std::sqrt(static_cast<float>(c.dim)), f = 1.0f / std::sqrt(static_cast<float>(c.mlp));
  const std::int64_t kv = c.kv_heads * c.head_dim();
  Weights out;
  out.embed = w({c.vocab, c.dim}, 1.0f);
  out.g1 = gain();
  out.wq = w({c.dim, c.dim}, d);
  out.wk = w({c.dim, kv}, d);
  out.wv = w({c.dim, kv}, d);
  out.wo = w({c.dim, c.dim}, d);
  out.g2 = gain();
  out.w1 = w({c.dim, c.mlp}, d);
  out.w3 = w({c.dim, c.mlp}, d);
  out.w2 = w({c.mlp, c.dim}, f);
  out.gf = gain();
  out.head = w({c.dim, c.vocab}, d);
  return out;
}

// The cache: [kv_heads, max_len, head_dim] for keys and for values, zeros, written in place.
struct Cache {
  trine::Tensor k, v;
};

inline Cache make_cache(const Config& c, trine::Device dev) {
  const trine::Shape shape{c.kv_heads, c.max_len, c.head_dim()};
  return {trine::Tensor::zeros(shape, trine::DType::f32, dev), trine::Tensor::zeros(shape, trine::DType::f32, dev)};
}

// One step. token, position and valid are i32 tensors of one element: the token's id, its position
// p, and p + 1 (the cache positions attention reads). Returns the logits, f32 [1, vocab].
inline trine::Tensor step(const Config& c, const Weights& w, const Cache& cache, const trine::Tensor& token,
                          const trine::Tensor& position, const trine::Tensor& valid) {
  using namespace trine;
  const std::int64_t hd = c.head_dim();
  const RopeParams rp{.base = c.rope_base, .pairs = RopePairs::halves};
  const Tensor x = gather(w.embed, token);  // [1, dim]
  const Tensor h = rmsnorm(x, w.g1);
  const Tensor q = rope(h.matmul(w.wq).reshape({c.heads, 1, hd}), position, rp);
  const Tensor k = rope(h.matmul(w.wk).reshape({c.kv_heads, 1, hd}), position, rp);
  copy_into(cache.k, k, 1, position);
  copy_into(cache.v, h.matmul(w.wv).reshape({c.kv_heads, 1, hd}), 1, position);
  const Tensor a = attention(q, cache.k, cache.v, valid, {.causal = true}).reshape({1, c.dim});
  const Tensor x2 = x + a.matmul(w.wo);
  const Tensor n = rmsnorm(x2, w.g2);
  const Tensor x3 = x2 + (silu(n.matmul(w.w1)) * n.matmul(w.w3)).matmul(w.w2);
  return rmsnorm(x3, w.gf).matmul(w.head);
}

}  // namespace decode
