// trine's side of the GPU comparison (issues 33 and 35): one fixed list of cases, each timed on one
// trine device with its inputs resident there, steady state. benches/gpu_compare/gpu_compare.py puts
// it side by side with PyTorch (cuBLAS, cuDNN and PyTorch's own kernels), sample by sample.
//
//   gpu-compare --list                       # the cases, one per line: name op dtype dims flops bytes
//   gpu-compare --device cuda:0 --serve      # reads case names on stdin, answers one sample each
//   gpu-compare --device cpu --small         # standalone: every case once at a small size, a table
//   gpu-compare --device cuda:0 --cases matmul_f16_4096,add_f32_64M --samples 5
//
// A sample is `reps` calls of the async form issued back to back, then waited for: the time per
// call, host wall clock (what PyTorch's side measures too: its calls, then torch.cuda.synchronize).
// The first request of a case builds its inputs, warms the kernels up and picks reps so that a
// sample fills about --target-ms (at least 1, at most 200, and no more results pending than 4 GiB). `sync_relu_16` is the one exception: a
// sample is reps sync calls, each returning its result (the fixed cost of one call).
//
// An op the device refuses answers `error <trine's message>`: the table shows the refusal, never a
// number from another device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "trine/trine.hpp"

using namespace trine;

namespace {

struct Case {
  std::string name, op;
  DType dtype = DType::f32;
  std::vector<std::int64_t> dims;  // op-specific, see make()
  bool causal = false;
};

const char* dtype_word(DType d) { return d == DType::f16 ? "f16" : d == DType::bf16 ? "bf16" : "f32"; }

std::vector<Case> cases(bool small) {
  // Small: every path once at a size the cpu or the emulator runs in a moment (the ctest smoke test).
  const std::int64_t big = small ? 64 : 8192, mid = small ? 32 : 4096, one_k = small ? 16 : 1024;
  const std::int64_t elems = small ? 4096 : 64LL << 20;
  std::vector<Case> out;
  for (DType d : {DType::f16, DType::bf16, DType::f32}) {
    const std::string t = dtype_word(d);
    out.push_back({"matmul_" + t + "_1024", "matmul", d, {one_k, one_k, one_k}});
    out.push_back({"matmul_" + t + "_4096", "matmul", d, {mid, mid, mid}});
    out.push_back({"matmul_" + t + "_8192", "matmul", d, {big, big, big}});
    out.push_back({"matmul_" + t + "_128x4096x4096", "matmul", d, {small ? 8 : 128, mid, mid}});
  }
  out.push_back({"gemv_f32_11008x4096", "gemv", DType::f32, {small ? 44 : 11008, mid}});
  out.push_back({"gemv_f16_11008x4096", "gemv", DType::f16, {small ? 44 : 11008, mid}});
  out.push_back({"add_f32_64M", "add", DType::f32, {elems}});
  out.push_back({"relu_f32_64M", "relu", DType::f32, {elems}});
  out.push_back({"gelu_f32_64M", "gelu", DType::f32, {elems}});
  out.push_back({"cast_f32_to_f16_64M", "cast", DType::f32, {elems}});
  for (const char* op : {"softmax", "layernorm", "rmsnorm", "sum"})
    out.push_back({std::string(op) + "_f32_8192x8192", op, DType::f32, {big, big}});
  for (DType d : {DType::f16, DType::f32})
    for (bool causal : {false, true})
      out.push_back({std::string("attention_") + dtype_word(d) + "_32x2048x128" + (causal ? "_causal" : ""),
                     "attention", d, {small ? 2 : 32, small ? 16 : 2048, small ? 16 : 128}, causal});
  for (DType d : {DType::f32, DType::f16})
    out.push_back({std::string("conv2d_") + dtype_word(d) + "_32x128x56x56_3x3", "conv2d", d,
                   {small ? 2 : 32, small ? 8 : 128, small ? 8 : 56, 3}});
  out.push_back({"sync_relu_16", "sync_relu", DType::f32, {16}});
  return out;
}

// Work and traffic of one call, as the Python side prints them (FLOP for compute-bound cases, bytes
// read + written for memory-bound ones; trine's matmul writes f32 whatever its inputs, counted as
// PyTorch's output dtype so both columns share one figure).
double flops(const Case& c) {
  const auto& d = c.dims;
  if (c.op == "matmul") return 2.0 * d[0] * d[1] * d[2];
  if (c.op == "attention") return 4.0 * d[0] * d[1] * d[1] * d[2] * (c.causal ? 0.5 : 1.0);
  if (c.op == "conv2d") return 2.0 * d[0] * d[1] * d[1] * d[3] * d[3] * d[2] * d[2];
  return 0;
}

double bytes(const Case& c) {
  const double e = static_cast<double>(dtype_size(c.dtype));
  const auto& d = c.dims;
  if (c.op == "gemv") return e * (d[0] * d[1] + d[1] + d[0]);
  if (c.op == "add") return e * 3.0 * d[0];
  if (c.op == "relu" || c.op == "gelu") return e * 2.0 * d[0];
  if (c.op == "cast") return 6.0 * d[0];
  if (c.op == "sum") return e * (d[0] * d[1] + d[0]);
  if (c.op == "softmax" || c.op == "layernorm" || c.op == "rmsnorm") return e * 2.0 * d[0] * d[1];
  return 0;
}

// The inputs of a case, resident on `dev`, and the call under test (async form).
struct Prepared {
  std::vector<Tensor> in;
  std::function<Future<Tensor>(const std::vector<Tensor>&)> call;  // given `in`
};

Prepared make(const Case& c, Device dev) {
  Prepared p;
  std::uint64_t seed = 1;
  auto rnd = [&](Shape s, DType d) { return Tensor::random(s, seed++, {.low = -1, .high = 1, .dtype = d, .device = dev}); };
  const auto& d = c.dims;
  if (c.op == "matmul") {
    p.in = {rnd({d[0], d[2]}, c.dtype), rnd({d[2], d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::matmul(in[0], in[1]); };
  } else if (c.op == "gemv") {
    p.in = {rnd({d[0], d[1]}, c.dtype), rnd({d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::gemv(in[0], in[1]); };
  } else if (c.op == "add") {
    p.in = {rnd({d[0]}, c.dtype), rnd({d[0]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::add(in[0], in[1]); };
  } else if (c.op == "relu" || c.op == "sync_relu") {
    p.in = {rnd({d[0]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::relu(in[0]); };
  } else if (c.op == "gelu") {
    p.in = {rnd({d[0]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::gelu(in[0]); };
  } else if (c.op == "cast") {
    p.in = {rnd({d[0]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::cast(in[0], DType::f16); };
  } else if (c.op == "softmax") {
    p.in = {rnd({d[0], d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::softmax(in[0]); };
  } else if (c.op == "layernorm") {
    p.in = {rnd({d[0], d[1]}, c.dtype), rnd({d[1]}, c.dtype), rnd({d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::layernorm(in[0], in[1], in[2]); };
  } else if (c.op == "rmsnorm") {
    p.in = {rnd({d[0], d[1]}, c.dtype), rnd({d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::rmsnorm(in[0], in[1]); };
  } else if (c.op == "sum") {
    p.in = {rnd({d[0], d[1]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::sum(in[0], -1); };
  } else if (c.op == "attention") {
    p.in = {rnd({d[0], d[1], d[2]}, c.dtype), rnd({d[0], d[1], d[2]}, c.dtype), rnd({d[0], d[1], d[2]}, c.dtype)};
    p.call = [causal = c.causal](const std::vector<Tensor>& in) {
      return async::attention(in[0], in[1], in[2], AttentionParams{.causal = causal});
    };
  } else if (c.op == "conv2d") {
    p.in = {rnd({d[0], d[1], d[2], d[2]}, c.dtype), rnd({d[1], d[1], d[3], d[3]}, c.dtype)};
    p.call = [](const std::vector<Tensor>& in) { return async::conv2d(in[0], in[1], Conv2dParams{.padding = 1}); };
  } else {
    throw std::runtime_error("gpu-compare: unknown op " + c.op);
  }
  return p;
}

using Clock = std::chrono::steady_clock;

// One case on one device: inputs built once, reps calibrated on the first sample.
class Runner {
 public:
  Runner(Device dev, double target_ms) : dev_(dev), target_s_(target_ms / 1e3) {}

  // One sample: seconds per call.
  double sample(const Case& c) {
    if (current_ != c.name) {
      prepared_.reset();
      current_ = c.name;
      prepared_ = make(c, dev_);
      sync_ = c.op == "sync_relu";
      // Warm-up: kernels compiled and loaded, memory pooled; then reps from the time of one call,
      // with the results pending at once held under 4 GiB.
      const Tensor first = prepared_->call(prepared_->in).get();
      const double out_bytes = static_cast<double>(first.numel()) * static_cast<double>(dtype_size(first.dtype()));
      const double one = run(1);
      const int by_memory = static_cast<int>(std::max(1.0, 4294967296.0 / std::max(out_bytes, 1.0)));
      reps_ = std::clamp(static_cast<int>(target_s_ / std::max(one, 1e-7)), 1, std::min(200, by_memory));
    }
    return run(reps_);
  }
  int reps() const { return reps_; }

 private:
  double run(int reps) {
    const auto t0 = Clock::now();
    if (sync_) {
      for (int i = 0; i < reps; ++i) (void)prepared_->call(prepared_->in).get();
    } else {
      std::vector<Future<Tensor>> pending;
      pending.reserve(static_cast<std::size_t>(reps));
      for (int i = 0; i < reps; ++i) pending.push_back(prepared_->call(prepared_->in));
      for (const auto& f : pending) f.wait();
    }
    return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
  }

  Device dev_;
  double target_s_;
  std::string current_;
  std::optional<Prepared> prepared_;
  bool sync_ = false;
  int reps_ = 1;
};

const Case* find(const std::vector<Case>& all, const std::string& name) {
  for (const Case& c : all)
    if (c.name == name) return &c;
  return nullptr;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// What the device does not take (a dtype an op refuses, a path not implemented): the table's answer
// for that cell. Anything else is a failure of the run.
bool is_refusal(const Error& e) { return e.code() == ErrorCode::unsupported || e.code() == ErrorCode::dtype_mismatch; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usage() {
  std::fprintf(stderr,
               "usage: gpu-compare --list [--small]\n"
               "       gpu-compare --device DEV --serve [--small] [--target-ms MS]\n"
               "       gpu-compare --device DEV [--cases A,B] [--samples N] [--small] [--target-ms MS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool list = false, serve = false, small = false;
  std::optional<Device> dev;
  std::string only;
  int samples = 3;
  double target_ms = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--list") {
      list = true;
    } else if (a == "--serve") {
      serve = true;
    } else if (a == "--small") {
      small = true;
    } else if (a == "--device" && has) {
      try {
        dev = Device::parse(argv[++i]);
      } catch (const Error& e) {
        std::fprintf(stderr, "gpu-compare: %s\n", e.what());
        return 2;
      }
    } else if (a == "--cases" && has) {
      only = argv[++i];
    } else if (a == "--samples" && has) {
      samples = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--target-ms" && has) {
      target_ms = std::max(0.1, std::atof(argv[++i]));
    } else {
      return usage();
    }
  }
  const std::vector<Case> all = cases(small);
  if (list) {
    for (const Case& c : all) {
      std::printf("%s %s %s", c.name.c_str(), c.op.c_str(), dtype_word(c.dtype));
      for (std::int64_t d : c.dims) std::printf(" %lld", static_cast<long long>(d));
      std::printf(" causal=%d flops=%.17g bytes=%.17g\n", c.causal ? 1 : 0, flops(c), bytes(c));
    }
    return 0;
  }
  if (!dev) return usage();
  Runner runner(*dev, target_ms);
  if (serve) {
    // One request per line (a case name), one answer per line: "ok SECONDS REPS", "refused MESSAGE"
    // (unsupported, or a dtype the op refuses) or "error MESSAGE".
    try {
      (void)Tensor::zeros({1}, DType::f32, *dev);  // the device opened before the first answer
      std::printf("ready %s\n", dev->str().c_str());
    } catch (const std::exception& e) {
      std::printf("unavailable %s\n", one_line(e.what()).c_str());
      return 0;
    }
    std::fflush(stdout);
    std::string name;
    while (std::getline(std::cin, name)) {
      const Case* c = find(all, name);
      if (!c) {
        std::printf("error no case named %s\n", name.c_str());
      } else {
        try {
          const double s = runner.sample(*c);
          std::printf("ok %.9g %d\n", s, runner.reps());
        } catch (const Error& e) {
          std::printf("%s %s\n", is_refusal(e) ? "refused" : "error", one_line(e.what()).c_str());
        } catch (const std::exception& e) {
          std::printf("error %s\n", one_line(e.what()).c_str());
        }
      }
      std::fflush(stdout);
    }
    return 0;
  }
  std::printf("gpu-compare on %s%s: %d samples a case, median; trine only (gpu_compare.py adds PyTorch)\n",
              dev->str().c_str(), small ? " (small sizes)" : "", samples);
  int failed = 0;
  for (const Case& c : all) {
    if (!only.empty() && ("," + only + ",").find("," + c.name + ",") == std::string::npos) continue;
    try {
      std::vector<double> t;
      for (int s = 0; s < samples; ++s) t.push_back(runner.sample(c));
      const double m = median(t);
      const double f = flops(c), b = bytes(c);
      if (c.op == "sync_relu")
        std::printf("%-34s %10.2f us a call\n", c.name.c_str(), m * 1e6);
      else if (f > 0)
        std::printf("%-34s %10.4g TFLOP/s (%.4g ms)\n", c.name.c_str(), f / m / 1e12, m * 1e3);
      else
        std::printf("%-34s %10.4g GB/s (%.4g ms)\n", c.name.c_str(), b / m / 1e9, m * 1e3);
    } catch (const Error& e) {
      // A refusal is an answer (the table shows it); any other error fails the run.
      const bool refused = is_refusal(e);
      std::printf("%-34s %s: %s\n", c.name.c_str(), refused ? "refused" : "error", one_line(e.what()).c_str());
      failed += refused ? 0 : 1;
    } catch (const std::exception& e) {
      std::printf("%-34s error: %s\n", c.name.c_str(), one_line(e.what()).c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
