// The differential harness (see harness.hpp).
#include "tests/harness.hpp"

#include "tests/reference/bridge.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace trine::test {

std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 20261121;
    if (const char* env = std::getenv("TRINE_TEST_SEED"); env && *env) s = std::strtoull(env, nullptr, 10);
    std::printf("test seed: %llu (replay with TRINE_TEST_SEED=%llu)\n", static_cast<unsigned long long>(s),
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

const char* view_name(View v) {
  switch (v) {
    case View::contiguous: return "contiguous";
    case View::strided: return "strided";
    case View::transposed: return "transposed";
  }
  return "?";
}

Tensor make_input(const Shape& shape, std::uint64_t seed, View view, DType dtype, float low, float high) {
  seed ^= base_seed() * 0x9e3779b97f4a7c15ull;
  if (view == View::strided && shape.rank() >= 1) {
    Shape wide = shape;
    wide[shape.rank() - 1] = 2 * shape[shape.rank() - 1];
    Tensor w = Tensor::random(wide, seed, low, high, dtype);
    Tensor t = w.slice(-1, 0, wide[shape.rank() - 1], 2);
    return t;
  }
  if (view == View::transposed && shape.rank() >= 2) {
    Shape swapped = shape;
    std::swap(swapped[shape.rank() - 1], swapped[shape.rank() - 2]);
    return Tensor::random(swapped, seed, low, high, dtype).transpose(-2, -1);
  }
  return Tensor::random(shape, seed, low, high, dtype);
}

namespace {
std::array<bool, TRINE_OP_COUNT>& checked() {
  static std::array<bool, TRINE_OP_COUNT> c{};
  return c;
}
}  // namespace

std::vector<OpKind> unchecked_ops() {
  std::vector<OpKind> out;
  for (int i = 0; i < TRINE_OP_COUNT; ++i)
    if (!checked()[static_cast<std::size_t>(i)]) out.push_back(static_cast<OpKind>(i));
  return out;
}

void check_op(OpKind op, const std::vector<Tensor>& inputs, const OpParams& params, double bound,
              const std::string& label) {
  checked()[static_cast<std::size_t>(op)] = true;
  std::vector<std::vector<float>> before;
  std::vector<ref::Array> ref_in;
  for (const auto& t : inputs) {
    before.push_back(t.defined() ? t.to_vector() : std::vector<float>{});
    ref_in.push_back(ref::from_tensor(t));
  }
  INFO(op_info(op).name << " " << label << " seed " << base_seed());
  Tensor out = run_op(op, inputs, params);
  ref::Array expect = ref::run(op, ref_in, params);

  REQUIRE(out.defined());
  REQUIRE(out.is_contiguous());
  REQUIRE(static_cast<std::size_t>(out.rank()) == expect.shape.size());
  for (int i = 0; i < out.rank(); ++i) REQUIRE(out.shape()[i] == expect.shape[static_cast<std::size_t>(i)]);
  // The output and every input buffer: nothing written outside them, inputs left alone.
  REQUIRE(debug::guards_intact(out));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    REQUIRE(debug::guards_intact(inputs[i]));
    auto now = inputs[i].to_vector();
    bool unchanged = now.size() == before[i].size();
    for (std::size_t j = 0; unchanged && j < now.size(); ++j) {
      unchanged = (now[j] == before[i][j]) || (std::isnan(now[j]) && std::isnan(before[i][j]));
    }
    INFO("input " << i << " was modified");
    REQUIRE(unchanged);
  }
  auto got = out.to_vector();
  REQUIRE(got.size() == expect.data.size());
  const ref::Comparison c = ref::compare(got, expect);
  INFO(c.first_mismatch);
  REQUIRE(c.specials_match);
  INFO("nmse " << c.nmse << " bound " << bound);
  REQUIRE(c.nmse <= bound);
}

}  // namespace trine::test
