// trine-ptx run through run_ptx_command: exit status 0 on a clean run, 1 with checker findings,
// 2 on usage or PTX errors; buffers saved with --dump-dir.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/run_cli.hpp"
#include "tests/emulator_harness.hpp"

namespace {

int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "trine-ptx");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return trine::cuda::emu::run_ptx_command(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("trine-ptx run: exit status, findings and dumps", "[emulator][cli]") {
  // out[tid] = in[tid] * 2 for tid < 32 threads; in has 32 or 31 elements
  const std::string ptx = trine::test::emu_kernel(R"(
  ld.global.u32 %r1, [%rd3];
  shl.b32 %r1, %r1, 1;
  st.global.u32 [%rd4], %r1;
)");
  const std::string path = "emulator_cli_test.ptx";
  std::ofstream(path) << ptx;
  CHECK(run_cli({"run", path, "--kernel", "t", "--grid", "1", "--block", "32", "--arg", "buf:u32:32=0", "--arg",
                 "buf:u32:32=21", "--dump-dir", "."}) == 0);
  std::ifstream dumped("arg1.bin", std::ios::binary);
  std::vector<std::uint32_t> out(32);
  dumped.read(reinterpret_cast<char*>(out.data()), 128);
  CHECK(out[31] == 42);
  CHECK(run_cli({"run", path, "--kernel", "t", "--grid", "1", "--block", "32", "--arg", "buf:u32:32", "--arg",
                 "buf:u32:31"}) == 1);
  CHECK(run_cli({"run", path, "--kernel", "t", "--grid", "1", "--block", "32", "--arg", "buf:u32:32"}) == 2);
  CHECK(run_cli({"run", path, "--kernel", "nope", "--grid", "1", "--block", "32"}) == 2);
  CHECK(run_cli({"run", "missing.ptx", "--grid", "1", "--block", "32"}) == 2);
  std::remove(path.c_str());
  std::remove("arg1.bin");
  std::remove("arg2.bin");
}
