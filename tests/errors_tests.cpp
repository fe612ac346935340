// Bad input: each case throws trine::Error with the right code and a message naming the op and
// shapes, and leaves the library usable.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trine/trine.hpp"

using namespace trine;

namespace {

template <class F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& needles) {
  bool threw = false;
  try {
    f();
  } catch (const Error& e) {
    threw = true;
    INFO("message: " << e.what());
    CHECK(e.code() == code);
    for (const auto& n : needles) {
      INFO("message should mention '" << n << "'");
      CHECK(std::string(e.what()).find(n) != std::string::npos);
    }
  }
  CHECK(threw);
}

Tensor r(const Shape& s, DType t = DType::f32) { return Tensor::random(s, 7, -1, 1, t); }

}  // namespace

TEST_CASE("matmul with mismatched inner dims", "[errors]") {
  expect_error([] { matmul(r({3, 4}), r({5, 6})); }, ErrorCode::invalid_shape, {"[matmul]", "[3, 4]", "[5, 6]", "cpu"});
  expect_error([] { matmul(r({3, 4}), r({5, 4}), {.trans_b = false}); }, ErrorCode::invalid_shape, {"[matmul]"});
  expect_error([] { matmul(r({4}), r({4, 2})); }, ErrorCode::invalid_shape, {"[matmul]", "rank"});
  expect_error([] { matmul(r({2, 3, 4}), r({3, 4, 5})); }, ErrorCode::invalid_shape, {"[matmul]", "broadcast"});
  expect_error([] { gemv(r({3, 4}), r({3})); }, ErrorCode::invalid_shape, {"[gemv]"});
  expect_error([] { dot(r({3}), r({4})); }, ErrorCode::invalid_shape, {"[dot]"});
}

TEST_CASE("broadcast mismatch", "[errors]") {
  expect_error([] { add(r({3, 4}), r({3})); }, ErrorCode::invalid_shape, {"[add]", "[3, 4]", "[3]", "broadcast"});
  expect_error([] { mul(r({2, 3, 4}), r({3, 3, 4})); }, ErrorCode::invalid_shape, {"[mul]"});
  expect_error([] { bias_act(r({3, 4}), r({3})); }, ErrorCode::invalid_shape, {"[bias_act]", "bias"});
}

TEST_CASE("wrong dtype", "[errors]") {
  // i32 where an op computes on floats (the 16-bit formats are taken: tests/dtypes_tests.cpp)
  const auto ints = [](const Shape& s) { return Tensor::from(std::vector<std::int32_t>(s.numel(), 3), s); };
  expect_error([&] { relu(ints({8})); }, ErrorCode::dtype_mismatch, {"[relu]", "i32", "cpu"});
  expect_error([&] { add(r({8}), ints({8})); }, ErrorCode::dtype_mismatch, {"[add]", "i32"});
  expect_error([&] { softmax(ints({2, 8})); }, ErrorCode::dtype_mismatch, {"[softmax]"});
  expect_error([&] { dot(r({8}, DType::f16), ints({8})); }, ErrorCode::dtype_mismatch, {"[dot]", "f16", "i32"});
  // 16-bit inputs are not an error: mixed formats give f32
  CHECK(matmul(r({2, 3}, DType::f16), r({3, 2}, DType::bf16)).dtype() == DType::f32);
  CHECK(dot(r({8}, DType::f16), r({8})).dtype() == DType::f32);
}

TEST_CASE("axis out of range", "[errors]") {
  expect_error([] { softmax(r({2, 3}), 2); }, ErrorCode::invalid_argument, {"[softmax]", "axis 2"});
  expect_error([] { log_softmax(r({2, 3}), -3); }, ErrorCode::invalid_argument, {"[log_softmax]", "axis -3"});
  expect_error([] { sum(r({2, 3}), 5); }, ErrorCode::invalid_argument, {"[sum]"});
  expect_error([] { r({2, 3}).transpose(0, 2); }, ErrorCode::invalid_argument, {"[transpose]"});
  expect_error([] { r({2, 3}).slice(3, 0, 1); }, ErrorCode::invalid_argument, {"[slice]"});
}

TEST_CASE("conv2d: groups that do not divide channels, kernel larger than the padded input", "[errors]") {
  expect_error(
      [] {
        conv2d(r({1, 3, 8, 8}), r({4, 1, 3, 3}), {.groups = 2});
      },
      ErrorCode::invalid_argument, {"[conv2d]", "groups"});
  expect_error(
      [] {
        conv2d(r({1, 4, 8, 8}), r({3, 2, 3, 3}), {.groups = 2});
      },
      ErrorCode::invalid_argument, {"[conv2d]", "groups"});
  expect_error(
      [] {
        conv2d(r({1, 3, 4, 4}), r({2, 3, 7, 7}));
      },
      ErrorCode::invalid_shape, {"[conv2d]", "larger than the padded input", "[1, 3, 4, 4]", "[2, 3, 7, 7]"});
  expect_error(
      [] {
        conv2d(r({1, 3, 4, 4}), r({2, 3, 3, 3}), {.dilation = 2});
      },
      ErrorCode::invalid_shape, {"[conv2d]", "dilated"});
  expect_error(
      [] {
        conv2d(r({1, 3, 4, 4}), r({2, 3, 3, 3}), {.stride = 0});
      },
      ErrorCode::invalid_argument, {"[conv2d]"});
  expect_error([] { conv2d(r({1, 3, 4, 4}), r({2, 2, 3, 3})); }, ErrorCode::invalid_shape, {"[conv2d]"});
  expect_error(
      [] {
        conv2d(r({1, 3, 4, 4}), r({2, 3, 3, 3}), {}, r({3}));
      },
      ErrorCode::invalid_shape, {"[conv2d]", "bias"});
}

TEST_CASE("zero-size dims where the op cannot take them", "[errors]") {
  expect_error([] { softmax(r({0, 4})); }, ErrorCode::invalid_shape, {"[softmax]", "zero-size"});
  expect_error([] { layernorm(r({3, 0})); }, ErrorCode::invalid_shape, {"[layernorm]"});
  expect_error([] { max(r({3, 0}), -1); }, ErrorCode::invalid_shape, {"[max]"});
  expect_error([] { conv2d(r({0, 3, 4, 4}), r({2, 3, 3, 3})); }, ErrorCode::invalid_shape, {"[conv2d]"});
  expect_error([] { attention(r({1, 0, 4}), r({1, 3, 4}), r({1, 3, 4})); }, ErrorCode::invalid_shape, {"[attention]"});
  // ...and where it can: element-wise ops on empty tensors give empty tensors
  CHECK(relu(r({0, 4})).numel() == 0);
  CHECK(matmul(r({2, 0}), r({0, 3})).to_vector() == std::vector<float>(6, 0.0f));
}

TEST_CASE("other invalid parameters", "[errors]") {
  expect_error([] { clip(r({4}), 1.0f, -1.0f); }, ErrorCode::invalid_argument, {"[clip]", "low"});
  expect_error([] { layernorm(r({2, 4}), {}, {}, 0.0f); }, ErrorCode::invalid_argument, {"[layernorm]", "eps"});
  expect_error([] { rope(r({2, 3, 5})); }, ErrorCode::invalid_argument, {"[rope]", "even"});
  expect_error(
      [] {
        rope(r({2, 3, 5}), {.pairs = RopePairs::halves});
      },
      ErrorCode::invalid_argument, {"[rope]", "even"});
  expect_error(
      [] {
        rope(r({2, 3, 4}), {.pairs = static_cast<RopePairs>(2)});
      },
      ErrorCode::invalid_argument, {"[rope]", "RopePairs"});
  expect_error(
      [] {
        attention(r({1, 5, 4}), r({1, 3, 4}), r({1, 3, 4}), {.causal = true});
      },
      ErrorCode::invalid_shape, {"[attention]", "Lq"});
  expect_error([] { attention(r({1, 5, 4}), r({1, 3, 8}), r({1, 3, 4})); }, ErrorCode::invalid_shape, {"[attention]"});
  // Grouped-query attention needs q's heads (dim -3) a multiple of k's and v's, the other leading dims
  // equal; a sliding window needs causal.
  expect_error(
      [] {
        attention(r({2, 3, 4, 8}), r({2, 2, 5, 8}), r({2, 2, 5, 8}));
      },
      ErrorCode::invalid_shape, {"[attention]", "multiple", "[2, 3, 4, 8]", "[2, 2, 5, 8]", "cpu"});
  expect_error(
      [] {
        attention(r({2, 4, 4, 8}), r({1, 2, 5, 8}), r({1, 2, 5, 8}));
      },
      ErrorCode::invalid_shape, {"[attention]", "leading dims", "[1, 2, 5, 8]"});
  expect_error(
      [] {
        attention(r({1, 4, 4, 8}), r({1, 2, 5, 8}), r({1, 1, 5, 8}));
      },
      ErrorCode::invalid_shape, {"[attention]", "head"});
  expect_error(
      [] {
        attention(r({1, 4, 8}), r({1, 5, 8}), r({1, 5, 8}), {.window = 2});
      },
      ErrorCode::invalid_argument, {"[attention]", "window", "causal"});
  expect_error(
      [] {
        attention(r({1, 4, 8}), r({1, 5, 8}), r({1, 5, 8}), {.causal = true, .window = -1});
      },
      ErrorCode::invalid_argument, {"[attention]", "window"});
  expect_error([] { relu(Tensor()); }, ErrorCode::invalid_argument, {"[relu]", "undefined"});
  expect_error([] { r({2, 3}).reshape({4, 2}); }, ErrorCode::invalid_shape, {"[reshape]", "[2, 3]", "[4, 2]"});
  expect_error([] { Tensor::from(std::vector<float>(5), {2, 3}); }, ErrorCode::invalid_shape, {"[from]"});
  expect_error([] { Tensor::zeros({1, 2, 3, 4, 5, 6, 7, 8, 9}); }, ErrorCode::invalid_shape, {"rank"});
  expect_error([] { Device::parse("tpu"); }, ErrorCode::invalid_argument, {"tpu"});
}

TEST_CASE("an allocation larger than memory is out_of_memory, not a crash", "[errors]") {
  expect_error([] { Tensor::empty({std::int64_t{1} << 40}); }, ErrorCode::out_of_memory, {"bytes", "cpu"});
  expect_error(
      [] {
        Tensor::zeros({std::int64_t{1} << 20, std::int64_t{1} << 20, 1 << 10});
      },
      ErrorCode::out_of_memory, {});
  expect_error([] { Tensor::empty({std::int64_t{1} << 62, 16}); }, ErrorCode::out_of_memory, {});
  // Creation with host-side generation: no std::bad_alloc or std::length_error escapes.
  expect_error([] { Tensor::random({std::int64_t{1} << 40}, 1); }, ErrorCode::out_of_memory, {"cpu"});
  expect_error([] { Tensor::random({std::int64_t{1} << 36}, 1, -1, 1, DType::f16); }, ErrorCode::out_of_memory, {});
  expect_error([] { Tensor::arange(0.0f, 1e12f, 1.0f); }, ErrorCode::out_of_memory, {"[allocate]"});
  expect_error([] { Tensor::arange(0.0f, 3e38f, 1e-30f); }, ErrorCode::out_of_memory, {"[arange]"});
  expect_error([] { Tensor::full({std::int64_t{1} << 40}, 1.0f); }, ErrorCode::out_of_memory, {});
  // The library is still usable afterwards.
  CHECK(add(r({3}), r({3})).numel() == 3);
}

TEST_CASE("devices that are not built or not present", "[errors]") {
  expect_error(
      [] {
        Tensor::zeros({4}, DType::f32, Device{DeviceKind::vulkan, 99});
      },
      ErrorCode::device_unavailable, {"vulkan:99"});
  // each named as the function the user called, not an internal step ("[empty]")
  const Device missing{DeviceKind::vulkan, 99};
  const std::vector<float> four{1, 2, 3, 4};
  for (auto [call, op] : std::vector<std::pair<std::function<void()>, std::string>>{
           {[&] { Tensor::from(four, {4}, DType::f32, missing); }, "[from]"},
           {[&] {
              Tensor::from(std::vector<std::int32_t>{1, 2}, {2}, missing);
            },
            "[from]"},
           {[&] { Tensor::random({4}, 1, -1.0f, 1.0f, DType::f32, missing); }, "[random]"},
           {[&] { Tensor::full({4}, 1.0f, DType::f32, missing); }, "[full]"},
           {[&] { Tensor::arange(0.0f, 4.0f, 1.0f, DType::f32, missing); }, "[arange]"}}) {
    try {
      call();
      FAIL("expected device_unavailable");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::device_unavailable);
      CHECK(std::string(e.what()).rfind(op + " device vulkan:99", 0) == 0);
    }
  }
  expect_error(
      [] {
        Tensor::zeros({4}, DType::f32, Device{DeviceKind::cuda, 0});
      },
      ErrorCode::device_unavailable, {"cuda"});
  expect_error([] { r({4}).to(Device{DeviceKind::cuda, 0}); }, ErrorCode::device_unavailable, {"cuda"});
  expect_error(
      [] {
        Tensor::zeros({4}, DType::f32, Device{DeviceKind::cpu, 3});
      },
      ErrorCode::device_unavailable, {"cpu:3"});
}
