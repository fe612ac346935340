// The test runner: Catch2's main, after checking that the ISA requested through TRINE_CPU_ISA exists
// here and that the device named by TRINE_TEST_DEVICE is available.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/vulkan/debug.hpp"
#include "tests/catch_run.hpp"
#include "tests/harness.hpp"
#include "trine/debug.hpp"

int main(int argc, char** argv) {
  if (const char* isa = std::getenv("TRINE_CPU_ISA"); isa && *isa && trine::debug::cpu_isa() == "none") {
    const std::string reason = trine::debug::cpu_isa_reason();
    if (reason.find("does not support") != std::string::npos || reason.find("this build has no") != std::string::npos) {
      // ctest maps 77 to "skipped"; say why so the skip is never silent (the CPU lacks the ISA, or
      // the build left its kernels out: TRINE_CPU_ISAS).
      std::printf("SKIP: %s\n", reason.c_str());
      return 77;
    }
    std::printf("ERROR: %s\n", reason.c_str());  // a misspelt ISA is a broken test setup, not a skip
    return 1;
  }
  std::printf("cpu isa: %s (%s)\n", trine::debug::cpu_isa().c_str(), trine::debug::cpu_isa_reason().c_str());
  // A device named but unavailable fails the run: a GPU job that silently tested nothing would pass.
  if (const std::string problem = trine::test::test_device_problem(); !problem.empty()) {
    std::printf("ERROR: %s\n", problem.c_str());
    return 1;
  }
  std::printf("device under test: %s\n", trine::test::test_device().str().c_str());
  (void)trine::test::base_seed();  // prints the seed first, so even a crash leaves it to replay
  const int failed = trine::test::run_catch(argc, argv);
  // Vulkan runs under the validation layer (ctest sets TRINE_VULKAN_VALIDATION=1): a message no test
  // took and checked (the [vulkan] and [ops] cases check theirs) fails the run.
  if (const auto messages = trine::vulkan::take_validation_messages(); !messages.empty()) {
    for (const auto& m : messages) std::printf("ERROR: Vulkan %s\n", m.c_str());
    return 1;
  }
  // The run under GPU-assisted validation (ctest vulkan_gpuav) must have dispatched every shader:
  // a shader its subset of the conformance suite misses would go unchecked.
  if (const char* every = std::getenv("TRINE_TEST_EVERY_SHADER"); every && std::string(every) == "1") {
    const auto missing = trine::vulkan::shaders_never_dispatched();
    for (const auto& s : missing) std::printf("ERROR: shader '%s' was never dispatched\n", s.c_str());
    if (!missing.empty()) return 1;
    std::printf("every Vulkan shader was dispatched\n");
  }
  // A full differential run must have exercised every op of the table.
  if (argc == 2 && std::string(argv[1]) == "[ops]") {
    auto missing = trine::test::unchecked_ops();
    for (auto op : missing) std::printf("ERROR: op '%s' has no differential test case\n", trine::op_info(op).name);
    if (!missing.empty()) return 1;
    std::printf("every op of the table (%d) was checked against the reference\n", trine::TRINE_OP_COUNT);
  }
  return failed;
}
