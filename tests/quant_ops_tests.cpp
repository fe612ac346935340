// Quantized weights as tensors (q8_0, q4_0, q4_k, q5_k, q6_k; Tensor::from_blocks) and in matmul and
// gemv, which dequantize them in their kernels: checked against the dequantized matrix (trine's
// host dequantization, which tests/io checks bit for bit against the gguf package) multiplied in
// double precision, on blocks of random bytes (every 4-, 5- and 6-bit pattern, every packed scale
// and min) with the f16 scales set by hand: zero, the f16 maximum and negative ones among them; on
// the device under test (ctest: the cpu per ISA, vulkan:0 on lavapipe, cuda:0 on the emulator).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/debug.hpp"
#include "tests/harness.hpp"
#include "trine/quant.hpp"
#include "trine/trine.hpp"

namespace trine {
namespace {

using test::code_of;

constexpr DType kFormats[] = {DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k};

void put_f16(std::uint8_t* p, float v) {
  const std::uint16_t bits = f32_to_f16(v);
  std::memcpy(p, &bits, 2);
}

// rows x k weights of format q: random bytes, then each block's f16 scale(s) set to a value drawn
// from a small range, except block 0 of row 1 (scale 0: all zeros) and block 0 of row 2 (the f16
// maximum, 65504); q4_k's and q5_k's dmin likewise, and their d and q6_k's d negative in some.
std::vector<std::uint8_t> random_blocks(DType q, std::int64_t rows, std::int64_t k, std::uint32_t seed) {
  const std::int64_t be = dtype_block_elems(q);
  const std::size_t bb = dtype_block_bytes(q);
  std::vector<std::uint8_t> out(dtype_bytes(q, rows * k));
  std::uint32_t s = seed * 2654435761u + 7u;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
  };
  for (auto& b : out) b = static_cast<std::uint8_t>(next());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < k / be; ++j) {
      std::uint8_t* b = out.data() + static_cast<std::size_t>(r * (k / be) + j) * bb;
      auto scale = [&] { return (static_cast<float>(next() % 2001) - 400.0f) * 2e-5f; };  // [-0.008, 0.032]
      float d = scale(), dmin = scale();
      if (j == 0 && r == 1) d = dmin = 0.0f;
      if (j == 0 && r == 2) d = 65504.0f;
      if (q == DType::q6_k) {
        put_f16(b + 208, d);
      } else {
        put_f16(b, d);
        if (q == DType::q4_k || q == DType::q5_k) put_f16(b + 2, dmin);
      }
    }
  }
  return out;
}

// Whether one row of activations goes through the cpu's 8-bit path (matmul_quant.cpp: the avx2 and
// avx512 kernels, unless TRINE_CPU_QUANT_DOT=f32): x rounded to 8 bits per block of 32.
bool x_in_8_bits() {
  const char* env = std::getenv("TRINE_CPU_QUANT_DOT");
  const std::string isa = debug::cpu_isa();
  return (isa == "avx2" || isa == "avx512") && !(env && std::string(env) == "f32");
}

// c[m, n] = sum_k a[m, k] w[n, k] in double; bound[m, n] = sum_k |a[m, k] w[n, k]| times the f32
// sums' relative error, plus, where x8 (one row through the 8-bit path), x's rounding: sum_k |w[n, k]|
// max|a[m, block of k]| / 254.
void reference(const std::vector<float>& a, const std::vector<float>& w, std::int64_t m, std::int64_t n, std::int64_t k,
               std::vector<double>& c, std::vector<double>& bound, bool x8 = false) {
  c.assign(static_cast<std::size_t>(m * n), 0.0);
  bound.assign(c.size(), 0.0);
  const double sums = 4.0 * std::sqrt(static_cast<double>(k)) * 0x1p-24;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0, t = 0.0, r = 0.0, amax = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = a[static_cast<std::size_t>(i * k + p)], wv = w[static_cast<std::size_t>(j * k + p)];
        if (p % 32 == 0) {
          amax = 0.0;
          for (std::int64_t q = p; q < p + 32 && q < k; ++q)
            amax = std::max(amax, std::fabs(static_cast<double>(a[static_cast<std::size_t>(i * k + q)])));
        }
        s += x * wv;
        t += std::fabs(x * wv);
        r += std::fabs(wv) * amax / 254.0;
      }
      c[static_cast<std::size_t>(i * n + j)] = s;
      bound[static_cast<std::size_t>(i * n + j)] = sums * t + (x8 ? r * (1 + 1e-5) + sums * r : 0.0);
    }
  }
}

// got against the reference: the error of f32 sums of k products (and one rounding into out_dtype),
// relative to the sum of the products' magnitudes.
void check_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& bound,
                 std::int64_t k, DType out, const std::string& label) {
  INFO(label);
  REQUIRE(got.size() == want.size());
  const double rel = (out == DType::f32 ? 0.0 : out == DType::f16 ? 0x1p-11 : 0x1p-8);
  (void)k;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (out == DType::f16 && std::fabs(want[i]) >= 65520.0 * (1.0 + 1e-3)) {  // past f16's range: inf
      if (!(got[i] == std::copysign(INFINITY, want[i])) && bad++ == 0) first = i;
      continue;
    }
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= bound[i] + rel * std::fabs(want[i]) + 1e-30)) {
      if (bad++ == 0) first = i;
    }
  }
  INFO("first bad element " << first << ": got " << got[first] << ", want " << want[first] << ", sum |a w| "
                            << bound[first] << " (the bound)");
  CHECK(bad == 0);
}

TEST_CASE("quantized weight tensors: from_blocks, values, views and refusals", "[quant]") {
  const Device cpu = Device::cpu();
  for (DType q : kFormats) {
    INFO(dtype_name(q));
    const std::int64_t k = 2 * dtype_block_elems(q);
    const std::vector<std::uint8_t> blocks = random_blocks(q, 4, k, 3);
    const Tensor w = Tensor::from_blocks(blocks, {4, k}, q, cpu);
    CHECK(w.dtype() == q);
    CHECK(w.str() == std::string(dtype_name(q)) + "[4, " + std::to_string(k) + "] on cpu");
    std::vector<float> want(static_cast<std::size_t>(4 * k));
    quant::dequantize(blocks, quant::format_of(q), want);
    const std::vector<float> got = w.to_vector();
    CHECK(std::memcmp(got.data(), want.data(), 4 * want.size()) == 0);
    CHECK(w.at({3, k - 1}) == want.back());
    // Row slices and reshapes that keep blocks whole are views; anything that splits them is refused.
    const Tensor rows = w.slice(0, 1, 3);
    const std::vector<float> rv = rows.to_vector();
    CHECK(std::memcmp(rv.data(), want.data() + k, 4 * rv.size()) == 0);
    CHECK(w.reshape({8, k / 2}).to_vector() == got);
    CHECK(code_of([&] { w.slice(1, 0, k / 2 + 1); }) == ErrorCode::invalid_shape);
    CHECK(code_of([&] { w.transpose(); }) == ErrorCode::invalid_shape);
    CHECK(code_of([&] { w.reshape({4 * k}).slice(0, 1, k + 1); }) == ErrorCode::invalid_shape);
    // The wrong number of bytes, rows of part blocks, values where blocks are wanted.
    CHECK(code_of([&] {
            Tensor::from_blocks(std::span(blocks).first(blocks.size() - 1), {4, k}, q, cpu);
          }) == ErrorCode::invalid_shape);
    CHECK(code_of([&] { Tensor::from_blocks(blocks, {4 * k / 16, 16}, q, cpu); }) == ErrorCode::invalid_shape);
    CHECK(code_of([&] { Tensor::from_blocks(blocks, {4, k}, DType::f32, cpu); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { Tensor::zeros({4, k}, q, cpu); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { Tensor::random({4, k}, 1, -1.0f, 1.0f, q, cpu); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { (void)w.to_vector<std::int32_t>(); }) == ErrorCode::dtype_mismatch);
    // Ops other than matmul and gemv refuse quantized inputs, naming them.
    const Tensor x = Tensor::random({4, k}, 2, {.device = cpu});
    for (auto f : {+[](const Tensor&a, const Tensor&b) { return trine::add(a, b); },
                   +[](const Tensor&a, const Tensor&) { return a.astype(DType::f32); },
                   +[](const Tensor&a, const Tensor&) { return trine::relu(a); },
                   +[](const Tensor&, const Tensor&b) { return b.astype(DType::q8_0); },
                   +[](const Tensor&a, const Tensor&b) { return trine::matmul(a, b); }}) {
      try {
        f(w, x);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::dtype_mismatch);
        CHECK_THAT(e.what(), Catch::Contains("q"));
      }
    }
    CHECK(code_of([&] { w.slice(0, 0, 1).copy_(w.slice(0, 1, 2)); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { w.copy_(x); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { x.copy_(w); }) == ErrorCode::dtype_mismatch);
    CHECK(code_of([&] { trine::matmul(x, w, {.trans_b = true}); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { trine::gemv(w, x.slice(0, 0, 1).reshape({k}), true); }) == ErrorCode::invalid_argument);
    CHECK(code_of([&] { trine::matmul(x.slice(1, 0, k / 2), w); }) == ErrorCode::invalid_shape);
  }
}

TEST_CASE("matmul and gemv with quantized weights match the dequantized product, on the device under test", "[quant]") {
  const Device dev = test::test_device();  // the tensors' device: the cpu, or the device under test
  const bool on_cpu = dev.kind == DeviceKind::cpu;
  for (DType q : kFormats) {
    const std::int64_t k = dtype_block_elems(q) == 32 ? 96 : 512;
    const std::int64_t n = 37;
    const std::vector<std::uint8_t> blocks = random_blocks(q, n, k, 11);
    const Tensor w = Tensor::from_blocks(blocks, {n, k}, q, dev);
    std::vector<float> wf(static_cast<std::size_t>(n * k));
    quant::dequantize(blocks, quant::format_of(q), wf);
    std::vector<double> want, bound;
    for (std::int64_t m : {1, 3, 70}) {
      const std::string label = std::string(dtype_name(q)) + " M=" + std::to_string(m) + " K=" + std::to_string(k);
      const Tensor x = Tensor::random({m, k}, static_cast<std::uint64_t>(m), {.device = dev});
      const std::vector<float> xv = x.to_vector();
      reference(xv, wf, m, n, k, want, bound, on_cpu && m == 1 && x_in_8_bits());
      const std::uint64_t tiles_before = vulkan::dispatches_of("matmul_quant_tiles");
      const Tensor y = trine::matmul(x, w);
      // Vulkan: from 8 rows of x, the tiled shader (weights dequantized into shared memory).
      if (dev.kind == DeviceKind::vulkan)
        CHECK((vulkan::dispatches_of("matmul_quant_tiles") > tiles_before) == (m >= 8));
      CHECK(y.device() == dev);
      CHECK(y.shape() == Shape{m, n});
      CHECK(y.dtype() == DType::f32);
      check_close(y.to_vector(), want, bound, k, DType::f32, label);
      if (m == 1) check_close(trine::gemv(w, x.reshape({k})).to_vector(), want, bound, k, DType::f32, label + " gemv");
    }
    // Rows longer than one pass of a GPU workgroup over them (Vulkan: 64 units of 32 weights).
    {
      const std::int64_t kl = 2304, nl = 5;
      const std::vector<std::uint8_t> lb = random_blocks(q, nl, kl, 12);
      std::vector<float> lf(static_cast<std::size_t>(nl * kl));
      quant::dequantize(lb, quant::format_of(q), lf);
      const Tensor wl = Tensor::from_blocks(lb, {nl, kl}, q, dev);
      for (std::int64_t m : {1, 5}) {
        const Tensor x = Tensor::random({m, kl}, static_cast<std::uint64_t>(20 + m), {.device = dev});
        reference(x.to_vector(), lf, m, nl, kl, want, bound, on_cpu && m == 1 && x_in_8_bits());
        check_close(trine::matmul(x, wl).to_vector(), want, bound, kl, DType::f32,
                    std::string(dtype_name(q)) + " M=" + std::to_string(m) + " K=2304");
      }
    }
    // Batched and transposed activations, 16-bit activations and results, a row slice of the weights.
    const Tensor xb = Tensor::random({2, 3, k}, 5, {.dtype = DType::bf16, .device = dev});
    reference(xb.to_vector(), wf, 6, n, k, want, bound);
    const Tensor yb = trine::matmul(xb, w, {.out_dtype = DType::f16});
    CHECK(yb.shape() == Shape{2, 3, n});
    CHECK(yb.dtype() == DType::f16);
    check_close(yb.to_vector(), want, bound, k, DType::f16, std::string(dtype_name(q)) + " batched bf16 -> f16");
    CHECK(trine::matmul(xb, w).dtype() == DType::bf16);
    const Tensor xt = Tensor::random({2, k, 4}, 6, {.device = dev});
    const Tensor xtt = xt.transpose().contiguous();
    reference(xtt.to_vector(), wf, 8, n, k, want, bound);
    check_close(trine::matmul(xt, w, {.trans_a = true}).to_vector(), want, bound, k, DType::f32,
                std::string(dtype_name(q)) + " trans_a");
    // Strided activations, views the caller did not make contiguous: xt's transposed view, and one
    // row read with a stride of 3 (M = 1: the gemv kernels).
    check_close(trine::matmul(xt.transpose(), w).to_vector(), want, bound, k, DType::f32,
                std::string(dtype_name(q)) + " transposed view of x");
    const Tensor x3 = Tensor::random({k, 3}, 8, {.device = dev}).transpose().slice(0, 1, 2);
    CHECK(!x3.is_contiguous());
    reference(x3.contiguous().to_vector(), wf, 1, n, k, want, bound, on_cpu && x_in_8_bits());
    check_close(trine::matmul(x3, w).to_vector(), want, bound, k, DType::f32, std::string(dtype_name(q)) + " x strided by 3");
    check_close(trine::gemv(w, x3.reshape({k})).to_vector(), want, bound, k, DType::f32,
                std::string(dtype_name(q)) + " gemv, x strided by 3");
    const Tensor x1 = Tensor::random({k}, 7, {.dtype = DType::f16, .device = dev});
    reference(x1.to_vector(), std::vector<float>(wf.begin() + 5 * k, wf.begin() + 9 * k), 1, 4, k, want, bound,
              on_cpu && x_in_8_bits());
    check_close(trine::gemv(w.slice(0, 5, 9), x1).to_vector(), want, bound, k, DType::f16,
                std::string(dtype_name(q)) + " gemv of rows 5-8, f16 x");
    // A NaN or an infinity in x (which 8 bits cannot carry) reaches every output, as in f32.
    for (float bad : {NAN, INFINITY}) {
      std::vector<float> xs(static_cast<std::size_t>(k), 0.25f);
      xs[3] = bad;
      const std::vector<float> y = trine::gemv(w, Tensor::from(xs, {k}, DType::f32, dev)).to_vector();
      std::size_t finite = 0;
      for (float v : y) finite += std::isfinite(v);
      INFO(dtype_name(q) << " x[3] = " << bad);
      CHECK(finite == 0);
    }
  }
}

TEST_CASE("quantized weights: unpinned calls run where a kernel takes them, blocks move between devices unchanged",
          "[quant]") {
  const DType q = DType::q4_k;
  const std::vector<std::uint8_t> blocks = random_blocks(q, 8, 256, 4);
  std::vector<float> wf(8 * 256);
  quant::dequantize(blocks, quant::format_of(q), wf);
  // Unpinned (no device given): the dispatcher places it where a kernel takes it.
  const Tensor w = Tensor::from_blocks(blocks, {8, 256}, q);
  const Tensor x = Tensor::random({2, 256}, 9);
  std::vector<double> want, bound;
  reference(x.to_vector(), wf, 2, 8, 256, want, bound);
  check_close(trine::matmul(x, w).to_vector(), want, bound, 256, DType::f32, "unpinned");
  // To the device under test and back: the same blocks (to_vector dequantizes them on the host).
  const Device dev = test::test_device();
  const Tensor wd = w.to(dev);
  CHECK(wd.device() == dev);
  CHECK(wd.dtype() == q);
  CHECK(wd.to_vector() == wf);
  CHECK(wd.slice(0, 3, 5).to(Device::cpu()).to_vector() ==
        std::vector<float>(wf.begin() + 3 * 256, wf.begin() + 5 * 256));
}

}  // namespace
}  // namespace trine
