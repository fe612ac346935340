// A decode loop: a small Llama-style layer (decode_model.hpp) generates tokens greedily, one step
// per token, from a prompt. The step is recorded once in a trine::Batch pinned to the device and
// replayed for every token; the KV cache is allocated at its full length and written in place, and
// the token, its position and the number of valid cache positions are the replay's only inputs.
//
//   build/release/decode_example                          # the cpu and every other device here
//   build/release/decode_example --devices vulkan:0 --prompt 5,17,42
//
// Prints, per device, the tokens (the prompt's, then the generated ones) and the median time of a
// replayed step. tests/decode_tests.cpp checks the same model's logits against a double-precision
// reference on every device the tests run on.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "decode_model.hpp"

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    parts.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trine;
  std::vector<Device> devs;
  std::vector<int> prompt{1, 2, 3};
  const decode::Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc) {
      for (const std::string& d : split(argv[++i])) devs.push_back(Device::parse(d));
    } else if (a == "--prompt" && i + 1 < argc) {
      prompt.clear();
      for (const std::string& t : split(argv[++i])) prompt.push_back(std::atoi(t.c_str()));
    } else {
      std::fprintf(stderr, "usage: decode_example [--devices cpu,vulkan:0] [--prompt 1,2,3]\n");
      return 2;
    }
  }
  if (prompt.empty() || static_cast<std::int64_t>(prompt.size()) > cfg.max_len ||
      std::any_of(prompt.begin(), prompt.end(), [&](int t) { return t < 0 || t >= cfg.vocab; })) {
    std::fprintf(stderr, "decode_example: the prompt needs 1 to %lld tokens in [0, %lld)\n",
                 static_cast<long long>(cfg.max_len), static_cast<long long>(cfg.vocab));
    return 2;
  }
  if (devs.empty())
    for (const DeviceInfo& d : devices()) devs.push_back(d.device);

  int failed = 0;
  for (const Device dev : devs) {
    try {
      const decode::Weights w = decode::make_weights(cfg, dev);
      const decode::Cache cache = decode::make_cache(cfg, dev);
      // Recorded once: three one-element i32 uploads, the step, one read of the next token.
      Batch batch(dev);
      const std::vector<float> zero{0.0f};
      const Tensor token = batch.upload(zero, {1}, DType::i32);
      const Tensor position = batch.upload(zero, {1}, DType::i32);
      const Tensor valid = batch.upload(zero, {1}, DType::i32);
      const BatchRead next = batch.read(argmax(decode::step(cfg, w, cache, token, position, valid), -1));

      std::vector<int> tokens{prompt[0]};
      std::vector<double> ms;
      for (std::int64_t p = 0; p < cfg.max_len; ++p) {
        const std::vector<float> t{static_cast<float>(tokens.back())}, pos{static_cast<float>(p)},
            n{static_cast<float>(p + 1)};
        const auto t0 = std::chrono::steady_clock::now();
        batch.run({t, pos, n});
        const int predicted = static_cast<int>(next.get()[0]);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        // Inside the prompt the next token is the prompt's; after it, the model's choice.
        tokens.push_back(p + 1 < static_cast<std::int64_t>(prompt.size()) ? prompt[p + 1] : predicted);
      }
      std::sort(ms.begin() + 1, ms.end());  // the first run places the batch: not a step's time
      std::printf("%-10s tokens:", dev.str().c_str());
      for (int t : tokens) std::printf(" %d", t);
      std::printf("   (%.3f ms a step, median of %lld replays)\n", ms[1 + (ms.size() - 1) / 2],
                  static_cast<long long>(ms.size() - 1));
    } catch (const Error& e) {
      std::printf("%-10s failed: %s\n", dev.str().c_str(), e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}
