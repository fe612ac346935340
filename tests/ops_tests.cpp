// The conformance suite: every op of the table against the reference on its conformance samples
// (ops/samples.cpp: a grid of shapes, strided views, broadcasts, dtypes and parameters), on the
// device under test (TRINE_TEST_DEVICE, default cpu). One test case per op, tagged
// "[ops][<family>][<op>]", registered from the op table, so a new op is tested as soon as it has
// samples. ctest runs this suite once per CPU ISA (TRINE_CPU_ISA), single-threaded, with a fresh
// seed, and once per further device named in TRINE_TEST_DEVICES. Error bounds:
// tests/reference/bounds.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "ops/samples.hpp"
#include "tests/harness.hpp"
#include "trine/debug.hpp"

using namespace trine;
using trine::test::check_op;

namespace {

std::uint64_t seq() {
  static std::uint64_t n = 0;
  return ++n;
}

std::string shape_label(const std::vector<Tensor>& in, const std::string& note) {
  std::string s;
  for (const auto& t : in) s += (t.defined() ? t.str() : std::string("none")) + " ";
  return s + note;
}

void check_samples(OpKind op) {
  const Device device = test::test_device();
  for (const samples::Sample& s : samples::conformance(op)) {
    if (s.cpu_only && device.kind != DeviceKind::cpu) {
      std::printf("%s %s: a cpu-only case (a path only the cpu has), not run on %s\n", op_info(op).name, s.note.c_str(),
                  device.str().c_str());
      continue;
    }
    std::vector<Tensor> in;
    for (const samples::Input& x : s.inputs)
      in.push_back(x.absent ? Tensor() : test::make_input(x.shape, seq(), x.layout, x.dtype, x.low, x.high));
    check_op(op, in, s.params, shape_label(in, s.note));
  }
}

// The element-wise ops whose cpu kernel shares one loop with others of its family: the activations
// run one span loop (the cheap ones at one grain, the costly at another; gelu a blocked loop of its
// own) and the binary ops one broadcast-and-tile loop (where one of its own). Their conformance
// cases are tagged [shared_cpu_path], so a run that checks memory and threading rather than values
// (the sanitizer builds, scripts/test.sh) can run one op per path: "[ops]~[shared_cpu_path]".
bool shared_cpu_path(const OpInfo& info) {
  const std::string_view family = family_name(info.family);
  if (family != "unary" && family != "binary") return false;
  constexpr std::string_view own[] = {"relu", "exp", "gelu", "scale", "bias_act", "add", "where"};
  return std::find(std::begin(own), std::end(own), std::string_view(info.name)) == std::end(own);
}

// One test case per op of the table, "[ops][<family>][<op>]" (and [shared_cpu_path], above).
template <std::size_t I>
void conformance_case() {
  check_samples(static_cast<OpKind>(I));
}

struct Registered {
  std::array<std::string, TRINE_OP_COUNT> names, tags;
};

template <std::size_t... I>
void register_cases(Registered& r, std::index_sequence<I...>) {
  (
      [&] {
        const OpInfo& info = op_info(static_cast<OpKind>(I));
        r.names[I] = std::string("conformance: ") + info.name;
        r.tags[I] = std::string("[ops][") + family_name(info.family) + "][" + info.name + "]" +
                    (shared_cpu_path(info) ? "[shared_cpu_path]" : "");
        Catch::AutoReg(Catch::makeTestInvoker(&conformance_case<I>), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                       Catch::NameAndTags{r.names[I], r.tags[I]});
      }(),
      ...);
}

// Catch keeps references to the names and tags: they live as long as the program.
const bool registered = [] {
  static Registered r;
  register_cases(r, std::make_index_sequence<TRINE_OP_COUNT>{});
  return true;
}();

}  // namespace

TEST_CASE("conv2d's conformance samples reach the cpu's Winograd and direct paths", "[ops][conv2d]") {
  // The shape rule sends these samples to the paths named (unless TRINE_CPU_WINOGRAD overrides it).
  if (test::test_device().kind != DeviceKind::cpu || std::getenv("TRINE_CPU_WINOGRAD")) return;
  CHECK(debug::cpu_conv2d_path({2, 32, 30, 29}, {32, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
  CHECK(debug::cpu_conv2d_path({1, 32, 33, 29}, {40, 32, 3, 3}, Conv2dParams{1, {0, 1}, 1, 1}) == "winograd_f4");
  CHECK(debug::cpu_conv2d_path({1, 64, 28, 30}, {64, 32, 3, 3}, Conv2dParams{1, 1, 1, 2}) == "winograd_f4");
  CHECK(debug::cpu_conv2d_path({1, 32, 29, 31}, {40, 32, 3, 3}, Conv2dParams{1, 0, 1, 1}) == "winograd_f2");
  CHECK(debug::cpu_conv2d_path({2, 48, 14, 15}, {48, 16, 3, 3}, Conv2dParams{1, 1, 1, 3}) == "winograd_f2");
  CHECK(debug::cpu_conv2d_path({1, 32, 12, 72}, {32, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
  CHECK(debug::cpu_conv2d_path({1, 16, 8, 50}, {16, 16, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f2");
  CHECK(debug::cpu_conv2d_path({2, 32, 56, 56}, {64, 32, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "winograd_f4");
  CHECK(debug::cpu_conv2d_path({1, 5, 20, 23}, {8, 5, 3, 3}, Conv2dParams{1, 1, 1, 1}) == "direct");
  // stride 2 with 6 output channels, fewer than any ISA's channel block: the pixels-as-lanes kernel
  CHECK(debug::cpu_conv2d_path({1, 3, 45, 70}, {6, 3, 7, 7}, Conv2dParams{2, 3, 1, 1}) == "direct");
  CHECK(debug::cpu_conv2d_path({1, 3, 45, 70}, {40, 3, 7, 7}, Conv2dParams{2, 3, 1, 1}) == "direct_channels");
  CHECK(debug::cpu_conv2d_path({1, 6, 20, 41}, {64, 3, 3, 4}, Conv2dParams{{3, 2}, {0, 2}, {2, 3}, 2}) ==
        "direct_channels");
}

namespace {

// Values on the device under test.
Tensor on_device(const std::vector<float>& v, const Shape& s) {
  return Tensor::from(v, s, DType::f32, test::test_device());
}

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("gather: an index outside the table is an error naming it, on every device", "[ops][gather]") {
  const Device dev = test::test_device();
  const Tensor table = Tensor::random({5, 3}, 1, -1.0f, 1.0f, DType::f32, dev);
  for (const std::vector<std::int32_t>& bad : {std::vector<std::int32_t>{0, 4, 5, 1}, {2, -1, 7}, {9}}) {
    const Tensor idx = Tensor::from(bad, {static_cast<std::int64_t>(bad.size())}, dev);
    std::size_t first = 0;
    while (bad[first] >= 0 && bad[first] < 5) ++first;
    try {
      (void)gather(table, idx).to_vector();
      FAIL("an out-of-range index passed");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      const std::string what = e.what();
      INFO(what);
      CHECK(what.rfind("[gather]", 0) == 0);
      CHECK_THAT(what, Catch::Contains("index " + std::to_string(bad[first]) + " at position " + std::to_string(first) +
                                       " is outside the table's rows [0, 5)"));
    }
  }
  // the device is usable afterwards, and in-range indices work
  const Tensor ok = Tensor::from(std::vector<std::int32_t>{4, 0, 4}, {3}, dev);
  const auto rows = gather(table, ok).to_vector();
  const auto t = table.to_vector();
  REQUIRE(rows.size() == 9);
  for (int j = 0; j < 3; ++j) {
    CHECK(rows[static_cast<std::size_t>(j)] == t[static_cast<std::size_t>(12 + j)]);
    CHECK(rows[static_cast<std::size_t>(3 + j)] == t[static_cast<std::size_t>(j)]);
  }
}

TEST_CASE("argmax: ties give the first index, NaN the first NaN's", "[ops][argmax]") {
  const Tensor x = on_device({1, 3, 3, 2,   //
                              k_nan, 0, k_nan, 5,  //
                              -k_inf, -k_inf, -k_inf, -k_inf,  //
                              0, 7, k_nan, 7},
                             {4, 4});
  CHECK(argmax(x, -1).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 0, 0, 2});
  CHECK(argmax(x, 0).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 3, 1, 3});
  CHECK(argmax(x, -1).dtype() == DType::i32);
}

TEST_CASE("minimum and maximum propagate NaN from either side", "[ops][minimum][maximum]") {
  const Tensor a = on_device({k_nan, 1, 2, -0.0f, k_inf, 3}, {6});
  const Tensor b = on_device({1, k_nan, 3, 0.0f, 5, -k_inf}, {6});
  const auto lo = minimum(a, b).to_vector(), hi = maximum(a, b).to_vector();
  CHECK(std::isnan(lo[0]));
  CHECK(std::isnan(lo[1]));
  CHECK(std::isnan(hi[0]));
  CHECK(std::isnan(hi[1]));
  CHECK(lo[2] == 2);
  CHECK(hi[2] == 3);
  CHECK(lo[4] == 5);
  CHECK(hi[4] == k_inf);
  CHECK(lo[5] == -k_inf);
  CHECK(hi[5] == 3);
}

TEST_CASE("where: a nonzero condition picks a, zero picks b, NaN counts as nonzero", "[ops][where]") {
  const Tensor a = on_device({1, 2, 3, 4}, {4}), b = on_device({-1, -2, -3, -4}, {4});
  CHECK(where(on_device({0, 1, k_nan, -0.0f}, {4}), a, b).to_vector() == std::vector<float>{-1, 2, 3, -4});
  const Tensor ci = Tensor::from(std::vector<std::int32_t>{0, 5, -1, 0}, {4}, test::test_device());
  CHECK(where(ci, a, b).to_vector() == std::vector<float>{-1, 2, 3, -4});
}

TEST_CASE("pow follows C's rules at its special values", "[ops][pow]") {
  const Tensor x = on_device({0.0f, -0.0f, -2, -2, 1, -1, k_nan, k_inf, -k_inf, 4}, {10});
  auto at = [&](float p) { return pow(x, p).to_vector(); };
  const auto cube = at(3);
  CHECK(cube[0] == 0);
  CHECK(std::signbit(cube[1]));  // -0 cubed is -0
  CHECK(cube[2] == -8);
  CHECK(cube[5] == -1);
  CHECK(std::isnan(cube[6]));
  CHECK(cube[8] == -k_inf);
  const auto half = at(0.5f);
  CHECK(std::isnan(half[2]));  // a negative base takes integer exponents only
  CHECK(half[9] == 2);
  CHECK(half[4] == 1);
  const auto zero = at(0);
  for (float v : zero) CHECK(v == 1);  // pow(x, 0) is 1, NaN included
  const auto inv = at(-1);
  CHECK(inv[0] == k_inf);
  CHECK(inv[1] == -k_inf);
  const auto inf = at(k_inf);
  CHECK(inf[5] == 1);  // pow(-1, inf) is 1
  CHECK(inf[2] == k_inf);
  CHECK(inf[4] == 1);
  CHECK(std::isnan(inf[6]));
}

TEST_CASE("i32: made from integers, read back exactly, cast to and from f32", "[ops][cast][i32]") {
  const Device dev = test::test_device();
  const std::vector<std::int32_t> v{0, -1, 16777217, 2147483647, -2147483647 - 1, 42};
  const Tensor t = Tensor::from(v, {2, 3}, dev);
  CHECK(t.dtype() == DType::i32);
  CHECK(t.to_vector<std::int32_t>() == v);
  CHECK(copy(t.transpose()).to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 2147483647, -1, -2147483647 - 1, 16777217, 42});
  const auto f = cast(t, DType::f32).to_vector();
  CHECK(f[2] == 16777216.0f);  // round to nearest even
  CHECK(f[3] == 2147483648.0f);
  const Tensor back = cast(on_device({1.9f, -1.9f, 3e9f, -3e9f, k_nan, -0.5f}, {6}), DType::i32);
  CHECK(back.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -1, 2147483647, -2147483647 - 1, 0, 0});
}

TEST_CASE("a decode step's new ops agree sync, async and recorded in a batch", "[ops][concat][gather][argmax]") {
  const Device dev = test::test_device();
  const Tensor table = Tensor::random({10, 8}, 3, -1.0f, 1.0f, DType::f32, dev);
  const Tensor cache = Tensor::random({2, 8}, 4, -1.0f, 1.0f, DType::f32, dev);
  const Tensor w = Tensor::random({8, 6}, 5, -1.0f, 1.0f, DType::f32, dev);
  const std::vector<std::int32_t> ids{1, 7, 3};
  auto step = [&](const Tensor& idx) { return argmax(matmul(concat({cache, gather(table, idx)}, 0), w), -1); };
  const std::vector<std::int32_t> expect = step(Tensor::from(ids, {3}, dev)).to_vector<std::int32_t>();
  REQUIRE(expect.size() == 5);
  // async: each op a Future, chained without waiting
  Future<Tensor> e = async::gather(table, Tensor::from(ids, {3}, dev));
  Future<Tensor> kv = async::concat({cache, e.get()}, 0);
  CHECK(argmax(matmul(kv.get(), w), -1).to_vector<std::int32_t>() == expect);
  // a batch: the indices uploaded as i32, the same ops recorded, one run
  Batch batch(dev);
  const Tensor idx = batch.upload(std::vector<float>{1, 7, 3}, {3}, DType::i32);
  BatchRead out = batch.read(step(idx));
  batch.run();
  const std::vector<float> got = out.get();
  REQUIRE(got.size() == expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(static_cast<std::int32_t>(got[i]) == expect[i]);
  // concat of host tensors placed automatically, the inputs moved to the chosen device
  const Tensor h0 = Tensor::random({3, 2}, 6), h1 = Tensor::random({3, 5}, 7);
  const auto joined = concat({h0, h1}, 1).to_vector();
  const auto v0 = h0.to_vector(), v1 = h1.to_vector();
  CHECK(joined[0] == v0[0]);
  CHECK(joined[2] == v1[0]);
  CHECK(joined[20] == v1[14]);
}

TEST_CASE("a batch whose run failed on a bad index runs again with good ones", "[ops][gather][batch_rerun]") {
  const Device dev = test::test_device();
  const Tensor table = Tensor::random({6, 4}, 15, -1.0f, 1.0f, DType::f32, dev);
  Batch batch(dev);
  const Tensor idx = batch.upload(std::vector<float>{0, 1}, {2}, DType::i32);
  BatchRead out = batch.read(relu(gather(table, idx)));
  // 7 is outside the table's 6 rows
  CHECK_THROWS_WITH(batch.run({std::vector<float>{7, 1}}),
                    Catch::Contains("index 7 at position 0 is outside the table's rows [0, 6)"));
  CHECK_THROWS_AS(out.get(), Error);
  REQUIRE_NOTHROW(batch.run({std::vector<float>{5, 2}}));
  const auto t = table.to_vector();
  const auto got = out.get();
  REQUIRE(got.size() == 8);
  for (int j = 0; j < 4; ++j) {
    CHECK(got[static_cast<std::size_t>(j)] == std::max(0.0f, t[static_cast<std::size_t>(20 + j)]));
    CHECK(got[static_cast<std::size_t>(4 + j)] == std::max(0.0f, t[static_cast<std::size_t>(8 + j)]));
  }
}
