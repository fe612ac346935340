// The rules of docs/adding-an-op.md, checked op by op over the whole table: every op has sample
// calls (conformance, bench, ladder) that validate, a reference that runs them, a kernel or an
// explicit refusal in every backend built here, its family's file in every backend, and a line in
// docs/ops.md.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <cctype>
#include <set>
#include <sstream>
#include <string>

#include "backends/cpu_simd/kernel_table.hpp"
#include "ops/samples.hpp"
#include "tests/reference/bridge.hpp"
#include "tests/reference/reference.hpp"
#include "trine/trine.hpp"
#if defined(TRINE_VULKAN_BUILT)
#include "backends/vulkan/ops.hpp"
#endif
#if defined(TRINE_CUDA_BUILT)
#include "backends/cuda_ptx/kernels/plan.hpp"
#endif

using namespace trine;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const std::filesystem::path k_source = TRINE_SOURCE_DIR;

// The sample with the fewest elements: the cheapest for the reference to run.
const samples::Sample& smallest(const std::vector<samples::Sample>& all) {
  const samples::Sample* best = &all.front();
  auto size = [](const samples::Sample& s) {
    std::int64_t n = 0;
    for (const auto& x : s.inputs) n += x.absent ? 0 : x.shape.numel();
    return n;
  };
  for (const auto& s : all)
    if (size(s) < size(*best)) best = &s;
  return *best;
}

template <class Registry>
void check_registry(const Registry& r, const char* backend) {
  for (int i = 0; i < TRINE_OP_COUNT; ++i) {
    const auto op = static_cast<OpKind>(i);
    INFO(backend << ": " << op_info(op).name);
    CHECK((r.find(op) != nullptr || r.refusal(op) != nullptr));
  }
}

}  // namespace

TEST_CASE("every op has sample calls that validate and a reference that runs them", "[house]") {
  for (int i = 0; i < TRINE_OP_COUNT; ++i) {
    const auto op = static_cast<OpKind>(i);
    const std::string name = op_info(op).name;
    INFO(name);
    const auto cases = samples::conformance(op);
    REQUIRE_FALSE(cases.empty());
    CHECK_FALSE(samples::bench(op, true).empty());
    const auto ladder = samples::ladder(op, true);
    REQUIRE_FALSE(ladder.empty());
    // The smallest conformance case and the ladder's first size pass the op's rules (op_cost
    // validates as the op does), and the reference computes the conformance case.
    const samples::Sample& s = smallest(cases);
    const std::vector<Tensor> in = samples::make_inputs(s, 1, Device::cpu());
    CHECK_NOTHROW(op_cost(op, in, s.params));
    std::vector<ref::Array> ref_in;
    for (const auto& t : in) ref_in.push_back(ref::from_tensor(t));
    CHECK_NOTHROW(ref::run(op, ref_in, s.params));
    const samples::Sample sized = samples::sized(op, ladder.front());
    CHECK_NOTHROW(op_cost(op, samples::make_inputs(sized, 1, Device::cpu()), sized.params));
  }
}

TEST_CASE("every op has a kernel or a refusal in every backend built, and its family a file in each", "[house]") {
  check_registry(cpu::sse4_2::table().ops, "cpu sse4_2");
#if defined(TRINE_CPU_BUILT_AVX2)
  check_registry(cpu::avx2::table().ops, "cpu avx2");
#endif
#if defined(TRINE_CPU_BUILT_AVX512)
  check_registry(cpu::avx512::table().ops, "cpu avx512");
#endif
#if defined(TRINE_VULKAN_BUILT)
  check_registry(vulkan::vulkan_ops(), "vulkan");
#endif
#if defined(TRINE_CUDA_BUILT)
  check_registry(cuda::kernels::table().ops, "cuda");
#endif
  for (int f = 0; f < TRINE_FAMILY_COUNT; ++f) {
    const std::string family = family_name(static_cast<OpFamily>(f));
    for (const char* dir : {"backends/cpu_simd/kernels", "backends/vulkan/kernels", "backends/cuda_ptx/kernels"}) {
      INFO(dir << "/" << family << ".cpp");
      CHECK(std::filesystem::exists(k_source / dir / (family + ".cpp")));
    }
  }
}

TEST_CASE("every op has its line in docs/ops.md's table", "[house]") {
  const std::string ops_md = read_file(k_source / "docs/ops.md");
  REQUIRE_FALSE(ops_md.empty());
  // the words of the first cell of each row of the op table, which comes before the first "## "
  // section: "| add, sub, mul, div |", "| silu (swish) |"
  std::set<std::string> named;
  std::istringstream lines(ops_md);
  for (std::string line; std::getline(lines, line) && line.rfind("## ", 0) != 0;) {
    if (line.rfind("| ", 0) != 0) continue;
    const std::string cell = line.substr(2, line.find(" |", 2) - 2);
    std::string word;
    for (char ch : cell + " ") {
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
        word += ch;
      } else if (!word.empty()) {
        named.insert(word);
        word.clear();
      }
    }
  }
  for (int i = 0; i < TRINE_OP_COUNT; ++i) {
    const std::string name = op_info(static_cast<OpKind>(i)).name;
    INFO(name << " has no row in docs/ops.md");
    CHECK(named.count(name) == 1);
  }
}
