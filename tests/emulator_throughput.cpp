// A throughput sanity print (no timed assertion): thread-instructions per second of a simple
// integer/float loop on one host thread, checker off and on.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "tests/emulator_harness.hpp"

TEST_CASE("interpreter throughput sanity print", "[emulator][throughput]") {
  const std::string ptx = trine::test::emu_kernel(R"(
  mov.u32 %r1, 0;
  mov.f32 %f1, 0f00000000;
LOOP:
  cvt.rn.f32.u32 %f2, %r1;
  fma.rn.f32 %f1, %f2, 0f3F000000, %f1;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 1000;
  @%p1 bra LOOP;
  st.global.f32 [%rd4], %f1;
)");
  for (bool check : {false, true}) {
    trine::test::EmuRun run(ptx);
    run.check.enabled = check;
    auto out = run.buffer<float>(64 * 256);
    auto in = run.buffer<float>(64 * 256);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run.launch("t", {64}, {256}, out.ptr(), in.ptr());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(r.result == trine::cuda::CUDA_SUCCESS);
    std::printf("emulator throughput (checker %s): %.3g thread-instructions in %.3f s = %.1f M/s on one thread\n",
                check ? "on" : "off", static_cast<double>(r.thread_instructions), s,
                static_cast<double>(r.thread_instructions) / s / 1e6);
    CHECK(out[0] == 0.5f * 999.0f * 1000.0f / 2.0f);
  }

  // memory-bound: each thread sums a strided column of a 256 x 256 matrix through global loads and
  // a shared-memory staging write and read (the checker's per-access costs show here)
  const std::string mem = trine::test::emu_kernel(R"(
  mov.u32 %r1, 0;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r6, stage;
  shl.b32 %r7, %r0, 2;
  add.u32 %r6, %r6, %r7;
COL:
  shl.b32 %r2, %r1, 8;
  add.u32 %r2, %r2, %r0;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.f32 %f2, [%rd6];
  st.shared.f32 [%r6], %f2;
  ld.shared.f32 %f3, [%r6];
  add.f32 %f1, %f1, %f3;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 256;
  @%p1 bra COL;
  st.global.f32 [%rd4], %f1;
)", ".shared .align 4 .f32 stage[256];");
  for (bool check : {false, true}) {
    trine::test::EmuRun run(mem);
    run.check.enabled = check;
    auto out = run.buffer<float>(256);
    auto in = run.buffer<float>(256 * 256);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = 1.0f;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run.launch("t", {16}, {256}, out.ptr(), in.ptr());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(r.result == trine::cuda::CUDA_SUCCESS);
    std::printf("emulator throughput, memory loop (checker %s): %.1f M thread-instructions/s on one thread\n",
                check ? "on" : "off", static_cast<double>(r.thread_instructions) / s / 1e6);
    CHECK(out[0] == 256.0f);
  }
}
