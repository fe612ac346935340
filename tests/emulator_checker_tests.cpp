// Deliberately broken kernels, each caught by the emulator's checker with the right report and
// CUresult, and each with a correct twin that must run clean (no false alarm).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "tests/emulator_harness.hpp"

using namespace trine::cuda;
using trine::test::emu_kernel;
using trine::test::EmuRun;

namespace {

struct Outcome {
  CUresult result;
  std::string report;
};

Outcome run_case(const std::string& body, std::uint32_t threads, const std::string& decls = "", std::uint32_t blocks = 1,
                 std::size_t out_words = 256) {
  EmuRun run(emu_kernel(body, decls));
  auto out = run.buffer<std::uint32_t>(out_words);
  auto in = run.buffer<std::uint32_t>(std::max<std::size_t>(threads * blocks, 256));
  auto r = run.launch("t", {blocks}, {threads}, out.ptr(), in.ptr());
  return {r.result, r.report};
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// global index i = ctaid * ntid + tid; reads in[i] when i <cmp> n (n = 1000)
std::string guarded_read(const char* cmp) {
  return std::string(R"(
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  setp.)") + cmp + R"(.u32 %p1, %r3, 1000;
  @%p1 bra DONE;
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r4, [%rd6];
  st.global.u32 [%rd0], %r4;
DONE:
)";
}

}  // namespace

TEST_CASE("off-by-one global index: memcheck names the access, thread, block and allocation", "[emulator][checker]") {
  // in[] has 4 * 256 = 1024 words; the guard reads 1001 of them when it should read 1000, so make
  // the buffer exactly 1000 words long for the broken twin to step past it
  EmuRun run(emu_kernel(guarded_read("gt")));
  auto out = run.buffer<std::uint32_t>(4);
  auto in = run.buffer<std::uint32_t>(1000);
  auto r = run.launch("t", {4}, {256}, out.ptr(), in.ptr());
  INFO(r.report);
  CHECK(r.result == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(has(r.report, "Invalid __global__ read of size 4 bytes"));
  CHECK(has(r.report, "in t"));
  CHECK(has(r.report, "by thread (232,0,0) in block (3,0,0)"));
  CHECK(has(r.report, "0 bytes after the nearest allocation"));
  CHECK(has(r.report, "of size 4000 bytes"));
  CHECK(has(r.report, "at line 27"));

  EmuRun twin(emu_kernel(guarded_read("ge")));
  auto out2 = twin.buffer<std::uint32_t>(4);
  auto in2 = twin.buffer<std::uint32_t>(1000);
  auto r2 = twin.launch("t", {4}, {256}, out2.ptr(), in2.ptr());
  INFO(r2.report);
  CHECK(r2.result == CUDA_SUCCESS);
  CHECK(r2.report.empty());
}

TEST_CASE("out-of-bounds shared write", "[emulator][checker]") {
  auto body = [](const char* offset) {
    return std::string(R"(
  mov.u32 %r1, s;
  add.u32 %r2, %r0, )") + offset + R"(;
  shl.b32 %r3, %r2, 2;
  add.u32 %r4, %r1, %r3;
  st.shared.u32 [%r4], %r0;
)";
  };
  const auto bad = run_case(body("1"), 128, ".shared .align 4 .b32 s[128];");
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(has(bad.report, "Invalid __shared__ write of size 4 bytes"));
  CHECK(has(bad.report, "by thread (127,0,0) in block (0,0,0)"));
  const auto good = run_case(body("0"), 128, ".shared .align 4 .b32 s[128];");
  CHECK(good.result == CUDA_SUCCESS);
  CHECK(good.report.empty());
}

TEST_CASE("misaligned vector load", "[emulator][checker]") {
  auto body = [](const char* off) {
    return std::string("  mul.wide.u32 %rd5, %r0, 16;\n  add.s64 %rd6, %rd1, %rd5;\n  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd6+") +
           off + "];\n  st.global.v4.u32 [%rd0], {%r1, %r2, %r3, %r4};\n";
  };
  const auto bad = run_case(body("4"), 4, "", 1, 64);
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_MISALIGNED_ADDRESS);
  CHECK(has(bad.report, "Invalid __global__ read of size 16 bytes"));
  CHECK(has(bad.report, "is misaligned"));
  const auto good = run_case(body("0"), 4, "", 1, 64);
  CHECK(good.result == CUDA_SUCCESS);
}

TEST_CASE("missing barrier between a shared write and a read: racecheck", "[emulator][checker]") {
  auto body = [](bool barrier) {
    return std::string(R"(
  mov.u32 %r1, s;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  st.shared.u32 [%r3], %r0;
)") + (barrier ? "  bar.sync 0;\n" : "") + R"(
  add.u32 %r4, %r0, 32;
  and.b32 %r4, %r4, 127;
  shl.b32 %r5, %r4, 2;
  add.u32 %r6, %r1, %r5;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd4], %r7;
)";
  };
  const auto bad = run_case(body(false), 128, ".shared .align 4 .b32 s[128];");
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "Race reported between"));
  // warp 0 runs first and reads what warp 1 writes later: a write-after-read hazard
  CHECK(has(bad.report, "WAR hazard"));
  CHECK(has(bad.report, "at line 23"));  // the write
  CHECK(has(bad.report, "at line 29"));  // the read
  const auto good = run_case(body(true), 128, ".shared .align 4 .b32 s[128];");
  INFO(good.report);
  CHECK(good.result == CUDA_SUCCESS);
  CHECK(good.report.empty());
}

TEST_CASE("barrier inside divergent code: synccheck", "[emulator][checker]") {
  auto body = [](const char* limit) {
    return std::string("  setp.lt.u32 %p1, %r0, ") + limit + ";\n  @!%p1 bra SKIP;\n  bar.sync 0;\nSKIP:\n  st.global.u32 [%rd4], %r0;\n";
  };
  const auto bad = run_case(body("16"), 64);
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "Barrier error detected"));
  CHECK(has(bad.report, "Divergent thread(s) in warp 0"));
  const auto good = run_case(body("64"), 64);
  INFO(good.report);
  CHECK(good.result == CUDA_SUCCESS);
}

TEST_CASE("a barrier only part of the block reaches", "[emulator][checker]") {
  const auto bad = run_case("  setp.lt.u32 %p1, %r0, 32;\n  @!%p1 bra SKIP;\n  bar.sync 1, 64;\nSKIP:\n  bar.sync 0;\n", 64);
  INFO(bad.report);
  // warp 1 skips the named barrier 1 (count 64) and waits at barrier 0: neither can complete
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "barrier reached by only part of the block"));
}

TEST_CASE("shfl member mask that does not match the active threads", "[emulator][checker]") {
  auto body = [](const char* mask) {
    return std::string("  setp.lt.u32 %p1, %r0, 16;\n  @!%p1 bra SKIP;\n  shfl.sync.bfly.b32 %r1, %r0, 1, 0x1f, ") + mask +
           ";\n  st.global.u32 [%rd4], %r1;\nSKIP:\n";
  };
  const auto bad = run_case(body("0xffffffff"), 32);
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "shfl.sync member mask 0xffffffff does not match the active threads 0x0000ffff"));
  const auto good = run_case(body("0x0000ffff"), 32);
  INFO(good.report);
  CHECK(good.result == CUDA_SUCCESS);
}

TEST_CASE("initcheck: shared memory read before anything wrote it", "[emulator][checker]") {
  const auto bad = run_case("  mov.u32 %r1, s;\n  ld.shared.u32 %r2, [%r1];\n  st.global.u32 [%rd4], %r2;\n", 32,
                            ".shared .align 4 .b32 s[32];");
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "Uninitialized __shared__ memory read of size 4 bytes"));
}

TEST_CASE("cp.async target read before its wait", "[emulator][checker]") {
  auto body = [](bool wait) {
    return std::string(R"(
  mov.u32 %r1, buf;
  shl.b32 %r2, %r0, 4;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd1, %rd5;
  cp.async.ca.shared.global [%r3], [%rd6], 16;
  cp.async.commit_group;
)") + (wait ? "  cp.async.wait_all;\n" : "") + R"(
  ld.shared.u32 %r4, [%r3];
  st.global.u32 [%rd4], %r4;
)";
  };
  const auto bad = run_case(body(false), 4, ".shared .align 16 .b8 buf[64];");
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "cp.async target read or written before its wait"));
  const auto good = run_case(body(true), 4, ".shared .align 16 .b8 buf[64];");
  INFO(good.report);
  CHECK(good.result == CUDA_SUCCESS);
}

TEST_CASE("the checker can be turned off", "[emulator][checker]") {
  EmuRun run(emu_kernel(R"(
  mov.u32 %r1, s;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  st.shared.u32 [%r3], %r0;
  add.u32 %r4, %r0, 32;
  and.b32 %r4, %r4, 127;
  shl.b32 %r5, %r4, 2;
  add.u32 %r6, %r1, %r5;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd4], %r7;
)", ".shared .align 4 .b32 s[128];"));
  auto out = run.buffer<std::uint32_t>(128);
  auto in = run.buffer<std::uint32_t>(128);
  run.check.enabled = false;
  auto r = run.launch("t", {1}, {128}, out.ptr(), in.ptr());
  CHECK(r.result == CUDA_SUCCESS);
  CHECK(r.report.empty());
}

TEST_CASE("an endless loop ends the launch with CUDA_ERROR_LAUNCH_TIMEOUT", "[emulator][checker]") {
  EmuRun run(emu_kernel("SPIN:\n  add.u32 %r1, %r1, 1;\n  bra.uni SPIN;\n"));
  auto out = run.buffer<std::uint32_t>(4);
  auto in = run.buffer<std::uint32_t>(4);
  run.max_warp_instructions_per_cta = 100000;
  auto r = run.launch("t", {1}, {32}, out.ptr(), in.ptr());
  CHECK(r.result == CUDA_ERROR_LAUNCH_TIMEOUT);
  CHECK(has(r.report, "Launch timed out"));
}

TEST_CASE("racecheck remembers a reader from another warp behind the last one", "[emulator][checker]") {
  // thread 0 (warp 0) reads s[0]; thread 32 (warp 1) reads it too and then overwrites it: without
  // a barrier between the reads and the write, the write races with warp 0's read
  auto body = [](bool barrier) {
    return std::string(R"(
  mov.u32 %r1, s;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra SKIP0;
  st.shared.u32 [%r1], 5;
SKIP0:
  bar.sync 0;
  setp.eq.u32 %p2, %r0, 0;
  setp.eq.or.u32 %p2, %r0, 32, %p2;
  @!%p2 bra SKIP1;
  ld.shared.u32 %r2, [%r1];
SKIP1:
)") + (barrier ? "  bar.sync 0;\n" : "") + R"(
  setp.eq.u32 %p3, %r0, 32;
  @!%p3 bra DONE;
  st.shared.u32 [%r1], 7;
DONE:
)";
  };
  const auto good = run_case(body(true), 64, ".shared .align 4 .b32 s[1];");
  INFO(good.report);
  CHECK(good.result == CUDA_SUCCESS);
  const auto bad = run_case(body(false), 64, ".shared .align 4 .b32 s[1];");
  INFO(bad.report);
  CHECK(bad.result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(has(bad.report, "WAR hazard"));
  CHECK(has(bad.report, "by thread (0,0,0)"));
  CHECK(has(bad.report, "by thread (32,0,0)"));
}
