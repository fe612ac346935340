// The PTX emulator on hand-written PTX: parsing and its errors, per-instruction results known from
// the PTX ISA, warp behaviour (divergence, shuffles, votes, barriers), tensor-core fragments.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "tests/emulator_harness.hpp"

using namespace trine::cuda;
using namespace trine::cuda::emu;
using trine::test::EmuRun;

TEST_CASE("parser reads directives, params, registers, shared and labels", "[emulator][parser]") {
  const Module m = load_ptx(R"(
// a comment
.version 8.0
.target sm_80
.address_size 64
/* block
   comment */
.visible .entry k(.param .u64 .ptr .global .align 8 p, .param .align 16 .b8 s[16], .param .f32 x)
.maxntid 128, 1, 1
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>, %extra;
  .reg .b64 %rd<4>;
  .shared .align 16 .f32 tile[64];
  .extern .shared .align 16 .b8 dyn[];
  mov.u32 %r1, %tid.x;
LOOP:
  @%p1 bra LOOP;
  @!%p2 bra.uni DONE;
  ld.shared.v2.f32 {%r2, %r3}, [tile+8];
  add.s32 %r4, %r1, 0x10;
  mov.b32 %r5, 0f3F800000;
DONE:
  ret;
}
)");
  REQUIRE(m.kernels.size() == 1);
  const Kernel& k = m.kernels[0];
  CHECK(m.version_major == 8);
  CHECK(m.target == "sm_80");
  CHECK(k.name == "k");
  REQUIRE(k.params.size() == 3);
  CHECK(k.params[1].offset == 16);
  CHECK(k.params[1].size == 16);
  CHECK(k.params[2].offset == 32);
  CHECK(k.shared_bytes == 256);
  CHECK(k.dynamic_offset == 256);
  REQUIRE(k.code.size() == 8);  // 7 statements and the implicit exit
  CHECK(k.code[1].op == Op::bra);
  CHECK(k.code[1].ops[0].imm == 1);
  CHECK(k.code[2].guard_negate);
  CHECK(k.code[2].ops[0].imm == 6);
  CHECK(k.code[3].vec == 2);
  CHECK(k.code[3].ops[1].imm == 8);
}

TEST_CASE("parser and decoder reject with the line", "[emulator][parser]") {
  auto error_of = [](const std::string& body) -> std::pair<CUresult, std::string> {
    try {
      load_ptx(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\n" + body + "\n}\n");
    } catch (const PtxError& e) {
      return {e.code(), e.what()};
    }
    return {CUDA_SUCCESS, ""};
  };
  auto [c1, m1] = error_of("frobnicate.b32 %r1, %r2;");
  CHECK(c1 == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(m1.find("line 7") != std::string::npos);
  CHECK(m1.find("frobnicate") != std::string::npos);
  auto [c2, m2] = error_of("add.s32 %r1, %r9, 1;");
  CHECK(c2 == CUDA_ERROR_INVALID_PTX);
  CHECK(m2.find("%r9") != std::string::npos);
  auto [c3, m3] = error_of("add.s32 %r1, %r2;");
  CHECK(c3 == CUDA_ERROR_INVALID_PTX);
  CHECK(m3.find("operands") != std::string::npos);
  auto [c4, m4] = error_of("bra MISSING;");
  CHECK(c4 == CUDA_ERROR_INVALID_PTX);
  auto [c5, m5] = error_of("add.weird.s32 %r1, %r2, %r3;");
  CHECK(c5 == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(m5.find("weird") != std::string::npos);
  auto [c6, m6] = error_of("add.s32 %r1, %r2, %r3");
  CHECK(c6 == CUDA_ERROR_INVALID_PTX);
  CHECK(m6.find("expected ';'") != std::string::npos);
}

TEST_CASE("vector add over a grid", "[emulator][exec]") {
  const char* ptx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd4, %rd5;
  add.s64 %rd7, %rd2, %rd5;
  add.s64 %rd8, %rd3, %rd5;
  ld.global.f32 %f1, [%rd6];
  ld.global.f32 %f2, [%rd7];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd8], %f3;
DONE:
  ret;
}
)";
  EmuRun run(ptx);
  const int n = 1000;
  auto a = run.buffer<float>(n), b = run.buffer<float>(n), c = run.buffer<float>(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 0.5f * static_cast<float>(i);
  auto r = run.launch("vadd", {4, 1, 1}, {256, 1, 1}, a.ptr(), b.ptr(), c.ptr(), std::uint32_t(n));
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == 1.5f * static_cast<float>(i));
  CHECK(r.thread_instructions > 0);
}

TEST_CASE("parser survives truncated and mutated text: every rejection is a PtxError", "[emulator][parser]") {
  const std::string base = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 .ptr .global .align 8 p, .param .align 16 .b8 s[16])
.reqntid 64, 1, 1
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  .shared .align 16 .f32 tile[64];
  .extern .shared .align 16 .b8 dyn[];
  mov.u32 %r1, %tid.x;
L1:
  @%p1 bra L1;
  ld.shared.v2.f32 {%r2, %r3}, [tile+8];
  add.s32 %r4, %r1, 0x10;
  setp.lt.and.s32 %p2|%p1, %r4, -3, !%p1;
  mov.b32 %r5, 0f3F800000;
  shfl.sync.bfly.b32 %r6|%p2, %r5, 1, 0x1f, 0xffffffff;
  /* comment */ ret;
}
)";
  int rejected = 0, accepted = 0;
  auto attempt = [&](const std::string& text) {
    try {
      load_ptx(text);
      ++accepted;
    } catch (const PtxError& e) {
      ++rejected;
      CHECK(std::string(e.what()).size() > 0);
    }
  };
  for (std::size_t n = 0; n <= base.size(); ++n) attempt(base.substr(0, n));
  std::uint64_t seed = 12345;
  const char alphabet[] = ".%[]{}(),;:|!@<>-+0123456789abcxyz_$ \n/*\"";
  for (int i = 0; i < 3000; ++i) {
    std::string t = base;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const std::size_t pos = (seed >> 33) % t.size();
      const char c = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
      if ((seed >> 8) & 1) t[pos] = c;
      else t.erase(pos, 1);
    }
    attempt(t);
  }
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}

TEST_CASE("module .global and .const variables with initialisers", "[emulator][exec]") {
  const char* ptx = R"(
.version 8.0
.target sm_80
.address_size 64
.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.global .align 4 .f32 scale = 0f40000000;
.global .align 4 .u32 counter;
.visible .entry t(.param .u64 out)
{
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u64 %rd2, table;
  cvt.u64.u32 %rd3, %r2;
  add.s64 %rd4, %rd2, %rd3;
  ld.const.u32 %r3, [%rd4];
  ld.global.f32 %f1, [scale];
  cvt.rn.f32.u32 %f2, %r3;
  mul.f32 %f2, %f2, %f1;
  add.s64 %rd5, %rd1, %rd3;
  st.global.f32 [%rd5], %f2;
  atom.global.add.u32 %r4, [counter], 1;
  ret;
}
)";
  EmuRun run(ptx);
  auto out = run.buffer<float>(4);
  auto r = run.launch("t", {1}, {4}, out.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  for (int i = 0; i < 4; ++i) CHECK(out[static_cast<std::size_t>(i)] == 20.0f * static_cast<float>(i + 1));
  std::uint32_t counter = 0;
  std::memcpy(&counter, run.module().global_init.data() + run.module().globals[2].offset, 4);
  CHECK(counter == 4);
}

TEST_CASE("decoder rejects writes to immediates and special registers and odd vector moves", "[emulator][parser]") {
  auto rejects = [](const std::string& body) {
    try {
      load_ptx(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd1;\n" + body + "\n}\n");
    } catch (const PtxError& e) {
      return e.code() == CUDA_ERROR_INVALID_PTX;
    }
    return false;
  };
  CHECK(rejects("mov.u32 %tid.x, 1;"));
  CHECK(rejects("add.u32 5, %r1, %r2;"));
  CHECK(rejects("mov.b64 {%r1, %r2}, {%r2, %r3};"));
  CHECK(rejects("mov.b32 {%r1, %r2, %r3}, %r0;"));
  CHECK_FALSE(rejects("mov.b64 {%r1, %r2}, %rd1;"));
}

// Inputs that once reached undefined behaviour, a stack overflow, a wrong size or gigabytes of
// memory in the front end (found reading the parser for the fuzzer, tests/fuzz): now defined or
// rejected.
TEST_CASE("parser: extreme literals, offsets, nesting, array sizes and register counts", "[emulator][parser]") {
  const std::string head = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b64 %rd<4>;\n";
  auto const_of = [](const Kernel& k, std::int32_t reg) -> std::uint64_t {
    for (const auto& c : k.consts)
      if (c.reg == reg) return c.value;
    FAIL("operand is not a constant slot");
    return 0;
  };
  // -2^63 as a literal negated in signed arithmetic
  const Module lit = load_ptx(head + "add.s64 %rd1, %rd2, -9223372036854775808;\n}\n");
  CHECK(const_of(lit.kernels[0], lit.kernels[0].code[0].ops[2].reg[0]) == 0x8000000000000000ull);
  // address offsets summed past 2^63, and -2^63 negated: both wrap as the interpreter's addresses do
  const Module off = load_ptx(head + "ld.global.u64 %rd1, [%rd2+9223372036854775807+1];\n"
                                     "ld.global.u64 %rd1, [%rd2-9223372036854775808];\n"
                                     "ld.global.u64 %rd1, [%rd2+8-16];\n}\n");
  CHECK(static_cast<std::uint64_t>(off.kernels[0].code[0].ops[1].imm) == 0x8000000000000000ull);
  CHECK(static_cast<std::uint64_t>(off.kernels[0].code[1].ops[1].imm) == 0x8000000000000000ull);
  CHECK(off.kernels[0].code[2].ops[1].imm == -8);
  // nested scopes: a few levels are fine, 100000 were a stack overflow
  CHECK(load_ptx(head + "{{{ { .reg .b32 %r; mov.u32 %r, 1; } }}}\n}\n").kernels.size() == 1);
  CHECK(load_ptx(head + std::string(256, '{') + std::string(257, '}') + "\n").kernels.size() == 1);
  CHECK_THROWS_AS(load_ptx(head + std::string(257, '{') + std::string(258, '}') + "\n"), PtxError);
  try {
    load_ptx(head + std::string(100000, '{') + std::string(100001, '}') + "\n");
    FAIL("deep nesting was accepted");
  } catch (const PtxError& e) {
    CHECK(e.code() == CUDA_ERROR_INVALID_PTX);
    CHECK(std::string(e.what()).find("nested deeper") != std::string::npos);
  }
  // array sizes: [2^32][2^32] wrapped to 0 elements; a 32 GiB module variable was allocated at load
  auto rejects_with = [](const std::string& text, const char* what) {
    try {
      load_ptx(text);
    } catch (const PtxError& e) {
      return e.code() == CUDA_ERROR_INVALID_PTX && std::string(e.what()).find(what) != std::string::npos;
    }
    return false;
  };
  const std::string module = ".version 8.0\n.target sm_80\n.address_size 64\n";
  CHECK(rejects_with(module + ".global .b8 g[4294967296][4294967296];\n", "too large"));
  CHECK(rejects_with(head + ".shared .b8 s[4294967296][4294967296];\n}\n", "too large"));
  CHECK(rejects_with(module + ".global .b64 g[4294967296];\n", "1 GiB"));
  CHECK(rejects_with(module + ".global .b8 g[1073741824];\n.const .b8 c[1];\n", "1 GiB"));
  CHECK(load_ptx(module + ".global .b8 g[65536][16];\n").globals[0].size == 1u << 20);
  // a kernel's windows: four 1 GiB arrays wrapped the 32-bit sum, so a fifth variable overlapped the first
  std::string four_shared, four_local;
  for (const char* n : {"a", "b", "c", "d"}) {
    four_shared += std::string(".shared .b8 s") + n + "[1073741824];\n";
    four_local += std::string(".local .b8 l") + n + "[1073741824];\n";
  }
  CHECK(rejects_with(head + four_shared + ".shared .b8 s[16];\n}\n", "1 GiB in all"));
  CHECK(rejects_with(head + four_local + ".local .b8 l[16];\n}\n", "1 GiB in all"));
  // 65536 registers per kernel is allowed, but not across enough kernels to take gigabytes
  std::string many = ".version 8.0\n.target sm_80\n.address_size 64\n";
  for (int i = 0; i < 100; ++i) many += ".visible .entry k" + std::to_string(i) + "() { .reg .b32 %r<65536>; }\n";
  try {
    load_ptx(many);
    FAIL("6.5 million registers were accepted");
  } catch (const PtxError& e) {
    CHECK(e.code() == CUDA_ERROR_INVALID_PTX);
    CHECK(std::string(e.what()).find("in the module") != std::string::npos);
  }
}
