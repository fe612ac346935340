// The Vulkan backend on whatever Vulkan device 0 is (lavapipe in CI), under the validation layer
// (ctest sets TRINE_VULKAN_VALIDATION=1; vulkan_staged runs it again on the staging path): what is
// particular to this backend. Transfers, the shaders' workgroup geometry and special values, the
// loop budget and maxStorageBufferRange (refused by supports(), or bound in pieces), the pipeline
// cache, cases refused as unsupported, async chains and host steps, a batch's transfer counts, out
// of memory and the memory cache. Every op against the reference is the conformance suite's job
// ([ops], run on this device by ctest ops_vulkan_0 and ops_vulkan_0_staged). Any validation
// message fails the test that caused it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "backends/vulkan/debug.hpp"
#if defined(TRINE_VULKAN_BUILT)  // the Vulkan backend is compiled in (tests/CMakeLists.txt)
#include "backends/vulkan/vk_check.hpp"
#define TRINE_TEST_VK_CHECK 1
#endif
#include "tensor/storage.hpp"
#include "tests/harness.hpp"
#include "tests/vulkan_harness.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::test::k_vk;
using trine::test::require_no_validation_messages;
using trine::test::require_vulkan;

namespace {

std::uint64_t seq() {
  static std::uint64_t n = 1000;
  return ++n;
}

enum class Layout { contiguous, strided, transposed };

// A vulkan tensor of `shape` (values uniform in [low, high)), laid out as asked: strided takes every
// other element of a wider tensor along the last axis; transposed is the transpose of the swapped shape.
Tensor input(const Shape& shape, float low = -1.0f, float high = 1.0f, Layout layout = Layout::contiguous) {
  if (layout == Layout::strided && shape.rank() >= 1) {
    Shape wide = shape;
    wide[shape.rank() - 1] *= 2;
    return Tensor::random(wide, seq(), low, high, DType::f32, k_vk).slice(-1, 0, wide[shape.rank() - 1], 2);
  }
  if (layout == Layout::transposed && shape.rank() >= 2) {
    Shape swapped = shape;
    std::swap(swapped[shape.rank() - 1], swapped[shape.rank() - 2]);
    return Tensor::random(swapped, seq(), low, high, DType::f32, k_vk).transpose(-2, -1);
  }
  return Tensor::random(shape, seq(), low, high, DType::f32, k_vk);
}

// The conformance harness's check on the vulkan inputs (oracle, bounds, guards, inputs unchanged,
// no validation message).
void check(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, const std::string& label) {
  for (const auto& t : inputs) REQUIRE((!t.defined() || t.device() == k_vk));
  test::check_op(op, inputs, params, label);
}

std::string label(const std::vector<Tensor>& in, const std::string& extra = "") {
  std::string s;
  for (const auto& t : in) s += (t.defined() ? t.str() : std::string("none")) + " ";
  return s + extra;
}

const std::vector<std::int64_t> k_sizes = {1, 2, 3, 7, 31, 32, 33, 64, 127, 256, 1000, 4099, 65537};

// vulkan:0's line in trine-info ("...; maxStorageBufferRange 128 MiB; ...").
std::string capabilities() {
  for (const auto& d : devices())
    if (d.device == k_vk) return d.capabilities;
  return std::string();
}

// The most one shader binding addresses on vulkan:0, in bytes.
std::uint64_t max_binding() {
  const std::string caps = capabilities();
  const auto at = caps.find("maxStorageBufferRange ");
  REQUIRE(at != std::string::npos);
  return std::stoull(caps.substr(at + 22)) << 20;
}

}  // namespace

TEST_CASE("vulkan device 0 is present and describes itself", "[vulkan]") {
  require_vulkan();
  bool found = false;
  for (const auto& d : devices()) {
    if (d.device != k_vk) continue;
    found = true;
    INFO(d.name << ": " << d.capabilities);
    CHECK(d.capabilities.find("maxStorageBufferRange") != std::string::npos);
    CHECK(d.capabilities.find("subgroup") != std::string::npos);
    // whether the device offers cooperative matrices, and that no kernel uses them yet (issue 33)
    CHECK(d.capabilities.find("cooperative matrices") != std::string::npos);
  }
  REQUIRE(found);
  require_no_validation_messages();
}

TEST_CASE("vulkan: an empty submission can be timed on the device, and only where there is one", "[vulkan]") {
  require_vulkan();
  // Work in flight before it stays correct: the empty submission goes through the same timeline.
  const Tensor x = Tensor::full({1000}, -2.0f, DType::f32, k_vk);
  auto pending = async::relu(x);
  for (int i = 0; i < 3; ++i) CHECK_NOTHROW(debug::bare_submit(k_vk));
  CHECK(pending.get().to_vector() == std::vector<float>(1000, 0.0f));
  try {
    debug::bare_submit(Device::cpu());
    FAIL("the cpu has no submission to time");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("[bare_submit] cpu"));
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: uploads and readbacks round-trip, views included", "[vulkan]") {
  require_vulkan();
  for (auto n : k_sizes) {
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 3.0f;
    Tensor t = Tensor::from(host, {n}, DType::f32, k_vk);
    REQUIRE(t.to_vector() == host);
  }
  Tensor m = Tensor::arange(0, 35, 1, DType::f32, k_vk).reshape({5, 7});
  auto tv = m.transpose().to_vector();  // copy op on the device, then a readback
  REQUIRE(tv.size() == 35);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j) REQUIRE(tv[static_cast<std::size_t>(i * 5 + j)] == static_cast<float>(j * 7 + i));
  require_no_validation_messages();
}

// The ops themselves are checked on this device by the conformance suite ([ops], ctest
// ops_vulkan_0, and ops_vulkan_0_staged on the staging path). What is here are the sizes that cross
// this backend's own shader geometry, which [ops]'s grid does not hit, and special values.
TEST_CASE("vulkan: sizes across the shaders' workgroup geometry, and unary views at any offset", "[vulkan]") {
  require_vulkan();
  struct Unary {
    OpKind op;
    OpParams p;
  };
  const std::vector<Unary> unary = {{OpKind::relu, ActParams{}},
                                    {OpKind::leaky_relu, ActParams{0.01f, 0}},
                                    {OpKind::elu, ActParams{1.0f, 0}},
                                    {OpKind::elu, ActParams{0.5f, 0}},
                                    {OpKind::sigmoid, ActParams{}},
                                    {OpKind::tanh, ActParams{}},
                                    {OpKind::silu, ActParams{}},
                                    {OpKind::gelu, ActParams{}},
                                    {OpKind::gelu_tanh, ActParams{}},
                                    {OpKind::clip, ActParams{-0.5f, 0.75f}},
                                    {OpKind::scale, ScaleParams{-2.5f, 0.25f}}};
  // unary_vec4.comp takes whole vec4s (4 per invocation, 256 invocations) and unary.comp the rest:
  // one workgroup's share plus 3, and 2^16 plus 1.
  for (const auto& u : unary) {
    for (std::int64_t n : {4099, 65537}) {
      std::vector<Tensor> in{input({n}, -6.0f, 6.0f)};
      check(u.op, in, u.p, label(in));
    }
    // Contiguous views that start inside their storage: aligned to a vec4 or not.
    Tensor base = input({1009}, -6.0f, 6.0f);
    for (std::int64_t start : {1, 4, 5}) {
      std::vector<Tensor> off{base.slice(0, start, 1009)};
      check(u.op, off, u.p, label(off, "offset " + std::to_string(start)));
    }
  }
  // reduce.comp: a 128-wide workgroup per output looping over the axis.
  for (std::int64_t n : {4099, 65537}) {
    std::vector<Tensor> in{input({n}), input({n})};
    check(OpKind::dot, in, NoParams{}, label(in));
  }
  // softmax.comp: rows of exactly one 128-wide workgroup pass.
  for (OpKind op : {OpKind::softmax, OpKind::log_softmax}) {
    std::vector<Tensor> row{input({3, 128}, -10.0f, 10.0f)};
    check(op, row, AxisParams{-1}, label(row));
    std::vector<Tensor> col{input({128, 5}, -10.0f, 10.0f)};
    check(op, col, AxisParams{0}, label(col, "axis 0"));
  }
  // attention.comp: 64 keys per step, 257 leaving one over.
  std::vector<Tensor> att{input({1, 257, 32}, -2, 2), input({1, 257, 32}, -2, 2), input({1, 257, 32})};
  check(OpKind::attention, att, AttentionParams{false, 0}, label(att));
}

TEST_CASE("vulkan: softmax of huge, -inf and all -inf rows, and casts of special values", "[vulkan]") {
  require_vulkan();
  // -inf entries give 0, a row of -inf gives NaN, 1e30 is exact.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> host = {1e30f, 0.0f, -inf, 2.0f, -inf, -inf, -inf, -inf};
  std::vector<Tensor> sp{Tensor::from(host, {2, 4}, DType::f32, k_vk)};
  check(OpKind::softmax, sp, AxisParams{-1}, "special values");
  check(OpKind::log_softmax, sp, AxisParams{-1}, "special values");
  // the same rows 256 times over: softmax_rows.comp (an invocation per row) takes them
  std::vector<float> many;
  for (int i = 0; i < 256; ++i) many.insert(many.end(), host.begin(), host.end());
  std::vector<Tensor> sp_rows{Tensor::from(many, {512, 4}, DType::f32, k_vk)};
  check(OpKind::softmax, sp_rows, AxisParams{-1}, "special values, many rows");
  check(OpKind::log_softmax, sp_rows, AxisParams{-1}, "special values, many rows");
  // f16 subnormals, the largest finite values, ties, inf and NaN
  std::vector<float> cv = {0.0f,    -0.0f,         6e-8f,         3e-8f,          2.9e-8f,   1e-5f,
                           6.1e-5f, 65504.0f,      65519.0f,      65520.0f,       -70000.0f, inf,
                           -inf,    std::nanf(""), 1.0009765625f, 1.00146484375f, 3e38f};
  std::vector<Tensor> special{Tensor::from(cv, {static_cast<std::int64_t>(cv.size())}, DType::f32, k_vk)};
  for (DType to : {DType::f16, DType::bf16})
    check(OpKind::cast, special, CastParams{to}, std::string("special values to ") + dtype_name(to));
}

TEST_CASE("vulkan: long reductions are split, never cut short by the driver's loop limit", "[vulkan]") {
  require_vulkan();
  // lavapipe stops a shader loop near 65535 iterations; these lengths need more than that per
  // invocation unless the reduction is split across workgroups.
  const std::int64_t n = std::int64_t{1} << 24;
  Tensor ones = Tensor::full({n}, 1.0f, DType::f32, k_vk);
  REQUIRE(sum(ones, 0).item() == static_cast<float>(n));
  REQUIRE(mean(ones, 0).item() == 1.0f);
  REQUIRE(dot(ones, ones).item() == static_cast<float>(n));
  std::vector<Tensor> in{input({3, 9'000'001})};
  for (OpKind op : {OpKind::sum, OpKind::max, OpKind::argmax})
    check(op, in, ReduceParams{-1, false}, label(in, "split"));
  std::vector<Tensor> mv{input({2, 1 << 23}), input({1 << 23})};
  check(OpKind::gemv, mv, GemvParams{false}, label(mv, "split"));
  // argmax's chunks meet as (value, index) pairs: a tie across chunks keeps the first index, and a
  // NaN in a later chunk wins over a larger value in an earlier one
  std::vector<float> row(5'000'000, 1.0f);
  row[3'000'000] = row[4'500'000] = 2.0f;
  CHECK(argmax(Tensor::from(row, {1, 5'000'000}, DType::f32, k_vk), -1).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{3'000'000});
  row[100] = 3.0f;
  row[4'200'000] = std::numeric_limits<float>::quiet_NaN();
  CHECK(argmax(Tensor::from(row, {5'000'000}, DType::f32, k_vk), 0).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{4'200'000});
}

TEST_CASE("vulkan: where over more dims than its shader holds walks the outer ones", "[vulkan]") {
  require_vulkan();
  // broadcasts alternating along 8 dims: no two neighbouring dims merge
  std::vector<Tensor> in{Tensor::random({2, 1, 2, 1, 2, 1, 2, 1}, seq(), -1.0f, 2.0f, DType::i32, k_vk),
                         input({1, 3, 1, 3, 1, 3, 1, 3}), input({2, 3, 2, 3, 2, 3, 2, 3})};
  check(OpKind::where, in, NoParams{}, label(in, "rank 8"));
  std::vector<Tensor> views{input({2, 1, 2, 1, 2, 1, 2, 3}, -1.0f, 1.0f, Layout::transposed),
                            input({1, 3, 1, 3, 1, 3, 1, 3}, -1.0f, 1.0f, Layout::strided), input({3})};
  check(OpKind::where, views, NoParams{}, label(views, "rank 8 views"));
}

TEST_CASE("vulkan: gather's out-of-range index fails its batch entry, in a replayed batch too", "[vulkan]") {
  require_vulkan();
  Batch batch(k_vk);
  const std::vector<float> table{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const std::vector<float> good{4, 0, 2, 2}, bad{0, 7, 1, -2};
  Tensor t = batch.upload(table, {5, 3});
  Tensor i = batch.upload(good, {4}, DType::i32);
  BatchRead out = batch.read(relu(gather(t, i)));
  batch.run();
  CHECK(out.get() == std::vector<float>{12, 13, 14, 0, 1, 2, 6, 7, 8, 6, 7, 8});
  const auto replays = transfer_stats(k_vk).replays;
  try {
    batch.run({table, bad});  // the same recording again, the words the device reports set anew
    FAIL("an index outside the table passed");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("[gather] batch entry 3 of 5: index 7 at position 1 is outside the "
                                         "table's rows [0, 5)"));
    REQUIRE(e.entry().has_value());
    CHECK(e.entry()->index == 2);
  }
  CHECK(transfer_stats(k_vk).replays == replays + 1);
  // the device works afterwards
  const Tensor rows =
      gather(Tensor::from(table, {5, 3}, DType::f32, k_vk), Tensor::from(std::vector<std::int32_t>{1}, {1}, k_vk));
  CHECK(rows.to_vector() == std::vector<float>{3, 4, 5});
  require_no_validation_messages();
}

TEST_CASE("vulkan: what the driver's loop limit keeps from running is refused clearly", "[vulkan]") {
  require_vulkan();
  if (capabilities().find("shader loops cut") == std::string::npos) {
    WARN("this device has no loop limit: nothing to refuse");
    return;
  }
  Tensor row = Tensor::zeros({1, 1 << 23}, DType::f32, k_vk);
  const auto submissions = transfer_stats(k_vk).submissions;
  try {
    (void)softmax(row);
    FAIL("a softmax row of 2^23 ran where loops are cut short");
  } catch (const Error& e) {
    INFO(e.what());
    REQUIRE(e.code() == ErrorCode::unsupported);
    REQUIRE(std::string(e.what()).find("[softmax]") != std::string::npos);
    REQUIRE(std::string(e.what()).find("loop") != std::string::npos);
  }
  CHECK(transfer_stats(k_vk).submissions == submissions);  // refused by supports(), never submitted
  std::vector<Tensor> in{input({4, 100})};
  check(OpKind::softmax, in, AxisParams{-1}, "after the refusal");
}

TEST_CASE("vulkan: the pipeline cache is written, reused by a second process, and a corrupt one survived", "[vulkan]") {
  require_vulkan();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trine-pipeline-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // This test binary again, in a process of its own, running one quick test that makes pipelines.
  const std::string run = "XDG_CACHE_HOME=" + dir.string() + " TRINE_VULKAN_VALIDATION=1 " +
                          fs::read_symlink("/proc/self/exe").string() +
                          " \"vulkan: uploads and readbacks round-trip*\" > /dev/null 2>&1";
  auto cache_file = [&] {
    fs::path found;
    if (fs::exists(dir / "trine"))
      for (const auto& e : fs::directory_iterator(dir / "trine"))
        if (e.path().extension() == ".pipelines") found = e.path();
    return found;
  };
  REQUIRE(std::system(run.c_str()) == 0);
  const fs::path file = cache_file();
  REQUIRE(!file.empty());
  // A header at least: lavapipe keeps no pipelines in it (Mesa caches compiled shaders on its own).
  REQUIRE(fs::file_size(file) >= 32);
  REQUIRE(std::system(run.c_str()) == 0);  // starts from it
  {
    std::ofstream corrupt(file, std::ios::binary | std::ios::trunc);
    corrupt << "not a pipeline cache, and far too short for one's header: ignored, never trusted";
  }
  REQUIRE(std::system(run.c_str()) == 0);
  std::ifstream in(file, std::ios::binary);
  std::uint32_t header[2] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  REQUIRE(header[1] == 1);  // rewritten: VK_PIPELINE_CACHE_HEADER_VERSION_ONE
  fs::remove_all(dir);
}

TEST_CASE("vulkan: matmul takes every batch rank a Shape holds, broadcast both ways", "[vulkan]") {
  require_vulkan();
  // Refused as unsupported past 3 batch dims until the shaders walked all six: 4, 5 and 6 batch
  // dims, broadcast both ways, through matmul_rows.comp (N = 8) and matmul.comp (N = 3, views).
  for (const auto& [as, bs] : {std::pair<Shape, Shape>{{2, 1, 2, 1, 4, 8}, {8, 3}},
                               {{2, 1, 3, 2, 1, 5, 6}, {3, 1, 4, 6, 8}},
                               {{1, 2, 1, 2, 1, 3, 4, 6}, {2, 1, 2, 1, 3, 1, 6, 3}}}) {
    std::vector<Tensor> in{input(as), input(bs)};
    check(OpKind::matmul, in, MatmulParams{}, label(in));
  }
  std::vector<Tensor> views{input({2, 1, 3, 1, 9, 5}, -1, 1, Layout::transposed),
                            input({1, 2, 1, 4, 5, 7}, -1, 1, Layout::strided)};
  check(OpKind::matmul, views, MatmulParams{}, label(views, "views"));
  require_no_validation_messages();
}

TEST_CASE("vulkan: a transposed operand keeps matmul off the tiled shader", "[vulkan]") {
  require_vulkan();
  // A weight stored [N, K] (trans_b) ran through matmul.comp a column at a time, 13-20x slower on
  // lavapipe than untransposed: one row of x is now a gemv over the weight's rows (reduce.comp),
  // more rows copy the transposed operand contiguous and run matmul_rows.comp. Each case: the
  // result against the oracle, and which shaders ran.
  struct Case {
    Shape a, b;
    MatmulParams p;
    Layout la, lb;
    bool gemv;  // else matmul_rows
  };
  const std::vector<Case> cases{
      {{1, 300}, {64, 300}, {false, true}, Layout::contiguous, Layout::contiguous, true},
      {{1, 1, 300}, {1, 64, 300}, {false, true}, Layout::contiguous, Layout::contiguous, true},
      {{300, 1}, {64, 300}, {true, true}, Layout::contiguous, Layout::contiguous, true},
      {{1, 33}, {40, 33}, {false, true}, Layout::contiguous, Layout::strided, true},  // W copied first
      {{1, 300}, {300, 64}, {}, Layout::contiguous, Layout::transposed, true},       // x w^T as a view
      {{5, 33}, {12, 33}, {false, true}, Layout::contiguous, Layout::contiguous, false},
      {{2, 3, 5, 9}, {3, 8, 9}, {false, true}, Layout::contiguous, Layout::contiguous, false},
      {{33, 5}, {33, 12}, {true, false}, Layout::contiguous, Layout::contiguous, false},
      {{33, 5}, {12, 33}, {true, true}, Layout::contiguous, Layout::contiguous, false},
      {{2, 7, 9}, {9, 16}, {}, Layout::transposed, Layout::contiguous, false},
      {{1, 9}, {9, 16}, {}, Layout::strided, Layout::contiguous, false},  // only the row of A copied
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in{input(c.a, -1, 1, c.la), input(c.b, -1, 1, c.lb)};
    const std::string what = label(in, std::string(c.p.trans_a ? "ta " : "") + (c.p.trans_b ? "tb" : ""));
    const std::uint64_t tiled = vulkan::dispatches_of("matmul"), rows = vulkan::dispatches_of("matmul_rows");
    const std::uint64_t reduce = vulkan::dispatches_of("reduce") + vulkan::dispatches_of("reduce_subgroup") +
                                 vulkan::dispatches_of("reduce_rows");
    check(OpKind::matmul, in, c.p, what);
    INFO(what);
    CHECK(vulkan::dispatches_of("matmul") == tiled);
    CHECK((vulkan::dispatches_of("matmul_rows") > rows) == !c.gemv);
    CHECK((vulkan::dispatches_of("reduce") + vulkan::dispatches_of("reduce_subgroup") +
               vulkan::dispatches_of("reduce_rows") >
           reduce) == c.gemv);
  }
  // 16-bit B: one row of x reads the weight in place (gemv_b16.comp), more rows copy it contiguous
  // in its own dtype (matmul_rows_b16)
  const Tensor w = Tensor::random({12, 33}, seq(), -1.0f, 1.0f, DType::f16, k_vk);
  for (const Tensor& x : {Tensor::random({5, 33}, seq(), -1.0f, 1.0f, DType::f16, k_vk), input({1, 33}),
                          Tensor::random({1, 33}, seq(), -1.0f, 1.0f, DType::bf16, k_vk)}) {
    const bool one = x.shape()[0] == 1;
    const std::uint64_t b16 = vulkan::dispatches_of("matmul_rows_b16"), gemv = vulkan::dispatches_of("gemv_b16"),
                        tiled = vulkan::dispatches_of("matmul");
    check(OpKind::matmul, {x, w}, MatmulParams{false, true}, label({x, w}, "16-bit w, tb"));
    CHECK((vulkan::dispatches_of("gemv_b16") > gemv) == (one && x.dtype() != DType::bf16));
    CHECK((vulkan::dispatches_of("matmul_rows_b16") > b16) == !(one && x.dtype() != DType::bf16));
    CHECK(vulkan::dispatches_of("matmul") == tiled);
  }
  require_no_validation_messages();
}

namespace {

// The largest error of `got` against the exact `want`, in ulps of the exact value, over the results
// in the normal range, and how many of those came out as 0. Below 2^-126 a result may flush: it
// counts only if it is off by more than 2^-126.
struct UlpError {
  double worst = 0;
  double at = 0;
  std::int64_t flushed = 0;
};
UlpError ulp_error(const std::vector<float>& x, const std::vector<float>& got, const std::vector<long double>& want) {
  UlpError r;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const long double a = std::fabs(want[i]);
    if (!std::isfinite(want[i]) || a > FLT_MAX) continue;  // inf results are the specials tests' to check
    double e = 0;
    if (a < 0x1p-126L) {
      e = std::fabs(got[i] - want[i]) <= 0x1p-126L ? 0.0 : INFINITY;
    } else {
      if (got[i] == 0.0f) ++r.flushed;
      int ex = 0;
      std::frexp(static_cast<double>(a), &ex);  // a = f 2^ex, f in [0.5, 1): an ulp is 2^(ex - 24)
      e = static_cast<double>(std::fabs(got[i] - want[i]) / std::ldexp(1.0L, ex - 24));
    }
    if (!(e <= r.worst)) r.worst = e, r.at = x[i];
  }
  return r;
}

}  // namespace

TEST_CASE("vulkan: exp-based ops are within 4 ulps of the exact function, and keep their normal results", "[vulkan]") {
  require_vulkan();
  // The activations of one exact f32 input against their exact value, in ulps of it (the
  // conformance measure adds |x f'(x)| to the scale), over every magnitude of x and the far tails.
  // lavapipe's GLSL builtins (exp within 3 + 2|x| ulp) and f32 exponents had put sigmoid 62 ulps off
  // at x = -79, tanh 8.4 near 0.13, gelu 300 at -12.7 (x^2/2 rounded), and flushed silu(-91.2) =
  // -2.3e-38 and gelu_tanh(-10) to 0.
  std::vector<float> x;
  std::uint64_t s = 12345;
  auto next = [&] { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 40; };  // 24 bits
  for (int i = 0; i < 1 << 18; ++i) x.push_back(-110.0f + 150.0f * static_cast<float>(next()) / 0x1p24f);
  for (int i = 0; i < 1 << 18; ++i) x.push_back(-4.0f + 8.0f * static_cast<float>(next()) / 0x1p24f);
  for (int i = 0; i < 1 << 18; ++i) {  // every exponent: magnitudes 2^-127 to 2^6
    float v = std::ldexp(1.0f + static_cast<float>(next()) / 0x1p24f, static_cast<int>(next() % 134) - 127);
    x.push_back(i % 2 ? -v : v);
  }
  for (float v : {-72.8f, -91.2f, -87.0f, -100.0f, -9.4f, -10.0f, -13.0f, -1.32f, 0.625f, 0.16f}) x.push_back(v);
  const auto n = static_cast<std::int64_t>(x.size());
  const Tensor t = Tensor::from(x, {n}, DType::f32, k_vk);
  using LD = long double;
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    LD (*exact)(LD);
    double bound;  // ulps of the exact value
  };
  const Case cases[] = {
      {"sigmoid", [](const Tensor& v) { return sigmoid(v); }, [](LD v) { return 1 / (1 + std::exp(-v)); }, 4},
      {"silu", [](const Tensor& v) { return silu(v); }, [](LD v) { return v / (1 + std::exp(-v)); }, 4},
      {"tanh", [](const Tensor& v) { return trine::tanh(v); }, [](LD v) { return std::tanh(v); }, 4},
      {"elu", [](const Tensor& v) { return elu(v, 1.0f); }, [](LD v) { return v < 0 ? std::expm1(v) : v; }, 4},
      {"exp", [](const Tensor& v) { return trine::exp(v); }, [](LD v) { return std::exp(v); }, 4},
      {"gelu_tanh", [](const Tensor& v) { return gelu(v, GeluForm::tanh); },
       [](LD v) { return v / (1 + std::exp(-2 * std::sqrt(2 / std::numbers::pi_v<LD>) * (v + 0.044715L * v * v * v))); }, 4},
      // its erfc, t Q(t) e^(-x^2/2), is several roundings (common.glsl): 6.95 ulps seen near x = -1.32
      {"gelu", [](const Tensor& v) { return gelu(v); }, [](LD v) { return v / 2 * std::erfc(-v / std::sqrt(2.0L)); }, 8},
  };
  for (const Case& c : cases) {
    std::vector<LD> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = c.exact(x[i]);
    const UlpError r = ulp_error(x, c.op(t).to_vector(), want);
    INFO(c.name << ": " << r.worst << " ulps at x = " << r.at << ", " << r.flushed << " normal results flushed to 0");
    CHECK(r.flushed == 0);
    CHECK(r.worst <= c.bound);
  }
  // log over every positive magnitude, subnormals included
  std::vector<float> pos;
  for (float v : x) pos.push_back(std::fabs(v) * (v < 0 ? 1e-30f : 1e30f));
  std::vector<LD> want(pos.size());
  for (std::size_t i = 0; i < pos.size(); ++i) want[i] = std::log(static_cast<LD>(pos[i]));
  const UlpError lr = ulp_error(pos, trine::log(Tensor::from(pos, {n}, DType::f32, k_vk)).to_vector(), want);
  INFO("log: " << lr.worst << " ulps at x = " << lr.at);
  CHECK(lr.worst <= 4);
  // softmax and log_softmax with max 0, so x - max is exact: [0, -80, -87, -90] (e^-87 = 1.6e-38 is
  // normal), rows of four reaching e^-100, and rows [0, -23 .. -45, ...] whose log_softmax leads with
  // -ln(1 + e^-23..) = -1e-10..-3e-20 (ln of the sum rounded to f32 had given 0), on both of softmax's
  // shaders (a workgroup per row for 64 rows, an invocation per row for 1024 on lavapipe)
  for (std::int64_t rows : {64, 1024}) {
    std::vector<float> sx = {0.0f, -80.0f, -87.0f, -90.0f};
    for (std::int64_t r = 1; r < rows; ++r) {
      sx.push_back(0.0f);
      const float low = r % 2 ? -100.0f : -45.0f, high = r % 2 ? 0.0f : -23.0f;
      for (int j = 0; j < 3; ++j) sx.push_back(low + (high - low) * static_cast<float>(next()) / 0x1p24f);
    }
    std::vector<LD> sw(sx.size()), lw(sx.size());
    for (std::size_t r = 0; r < sx.size(); r += 4) {
      LD rest = 0;  // the sum less its leading 1, so that ln(1 + rest) keeps its accuracy
      for (std::size_t j = 1; j < 4; ++j) rest += std::exp(static_cast<LD>(sx[r + j]));
      for (std::size_t j = 0; j < 4; ++j) {
        sw[r + j] = std::exp(static_cast<LD>(sx[r + j])) / (1 + rest);
        lw[r + j] = sx[r + j] - std::log1p(rest);
      }
    }
    const Tensor st = Tensor::from(sx, {rows, 4}, DType::f32, k_vk);
    const std::vector<float> got = softmax(st).to_vector(), lgot = log_softmax(st).to_vector();
    CHECK(got[2] > 1.6e-38f);  // e^-87 / (1 + e^-80 + ...)
    CHECK(got[2] < 1.7e-38f);
    const UlpError sr = ulp_error(sx, got, sw), lsr = ulp_error(sx, lgot, lw);
    INFO("softmax, " << rows << " rows: " << sr.worst << " ulps at x = " << sr.at << ", " << sr.flushed << " flushed");
    INFO("log_softmax: " << lsr.worst << " ulps at x = " << lsr.at);
    CHECK(sr.flushed == 0);
    CHECK(sr.worst <= 4);
    CHECK(lsr.worst <= 4);
  }
  require_no_validation_messages();
}

TEST_CASE("vulkan: async ops chain through futures without blocking", "[vulkan]") {
  require_vulkan();
  Tensor x = input({4099}, -3.0f, 3.0f);
  const auto host = x.to_vector();
  Future<Tensor> a = async::relu(x);
  Future<Tensor> b = async::sigmoid(a);
  Future<Tensor> c = async::add(b, a);
  Future<Tensor> d = async::scale(c, 2.0f, -1.0f);
  const auto got = d.get().to_vector();
  REQUIRE(got.size() == host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double r = host[i] < 0 ? 0.0 : host[i];
    const double expect = 2.0 * (1.0 / (1.0 + std::exp(-r)) + r) - 1.0;
    REQUIRE(std::abs(got[i] - expect) <= 1e-5 * (1 + std::abs(expect)));
  }
  // Many in flight at once, results dropped while running: nothing blocks or leaks.
  std::vector<Future<Tensor>> many;
  for (int i = 0; i < 64; ++i) many.push_back(async::tanh(i % 2 ? Tensor(many.back()) : x));
  many.back().wait();
  many.clear();
  synchronize();
  require_no_validation_messages();
}

TEST_CASE("vulkan: work after a submission with host steps pending waits for them without blocking", "[vulkan]") {
  require_vulkan();
  // A submitted batch ends with a readback done on the host after the device finishes; an async op
  // on the batch's output must wait for that (its writer) without blocking the caller: it goes
  // through the backend's submit thread.
  std::vector<float> host(5000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97) * 0.1f - 4.0f;
  for (int round = 0; round < 20; ++round) {
    Batch batch(k_vk);
    Tensor y = relu(batch.upload(host, {5000}));
    BatchRead out = batch.read(y);
    Future<void> done = batch.submit();
    Future<Tensor> z = async::scale(y, 2.0f, 0.0f);
    Future<Tensor> w = async::add(z, y);
    const auto got = w.get().to_vector();
    done.wait();
    const auto read = out.get();
    for (std::size_t i = 0; i < host.size(); ++i) {
      const float r = host[i] < 0 ? 0.0f : host[i];
      REQUIRE(read[i] == r);
      REQUIRE(got[i] == 3.0f * r);
    }
  }
  synchronize();
  require_no_validation_messages();
}

TEST_CASE("vulkan: a batch of N ops is one upload, one readback and one submission", "[vulkan]") {
  require_vulkan();
  std::vector<float> host(4096);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::sin(static_cast<float>(i)) * 3.0f;
  Batch batch(k_vk);
  Tensor x = batch.upload(host, {64, 64});
  Tensor y = x;
  for (int i = 0; i < 16; ++i) y = i % 2 ? tanh(y) : scale(relu(y), 0.5f, 0.1f);
  BatchRead out = batch.read(y);
  batch.run();  // places the batch
  const TransferStats before = transfer_stats(k_vk);
  batch.run();
  const TransferStats after = transfer_stats(k_vk);
  REQUIRE(after.uploads - before.uploads == 1);
  REQUIRE(after.readbacks - before.readbacks == 1);
  REQUIRE(after.submissions - before.submissions == 1);
  REQUIRE(after.device_copies - before.device_copies == 0);
  // The same chain as sync calls.
  Tensor e = Tensor::from(host, {64, 64}, DType::f32, k_vk);
  for (int i = 0; i < 16; ++i) e = i % 2 ? tanh(e) : scale(relu(e), 0.5f, 0.1f);
  REQUIRE(out.get() == e.to_vector());
  require_no_validation_messages();
}

TEST_CASE("vulkan: out of memory is an error and the device works after", "[vulkan]") {
  require_vulkan();
  const std::int64_t too_many = std::int64_t{1} << 40;  // 4 TiB of f32: over any heap here
  try {
    (void)Tensor::empty({too_many}, DType::f32, k_vk);
    FAIL("a 4 TiB allocation succeeded");
  } catch (const Error& e) {
    INFO(e.what());
    REQUIRE(e.code() == ErrorCode::out_of_memory);
    REQUIRE(std::string(e.what()).find("vulkan:0") != std::string::npos);
  }
  std::vector<Tensor> in{input({1000})};
  check(OpKind::relu, in, ActParams{}, "after out of memory");
}

TEST_CASE("vulkan: memory is cached by the device-generic cache, which stats and clear_cache see", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = memory::stats(k_vk);
  CHECK(before.cached_bytes == 0);
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1 << 20}, DType::f32, k_vk);  // 4 MiB
    first = t.storage()->handle();
  }
  CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{4} << 20);
  // Small blocks too (each Vulkan allocation is a driver call), unlike the cpu's.
  const auto cached = memory::stats(k_vk).cached_bytes;
  { Tensor small = Tensor::empty({16}, DType::f32, k_vk); }
  CHECK(memory::stats(k_vk).cached_bytes == cached + 64);
  {
    // A slightly smaller tensor of the same size class takes the block, its guards moved.
    Tensor again = Tensor::full({(1 << 20) - 1000}, 1.0f, DType::f32, k_vk);
    CHECK(again.storage()->handle() == first);
    CHECK(memory::stats(k_vk).hits >= before.hits + 1);
    if (capabilities().find("host-visible coherent") != std::string::npos) CHECK(debug::guards_intact(again));
    CHECK(relu(again).to_vector().back() == 1.0f);
  }
  // The recorder's temporaries (here the contiguous copy of a strided input) come from it too, and
  // go back to it once their submission has completed.
  Tensor strided = input({1 << 18, 3}, -1, 1, Layout::strided);
  memory::clear_cache(k_vk);
  const auto misses = memory::stats(k_vk).misses;
  CHECK(sum(strided, 0).to_vector().size() == 3);
  CHECK(memory::stats(k_vk).misses >= misses + 1);
  CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{3} << 20);
  if (capabilities().find("device-local") != std::string::npos) {
    // Storage the host cannot map (TRINE_VULKAN_FORCE_STAGING, a discrete GPU): transfers go through
    // staging buffers, cached there too, apart from storage.
    memory::clear_cache(k_vk);
    const std::vector<float> host(std::size_t{1} << 20, 2.0f);
    CHECK(Tensor::from(host, {1 << 20}, DType::f32, k_vk).to_vector() == host);
    CHECK(memory::stats(k_vk).cached_bytes >= std::size_t{8} << 20);  // the tensor and a staging buffer
    const auto staged = memory::stats(k_vk);
    CHECK(Tensor::from(host, {1 << 20}, DType::f32, k_vk).to_vector() == host);
    CHECK(memory::stats(k_vk).hits >= staged.hits + 2);
  }
  memory::clear_cache(k_vk);
  CHECK(memory::stats(k_vk).cached_bytes == 0);
  // Out of memory releases what the cache holds, retries once, and fails cleanly.
  { Tensor held = Tensor::empty({1 << 20}, DType::f32, k_vk); }
  const auto releases = memory::stats(k_vk).releases;
  CHECK_THROWS_AS(Tensor::empty({std::int64_t{1} << 40}, DType::f32, k_vk), Error);
  CHECK(memory::stats(k_vk).releases == releases + 1);
  CHECK(memory::stats(k_vk).cached_bytes == 0);
  std::vector<Tensor> after{input({1000})};
  check(OpKind::relu, after, ActParams{}, "after out of memory");
}

TEST_CASE("vulkan: tensors over maxStorageBufferRange: bound in pieces, or refused clearly", "[vulkan]") {
  require_vulkan();
  // 40M floats = 160 MB, over lavapipe's 128 MiB binding limit.
  const std::int64_t n = 40'000'000;
  Tensor x = Tensor::random({n}, seq(), -2.0f, 2.0f, DType::f32, k_vk);
  const auto host = x.to_vector();
  // The contiguous activations bind their tensors in pieces: right answers, aligned start or not.
  for (std::int64_t start : {0, 3}) {
    const auto got = scale(x.slice(0, start, n), 2.0f, 1.0f).to_vector();
    REQUIRE(got.size() == static_cast<std::size_t>(n - start));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      bad += got[i] != 2.0f * host[i + static_cast<std::size_t>(start)] + 1.0f;
    INFO("start " << start);
    REQUIRE(bad == 0);
  }
  {
    // f16: 80M + 1 elements = 160 MB, bound in pieces by unary_b16.comp (two elements a word): an
    // odd start reads across words, an odd count ends in half a word.
    const std::int64_t m = 80'000'001;
    const Tensor h = Tensor::random({m}, seq(), -2.0f, 2.0f, DType::f16, k_vk);
    const auto hh = h.to_vector();
    for (std::int64_t start : {0, 3}) {
      const auto got = scale(h.slice(0, start, m), 2.0f, 1.0f).to_vector();
      REQUIRE(got.size() == static_cast<std::size_t>(m - start));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        bad += got[i] != f16_to_f32(f32_to_f16(2.0f * hh[i + static_cast<std::size_t>(start)] + 1.0f));
      INFO("f16, start " << start);
      REQUIRE(bad == 0);
    }
  }
  if (capabilities().find("maxStorageBufferRange 128 MiB") != std::string::npos) {
    // An op that does not split its bindings yet: refused with the reason, never a wrong answer.
    try {
      (void)add(x, x);
      FAIL("add over maxStorageBufferRange ran");
    } catch (const Error& e) {
      INFO(e.what());
      REQUIRE(e.code() == ErrorCode::unsupported);
      REQUIRE(std::string(e.what()).find("[add]") != std::string::npos);
      REQUIRE(std::string(e.what()).find("maxStorageBufferRange") != std::string::npos);
    }
  }
  // The device is still fine.
  std::vector<Tensor> in{input({33})};
  check(OpKind::relu, in, ActParams{}, "after the refusal");
}

TEST_CASE("vulkan: a call over maxStorageBufferRange is refused before it is submitted, naming the limit", "[vulkan]") {
  require_vulkan();
  // gemv binds its matrix whole: 11008x4096 f32 (180 MB) is over lavapipe's 128 MiB.
  const std::uint64_t limit = max_binding();
  const std::int64_t cols = 4096;
  const std::int64_t rows = std::max<std::int64_t>(11008, static_cast<std::int64_t>(limit / (cols * 4)) + 1);
  Tensor a;
  try {
    a = Tensor::empty({rows, cols}, DType::f32, k_vk);
  } catch (const Error& e) {
    WARN("no memory for a matrix over maxStorageBufferRange here: " << e.what());
    return;
  }
  Tensor x = input({cols});
  const auto submissions = transfer_stats(k_vk).submissions;
  try {
    (void)gemv(a, x);
    FAIL("a gemv over maxStorageBufferRange ran");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::unsupported);
    const std::string what = e.what();
    CHECK(what.find("[gemv] is not supported on vulkan:0") != std::string::npos);  // from supports()
    CHECK(what.find("pinned") != std::string::npos);
    CHECK(what.find("maxStorageBufferRange (" + std::to_string(limit) + " bytes)") != std::string::npos);
  }
  CHECK(transfer_stats(k_vk).submissions == submissions);
  // A batch pinned to the device refuses it while recording, with the same reason.
  Batch batch(k_vk);
  Tensor xb = batch.upload(x.to_vector(), {cols});
  try {
    (void)gemv(a, xb);
    FAIL("a gemv over maxStorageBufferRange was recorded");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("maxStorageBufferRange") != std::string::npos);
  }
  // Within the limit, the same op runs.
  std::vector<Tensor> in{input({64, cols}), x};
  check(OpKind::gemv, in, GemvParams{false}, "after the refusal");
}

#if defined(TRINE_TEST_VK_CHECK)
TEST_CASE("vulkan: a failing Vulkan call is a trine::Error naming the call and the VkResult", "[vulkan]") {
  auto fail_with = [](vk::Result r) { vk::throwResultException(r, "vkSomething"); };
  try {
    TRINE_VK(fail_with(vk::Result::eErrorDeviceLost));
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::driver_error);
    REQUIRE(std::string(e.what()).find("VK_ERROR_DEVICE_LOST") != std::string::npos);
    REQUIRE(std::string(e.what()).find("fail_with(vk::Result::eErrorDeviceLost)") != std::string::npos);
  }
  try {
    TRINE_VK(fail_with(vk::Result::eErrorOutOfDeviceMemory));
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::out_of_memory);
    REQUIRE(std::string(e.what()).find("VK_ERROR_OUT_OF_DEVICE_MEMORY") != std::string::npos);
  }
}
#endif

TEST_CASE("vulkan: 16-bit activations in shaders of their own, pow in double included", "[vulkan]") {
  require_vulkan();
  // unary_b16 (and its _f64 build for pow) on contiguous input, binary_b16 on a view: odd counts end
  // in half a word, an odd offset reads across words.
  for (DType t : {DType::f16, DType::bf16}) {
    const std::string name = dtype_name(t);
    const Tensor x = Tensor::random({2 * 129 + 1}, seq(), 0.25f, 4.0f, t, k_vk);
    check(OpKind::pow, {x}, ActParams{2.5f, 0}, name + " pow 2.5");
    check(OpKind::pow, {x.slice(0, 1, 2 * 129 + 1)}, ActParams{3.0f, 0}, name + " pow 3 from an odd offset");
    check(OpKind::gelu, {x}, ActParams{}, name + " gelu");
    const Tensor v = Tensor::random({17, 9}, seq(), -3.0f, 3.0f, t, k_vk).transpose();
    check(OpKind::silu, {v}, ActParams{}, name + " silu of a transposed view");
    check(OpKind::add, {v, Tensor::random({17}, seq(), -1.0f, 1.0f, t, k_vk)}, NoParams{}, name + " add, broadcast");
  }
}

TEST_CASE("vulkan: a write at a position read on the device, 32- and 16-bit, and a bad position", "[vulkan]") {
  require_vulkan();
  // copy_at.comp: dispatched here so that the GPU-assisted validation run (which runs [vulkan], not
  // the batch suite of tests/write_tests.cpp) instruments it too.
  for (DType t : {DType::f32, DType::f16}) {
    const Tensor cache = Tensor::full({3, 5, 2}, 9.0f, t, k_vk);
    copy_into(cache, Tensor::from({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, DType::f32, k_vk).reshape({3, 1, 2}), 1,
              Tensor::from({3}, k_vk));
    const std::vector<float> v = cache.to_vector();
    CHECK(v[6] == 1.0f);
    CHECK(v[7] == 2.0f);
    CHECK(v[16] == 3.0f);
    CHECK(v[27] == 6.0f);
    CHECK(v[8] == 9.0f);
    CHECK_THROWS_AS(copy_into(cache, Tensor::zeros({3, 2, 2}, t, k_vk), 1, Tensor::from({4}, k_vk)), Error);
    // a good write after it: the failed one wrote nothing (not at 3 either)
    copy_into(cache, Tensor::zeros({3, 1, 2}, t, k_vk), 1, Tensor::from({0}, k_vk));
    std::vector<float> expect = v;
    for (std::size_t h = 0; h < 3; ++h) expect[h * 10] = expect[h * 10 + 1] = 0.0f;
    CHECK(cache.to_vector() == expect);
  }
}
