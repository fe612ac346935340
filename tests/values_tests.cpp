// Tensors from values written out, one element read back, values printed, and the arithmetic
// operators (issue 34's first slice): "[tensor]" on the host; the operators on the device under test
// through sync, async and a batch in "[batch]", which every device runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

using test::code_of;

}  // namespace

TEST_CASE("tensors from initializer lists, vectors and bit patterns", "[tensor]") {
  const Tensor a = Tensor::from({1.5f, -2.0f, 3.25f});
  CHECK(a.shape() == Shape{3});
  CHECK(a.dtype() == DType::f32);
  CHECK(a.to_vector() == std::vector<float>{1.5f, -2.0f, 3.25f});
  const Tensor d = Tensor::from({0.1, 0.2});  // doubles, rounded to f32
  CHECK(d.to_vector() == std::vector<float>{0.1f, 0.2f});
  const Tensor m = Tensor::from({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}});
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.at({1, 0}) == 4.0f);
  const Tensor h = Tensor::from({{0.5, 1.0}, {1.5, 2.0}}, DType::f16);
  CHECK(h.dtype() == DType::f16);
  CHECK(h.to_vector() == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f});
  const Tensor i = Tensor::from({3, -1, 7});
  CHECK(i.dtype() == DType::i32);
  CHECK(i.to_vector<std::int32_t>() == std::vector<std::int32_t>{3, -1, 7});
  const Tensor i2 = Tensor::from({{1, 2}, {3, 4}});
  CHECK(i2.shape() == Shape{2, 2});
  CHECK(i2.dtype() == DType::i32);
  const std::vector<int> vi{5, 6};
  CHECK(Tensor::from(vi).to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 6});
  const std::vector<float> vf{1.0f, 2.0f, 4.0f};
  CHECK(Tensor::from(vf).shape() == Shape{3});
  CHECK(Tensor::from(vf, DType::bf16).dtype() == DType::bf16);
  // bit patterns kept as they are: f16 0x3c00 is 1, 0x7e00 a NaN, 0x0001 the smallest subnormal
  const std::vector<std::uint16_t> bits{0x3c00, 0xc000, 0x0001, 0x7e00};
  const Tensor b = Tensor::from_bits(bits, {2, 2}, DType::f16);
  const std::vector<float> bv = b.to_vector();
  CHECK(bv[0] == 1.0f);
  CHECK(bv[1] == -2.0f);
  CHECK(bv[2] == 0x1p-24f);
  CHECK(std::isnan(bv[3]));
  CHECK(Tensor::from_bits(std::vector<std::uint16_t>{0x3f80}, {1}, DType::bf16).item() == 1.0f);
  // errors: ragged rows, a bit pattern for a 32-bit dtype, a count that is not the shape's
  CHECK(code_of([] { Tensor::from({{1.0f, 2.0f}, {3.0f}}); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { Tensor::from_bits(bits, {4}, DType::f32); }) == ErrorCode::dtype_mismatch);
  CHECK(code_of([&] { Tensor::from_bits(bits, {3}, DType::f16); }) == ErrorCode::invalid_shape);
}

TEST_CASE("Tensor::random's options by name", "[tensor]") {
  const Tensor r = Tensor::random({4, 5}, 7, {.dtype = DType::f16});
  CHECK(r.dtype() == DType::f16);
  for (float v : r.to_vector()) CHECK((v >= -1.0f && v < 1.0f));
  const Tensor q = Tensor::random({100}, 7, {.low = 2.0f, .high = 3.0f});
  for (float v : q.to_vector()) CHECK((v >= 2.0f && v < 3.0f));
  // the same draws as the positional form
  CHECK(Tensor::random({9}, 3, {.low = 0.0f, .high = 5.0f, .dtype = DType::bf16}).to_vector() ==
        Tensor::random({9}, 3, 0.0f, 5.0f, DType::bf16).to_vector());
}

TEST_CASE("at reads one element, of views too, and names what is out of range", "[tensor]") {
  const Tensor m = Tensor::from({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}});
  CHECK(m.at({0, 2}) == 3.0f);
  CHECK(m.at({-1, -1}) == 6.0f);
  CHECK(m.transpose().at({2, 1}) == 6.0f);
  CHECK(m.slice(1, 1, 3).at({1, 0}) == 5.0f);
  CHECK(Tensor::from({7, 8}).at({1}) == 8.0f);
  try {
    (void)m.at({2, 0});
    FAIL("an index past the shape was read");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    const std::string w = e.what();
    CHECK(w.find("[at]") != std::string::npos);
    CHECK(w.find("(2, 0)") != std::string::npos);
    CHECK(w.find("f32[2, 3] on cpu") != std::string::npos);
  }
  CHECK(code_of([&] { (void)m.at({1}); }) == ErrorCode::invalid_argument);
}

TEST_CASE("to_string and operator<< print the values, numpy-style", "[tensor]") {
  CHECK(Tensor::from({{1.0f, 2.5f, 3.0f}, {-4.0f, 5.0f, 6.0f}}).to_string() ==
        "f32[2, 3] on cpu\n[[  1, 2.5,   3],\n [ -4,   5,   6]]");
  CHECK(Tensor::from({1.0f}).reshape(Shape{}).to_string() == "f32[] on cpu\n1");
  CHECK(Tensor::from({3, -12}).to_string() == "i32[2] on cpu\n[  3, -12]");
  CHECK(Tensor::empty({0}).to_string() == "f32[0] on cpu\n[]");
  // f32: the shortest decimal that reads back as the float; f16: the value it holds, exactly
  CHECK(Tensor::from({0.1f}).to_string() == "f32[1] on cpu\n[0.1]");
  CHECK(Tensor::from({0.1f}, DType::f16).to_string() == "f16[1] on cpu\n[0.0999755859375]");
  CHECK(Tensor::from({std::numeric_limits<float>::infinity(), std::nanf("")}).to_string() ==
        "f32[2] on cpu\n[inf, nan]");
  // three dims: blocks apart by a blank line
  CHECK(Tensor::arange(0, 8).reshape({2, 2, 2}).to_string() ==
        "f32[2, 2, 2] on cpu\n[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
  // past the threshold: the first and last three of each dim
  CHECK(Tensor::arange(0, 10).to_string(5) == "f32[10] on cpu\n[0, 1, 2, ..., 7, 8, 9]");
  const std::string big = Tensor::arange(0, 64).reshape({8, 8}).to_string(10);
  CHECK(big.find("[ 0,  1,  2, ...,  5,  6,  7],") != std::string::npos);
  CHECK(big.find(" ...,\n") != std::string::npos);
  CHECK(big.find("[56, 57, 58, ..., 61, 62, 63]]") != std::string::npos);
  std::ostringstream os;
  os << Tensor::from({2.0f, 4.0f});
  CHECK(os.str() == "f32[2] on cpu\n[2, 4]");
}

TEST_CASE("operators are the op calls on the device under test: sync, async and a batch agree", "[batch]") {
  const Device dev = test::test_device();
  const Tensor a = Tensor::from({{1.0f, -2.0f, 3.0f}, {4.0f, 0.5f, -6.0f}}, DType::f32, dev);
  const Tensor b = Tensor::from({2.0f, 4.0f, -8.0f}, DType::f32, dev);
  auto expect = [](const Tensor& t, std::vector<float> v) { CHECK(t.to_vector() == v); };
  expect(a + b, {3, 2, -5, 6, 4.5f, -14});
  expect(a - b, {-1, -6, 11, 2, -3.5f, 2});
  expect(a * b, {2, -8, -24, 8, 2, 48});
  expect(a / b, {0.5f, -0.5f, -0.375f, 2, 0.125f, 0.75f});
  expect(a + 1.0f, {2, -1, 4, 5, 1.5f, -5});
  expect(1.0f - a, {0, 3, -2, -3, 0.5f, 7});
  expect(a * 2.0f, {2, -4, 6, 8, 1, -12});
  expect(2.0f * a, {2, -4, 6, 8, 1, -12});
  expect(a / 4.0f, {0.25f, -0.5f, 0.75f, 1, 0.125f, -1.5f});
  expect(3.0f / b, {1.5f, 0.75f, -0.375f});
  expect(-a, {-1, 2, -3, -4, -0.5f, 6});
  // the sign of zero as the op gives it: -0 stays -0 through a * 1
  CHECK(std::signbit((Tensor::from({-0.0f}, DType::f32, dev) * 1.0f).item()));
  // a pinned operand keeps the result on its device; an f16 tensor stays f16
  CHECK((a + 1.0f).device() == dev);
  CHECK((Tensor::from({1.0f, 2.0f}, DType::f16, dev) * 0.5f).dtype() == DType::f16);
  CHECK(a.matmul(Tensor::from({1.0f, 1.0f, 1.0f}, DType::f32, dev).reshape({3, 1})).to_vector() ==
        std::vector<float>{2, -1.5f});
  // expressions through async and a batch give the same bits
  const Tensor sync = (a * 3.0f - b) / 2.0f + a;
  Batch batch(dev);
  const Tensor ba = batch.upload(a.to_vector(), {2, 3}), bb = batch.upload(b.to_vector(), {3});
  BatchRead r = batch.read((ba * 3.0f - bb) / 2.0f + ba);
  batch.run();
  CHECK(r.get() == sync.to_vector());
  // replayed with new inputs from a vector of spans (any range of them)
  const std::vector<float> a2{2, 2, 2, 2, 2, 2}, b2{1, 1, 1};
  const std::vector<std::span<const float>> inputs{a2, b2};
  batch.run(inputs);
  CHECK(r.get() == std::vector<float>(6, 4.5f));  // (2 * 3 - 1) / 2 + 2
  CHECK(code_of([&] { batch.run(std::vector<std::span<const float>>{a2}); }) == ErrorCode::invalid_argument);
  const Tensor via_async = async::add(async::div(async::sub(async::mul(a, Tensor::full({}, 3.0f, DType::f32, dev)).get(), b).get(),
                                                 Tensor::full({}, 2.0f, DType::f32, dev))
                                          .get(),
                                      a)
                               .get();
  CHECK(via_async.to_vector() == sync.to_vector());
  // an i32 operand is the op's dtype error, naming it
  CHECK(code_of([&] { (void)(Tensor::from({1, 2}, dev) + 1.0f); }) == ErrorCode::dtype_mismatch);
}
