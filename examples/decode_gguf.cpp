// A decode loop over a llama-style model read from a GGUF file: the config from its metadata, the
// weights as the file stores them (k-quant projections stay quantized: gemv dequantizes them in
// its kernel), and each step run eagerly, op by op: embedding gather -> per block: rmsnorm, q/k/v
// projections, rope, grouped-query attention over a KV cache grown with concat, output projection
// + residual, rmsnorm, gated silu MLP + residual -> rmsnorm -> vocabulary projection.
// (examples/decode.cpp records its step once in a Batch and replays it instead.)
//
//   python3 examples/make_decode_gguf.py model.gguf reference.gguf   # random weights, numpy logits
//   build/release/decode_gguf_example model.gguf --check reference.gguf
//   build/release/decode_gguf_example model.gguf --devices cpu,vulkan:0 --tokens 5,17,42
//
// Prints, per device, each step's token, the argmax of its logits (a greedy decoder's next token)
// and its time. --check compares every step's logits with the reference file's, within the
// tolerance it gives for that step (make_decode_gguf.py says how it is derived), and exits 1 on a
// mismatch; the tokens are then the reference's, or the first of them given with --tokens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trine/trine.hpp"

namespace {

using namespace trine;

struct Config {
  std::int64_t dim = 0, heads = 0, kv_heads = 0, mlp = 0, vocab = 0, context = 0, blocks = 0;
  float rope_base = 10000.0f, eps = 1e-5f;
  std::int64_t head_dim() const { return dim / heads; }
};

struct Block {
  Tensor attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down;
};

struct Model {
  Config c;
  Tensor embed, out_norm, out;
  std::vector<Block> blocks;
};

[[noreturn]] void fail(const io::ModelFile& f, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "[decode_gguf] " + f.path + ": " + what);
}

// A metadata value read by `as` (Value::as_int, ...), the key named when it is absent or of another type.
template <class As>
auto value(const io::ModelFile& f, const std::string& key, As as) {
  const io::Value& v = f.value(key);  // absent: an Error naming the file and the key
  try {
    return as(v);
  } catch (const Error& e) {
    fail(f, "metadata '" + key + "': " + e.what());
  }
}

std::int64_t count(const io::ModelFile& f, const std::string& key) {
  const std::int64_t n = value(f, key, [](const io::Value& v) { return v.as_int(); });
  if (n < 1) fail(f, "metadata '" + key + "' is " + std::to_string(n) + ", not a positive count");
  return n;
}

float number(const io::ModelFile& f, const std::string& key) {
  return static_cast<float>(value(f, key, [](const io::Value& v) { return v.as_double(); }));
}

// The tensor `name`, which must have this shape (trine's order: a projection is [outputs, inputs]).
Tensor weight(const io::ModelFile& f, const std::string& name, const Shape& shape) {
  const Tensor& t = f.tensor(name);  // absent: an Error naming the file and the tensor
  if (t.shape() != shape) fail(f, "tensor '" + name + "' is " + t.str() + ", the config makes it " + shape.str());
  return t;
}

// The keys llama.cpp reads for a llama-style model ("<arch>.embedding_length", ...); head_count_kv
// and rope.freq_base are optional there, with these defaults.
Model read_model(const io::ModelFile& f) {
  const std::string arch = value(f, "general.architecture", [](const io::Value& v) { return v.as_string(); });
  const std::string p = arch + ".";
  Config c;
  c.dim = count(f, p + "embedding_length");
  c.blocks = count(f, p + "block_count");
  c.heads = count(f, p + "attention.head_count");
  c.kv_heads = f.has_value(p + "attention.head_count_kv") ? count(f, p + "attention.head_count_kv") : c.heads;
  c.mlp = count(f, p + "feed_forward_length");
  c.context = count(f, p + "context_length");
  c.eps = number(f, p + "attention.layer_norm_rms_epsilon");
  if (f.has_value(p + "rope.freq_base")) c.rope_base = number(f, p + "rope.freq_base");
  if (c.dim % c.heads != 0 || c.heads % c.kv_heads != 0 || c.head_dim() % 2 != 0)
    fail(f, "embedding_length " + std::to_string(c.dim) + ", head_count " + std::to_string(c.heads) +
                " and head_count_kv " + std::to_string(c.kv_heads) + " do not make whole, even heads");
  if (f.has_value(p + "rope.dimension_count") && count(f, p + "rope.dimension_count") != c.head_dim())
    fail(f, "rope.dimension_count is not the head dim " + std::to_string(c.head_dim()) + " (partial rope)");

  Model m;
  c.vocab = f.tensor("token_embd.weight").dim(0);  // the embedding's rows
  m.embed = weight(f, "token_embd.weight", {c.vocab, c.dim});
  const std::int64_t kv = c.kv_heads * c.head_dim();
  for (std::int64_t i = 0; i < c.blocks; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    m.blocks.push_back({.attn_norm = weight(f, b + "attn_norm.weight", {c.dim}),
                        .wq = weight(f, b + "attn_q.weight", {c.dim, c.dim}),
                        .wk = weight(f, b + "attn_k.weight", {kv, c.dim}),
                        .wv = weight(f, b + "attn_v.weight", {kv, c.dim}),
                        .wo = weight(f, b + "attn_output.weight", {c.dim, c.dim}),
                        .ffn_norm = weight(f, b + "ffn_norm.weight", {c.dim}),
                        .gate = weight(f, b + "ffn_gate.weight", {c.mlp, c.dim}),
                        .up = weight(f, b + "ffn_up.weight", {c.mlp, c.dim}),
                        .down = weight(f, b + "ffn_down.weight", {c.dim, c.mlp})});
  }
  m.out_norm = weight(f, "output_norm.weight", {c.dim});
  m.out = weight(f, "output.weight", {c.vocab, c.dim});
  m.c = c;
  return m;
}

// Each block's keys and values so far, [kv_heads, positions, head_dim].
struct Cache {
  Tensor k, v;
};

// The logits [vocab] after reading `token` at `position`; appends the position to every block's cache.
Tensor step(const Model& m, std::vector<Cache>& cache, int token, std::int64_t position, Device dev) {
  const Config& c = m.c;
  const std::int64_t hd = c.head_dim();
  // Adjacent pairs: llama.cpp's rope for "llama" files (its converter permutes Hugging Face's q and
  // k rows so that they pair this way).
  const RopeParams rp{.base = c.rope_base, .position_offset = position, .pairs = RopePairs::interleaved};
  const std::vector<std::int32_t> id{token};
  Tensor x = gather(m.embed, Tensor::from(id, {1}, dev)).reshape({c.dim});
  for (std::size_t i = 0; i < m.blocks.size(); ++i) {
    const Block& b = m.blocks[i];
    const Tensor h = rmsnorm(x, b.attn_norm, c.eps);
    const Tensor q = rope(gemv(b.wq, h).reshape({c.heads, 1, hd}), rp);
    const Tensor k = rope(gemv(b.wk, h).reshape({c.kv_heads, 1, hd}), rp);
    const Tensor v = gemv(b.wv, h).reshape({c.kv_heads, 1, hd});
    Cache& kv = cache[i];
    kv.k = position == 0 ? k : concat({kv.k, k}, 1);
    kv.v = position == 0 ? v : concat({kv.v, v}, 1);
    // One query against every cached position; q head j reads kv head j / (heads / kv_heads).
    x = x + gemv(b.wo, attention(q, kv.k, kv.v).reshape({c.dim}));
    const Tensor n = rmsnorm(x, b.ffn_norm, c.eps);
    x = x + gemv(b.down, silu(gemv(b.gate, n)) * gemv(b.up, n));
  }
  return gemv(m.out, rmsnorm(x, m.out_norm, c.eps));
}

// The reference: the tokens, and each step's logits and the largest |error| allowed there.
struct Reference {
  std::vector<int> tokens;
  std::vector<float> logits, tolerance;
  std::int64_t vocab = 0;
};

Reference read_reference(const std::string& path) {
  const io::ModelFile f = io::load_gguf(path);
  const Tensor& tokens = f.tensor("tokens");
  const Tensor& logits = f.tensor("logits");
  const Tensor& tolerance = f.tensor("tolerance");
  const std::int64_t steps = tokens.numel();
  if (tokens.dtype() != DType::i32 || logits.rank() != 2 || logits.dim(0) != steps || tolerance.numel() != steps)
    fail(f, "not a reference: tokens i32 [steps], logits [steps, vocab] and tolerance [steps] expected, got " +
                tokens.str() + ", " + logits.str() + ", " + tolerance.str());
  const std::vector<std::int32_t> t = tokens.to_vector<std::int32_t>();
  return {{t.begin(), t.end()}, logits.to_vector(), tolerance.to_vector(), logits.dim(1)};
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    parts.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return parts;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: decode_gguf_example model.gguf [--devices cpu,vulkan:0] [--tokens 1,2,3] [--check reference.gguf]\n");
  return 2;
}

// Runs the tokens on dev; false if a step's logits are not within the reference's tolerance.
bool run(const std::string& path, Device dev, const std::vector<int>& tokens, const Reference* ref) {
  const Model m = read_model(io::load_gguf(path, dev));
  const Config& c = m.c;
  if (static_cast<std::int64_t>(tokens.size()) > c.context ||
      std::any_of(tokens.begin(), tokens.end(), [&](int t) { return t < 0 || t >= c.vocab; }))
    throw Error(ErrorCode::invalid_argument, "[decode_gguf] the model takes up to " + std::to_string(c.context) +
                                                 " tokens in [0, " + std::to_string(c.vocab) + ")");
  if (ref && ref->vocab != c.vocab)
    throw Error(ErrorCode::invalid_argument, "[decode_gguf] the reference's vocabulary is " +
                                                 std::to_string(ref->vocab) + ", the model's " +
                                                 std::to_string(c.vocab));
  std::printf("%s: %s, %lld block(s), dim %lld, %lld/%lld heads, mlp %lld, vocab %lld; q %s, output %s\n",
              dev.str().c_str(), path.c_str(), static_cast<long long>(c.blocks), static_cast<long long>(c.dim),
              static_cast<long long>(c.heads), static_cast<long long>(c.kv_heads), static_cast<long long>(c.mlp),
              static_cast<long long>(c.vocab), dtype_name(m.blocks[0].wq.dtype()), dtype_name(m.out.dtype()));
  std::vector<Cache> cache(m.blocks.size());
  bool ok = true;
  for (std::size_t p = 0; p < tokens.size(); ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> logits = step(m, cache, tokens[p], static_cast<std::int64_t>(p), dev).to_vector();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto next = std::max_element(logits.begin(), logits.end()) - logits.begin();
    std::printf("  step %zu: token %d -> %lld  %8.3f ms", p, tokens[p], static_cast<long long>(next), ms);
    if (ref) {
      double err = 0.0;
      for (std::int64_t j = 0; j < c.vocab; ++j) {
        const double d = std::fabs(double(logits[j]) - ref->logits[p * c.vocab + j]);
        err = std::max(err, std::isnan(d) ? HUGE_VAL : d);  // std::max would drop a NaN
      }
      const double tol = ref->tolerance[p];
      ok &= err <= tol;
      std::printf("  max |logit - reference| %.3g %s %.3g", err, err <= tol ? "<=" : "> tolerance", tol);
    }
    std::printf("\n");
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, check;
  std::vector<Device> devs;
  std::vector<int> tokens;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--devices" && i + 1 < argc) {
        for (const std::string& d : split(argv[++i])) devs.push_back(Device::parse(d));
      } else if (a == "--tokens" && i + 1 < argc) {
        for (const std::string& t : split(argv[++i])) tokens.push_back(std::atoi(t.c_str()));
      } else if (a == "--check" && i + 1 < argc) {
        check = argv[++i];
      } else if (path.empty() && !a.starts_with("--")) {
        path = a;
      } else {
        return usage();
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "decode_gguf_example: %s\n", e.what());
    return usage();
  }
  if (path.empty()) return usage();
  if (devs.empty()) devs.push_back(Device{});

  Reference ref;
  if (!check.empty()) {
    try {
      ref = read_reference(check);
    } catch (const Error& e) {
      std::fprintf(stderr, "decode_gguf_example: %s\n", e.what());
      return 2;
    }
    if (tokens.size() > ref.tokens.size() || !std::equal(tokens.begin(), tokens.end(), ref.tokens.begin())) {
      std::fprintf(stderr, "decode_gguf_example: --tokens must be the first tokens of the reference's\n");
      return 2;
    }
    if (tokens.empty()) tokens = ref.tokens;
  }
  if (tokens.empty()) tokens = {1, 2, 3};

  int failed = 0;
  for (const Device dev : devs) {
    try {
      if (!run(path, dev, tokens, check.empty() ? nullptr : &ref)) {
        std::printf("%s: logits differ from %s beyond the tolerance\n", dev.str().c_str(), check.c_str());
        ++failed;
      }
    } catch (const Error& e) {
      std::printf("%s failed: %s\n", dev.str().c_str(), e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}
