// Async ops and futures: results equal the sync ones, futures feed further ops without waiting,
// work in flight survives its handles being dropped, timeouts lose nothing, errors surface at get(),
// and many threads submit at once. Runs on every device this machine has (TRINE_TEST_DEVICE picks
// one; default cpu).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::test::test_device;

namespace {

Tensor rnd(const Shape& s, std::uint64_t seed) { return Tensor::random(s, seed, -1, 1, DType::f32, test_device()); }

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// The PTX emulator runs matmul at about 0.1 GFLOP/s, a thousandth of the cpu's speed.
bool emulated() {
  if (test_device().kind != DeviceKind::cuda) return false;
  for (const DeviceInfo& d : devices())
    if (d.device == test_device()) return d.software;
  return false;
}

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool k_sanitized = true;  // instrumented, the kernels and the emulator run 10-30x slower
#else
constexpr bool k_sanitized = false;
#endif

// Large enough that it is still running when the next line executes (about 1 GFLOP; 110 MFLOP
// under a sanitizer, 76 ms under ASan on a Zen 3, ten times the release build's 1 GFLOP; 30 MFLOP
// on the emulator, where that takes as long; 4 MFLOP on the emulator under a sanitizer).
std::int64_t big_n() {
  if (emulated()) return k_sanitized ? 128 : 256;
  return k_sanitized ? 384 : 768;
}
Tensor big(std::uint64_t seed) { return rnd({big_n(), big_n()}, seed); }

}  // namespace

TEST_CASE("every async op equals its sync twin", "[async]") {
  const Tensor a = rnd({33, 65}, 1), b = rnd({65, 17}, 2), v = rnd({65}, 3), x = rnd({4, 33}, 4);
  const Tensor g = rnd({33}, 5), img = rnd({1, 3, 9, 9}, 6), w = rnd({4, 3, 3, 3}, 7);
  const Tensor q = rnd({2, 5, 8}, 8), k = rnd({2, 7, 8}, 9), vv = rnd({2, 7, 8}, 10);
  const std::vector<std::pair<Future<Tensor>, Tensor>> pairs = {
      {async::matmul(a, b), matmul(a, b)},
      {async::gemv(a, v), gemv(a, v)},
      {async::dot(v, v), dot(v, v)},
      {async::add(x, g), add(x, g)},
      {async::sub(x, g), sub(x, g)},
      {async::mul(x, g), mul(x, g)},
      {async::div(x, g), div(x, g)},
      {async::scale(x, 2.0f, 1.0f), scale(x, 2.0f, 1.0f)},
      {async::bias_act(x, g, Activation::gelu), bias_act(x, g, Activation::gelu)},
      {async::relu(x), relu(x)},
      {async::leaky_relu(x, 0.1f), leaky_relu(x, 0.1f)},
      {async::elu(x), elu(x)},
      {async::sigmoid(x), sigmoid(x)},
      {async::tanh(x), tanh(x)},
      {async::silu(x), silu(x)},
      {async::swish(x), swish(x)},
      {async::gelu(x, GeluForm::tanh), gelu(x, GeluForm::tanh)},
      {async::clip(x, -0.5f, 0.5f), clip(x, -0.5f, 0.5f)},
      {async::softmax(x, 0), softmax(x, 0)},
      {async::log_softmax(x), log_softmax(x)},
      {async::layernorm(x, g, g), layernorm(x, g, g)},
      {async::rmsnorm(x, g), rmsnorm(x, g)},
      {async::conv2d(img, w, {.padding = 1}), conv2d(img, w, {.padding = 1})},
      {async::attention(q, k, vv, {.causal = true}), attention(q, k, vv, {.causal = true})},
      {async::rope(q), rope(q)},
      {async::sum(x, 0), sum(x, 0)},
      {async::mean(x), mean(x)},
      {async::max(x, 1, true), max(x, 1, true)},
      {async::copy(x.transpose()), copy(x.transpose())},
      {async::cast(x, DType::bf16), cast(x, DType::bf16)},
  };
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto& [fut, sync] = pairs[i];
    INFO("pair " << i << " (in the order listed)");
    REQUIRE(fut.valid());
    const Tensor t = fut.get();
    CHECK(t.shape() == sync.shape());
    CHECK(t.dtype() == sync.dtype());
    CHECK(t.device() == sync.device());
    CHECK(same(t.to_vector(), sync.to_vector()));
    CHECK(fut.ready());
  }
}

TEST_CASE("futures feed further ops without waiting, and host reads wait for their producer", "[async]") {
  const Tensor a = big(11), b = big(12);
  Future<Tensor> m = async::matmul(a, b);
  Future<Tensor> r = async::relu(m);              // a Future as an input: ordered on the device
  Future<Tensor> s = async::sum(r, -1);           // a chain of three, nothing waited for yet
  Tensor m_view = Tensor(m).transpose();          // a view of an unfinished result...
  Future<Tensor> t = async::scale(m_view, 2.0f);  // ...handed to another op
  const auto expect_m = matmul(a, b).to_vector();
  std::vector<float> expect_s;
  {
    auto rr = relu(matmul(a, b));
    expect_s = sum(rr, -1).to_vector();
  }
  CHECK(same(s.get().to_vector(), expect_s));
  CHECK(same(Tensor(m).to_vector(), expect_m));  // to_vector waits for the producer
  auto tt = t.get().to_vector();
  REQUIRE(tt.size() == expect_m.size());
  const std::int64_t n = big_n();
  for (std::int64_t i = 0; i < n; i += 97)
    for (std::int64_t j = 0; j < n; j += 89) CHECK(tt[j * n + i] == 2.0f * expect_m[i * n + j]);
  // a sync op on a future's tensor, and item() on an unfinished one
  Future<Tensor> d = async::dot(Tensor(s), Tensor(s));
  CHECK(std::isfinite(d.get().item()));
  CHECK(relu(async::matmul(a, b)).shape() == Shape{n, n});
}

TEST_CASE("dropping every handle while work is in flight neither blocks nor frees memory in use", "[async]") {
  std::vector<float> expect;
  {
    const Tensor a = big(21), b = big(22);
    expect = sum(relu(matmul(a, b)), -1).to_vector();
  }
  Future<Tensor> result;
  {
    // The inputs, the intermediate and the first Future all go out of scope at once.
    Tensor a = big(21), b = big(22);
    Future<Tensor> m = async::matmul(a, b);
    result = async::sum(async::relu(m), -1);
    a = Tensor();
    b = Tensor();
    m = Future<Tensor>();
  }
  {
    Future<Tensor> dropped = async::matmul(big(23), big(24));  // never read at all
  }
  CHECK(same(result.get().to_vector(), expect));
  synchronize();
  CHECK(relu(rnd({16}, 1)).numel() == 16);
}

TEST_CASE("wait_for that times out loses nothing", "[async]") {
  const std::int64_t n = big_n() * 4 / 3;
  const Tensor a = rnd({n, n}, 31), b = rnd({n, n}, 32);
  Future<Tensor> f = async::matmul(a, b);
  const bool early = f.wait_for(std::chrono::microseconds(1));
  INFO("a 2 GFLOP matmul finished within 1 us: the machine is too fast for this test's timing");
  CHECK_FALSE(early);
  CHECK_FALSE(f.ready());
  while (!f.wait_for(std::chrono::milliseconds(1))) {
  }
  CHECK(f.ready());
  CHECK(same(f.get().to_vector(), matmul(a, b).to_vector()));
  CHECK(same(f.get().to_vector(), matmul(a, b).to_vector()));  // get() twice
}

TEST_CASE("an async op's error is raised at get and wait, naming the op", "[async]") {
  Future<Tensor> bad = async::matmul(rnd({3, 4}, 1), rnd({5, 6}, 2));  // does not throw here
  CHECK(bad.ready());
  try {
    bad.get();
    FAIL("get() should throw");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_shape);
    CHECK(std::string(e.what()).find("[matmul]") != std::string::npos);
  }
  CHECK_THROWS_AS(bad.wait(), Error);
  // a dependent op fails too, naming the original failure
  try {
    (void)async::relu(bad).get();
    FAIL("a dependent of a failed op should throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("[matmul]") != std::string::npos);
  }
  // A failure while running (a broadcast view whose contiguous copy cannot be allocated) surfaces
  // at get(), and the device works afterwards.
  Tensor huge = rnd({1}, 3).broadcast_to({1 << 20, 1 << 20});
  Future<Tensor> oom = async::sum(huge, -1);
  CHECK_THROWS_AS(oom.get(), Error);
  try {
    oom.get();
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::out_of_memory);
  }
  Future<Tensor> after = async::relu(rnd({4}, 4));
  CHECK(after.get().numel() == 4);
  Future<Tensor> empty;
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_AS(empty.get(), Error);
}

TEST_CASE("8 threads each submit thousands of async ops, every result checked", "[async][threads]") {
  constexpr int k_threads = 8;
  const int k_ops = emulated() && k_sanitized ? 300 : 2000;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([t, k_ops, &wrong, &failed] {
      try {
        std::vector<Future<Tensor>> out;
        std::vector<float> expect;
        out.reserve(k_ops);
        for (int i = 0; i < k_ops; ++i) {
          const float v = static_cast<float>(t * k_ops + i);
          // a small chain per op: (v * 2 + 1) through relu; every 64th is large enough to go async
          const std::int64_t n = i % 64 == 0 ? 70000 : 8;
          Tensor x = Tensor::full({n}, v, DType::f32, test_device());
          out.push_back(async::relu(async::scale(x, 2.0f, 1.0f)));
          expect.push_back(2.0f * v + 1.0f);
        }
        for (int i = 0; i < k_ops; ++i) {
          auto got = out[static_cast<std::size_t>(i)].get().to_vector();
          for (float g : got)
            if (g != expect[static_cast<std::size_t>(i)]) {
              ++wrong;
              break;
            }
        }
      } catch (...) {
        ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed.load() == 0);
  CHECK(wrong.load() == 0);
}

TEST_CASE("synchronize waits for everything in flight", "[async]") {
  const Tensor a = big(41), b = big(42);
  std::vector<Future<Tensor>> fs;
  for (int i = 0; i < 4; ++i) fs.push_back(async::matmul(a, b));
  synchronize();
  for (const auto& f : fs) CHECK(f.ready());
}
