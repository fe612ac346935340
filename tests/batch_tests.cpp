// Command batches: recorded chains and DAGs give what the sync calls give, each input is uploaded
// once and each read is one readback, replays take new data, and errors name the entry.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tests/harness.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::test::test_device;

namespace {

std::vector<float> values(std::size_t n, std::uint64_t seed) {
  return Tensor::random({static_cast<std::int64_t>(n)}, seed).to_vector();
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

TransferStats delta(const TransferStats& before) {
  TransferStats now = transfer_stats(test_device());
  now.uploads -= before.uploads;
  now.upload_bytes -= before.upload_bytes;
  now.readbacks -= before.readbacks;
  now.readback_bytes -= before.readback_bytes;
  now.device_copies -= before.device_copies;
  now.submissions -= before.submissions;
  return now;
}

// The model both spellings compute: a small MLP block with a residual (a DAG, not a chain).
Tensor block(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& g) {
  Tensor h = bias_act(matmul(x, w1), b1, Activation::gelu);
  Tensor y = matmul(h, w2);
  return rmsnorm(add(y, x), g);
}

}  // namespace

TEST_CASE("a recorded chain and DAG give exactly what the sync calls give", "[batch]") {
  const Device dev = test_device();
  const auto xs = values(8 * 64, 1);
  const Tensor w1 = Tensor::random({64, 96}, 2, -0.2f, 0.2f, DType::f32, dev);
  const Tensor b1 = Tensor::random({96}, 3, -1, 1, DType::f32, dev);
  const Tensor w2 = Tensor::random({96, 64}, 4, -0.2f, 0.2f, DType::f32, dev);
  const Tensor g = Tensor::random({64}, 5, 0.5f, 1.5f, DType::f32, dev);

  const Tensor xe = Tensor::from(xs, {8, 64}, DType::f32, dev);
  const auto expect_block = block(xe, w1, b1, w2, g).to_vector();
  const auto expect_chain = softmax(tanh(scale(relu(xe), 0.5f, 0.25f))).to_vector();

  Batch batch(dev);
  Tensor x = batch.upload(xs, {8, 64});
  CHECK(x.device() == dev);
  BatchRead out_block = batch.read(block(x, w1, b1, w2, g));
  BatchRead out_chain = batch.read(softmax(tanh(scale(relu(x), 0.5f, 0.25f))));
  BatchRead out_view = batch.read(x.transpose());    // a view: recorded copy, then one readback
  CHECK(batch.size() == 1 + 5 + 1 + 4 + 1 + 1 + 1);  // upload, block, read, chain, read, copy, read
  CHECK_THROWS_AS(out_block.get(), Error);           // nothing has run yet
  CHECK_THROWS_AS(x.to_vector(), Error);             // a recorded tensor has no data before the run

  batch.run();
  CHECK(same(out_block.get(), expect_block));
  CHECK(same(out_chain.get(), expect_chain));
  CHECK(same(out_view.get(), xe.transpose().to_vector()));
  CHECK(out_block.shape() == Shape{8, 64});
  CHECK(same(x.to_vector(), xs));  // after the run, batch tensors are ordinary tensors
}

TEST_CASE("a batch of N ops on one uploaded input with one read is one upload and one readback", "[batch]") {
  const auto xs = values(4096, 7);
  Batch batch(test_device());
  Tensor t = batch.upload(xs, {4096});
  for (int i = 0; i < 64; ++i) t = i % 2 ? relu(t) : scale(t, 0.9f, 0.01f);
  BatchRead out = batch.read(t);

  const TransferStats before = transfer_stats(test_device());
  batch.run();
  const TransferStats d = delta(before);
  CHECK(d.uploads == 1);
  CHECK(d.upload_bytes == 4096 * 4);
  CHECK(d.readbacks == 1);
  CHECK(d.readback_bytes == 4096 * 4);
  CHECK(d.device_copies == 0);
  CHECK(d.submissions == 1);

  std::vector<float> expect = xs;
  for (int i = 0; i < 64; ++i)
    for (auto& v : expect) v = i % 2 ? (v > 0 ? v : 0.0f) : 0.9f * v + 0.01f;
  const auto got = out.get();
  REQUIRE(got.size() == expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(expect[i]).margin(1e-6));
}

TEST_CASE("a batch replays with new inputs, synchronously and as a Future", "[batch]") {
  const Device dev = test_device();
  const Tensor w = Tensor::random({32, 16}, 9, -1, 1, DType::f32, dev);
  Batch batch(dev);
  Tensor a = batch.upload(values(10 * 32, 10), {10, 32});
  Tensor b = batch.upload(values(16, 11), {16}, DType::bf16);
  BatchRead out = batch.read(add(matmul(a, w), cast(b, DType::f32)));
  batch.run();
  for (std::uint64_t seed = 20; seed < 24; ++seed) {
    const auto av = values(10 * 32, seed), bv = values(16, seed + 100);
    const auto expect = add(matmul(Tensor::from(av, {10, 32}, DType::f32, dev), w),
                            cast(Tensor::from(bv, {16}, DType::bf16, dev), DType::f32))
                            .to_vector();
    if (seed % 2) {
      batch.run({av, bv});
    } else {
      Future<void> f = batch.submit({av, bv});
      f.get();
      CHECK(f.ready());
    }
    CHECK(same(out.get(), expect));
  }
  CHECK_THROWS_AS(batch.run({values(3, 1)}), Error);                 // wrong input count
  CHECK_THROWS_AS(batch.run({values(3, 1), values(16, 2)}), Error);  // wrong size
  CHECK_THROWS_AS(batch.upload(values(4, 1), {4}), Error);           // recording is closed
}

TEST_CASE("an error in the middle of a batch names the op and its position, and the device stays usable", "[batch]") {
  const Device dev = test_device();
  Batch batch(dev);
  Tensor x = batch.upload(values(12, 1), {3, 4});
  Tensor y = relu(x);
  // recording a bad op: the error names it and its position; the batch keeps what came before
  try {
    matmul(y, y);
    FAIL("matmul of [3, 4] by [3, 4] should not record");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_shape);
    CHECK(std::string(e.what()).find("[matmul]") != std::string::npos);
    CHECK(std::string(e.what()).find("batch entry 3") != std::string::npos);
    REQUIRE(e.entry().has_value());
    CHECK(e.entry()->index == 2);
  }
  // a failure while running: summing a broadcast view whose contiguous copy cannot be allocated
  Tensor one = batch.upload(values(1, 2), {1});
  Tensor s = sum(one.broadcast_to({1 << 20, 1 << 20}), -1);
  BatchRead good = batch.read(sigmoid(y));
  BatchRead bad = batch.read(relu(s));
  try {
    batch.run();
    FAIL("the batch should fail");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::out_of_memory);
    CHECK(std::string(e.what()).find("[sum] batch entry 4 of 8") != std::string::npos);
    REQUIRE(e.entry().has_value());  // the position as data, not only in the text
    CHECK(e.entry()->index == 3);
    CHECK(e.entry()->count == 8);
    CHECK(e.entry()->tag == "[sum]");
  }
  CHECK_THROWS_AS(bad.get(), Error);
  // the device works afterwards
  CHECK(relu(Tensor::full({4}, -1.0f, DType::f32, dev)).to_vector() == std::vector<float>(4, 0.0f));
  // an async op reading a tensor of the failed run fails too, with the cause
  CHECK_THROWS_AS(async::relu(y).get(), Error);
}

TEST_CASE("batch misuse gives clear errors", "[batch]") {
  Batch a(test_device()), b(test_device());
  Tensor x = a.upload(values(4, 1), {4});
  Tensor y = b.upload(values(4, 2), {4});
  CHECK_THROWS_AS(add(x, y), Error);                      // two batches
  CHECK_THROWS_AS(b.read(x), Error);                      // another batch's tensor
  CHECK_THROWS_AS(async::relu(x).get(), Error);           // async does not record
  CHECK_THROWS_AS(a.upload(values(4, 1), {5}), Error);    // size mismatch
  CHECK_THROWS_AS(Batch(Device::parse("cpu:3")), Error);  // no such device
  Tensor eager = Tensor::random({4}, 3);
  CHECK_THROWS_AS(a.read(eager), Error);  // not recorded by the batch
  a.run();                                // a batch with only an upload runs
}

TEST_CASE("a batch reuses the memory of tensors nobody holds once their last entry has run", "[batch]") {
  const Device dev = test_device();
  const std::int64_t n = 1 << 16;  // 256 KiB: blocks the memory cache counts
  const auto xs = values(static_cast<std::size_t>(n), 31);
  Batch batch(dev);
  Tensor t = batch.upload(xs, {n});
  Tensor kept;
  for (int i = 0; i < 16; ++i) {
    t = scale(t, 0.5f, 0.25f);
    if (i == 7) kept = t;  // held by the caller: its memory is never handed on
  }
  BatchRead out = batch.read(t);
  const auto before = memory::stats(dev);
  batch.run();
  const auto after = memory::stats(dev);
  const auto allocations = (after.hits + after.misses) - (before.hits + before.misses);
  // 17 tensors (the upload and 16 results); without reuse 17 allocations, with it a handful: at
  // most 4 for the tensors, and on a device whose memory the host cannot map (a discrete GPU, or
  // lavapipe with TRINE_VULKAN_FORCE_STAGING=1: ctest batch_vulkan_0_staged) a staging buffer each
  // for the upload and the read (an H200 counted 5 here).
  CHECK(allocations <= 6);
  std::vector<float> expect = xs, expect_kept;
  for (int i = 0; i < 16; ++i) {
    for (auto& v : expect) v = 0.5f * v + 0.25f;
    if (i == 7) expect_kept = expect;
  }
  CHECK(same(out.get(), expect));
  CHECK(same(kept.to_vector(), expect_kept));
  batch.run();  // a replay is the same
  CHECK(same(out.get(), expect));
  CHECK(same(kept.to_vector(), expect_kept));
}
