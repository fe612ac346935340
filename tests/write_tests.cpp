// Writes into tensors in place (trine::copy_into, Tensor::copy_): views of every kind written on the
// device under test, sync, async and in a batch replayed, and the errors of bad writes. Tagged
// "[batch]", which every test device runs (cpu, vulkan:0 on lavapipe, cuda:0 on the emulator).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

using test::code_of;

std::vector<float> iota(std::size_t n, float from = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

// A KV cache [heads, length, dim] (zeros) with `row` (heads x dim values) written at position pos.
std::vector<float> cache_with(std::int64_t heads, std::int64_t length, std::int64_t dim, std::int64_t pos,
                              const std::vector<float>& row) {
  std::vector<float> v(static_cast<std::size_t>(heads * length * dim), 0.0f);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t d = 0; d < dim; ++d)
      v[static_cast<std::size_t>((h * length + pos) * dim + d)] = row[static_cast<std::size_t>(h * dim + d)];
  return v;
}

}  // namespace

TEST_CASE("copy_into writes views of a tensor in place on the device under test", "[batch]") {
  const Device dev = test::test_device();
  SECTION("a KV cache's position, short rows (a shader) and long ones (buffer copies on Vulkan)") {
    for (std::int64_t dim : {3, 32}) {
      const Tensor cache = Tensor::zeros({2, 4, dim}, DType::f32, dev);
      const std::vector<float> row = iota(static_cast<std::size_t>(2 * dim));
      const Tensor k = Tensor::from(row, {2, 1, dim}, DType::f32, dev);
      const Tensor same = cache.slice(1, 2, 3).copy_(k);
      CHECK(same.shape() == Shape{2, 1, dim});
      CHECK(cache.to_vector() == cache_with(2, 4, dim, 2, row));
    }
  }
  SECTION("a transposed view, a stepped slice, a broadcast source, a cast on the way") {
    const Tensor m = Tensor::zeros({3, 4}, DType::f32, dev);
    copy_into(m.transpose(), Tensor::from(iota(12), {4, 3}, DType::f32, dev));
    CHECK(m.to_vector() == std::vector<float>{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12});
    const Tensor v = Tensor::full({8}, -1.0f, DType::f32, dev);
    v.slice(0, 1, 8, 2).copy_(Tensor::from({1.0f, 2.0f, 3.0f, 4.0f}, DType::f32, dev));
    CHECK(v.to_vector() == std::vector<float>{-1, 1, -1, 2, -1, 3, -1, 4});
    m.slice(0, 1, 2).copy_(Tensor::from({0.5f}, DType::f32, dev));  // [1] broadcast to [1, 4]
    CHECK(m.to_vector() == std::vector<float>{1, 4, 7, 10, 0.5f, 0.5f, 0.5f, 0.5f, 3, 6, 9, 12});
    const Tensor i = Tensor::zeros({2, 3}, DType::i32, dev);
    i.slice(1, 1, 3).copy_(Tensor::from({{7, -8}, {9, 2147483647}}, dev));
    CHECK(i.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 7, -8, 0, 9, 2147483647});
    // f32 into i32: toward zero, as cast does
    i.slice(0, 0, 1).copy_(Tensor::from({{1.75f, -2.5f, 3.0f}}, DType::f32, dev));
    CHECK(i.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 3, 0, 9, 2147483647});
  }
  SECTION("16-bit views: both halves of a word written by different elements, neighbours kept") {
    for (DType t : {DType::f16, DType::bf16}) {
      const Tensor h = Tensor::full({4, 4}, 9.0f, t, dev);
      // the transpose of the top-left 3x3 block: every element alone, odd and even ones side by side
      h.slice(0, 0, 3).slice(1, 0, 3).transpose().copy_(Tensor::from(iota(9), {3, 3}, DType::f32, dev));
      CHECK(h.to_vector() == std::vector<float>{1, 4, 7, 9, 2, 5, 8, 9, 3, 6, 9, 9, 9, 9, 9, 9});
      h.slice(1, 3, 4).copy_(Tensor::from({0.1f, 0.2f, 0.3f, 0.4f}, DType::f32, dev).reshape({4, 1}));
      const std::vector<float> got = h.to_vector();
      const std::vector<float> col{got[3], got[7], got[11], got[15]};
      CHECK(col == Tensor::from({0.1f, 0.2f, 0.3f, 0.4f}, t).to_vector());  // rounded once, as cast rounds
      CHECK(got[2] == 7.0f);
    }
  }
  SECTION("a source that overlaps the destination is read as it was") {
    const Tensor x = Tensor::from(iota(8, 0.0f), {8}, DType::f32, dev);
    x.slice(0, 1, 8).copy_(x.slice(0, 0, 7));
    CHECK(x.to_vector() == std::vector<float>{0, 0, 1, 2, 3, 4, 5, 6});
  }
  SECTION("async: the write orders itself before the reads after it, and after the ones before") {
    const Tensor cache = Tensor::zeros({2, 3}, DType::f32, dev);
    Future<Tensor> before = async::sum(cache, 1);
    Future<Tensor> w = async::copy_into(cache.slice(0, 1, 2), Tensor::from({{1.0f, 2.0f, 3.0f}}, DType::f32, dev));
    Future<Tensor> after = async::sum(cache, 1);
    CHECK(before.get().to_vector() == std::vector<float>{0, 0});
    CHECK(after.get().to_vector() == std::vector<float>{0, 6});
    CHECK(w.get().shape() == Shape{1, 3});
  }
  SECTION("a source on another device is moved to the destination's") {
    const Tensor d = Tensor::zeros({2, 2}, DType::f32, dev);
    d.slice(0, 1, 2).copy_(Tensor::from({{5.0f, 6.0f}}));  // from the host
    CHECK(d.to_vector() == std::vector<float>{0, 0, 5, 6});
  }
}

TEST_CASE("copy_into in a batch: recorded once, repeated by every run, into a tensor made outside it", "[batch]") {
  const Device dev = test::test_device();
  const Tensor cache = Tensor::zeros({2, 4, 3}, DType::f32, dev);
  Batch batch(dev);
  const Tensor x = batch.upload(iota(6), {2, 1, 3});
  cache.slice(1, 1, 2).copy_(x * 2.0f);
  // read after the write in the same run: the cache plus x, broadcast over positions
  BatchRead r = batch.read(cache + x);
  // a write into a tensor the batch made, and a read of it
  const Tensor made = batch.upload(std::vector<float>(8, 0.0f), {2, 4});
  made.transpose().slice(0, 2, 3).copy_(x.reshape({1, 6}).slice(1, 0, 2));
  BatchRead r2 = batch.read(made);
  batch.run();
  std::vector<float> expect = cache_with(2, 4, 3, 1, {2, 4, 6, 8, 10, 12});
  for (std::size_t i = 0; i < expect.size(); ++i) expect[i] += static_cast<float>(i / 12 * 3 + i % 3 + 1);
  CHECK(r.get() == expect);
  CHECK(cache.to_vector() == cache_with(2, 4, 3, 1, {2, 4, 6, 8, 10, 12}));
  CHECK(r2.get() == std::vector<float>{0, 0, 1, 0, 0, 0, 2, 0});
  // replayed with new data: the same recording writes the same place again
  const std::vector<float> x2(6, 0.5f), zeros(8, 0.0f);
  batch.run({x2, zeros});
  CHECK(cache.to_vector() == cache_with(2, 4, 3, 1, std::vector<float>(6, 1.0f)));
  CHECK(r2.get() == std::vector<float>{0, 0, 0.5f, 0, 0, 0, 0.5f, 0});

  // a batch placed automatically writes too: it runs on the destination's device, every run
  Batch automatic;
  const Tensor ax = automatic.upload(iota(3), {3});
  const Tensor target = Tensor::zeros({2, 3}, DType::f32, dev);
  target.slice(0, 1, 2).copy_(ax.reshape({1, 3}) * 2.0f);
  BatchRead plus = automatic.read(target + ax);  // after the write, in the same run
  automatic.run();
  CHECK(target.to_vector() == std::vector<float>{0, 0, 0, 2, 4, 6});
  CHECK(plus.get() == std::vector<float>{1, 2, 3, 3, 6, 9});
  automatic.run({std::vector<float>{1, 1, 1}});
  CHECK(target.to_vector() == std::vector<float>{0, 0, 0, 2, 2, 2});
  CHECK(plus.get() == std::vector<float>{1, 1, 1, 3, 3, 3});
  if (dev != Device::cpu()) {
    // one that writes into tensors on two devices: refused when placed, naming both
    Batch two;
    const Tensor tx = two.upload(iota(3), {3});
    Tensor::zeros({3}, DType::f32, dev).copy_(tx);
    Tensor::zeros({3}).copy_(tx);
    try {
      two.run();
      FAIL("a batch writing into two devices ran");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::unsupported);
      CHECK_THAT(e.what(), Catch::Contains(dev.str()) && Catch::Contains("cpu") && Catch::Contains("pin it"));
    }
  }
  // errors: a destination elsewhere than a pinned batch's device
  if (dev != Device::cpu()) {
    Batch pinned(dev);
    const Tensor px = pinned.upload(iota(3), {3});
    CHECK(code_of([&] { Tensor::zeros({3}).copy_(px); }) == ErrorCode::invalid_argument);
  }
}

TEST_CASE("copy_into at a position read on the device: eager, async, and one recording for every step", "[batch]") {
  const Device dev = test::test_device();
  const std::vector<float> row = iota(6);
  SECTION("eager and async; a bad position writes nothing and names itself") {
    for (DType t : {DType::f32, DType::bf16}) {
      const Tensor cache = Tensor::zeros({2, 4, 3}, t, dev);
      copy_into(cache, Tensor::from(row, {2, 1, 3}, DType::f32, dev), 1, Tensor::from({2}, dev));
      CHECK(cache.to_vector() == cache_with(2, 4, 3, 2, row));
      // the last position; a source of one row broadcast over the heads
      copy_into(cache, Tensor::from({7.0f, 8.0f, 9.0f}, DType::f32, dev).reshape({1, 1, 3}), -2,
                Tensor::from({3}, dev));
      std::vector<float> expect = cache_with(2, 4, 3, 2, row);
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t d = 0; d < 3; ++d) expect[h * 12 + 9 + d] = 7.0f + static_cast<float>(d);
      CHECK(cache.to_vector() == expect);
      for (int bad : {4, -1}) {
        try {
          copy_into(cache, Tensor::from(row, {2, 1, 3}, DType::f32, dev), 1, Tensor::from({bad}, dev));
          FAIL("position " << bad << " was written");
        } catch (const Error& e) {
          CHECK(e.code() == ErrorCode::invalid_argument);
          CHECK_THAT(e.what(), Catch::Contains("position " + std::to_string(bad) + " is outside [0, 3]"));
        }
      }
      CHECK(async::copy_into(cache, Tensor::from(row, {2, 1, 3}, DType::f32, dev), 1, Tensor::from({5}, dev))
                .wait_for(std::chrono::seconds(60)));
      CHECK(code_of([&] {
              async::copy_into(cache, Tensor::from(row, {2, 1, 3}, DType::f32, dev), 1, Tensor::from({5}, dev)).get();
            }) == ErrorCode::invalid_argument);
      // a tensor whose last write failed raises that failure when read, until a write succeeds
      CHECK(code_of([&] { (void)cache.to_vector(); }) == ErrorCode::invalid_argument);
      copy_into(cache, Tensor::from(row, {2, 1, 3}, DType::f32, dev), 1, Tensor::from({1}, dev));
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t d = 0; d < 3; ++d) expect[h * 12 + 3 + d] = row[h * 3 + d];
      CHECK(cache.to_vector() == expect);  // and the failed ones wrote nothing, not even at 0 or 3
    }
  }
  SECTION("a batch recorded once writes each run's position; a bad one fails that run only") {
    const Tensor cache = Tensor::zeros({2, 4, 3}, DType::f16, dev);
    Batch batch(dev);
    const Tensor x = batch.upload(row, {2, 1, 3});
    const std::vector<float> first{0.0f};
    const Tensor pos = batch.upload(first, {1}, DType::i32);
    copy_into(cache, x * 1.0f, 1, pos);
    BatchRead sums = batch.read(trine::sum(trine::sum(cache + x, -1), 0));  // one per position
    std::vector<float> expect(24, 0.0f);
    for (int p = 0; p < 4; ++p) {
      std::vector<float> step(6);
      for (std::size_t i = 0; i < 6; ++i) step[i] = static_cast<float>(p * 10) + static_cast<float>(i);
      const std::vector<float> at{static_cast<float>(p)};
      batch.run({step, at});
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t d = 0; d < 3; ++d) expect[h * 12 + static_cast<std::size_t>(p) * 3 + d] = step[h * 3 + d];
      CHECK(cache.to_vector() == expect);
    }
    CHECK(sums.get().size() == 4);
    const std::vector<float> bad{4.0f};
    try {
      batch.run({row, bad});
      FAIL("position 4 was written");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("position 4 is outside [0, 3]") && Catch::Contains("batch entry"));
    }
    batch.run({row, std::vector<float>{1.0f}});  // the device and the batch still work
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t d = 0; d < 3; ++d) expect[h * 12 + 3 + d] = row[h * 3 + d];
    CHECK(cache.to_vector() == expect);
  }
}

TEST_CASE("copy_into's bad writes are errors naming the write and both tensors", "[errors]") {
  const Tensor d = Tensor::zeros({2, 3});
  try {
    copy_into(Tensor::zeros({1, 3}).broadcast_to({2, 3}), d);
    FAIL("a broadcast destination was written");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("[copy_into]") && Catch::Contains("repeats") && Catch::Contains("f32[2, 3]"));
  }
  try {
    copy_into(d, Tensor::zeros({4}));
    FAIL("a source of another shape was written");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_shape);
    CHECK_THAT(e.what(), Catch::Contains("[copy_into]") && Catch::Contains("[4]") && Catch::Contains("[2, 3]"));
  }
  CHECK(code_of([&] { copy_into(d, Tensor()); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { Tensor().copy_(d); }) == ErrorCode::invalid_argument);
  // a destination larger than the source is not a broadcast of it the other way round
  CHECK(code_of([&] { copy_into(Tensor::zeros({3}), d); }) == ErrorCode::invalid_shape);
  // at a position: an i32 position of one element, a source of the destination's rank and no longer
  const Tensor cache = Tensor::zeros({2, 4, 3});
  const Tensor k = Tensor::zeros({2, 1, 3});
  CHECK(code_of([&] { copy_into(cache, k, 1, Tensor::from({1.0f})); }) == ErrorCode::dtype_mismatch);
  CHECK(code_of([&] { copy_into(cache, k, 1, Tensor::from({1, 2})); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { copy_into(cache, Tensor::zeros({3}), 1, Tensor::from({1})); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { copy_into(cache, Tensor::zeros({2, 5, 3}), 1, Tensor::from({0})); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { copy_into(cache, Tensor::zeros({2, 1, 2}), 1, Tensor::from({0})); }) == ErrorCode::invalid_shape);
  CHECK(code_of([&] { copy_into(cache, k, 3, Tensor::from({0})); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { copy_into(cache, k, 1, Tensor()); }) == ErrorCode::invalid_argument);
  // a write of nothing is nothing, wherever it is
  CHECK(copy_into(cache, Tensor::zeros({2, 0, 3}), 1, Tensor::from({9})).shape() == Shape{2, 4, 3});
  CHECK(copy_into(cache.slice(1, 2, 2), Tensor::zeros({1})).numel() == 0);
}
