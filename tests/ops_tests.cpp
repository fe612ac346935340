// The conformance suite: every op of the table against the reference on its conformance samples
// (ops/samples.cpp: a grid of shapes, strided views, broadcasts, dtypes and parameters), on the
// device under test (TRINE_TEST_DEVICE, default cpu). One test case per op, tagged
// "[ops][<family>][<op>]", registered from the op table, so a new op is tested as soon as it has
// samples. ctest runs this suite once per CPU ISA (TRINE_CPU_ISA), single-threaded, with a fresh
// seed, and once per further device named in TRINE_TEST_DEVICES. Error bounds:
// tests/reference/bounds.hpp.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
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
    for (const samples::Input& x : s.inputs) {
      in.push_back(x.absent ? Tensor() : test::make_input(x.shape, seq(), x.layout, x.dtype, x.low, x.high));
    }
    check_op(op, in, s.params, shape_label(in, s.note));
  }
}

// One test case per op of the table, "[ops][<family>][<op>]".
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
        r.tags[I] = std::string("[ops][") + family_name(info.family) + "][" + info.name + "]";
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
