// One transformer decode step (D = 512, 8 heads of 64, a KV cache of 128 positions, an MLP of 2048
// and a vocabulary of 2048) timed two ways on each device: as sync calls, and as one trine::Batch
// recorded once and replayed per token (the new token's hidden state, its position and the valid
// length the only inputs, the cache written in place at that position). Interleaved samples, medians.
//
//   build/release/decode-step                       # cpu and every other device this machine has
//   build/release/decode-step --devices cpu --steps 40 --samples 9
//
// Step t writes position t % 128 and attends to the positions up to it (attention's valid input), as
// a real decode does; rope rotates at the position read on the device. Both spellings run the same
// positions. Printed per device: the median milliseconds per step of each spelling and their ratio.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trine/trine.hpp"

using namespace trine;

namespace {

constexpr std::int64_t D = 512, H = 8, Dh = D / H, L = 128, F = 2048, V = 2048;

struct Weights {
  Tensor g1, wq, wk, wv, wo, g2, w1, w2, gf, head;
};

Weights weights(Device dev) {
  std::uint64_t seed = 1;
  const float s = 1.0f / 22.6f;  // ~1/sqrt(D): activations stay of order 1
  auto w = [&](Shape shape) { return Tensor::random(shape, seed++, {.low = -s, .high = s, .device = dev}); };
  auto ones = [&] { return Tensor::full({D}, 1.0f, DType::f32, dev); };
  return {ones(), w({D, D}), w({D, D}), w({D, D}), w({D, D}), ones(), w({D, F}), w({F, D}), ones(), w({D, V})};
}

// The step: x [1, D] the new token's hidden state, pos its position and valid pos + 1 (i32 tensors
// of one element), k_cache and v_cache [H, L, Dh] written in place. Returns the next token's id
// ([1], i32). The same code records into a batch when x, pos and valid are a batch's uploads.
Tensor step(const Weights& w, const Tensor& x, const Tensor& pos, const Tensor& valid, const Tensor& k_cache,
            const Tensor& v_cache) {
  const Tensor h = rmsnorm(x, w.g1);
  auto heads = [](const Tensor& t) { return t.reshape({H, Dh}).reshape({H, 1, Dh}); };
  // rope reads the position on the device too, so the one recording rotates each step correctly
  const Tensor q = rope(heads(h.matmul(w.wq)), pos);
  copy_into(k_cache, rope(heads(h.matmul(w.wk)), pos), 1, pos);
  copy_into(v_cache, heads(h.matmul(w.wv)), 1, pos);
  const Tensor a = attention(q, k_cache, v_cache, valid, {.causal = true}).reshape({1, D});
  const Tensor x2 = x + a.matmul(w.wo);
  const Tensor m = silu(rmsnorm(x2, w.g2).matmul(w.w1)).matmul(w.w2);
  const Tensor out = rmsnorm(x2 + m, w.gf);
  return argmax(out.matmul(w.head), -1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Device> devs;
  int steps = 20, samples = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc) {
      std::string list = argv[++i];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        devs.push_back(Device::parse(list.substr(at, comma - at)));
        at = comma + 1;
      }
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--samples" && i + 1 < argc) {
      samples = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: decode-step [--devices cpu,vulkan:0] [--steps N] [--samples N]\n");
      return 2;
    }
  }
  if (devs.empty())
    for (const DeviceInfo& d : devices()) devs.push_back(d.device);
  std::printf("decode step: D=%lld, %lld heads, cache %lld, MLP %lld, vocabulary %lld; %d steps a sample, %d "
              "samples, interleaved; median ms per step\n",
              static_cast<long long>(D), static_cast<long long>(H), static_cast<long long>(L),
              static_cast<long long>(F), static_cast<long long>(V), steps, samples);
  std::printf("%-10s %12s %12s %8s\n", "device", "sync calls", "batch replay", "ratio");
  for (const Device dev : devs) {
    try {
      const Weights w = weights(dev);
      const Tensor k_sync = Tensor::zeros({H, L, Dh}, DType::f32, dev), v_sync = Tensor::zeros({H, L, Dh}, DType::f32, dev);
      const Tensor k_rep = Tensor::zeros({H, L, Dh}, DType::f32, dev), v_rep = Tensor::zeros({H, L, Dh}, DType::f32, dev);
      std::vector<float> x_host(static_cast<std::size_t>(D));
      for (std::size_t i = 0; i < x_host.size(); ++i) x_host[i] = std::sin(0.1f * static_cast<float>(i));
      Batch batch(dev);
      const Tensor bx = batch.upload(x_host, {1, D});
      const std::vector<float> first{0.0f};
      const Tensor bpos = batch.upload(first, {1}, DType::i32);
      const Tensor bvalid = batch.upload(std::vector<float>{1.0f}, {1}, DType::i32);
      BatchRead token = batch.read(step(w, bx, bpos, bvalid, k_rep, v_rep));
      auto run_sync = [&](int n) {
        int sink = 0;
        for (int t = 0; t < n; ++t) {
          const Tensor x = Tensor::from(x_host, {1, D}, DType::f32, dev);
          const Tensor pos = Tensor::from({t % static_cast<int>(L)}, dev);
          const Tensor valid = Tensor::from({t % static_cast<int>(L) + 1}, dev);
          sink += step(w, x, pos, valid, k_sync, v_sync).to_vector<std::int32_t>()[0];
        }
        return sink;
      };
      auto run_batch = [&](int n) {
        float sink = 0;
        for (int t = 0; t < n; ++t) {
          const std::vector<float> p{static_cast<float>(t % L)}, n{static_cast<float>(t % L + 1)};
          batch.run({x_host, p, n});
          sink += token.get()[0];
        }
        return sink;
      };
      run_sync(2);  // warm-up: kernels compiled, memory cached, the batch placed
      run_batch(2);
      std::vector<double> ts, tb;
      for (int s = 0; s < samples; ++s) {
        auto t0 = std::chrono::steady_clock::now();
        run_sync(steps);
        auto t1 = std::chrono::steady_clock::now();
        run_batch(steps);
        auto t2 = std::chrono::steady_clock::now();
        ts.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / steps);
        tb.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count() / steps);
      }
      const double ms = median(ts), mb = median(tb);
      std::printf("%-10s %12.3f %12.3f %7.2fx\n", dev.str().c_str(), ms, mb, ms / mb);
      std::fflush(stdout);
    } catch (const Error& e) {
      std::printf("%-10s failed: %s\n", dev.str().c_str(), e.what());
    }
  }
  return 0;
}
