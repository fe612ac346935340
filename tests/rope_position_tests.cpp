// rope with its position read on the device (issue 34): rope(x, position) equals rope at
// position_offset + position, eagerly and async, and a batch recorded once rotates by each run's
// uploaded position; bad positions are errors naming the op, the tensors and their device. Tagged
// "[batch]", which every test device runs (cpu, vulkan:0 on lavapipe, cuda:0 on the emulator).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/harness.hpp"
#include "tests/reference/bounds.hpp"
#include "tests/reference/bridge.hpp"
#include "tests/reference/reference.hpp"
#include "tests/vulkan_harness.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

using test::code_of;

// The reference rope of x at p.position_offset, which may be negative: row by row, a row at a
// negative position as the mirror image of one at the opposite position (rotating by -a is
// rotating (x0, -x1) by a and negating the second of the pair), so that the error measure's scale
// (|x0 cos| + |x1 sin| + angle (...)) stays the reference's own, which takes the angle >= 0.
ref::Array reference_rope(const ref::Array& x, const RopeParams& p) {
  const std::size_t rank = x.shape.size();
  const std::int64_t d = x.shape[rank - 1], len = x.shape[rank - 2], outer = x.numel() / (len * d);
  auto flip = [&](std::vector<double>& v) {  // negates the second element of every pair
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < d / 2; ++i)
        v[static_cast<std::size_t>(o * d + (p.pairs == RopePairs::halves ? i + d / 2 : 2 * i + 1))] *= -1.0;
  };
  ref::Array out = x;
  out.scale.assign(x.data.size(), 0.0);
  for (std::int64_t l = 0; l < len; ++l) {
    const std::int64_t pos = p.position_offset + l;
    ref::Array row{{outer, 1, d}, std::vector<double>(static_cast<std::size_t>(outer * d))};
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < d; ++j)
        row.data[static_cast<std::size_t>(o * d + j)] = x.data[static_cast<std::size_t>((o * len + l) * d + j)];
    if (pos < 0) flip(row.data);
    RopeParams q = p;
    q.position_offset = pos < 0 ? -pos : pos;
    ref::Array r = ref::rope(row, q);
    if (pos < 0) flip(r.data);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < d; ++j) {
        const auto at = static_cast<std::size_t>((o * len + l) * d + j), from = static_cast<std::size_t>(o * d + j);
        out.data[at] = r.data[from];
        out.scale[at] = r.scale.empty() ? std::abs(r.data[from]) : r.scale[from];
      }
    out.terms = r.terms;
  }
  return out;
}

// `got`, rope of x (on any device, any float dtype) with params p and a position tensor holding
// `position`, against the reference rope of x at position_offset + position.
void check_rope(const std::vector<float>& got, const Tensor& x, RopeParams p, std::int64_t position, DType out,
                DeviceKind kind) {
  p.position_offset += position;
  const ref::Array expect = reference_rope(ref::from_tensor(x), p);
  const ref::Comparison c = ref::compare(std::vector<double>(got.begin(), got.end()), expect, out);
  const double bound = ref::device_bound(OpKind::rope, p, expect.terms, kind) + ref::storage_rounding(out);
  INFO("position " << position << ", position_offset " << p.position_offset - position << ", " << dtype_name(out)
                   << ": " << c.first_mismatch);
  CHECK(c.specials_match);
  CHECK(c.error <= bound);
}

std::vector<float> values(const Tensor& t) { return t.astype(DType::f32).to_vector(); }

// rope of x (f32 in [-1, 1]) on `dev` at positions far past f32's integers, where the error measure's
// bound (relative to the angle) says little, against the cpu's (angles in double): within `tol`.
void check_long_positions(const Device& dev) {
  const Tensor x = test::make_input({2, 3, 64}, 74, test::View::contiguous, DType::f32, -1.0f, 1.0f, Device::cpu());
  const Tensor xd = x.to(dev);
  struct Case {
    std::int32_t position;
    std::int64_t offset;
    float tol;
  };
  for (const Case c : {Case{16777215, 0, 1e-6f}, Case{-100000007, 5, 2e-6f}, Case{2147483647, 5, 5e-5f}}) {
    const std::vector<float> want = rope(x, {.position_offset = c.offset + c.position}).to_vector();
    const std::vector<float> got = rope(xd, Tensor::from({c.position}, dev), {.position_offset = c.offset}).to_vector();
    float worst = 0.0f;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    INFO("position " << c.position << " + " << c.offset << " on " << dev.str());
    CHECK(worst <= c.tol);
  }
}

}  // namespace

TEST_CASE("rope at a position read on the device: eager and async equal rope at that offset",
          "[batch][rope_position]") {
  const Device dev = test::test_device();
  for (DType t : {DType::f32, DType::bf16}) {
    const Tensor x = test::make_input({2, 3, 8}, 71, test::View::contiguous, t);
    for (std::int32_t pos : {0, 5, -7, 70000}) {
      const Tensor p = Tensor::from({pos}, dev);
      const Tensor y = rope(x, p, {.position_offset = 3});
      REQUIRE(y.dtype() == t);
      REQUIRE(y.device() == dev);
      check_rope(values(y), x, {.position_offset = 3}, pos, t, dev.kind);
    }
    // halves, a rank-0 position, and a 2-D x (one sequence)
    const Tensor p0 = Tensor::from({11}, dev).reshape({});
    check_rope(values(rope(x, p0, {.base = 500.0f, .pairs = RopePairs::halves})), x,
               {.base = 500.0f, .pairs = RopePairs::halves}, 11, t, dev.kind);
    const Tensor x2 = test::make_input({4, 6}, 72, test::View::contiguous, t);
    check_rope(values(async::rope(x2, Tensor::from({2}, dev)).get()), x2, {}, 2, t, dev.kind);
  }
}

TEST_CASE("rope at long device-read positions agrees with the cpu's double angles", "[batch][rope_position]") {
  check_long_positions(test::test_device());
}

// rope.comp's form that reads the position (AT), under the vulkan_gpuav run's GPU-assisted
// validation too, which runs "[vulkan]" on vulkan:0.
TEST_CASE("vulkan: rope reads its position from a buffer, at any int32 position", "[vulkan][rope_position]") {
  test::require_vulkan();
  check_long_positions(test::k_vk);
  // position_offset + l past 32 bits is refused on Vulkan, saying why (the cpu and cuda take it)
  try {
    rope(Tensor::zeros({2, 4}, DType::f32, test::k_vk), Tensor::from({1}, test::k_vk), {.position_offset = 1LL << 32});
    FAIL("an offset past 32 bits ran on Vulkan");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("[rope]") && Catch::Contains("must fit 32 bits on Vulkan"));
  }
}

TEST_CASE("rope in a batch: one recording, each run at its uploaded position", "[batch][rope_position]") {
  const Device dev = test::test_device();
  const Shape shape{2, 3, 8};
  const Tensor xe = test::make_input(shape, 73, test::View::contiguous, DType::f32, -1.0f, 1.0f, Device::cpu());
  const std::vector<float> xs = xe.to_vector();
  for (bool pinned : {true, false}) {
    INFO((pinned ? "pinned to " + dev.str() : std::string("placed automatically")));
    Batch batch = pinned ? Batch(dev) : Batch();
    const Tensor x = batch.upload(xs, shape);
    const Tensor pos = batch.upload(std::vector<float>{0.0f}, {1}, DType::i32);
    BatchRead r = batch.read(rope(x, pos, {.position_offset = 2, .pairs = RopePairs::halves}));
    BatchRead r16 = batch.read(rope(x.astype(DType::f16), pos));
    for (std::int32_t step : {9, -4}) {
      batch.run({xs, std::vector<float>{static_cast<float>(step)}});
      check_rope(r.get(), xe, {.position_offset = 2, .pairs = RopePairs::halves}, step, DType::f32, dev.kind);
      check_rope(r16.get(), xe.astype(DType::f16), {}, step, DType::f16, dev.kind);
    }
  }
}

TEST_CASE("rope's bad positions are errors naming the op, the tensors and their device", "[errors][rope_position]") {
  const Tensor x = Tensor::zeros({2, 3, 4});
  auto expect = [](auto&& f, ErrorCode code, std::vector<std::string> parts) {
    try {
      f();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == code);
      for (const auto& s : parts) CHECK_THAT(e.what(), Catch::Contains(s));
    }
  };
  expect([&] { rope(x, Tensor::from({1.0f})); }, ErrorCode::dtype_mismatch,
         {"[rope]", "position must be i32", "f32[2, 3, 4] on cpu", "f32[1] on cpu"});
  expect([&] { rope(x, Tensor::from({1, 2})); }, ErrorCode::invalid_shape, {"[rope]", "one element", "i32[2] on cpu"});
  expect([&] { rope(x, Tensor::zeros({0}, DType::i32)); }, ErrorCode::invalid_shape, {"[rope]", "one element"});
  expect([&] { rope(x, Tensor()); }, ErrorCode::invalid_argument, {"[rope]", "undefined"});
  expect(
      [&] {
        rope(Tensor::zeros({2, 4}, DType::i32), Tensor::from({1}));
      },
      ErrorCode::dtype_mismatch, {"[rope]", "i32[2, 4] on cpu"});
  // the position's other checks stay: an odd D
  CHECK(code_of([&] { rope(Tensor::zeros({2, 3}), Tensor::from({1})); }) == ErrorCode::invalid_argument);
  // recorded in a batch: the same errors, as the batch's entry
  Batch batch(Device::cpu());
  const Tensor bx = batch.upload(std::vector<float>(8, 0.0f), {2, 4});
  const Tensor bp = batch.upload(std::vector<float>{1.0f, 2.0f}, {2}, DType::i32);
  expect([&] { rope(bx, bp); }, ErrorCode::invalid_shape, {"[rope]", "one element", "batch entry"});
}
