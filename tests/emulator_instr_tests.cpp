// Per-instruction tests of the PTX emulator: integer and float arithmetic, rounding modes,
// saturation, conversions (f16/bf16 included) and the approximate functions, with expected bits
// derived from the PTX ISA's definitions and IEEE 754.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/float_util.hpp"
#include "tests/emulator_harness.hpp"
#include "trine/dtype.hpp"

using namespace trine::cuda;
using trine::test::emu_kernel;
using trine::test::EmuRun;

namespace {

// Runs `body` on one thread and returns the first n 32-bit words of the output.
std::vector<std::uint32_t> run1(const std::string& body, int n = 16, int threads = 1) {
  EmuRun run(emu_kernel(body));
  auto out = run.buffer<std::uint32_t>(static_cast<std::size_t>(n) * threads + 64);
  auto in = run.buffer<std::uint32_t>(64);
  auto r = run.launch("t", {1}, {static_cast<std::uint32_t>(threads)}, out.ptr(), in.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  std::vector<std::uint32_t> v;
  for (int i = 0; i < n * threads; ++i) v.push_back(out[static_cast<std::size_t>(i)]);
  return v;
}
std::uint32_t fb(float f) { return std::bit_cast<std::uint32_t>(f); }

}  // namespace

TEST_CASE("integer arithmetic", "[emulator][instr]") {
  const auto v = run1(R"(
  add.sat.s32 %r1, 2147483647, 1;        st.global.u32 [%rd0+0], %r1;
  mul.hi.u32 %r2, 0xffffffff, 0xffffffff; st.global.u32 [%rd0+4], %r2;
  mul.wide.s32 %rd5, -2, 3;               st.global.u64 [%rd0+8], %rd5;
  div.s32 %r3, -7, 2;                     st.global.u32 [%rd0+16], %r3;
  rem.s32 %r4, -7, 2;                     st.global.u32 [%rd0+20], %r4;
  shr.s32 %r5, -8, 1;                     st.global.u32 [%rd0+24], %r5;
  shr.u32 %r6, 0x80000000, 31;            st.global.u32 [%rd0+28], %r6;
  shl.b32 %r7, 1, 40;                     st.global.u32 [%rd0+32], %r7;
  bfe.u32 %r8, 0xabcd, 4, 8;              st.global.u32 [%rd0+36], %r8;
  bfe.s32 %r9, 0xf0, 4, 4;                st.global.u32 [%rd0+40], %r9;
  popc.b32 %r10, 0xff;                    st.global.u32 [%rd0+44], %r10;
  clz.b32 %r11, 1;                        st.global.u32 [%rd0+48], %r11;
  brev.b32 %r12, 1;                       st.global.u32 [%rd0+52], %r12;
  min.s32 %r13, -1, 1;                    st.global.u32 [%rd0+56], %r13;
  min.u32 %r14, -1, 1;                    st.global.u32 [%rd0+60], %r14;
  mad.lo.s32 %r15, 3, 4, 5;               st.global.u32 [%rd0+64], %r15;
  div.u32 %r16, 7, 0;                     st.global.u32 [%rd0+68], %r16;
  abs.s32 %r17, -5;                       st.global.u32 [%rd0+72], %r17;
  not.b32 %r18, 0;                        st.global.u32 [%rd0+76], %r18;
  xor.b32 %r19, 0xff00, 0x0ff0;           st.global.u32 [%rd0+80], %r19;
  mad.wide.u32 %rd6, 0x80000000, 4, 1;    st.global.u64 [%rd0+88], %rd6;
  prmt.b32 %r20, 0x44332211, 0x88776655, 0x7531; st.global.u32 [%rd0+96], %r20;
  sub.sat.s32 %r21, -2147483648, 1;      st.global.u32 [%rd0+100], %r21;
)", 26);
  CHECK(v[0] == 0x7fffffffu);
  CHECK(v[1] == 0xfffffffeu);
  CHECK((v[2] | std::uint64_t{v[3]} << 32) == static_cast<std::uint64_t>(-6));
  CHECK(static_cast<std::int32_t>(v[4]) == -3);
  CHECK(static_cast<std::int32_t>(v[5]) == -1);
  CHECK(static_cast<std::int32_t>(v[6]) == -4);
  CHECK(v[7] == 1);
  CHECK(v[8] == 0);
  CHECK(v[9] == 0xbc);
  CHECK(v[10] == 0xffffffffu);
  CHECK(v[11] == 8);
  CHECK(v[12] == 31);
  CHECK(v[13] == 0x80000000u);
  CHECK(static_cast<std::int32_t>(v[14]) == -1);
  CHECK(v[15] == 1);
  CHECK(v[16] == 17);
  CHECK(v[17] == 0xffffffffu);
  CHECK(v[18] == 5);
  CHECK(v[19] == 0xffffffffu);
  CHECK(v[20] == 0xf0f0);
  CHECK((v[22] | std::uint64_t{v[23]} << 32) == 0x200000001ull);
  CHECK(v[24] == 0x88664422u);
  CHECK(v[25] == 0x80000000u);
}

TEST_CASE("setp comparisons, combine and selp", "[emulator][instr]") {
  const auto v = run1(R"(
  setp.lt.s32 %p1, -1, 1;        selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd0+0], %r1;
  setp.lo.u32 %p1, -1, 1;        selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd0+4], %r1;
  setp.gt.f32 %p1|%p2, 0f7FC00000, 1.0; selp.u32 %r1, 1, 0, %p1; selp.u32 %r2, 1, 0, %p2;
  st.global.u32 [%rd0+8], %r1;   st.global.u32 [%rd0+12], %r2;
  setp.gtu.f32 %p1, 0f7FC00000, 1.0; selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+16], %r1;
  setp.eq.s32 %p3, 1, 1;
  setp.eq.and.s32 %p1, 2, 2, !%p3; selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+20], %r1;
  setp.eq.or.s32 %p1, 2, 3, %p3;   selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+24], %r1;
  setp.nan.f32 %p1, 0f7FC00000, 1.0; selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+28], %r1;
  and.pred %p4, %p1, %p3;         selp.u32 %r1, 1, 0, %p4; st.global.u32 [%rd0+32], %r1;
  not.pred %p4, %p4;              selp.u32 %r1, 1, 0, %p4; st.global.u32 [%rd0+36], %r1;
)", 10);
  CHECK(v == std::vector<std::uint32_t>{1, 0, 0, 1, 1, 0, 1, 1, 1, 0});
}

TEST_CASE("f32 rounding modes, saturation and flush-to-zero", "[emulator][instr]") {
  const auto v = run1(R"(
  add.rz.f32 %f1, 1.0, 0f30800000;   st.global.f32 [%rd0+0], %f1;
  add.rp.f32 %f1, 1.0, 0f30800000;   st.global.f32 [%rd0+4], %f1;
  sub.rm.f32 %f1, 1.0, 0f30800000;   st.global.f32 [%rd0+8], %f1;
  sub.rn.f32 %f1, 1.0, 0f30800000;   st.global.f32 [%rd0+12], %f1;
  div.rn.f32 %f1, 1.0, 3.0;          st.global.f32 [%rd0+16], %f1;
  div.rz.f32 %f1, 1.0, 3.0;          st.global.f32 [%rd0+20], %f1;
  sqrt.rn.f32 %f1, 2.0;              st.global.f32 [%rd0+24], %f1;
  sqrt.rp.f32 %f1, 2.0;              st.global.f32 [%rd0+28], %f1;
  add.sat.f32 %f1, 0.75, 0.5;        st.global.f32 [%rd0+32], %f1;
  add.sat.f32 %f1, -0.75, 0.5;       st.global.f32 [%rd0+36], %f1;
  mul.ftz.f32 %f1, 0f00400000, 1.0;  st.global.f32 [%rd0+40], %f1;
  mul.f32 %f1, 0f00400000, 1.0;      st.global.f32 [%rd0+44], %f1;
  fma.rn.f32 %f1, 3.0, 0f3EAAAAAB, -1.0; st.global.f32 [%rd0+48], %f1;
  mul.rz.f32 %f1, 0f3F800001, 0f3F800001; st.global.f32 [%rd0+52], %f1;
  mul.rp.f32 %f1, 0f3F800001, 0f3F800001; st.global.f32 [%rd0+56], %f1;
  max.f32 %f1, 0f7FC00000, 2.0;      st.global.f32 [%rd0+60], %f1;
  add.rm.f32 %f1, 0f7F7FFFFF, 0f7F7FFFFF; st.global.f32 [%rd0+64], %f1;
  add.rn.f32 %f1, 0f7F7FFFFF, 0f7F7FFFFF; st.global.f32 [%rd0+68], %f1;
  neg.f32 %f1, 2.0;                  st.global.f32 [%rd0+72], %f1;
  abs.f32 %f1, -3.0;                 st.global.f32 [%rd0+76], %f1;
)", 20);
  CHECK(v[0] == 0x3f800000u);
  CHECK(v[1] == 0x3f800001u);
  CHECK(v[2] == 0x3f7fffffu);
  CHECK(v[3] == 0x3f800000u);
  CHECK(v[4] == 0x3eaaaaabu);
  CHECK(v[5] == 0x3eaaaaaau);
  CHECK(v[6] == 0x3fb504f3u);
  CHECK(v[7] == 0x3fb504f4u);
  CHECK(v[8] == fb(1.0f));
  CHECK(v[9] == 0);
  CHECK(v[10] == 0);
  CHECK(v[11] == 0x00400000u);
  CHECK(v[12] == fb(std::fma(3.0f, std::bit_cast<float>(0x3eaaaaabu), -1.0f)));
  CHECK(v[13] == 0x3f800002u);  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46
  CHECK(v[14] == 0x3f800003u);
  CHECK(v[15] == fb(2.0f));
  CHECK(v[16] == 0x7f7fffffu);  // rm never rounds a positive overflow to infinity
  CHECK(v[17] == 0x7f800000u);
  CHECK(v[18] == fb(-2.0f));
  CHECK(v[19] == fb(3.0f));
}

TEST_CASE("cvt between integer and float types, f16 and bf16", "[emulator][instr]") {
  const auto v = run1(R"(
  cvt.rn.f16.f32 %h1, 0f3EAAAAAB;  cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+0], %r1;
  cvt.rp.f16.f32 %h1, 0f3EAAAAAB;  cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+4], %r1;
  cvt.rn.bf16.f32 %h1, 0f3EAAAAAB; mov.b16 %h2, %h1; cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+8], %r1;
  cvt.rz.bf16.f32 %h1, 0f3EAAAAAB; cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+12], %r1;
  cvt.rn.f16.f32 %h1, 65520.0;     cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+16], %r1;
  cvt.rn.f16.f32 %h1, 65519.0;     cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+20], %r1;
  cvt.rz.f16.f32 %h1, 1000000.0;   cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+24], %r1;
  cvt.rn.f16.f32 %h1, 0f33800000;  cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+28], %r1;
  cvt.f32.f16 %f1, 0x3c00;         st.global.f32 [%rd0+32], %f1;
  cvt.rzi.s32.f32 %r1, -2.7;       st.global.u32 [%rd0+36], %r1;
  cvt.rni.s32.f32 %r1, 2.5;        st.global.u32 [%rd0+40], %r1;
  cvt.rmi.s32.f32 %r1, -2.5;       st.global.u32 [%rd0+44], %r1;
  cvt.rpi.s32.f32 %r1, 2.1;        st.global.u32 [%rd0+48], %r1;
  cvt.sat.u8.s32 %r1, 300;         st.global.u32 [%rd0+52], %r1;
  cvt.rzi.s32.f32 %r1, 1e10;       st.global.u32 [%rd0+56], %r1;
  cvt.rzi.s32.f32 %r1, 0f7FC00000; st.global.u32 [%rd0+60], %r1;
  cvt.rn.f16x2.f32 %r1, 1.0, 2.0;  st.global.u32 [%rd0+64], %r1;
  cvt.s64.s32 %rd5, -5;            st.global.u64 [%rd0+72], %rd5;
  cvt.rn.f32.s32 %f1, 16777217;    st.global.f32 [%rd0+80], %f1;
  cvt.rz.f32.s32 %f1, 16777219;    st.global.f32 [%rd0+84], %f1;
  cvt.rn.f32.f64 %f1, 0d3FD5555555555555; st.global.f32 [%rd0+88], %f1;
  cvt.f64.f32 %fd1, 0.5;           cvt.rn.f32.f64 %f1, %fd1; st.global.f32 [%rd0+92], %f1;
  cvt.rni.f32.f32 %f1, 2.5;        st.global.f32 [%rd0+96], %f1;
  cvt.s32.s8 %r1, 0xff;            st.global.u32 [%rd0+100], %r1;
)", 26);
  CHECK(v[0] == 0x3555);
  CHECK(v[1] == 0x3556);
  CHECK(v[2] == 0x3eab);
  CHECK(v[3] == 0x3eaa);
  CHECK(v[4] == 0x7c00);
  CHECK(v[5] == 0x7bff);
  CHECK(v[6] == 0x7bff);
  CHECK(v[7] == 0x0001);
  CHECK(v[8] == fb(1.0f));
  CHECK(static_cast<std::int32_t>(v[9]) == -2);
  CHECK(v[10] == 2);
  CHECK(static_cast<std::int32_t>(v[11]) == -3);
  CHECK(v[12] == 3);
  CHECK(v[13] == 255);
  CHECK(v[14] == 0x7fffffffu);
  CHECK(v[15] == 0);
  CHECK(v[16] == 0x3c004000u);
  CHECK((v[18] | std::uint64_t{v[19]} << 32) == static_cast<std::uint64_t>(-5));
  CHECK(v[20] == fb(16777216.0f));
  CHECK(v[21] == fb(16777218.0f));
  CHECK(v[22] == 0x3eaaaaabu);
  CHECK(v[23] == fb(0.5f));
  CHECK(v[24] == fb(2.0f));
  CHECK(v[25] == 0xffffffffu);
}

TEST_CASE("f64 arithmetic and conversions, min/max beside NaN, i32 and 64-bit bit moves", "[emulator][instr]") {
  // what the accurate exp/log/pow (kernels/math.cpp), argmax and gather kernels emit
  const auto v = run1(R"(
  cvt.rn.f64.s32 %fd1, -149;                  st.global.f64 [%rd0+0], %fd1;
  cvt.rzi.s32.f64 %r1, 0dC0A0000000000001;    st.global.u32 [%rd0+8], %r1;
  cvt.rzi.s32.f64 %r1, 0d7E37E43C8800759C;    st.global.u32 [%rd0+12], %r1;
  cvt.rzi.f32.f32 %f1, -2.7;                  st.global.f32 [%rd0+16], %f1;
  cvt.u64.s32 %rd5, 1023;                     st.global.u64 [%rd0+24], %rd5;
  div.rn.f64 %fd2, 1.0, 3.0;                  st.global.f64 [%rd0+32], %fd2;
  fma.rn.f64 %fd3, 0d3FF0000000400000, 0d3FF0000000400000, 0dBFF0000000000000; st.global.f64 [%rd0+40], %fd3;
  min.f64 %fd4, 0d7FF8000000000000, 2.0;      st.global.f64 [%rd0+48], %fd4;
  max.f64 %fd4, -0.5, 0.25;                   st.global.f64 [%rd0+56], %fd4;
  min.f32 %f1, 0f7FC00000, -1.0;              st.global.f32 [%rd0+64], %f1;
  setp.geu.f32 %p1, 0f7FC00000, 0f7F800000;   selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+68], %r1;
  setp.geu.f32 %p1, 0f7F7FFFFF, 0f7F800000;   selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0+72], %r1;
  setp.nan.f64 %p2, 0d7FF8000000000000, 1.0;  selp.f64 %fd5, 1.5, 2.5, %p2; st.global.f64 [%rd0+80], %fd5;
  selp.s32 %r1, -7, 3, %p2;                   st.global.u32 [%rd0+88], %r1;
  or.b64 %rd6, 0x100000000, 5;                st.global.u64 [%rd0+96], %rd6;
  cvt.u64.s32 %rd7, 1000;  shl.b64 %rd7, %rd7, 52;  mov.b64 %fd6, %rd7; st.global.f64 [%rd0+104], %fd6;
  st.global.s32 [%rd0+112], -5;  ld.global.s32 %r2, [%rd0+112];  cvt.s64.s32 %rd8, %r2; st.global.u64 [%rd0+120], %rd8;
  setp.lt.s32 %p3, %r2, 0;  or.pred %p4, %p3, %p2;  not.pred %p4, %p4;  selp.u32 %r1, 1, 0, %p4; st.global.u32 [%rd0+128], %r1;
)",
                      33);
  auto u64_at = [&](std::size_t i) { return v[i] | std::uint64_t{v[i + 1]} << 32; };
  auto f64_at = [&](std::size_t i) { return std::bit_cast<double>(u64_at(i)); };
  CHECK(f64_at(0) == -149.0);
  CHECK(static_cast<std::int32_t>(v[2]) == -2048);  // toward zero
  CHECK(v[3] == 0x7fffffffu);                       // 1e300 saturates
  CHECK(v[4] == fb(-2.0f));
  CHECK(u64_at(6) == 1023u);
  CHECK(u64_at(8) == 0x3fd5555555555555ull);
  CHECK(u64_at(10) == 0x3e20000000200000ull);  // (1 + 2^-30)^2 - 1 = 2^-29 + 2^-60, one rounding
  CHECK(f64_at(12) == 2.0);                    // min/max return the operand that is not NaN
  CHECK(f64_at(14) == 0.25);
  CHECK(v[16] == fb(-1.0f));
  CHECK(v[17] == 1);  // NaN >= inf is unordered: true for geu
  CHECK(v[18] == 0);
  CHECK(f64_at(20) == 1.5);
  CHECK(static_cast<std::int32_t>(v[22]) == -7);
  CHECK(u64_at(24) == 0x100000005ull);
  CHECK(f64_at(26) == std::ldexp(1.0, -23));  // an f64 built from its exponent field
  CHECK(u64_at(30) == static_cast<std::uint64_t>(-5));
  CHECK(v[32] == 0);
}

TEST_CASE("f64 round-to-nearest arithmetic and f32/f64 conversions at their edges: subnormals, ties, ftz, saturation",
          "[emulator][instr]") {
  // These run on the host's double arithmetic (exec_float.cpp, exec_cvt.cpp); the directed
  // roundings beside them stay on the exact path. Expected bits from IEEE 754 and the PTX ISA.
  const auto v = run1(R"(
  sub.rn.f64 %fd1, 0d0010000000000000, 0d000FFFFFFFFFFFFF; st.global.f64 [%rd0+0], %fd1;
  mul.rn.f64 %fd1, 0d0010000000000001, 0.5;   st.global.f64 [%rd0+8], %fd1;
  mul.rn.f64 %fd1, 0d0010000000000003, 0.5;   st.global.f64 [%rd0+16], %fd1;
  sqrt.rn.f64 %fd1, 2.0;                      st.global.f64 [%rd0+24], %fd1;
  rcp.rn.f64 %fd1, 3.0;                       st.global.f64 [%rd0+32], %fd1;
  add.rn.f64 %fd1, 0d7FEFFFFFFFFFFFFF, 0d7C90000000000000; st.global.f64 [%rd0+40], %fd1;
  add.rz.f64 %fd1, 0d7FEFFFFFFFFFFFFF, 0d7C90000000000000; st.global.f64 [%rd0+48], %fd1;
  cvt.rmi.s32.f32 %r1, 0f80000001;            st.global.u32 [%rd0+56], %r1;
  cvt.rmi.ftz.s32.f32 %r1, 0f80000001;        st.global.u32 [%rd0+60], %r1;
  cvt.rni.s32.f64 %r1, -2.5;                  st.global.u32 [%rd0+64], %r1;
  cvt.rni.s32.f64 %r1, 3.5;                   st.global.u32 [%rd0+68], %r1;
  cvt.rpi.u32.f32 %r1, -0.5;                  st.global.u32 [%rd0+72], %r1;
  cvt.rni.u32.f32 %r1, 5e9;                   st.global.u32 [%rd0+76], %r1;
  cvt.rmi.s32.f64 %r1, -3e9;                  st.global.u32 [%rd0+80], %r1;
  cvt.rni.s32.f32 %r1, 0f7FC00000;            st.global.u32 [%rd0+84], %r1;
  cvt.rn.f32.f64 %f1, 1e39;                   st.global.f32 [%rd0+88], %f1;
  cvt.rn.f32.f64 %f1, 0d36BA000000000000;     st.global.f32 [%rd0+92], %f1;
  cvt.rn.ftz.f32.f64 %f1, 0d36BA000000000000; st.global.f32 [%rd0+96], %f1;
  cvt.rn.f32.f64 %f1, 0d3FF0000010000000;     st.global.f32 [%rd0+100], %f1;
  cvt.rn.f32.f64 %f1, 0d3FF0000030000000;     st.global.f32 [%rd0+104], %f1;
  cvt.rz.f32.f64 %f1, 0d3FD5555555555555;     st.global.f32 [%rd0+108], %f1;
  cvt.rp.f32.f64 %f1, 0d3FD5555555555555;     st.global.f32 [%rd0+112], %f1;
  cvt.rmi.f32.f64 %f1, -0.5;                  st.global.f32 [%rd0+116], %f1;
  cvt.ftz.f64.f32 %fd1, 0f00000001;           st.global.f64 [%rd0+120], %fd1;
  cvt.f64.f32 %fd1, 0f00000001;               st.global.f64 [%rd0+128], %fd1;
  cvt.rn.f32.f64 %f1, 0dFFF8000000000000;     st.global.f32 [%rd0+136], %f1;
  cvt.rni.f32.f32 %f1, -0.5;                  st.global.f32 [%rd0+140], %f1;
)",
                      36);
  auto u64_at = [&](std::size_t i) { return v[i] | std::uint64_t{v[i + 1]} << 32; };
  CHECK(u64_at(0) == 1u);                     // normal minus subnormal: the least subnormal, exact
  CHECK(u64_at(2) == 0x0008000000000000ull);  // a tie below the normals: to the even significand
  CHECK(u64_at(4) == 0x0008000000000002ull);  // the other tie: up, to even
  CHECK(u64_at(6) == 0x3ff6a09e667f3bcdull);  // sqrt(2), correctly rounded
  CHECK(u64_at(8) == 0x3fd5555555555555ull);
  CHECK(u64_at(10) == 0x7ff0000000000000ull);     // max + half an ulp: a tie, rounds to even: inf
  CHECK(u64_at(12) == 0x7fefffffffffffffull);     // toward zero stays finite (the exact path)
  CHECK(static_cast<std::int32_t>(v[14]) == -1);  // floor of a negative subnormal
  CHECK(v[15] == 0);                              // .ftz flushes it first
  CHECK(static_cast<std::int32_t>(v[16]) == -2);  // ties to even
  CHECK(static_cast<std::int32_t>(v[17]) == 4);
  CHECK(v[18] == 0);            // ceil(-0.5) is -0: 0 as u32
  CHECK(v[19] == 0xffffffffu);  // saturates
  CHECK(v[20] == 0x80000000u);
  CHECK(v[21] == 0);            // NaN to an integer is 0
  CHECK(v[22] == 0x7f800000u);  // overflow rounds to inf
  CHECK(v[23] == 3u);           // 3.25 steps of 2^-149: the subnormal 3
  CHECK(v[24] == 0);            // .ftz flushes the subnormal result
  CHECK(v[25] == 0x3f800000u);  // 1 + 2^-24 exactly: a tie, to even (down)
  CHECK(v[26] == 0x3f800002u);  // 1 + 3 * 2^-24: a tie, to even (up)
  CHECK(v[27] == 0x3eaaaaaau);  // 1/3 toward zero
  CHECK(v[28] == 0x3eaaaaabu);  // 1/3 up
  CHECK(v[29] == fb(-1.0f));
  CHECK(u64_at(30) == 0);                      // .ftz flushes the f32 source
  CHECK(u64_at(32) == 0x36a0000000000000ull);  // 2^-149, exact in f64
  CHECK(v[34] == 0x7fffffffu);                 // NaN: the canonical f32 NaN
  CHECK(v[35] == 0x80000000u);                 // rint(-0.5) = -0
}

TEST_CASE("red.global.min.u64 keeps the least key whatever order the threads arrive in", "[emulator][instr]") {
  // gather's index check: (position << 32) | index from many threads; the lowest position wins.
  EmuRun run(emu_kernel(R"(
  setp.ne.u32 %p1, %r0, 0;
  @!%p1 st.global.u64 [%rd0], -1;
  bar.sync 0;
  sub.u32 %r1, 200, %r0;
  cvt.u64.u32 %rd5, %r1;
  shl.b64 %rd5, %rd5, 32;
  cvt.u64.u32 %rd6, %r0;
  or.b64 %rd5, %rd5, %rd6;
  red.global.min.u64 [%rd0], %rd5;
)"));
  auto out = run.buffer<std::uint64_t>(1);
  auto in = run.buffer<std::uint32_t>(1);
  auto r = run.launch("t", {1}, {96}, out.ptr(), in.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  CHECK(out[0] == ((std::uint64_t{200 - 95} << 32) | 95u));
}

TEST_CASE("f16, bf16 and packed x2 arithmetic", "[emulator][instr]") {
  const auto v = run1(R"(
  mov.b16 %h1, 0x3c00;
  add.f16 %h2, %h1, %h1;               cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+0], %r1;
  mov.b16 %h3, 0x3555;
  mul.rn.f16 %h2, %h3, %h3;            cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+4], %r1;
  fma.rn.f16x2 %r1, 0x40003c00, 0x42004000, 0x3c003c00; st.global.u32 [%rd0+8], %r1;
  fma.rn.bf16x2 %r1, 0x40003f80, 0x40404000, 0x3f803f80; st.global.u32 [%rd0+12], %r1;
  mov.b32 %r2, 0x3c004000;
  mov.b32 {%h4, %h5}, %r2;             cvt.u32.u16 %r1, %h4; st.global.u32 [%rd0+16], %r1;
  cvt.u32.u16 %r1, %h5;                st.global.u32 [%rd0+20], %r1;
  mov.b32 %r3, {%h5, %h4};             st.global.u32 [%rd0+24], %r3;
  neg.f16x2 %r1, 0x3c00bc00;           st.global.u32 [%rd0+28], %r1;
  max.f16 %h2, 0x3c00, 0x4000;         cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+32], %r1;
  add.rn.sat.f16 %h2, 0x3c00, 0x3c00;  cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+36], %r1;
  fma.rn.relu.f16 %h2, 0xbc00, 0x4000, 0x3c00; cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+40], %r1;
)", 11);
  CHECK(v[0] == 0x4000);
  // 0x3555 = 0.333251953125; its square 0.1110567 is 1.7769 * 2^-4: mantissa 795.55 -> 796
  CHECK(v[1] == 0x2f1c);
  CHECK(v[2] == 0x47004200u);  // {2*3+1, 1*2+1} = {7, 3}
  CHECK(v[3] == 0x40e04040u);  // bf16 {2*3+1, 1*2+1}
  CHECK(v[4] == 0x4000);       // low half first
  CHECK(v[5] == 0x3c00);
  CHECK(v[6] == 0x40003c00u);
  CHECK(v[7] == 0xbc003c00u);
  CHECK(v[8] == 0x4000);
  CHECK(v[9] == 0x3c00);
  CHECK(v[10] == 0);
}

TEST_CASE("approximate functions stay within the PTX ISA's bounds", "[emulator][instr]") {
  const auto v = run1(R"(
  ex2.approx.f32 %f1, 3.0;          st.global.f32 [%rd0+0], %f1;
  lg2.approx.f32 %f1, 8.0;          st.global.f32 [%rd0+4], %f1;
  rcp.approx.f32 %f1, 4.0;          st.global.f32 [%rd0+8], %f1;
  rsqrt.approx.f32 %f1, 4.0;        st.global.f32 [%rd0+12], %f1;
  sin.approx.f32 %f1, 0.5;          st.global.f32 [%rd0+16], %f1;
  cos.approx.f32 %f1, 0.5;          st.global.f32 [%rd0+20], %f1;
  tanh.approx.f32 %f1, 0.5;         st.global.f32 [%rd0+24], %f1;
  ex2.approx.ftz.f32 %f1, -0.5;     st.global.f32 [%rd0+28], %f1;
  div.approx.f32 %f1, 1.0, 3.0;     st.global.f32 [%rd0+32], %f1;
  sqrt.approx.f32 %f1, 9.0;         st.global.f32 [%rd0+36], %f1;
  sin.approx.f32 %f1, 0f38D1B717;   st.global.f32 [%rd0+40], %f1;
  sin.approx.f32 %f1, 0f00000000;   st.global.f32 [%rd0+44], %f1;
)", 12);
  auto f = [&](int i) { return std::bit_cast<float>(v[static_cast<std::size_t>(i)]); };
  CHECK(f(0) == 8.0f);
  CHECK(f(1) == 3.0f);
  CHECK(f(2) == 0.25f);
  CHECK(f(3) == 0.5f);
  CHECK(std::fabs(f(4) - std::sin(0.5f)) < 1e-6f);
  CHECK(std::fabs(f(5) - std::cos(0.5f)) < 1e-6f);
  CHECK(std::fabs(f(6) - std::tanh(0.5f)) < std::ldexp(1.0f, -11) * std::tanh(0.5f));
  CHECK(std::fabs(f(7) - std::exp2(-0.5f)) < 1e-6f);
  CHECK(std::fabs(f(8) - 1.0f / 3.0f) < 1e-7f);
  CHECK(f(9) == 3.0f);
  // sin.approx's error is absolute (2^-20.9), as on a GPU: on 1e-4 that is thousands of ulp of the
  // result, which the emulator shows rather than hide behind an exact sine; 0 stays exact.
  const double tiny = static_cast<double>(std::bit_cast<float>(0x38D1B717u));
  CHECK(std::fabs(f(10) - std::sin(tiny)) <= std::ldexp(1.0, -20) * 0.5359);
  CHECK(std::fabs(f(10) - std::sin(tiny)) > 1000 * std::ldexp(std::sin(tiny), -24));
  CHECK(f(11) == 0.0f);
}

TEST_CASE("setp.f32 ordered and unordered comparisons against NaN", "[emulator][instr]") {
  // for each comparison: (1 cmp 2), (2 cmp 2), (NaN cmp 2) packed as bits 0, 1, 2
  const char* cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  const std::uint32_t want[] = {2, 1, 1, 3, 0, 2, 6, 5, 5, 7, 4, 6, 3, 4};
  std::string body;
  for (int i = 0; i < 14; ++i) {
    const std::string c = cmps[i];
    body += "  setp." + c + ".f32 %p1, 1.0, 2.0;\n  selp.u32 %r1, 1, 0, %p1;\n";
    body += "  setp." + c + ".f32 %p1, 2.0, 2.0;\n  selp.u32 %r2, 2, 0, %p1;\n";
    body += "  setp." + c + ".ftz.f32 %p1, 0f7FC00000, 2.0;\n  selp.u32 %r3, 4, 0, %p1;\n";
    body += "  or.b32 %r1, %r1, %r2;\n  or.b32 %r1, %r1, %r3;\n  st.global.u32 [%rd0+" + std::to_string(4 * i) + "], %r1;\n";
  }
  const auto v = run1(body, 14);
  for (int i = 0; i < 14; ++i) {
    INFO(cmps[i]);
    CHECK(v[static_cast<std::size_t>(i)] == want[i]);
  }
}

TEST_CASE("lop3, dp4a, bfi and bfind", "[emulator][instr]") {
  const auto v = run1(R"(
  lop3.b32 %r1, 0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA, 0x80;  st.global.u32 [%rd0+0], %r1;
  lop3.b32 %r1, 0x0000FFFF, 0x00FF00FF, 0x0F0F0F0F, 0x96;  st.global.u32 [%rd0+4], %r1;
  dp4a.s32.s32 %r1, 0x01FF0203, 0x02020202, 10;             st.global.u32 [%rd0+8], %r1;
  dp4a.u32.u32 %r1, 0x01FF0203, 0x02020202, 10;             st.global.u32 [%rd0+12], %r1;
  bfi.b32 %r1, 0x5, 0xFFFFFFFF, 4, 3;                       st.global.u32 [%rd0+16], %r1;
  bfind.u32 %r1, 0x00010000;                                st.global.u32 [%rd0+20], %r1;
  bfind.s32 %r1, -1;                                        st.global.u32 [%rd0+24], %r1;
  bfind.s32 %r1, -65536;                                    st.global.u32 [%rd0+28], %r1;
)", 8);
  CHECK(v[0] == (0xF0F0F0F0u & 0xCCCCCCCCu & 0xAAAAAAAAu));
  CHECK(v[1] == (0x0000FFFFu ^ 0x00FF00FFu ^ 0x0F0F0F0Fu));
  CHECK(v[2] == static_cast<std::uint32_t>(10 + 2 * (3 + 2 - 1 + 1)));  // bytes 3, 2, -1, 1 times 2
  CHECK(v[3] == 10u + 2u * (3u + 2u + 255u + 1u));
  CHECK(v[4] == 0xFFFFFFDFu);  // bits 4..6 become 101
  CHECK(v[5] == 16u);
  CHECK(v[6] == 0xFFFFFFFFu);
  CHECK(v[7] == 15u);  // ~(-65536) = 0xFFFF: its top bit is 15
}

TEST_CASE("shf funnel shifts", "[emulator][instr]") {
  const auto v = run1(R"(
  shf.l.wrap.b32 %r1, 0x80000000, 0x00000001, 1;   st.global.u32 [%rd0+0], %r1;
  shf.r.wrap.b32 %r1, 0x00000002, 0x00000001, 33;  st.global.u32 [%rd0+4], %r1;
  shf.r.clamp.b32 %r1, 0x00000002, 0x00000001, 40; st.global.u32 [%rd0+8], %r1;
  shf.l.clamp.b32 %r1, 0x12345678, 0x9abcdef0, 32; st.global.u32 [%rd0+12], %r1;
)", 4);
  CHECK(v[0] == 3u);           // (1:0x80000000) << 1, high word
  CHECK(v[1] == 0x80000001u);  // (1:2) >> 1, low word
  CHECK(v[2] == 1u);           // clamped to 32: the high word
  CHECK(v[3] == 0x12345678u);  // << 32: the low word moves up
}

TEST_CASE("emulator: every f16 and bf16 bit pattern decodes to the f32 the library's conversions give", "[emulator]") {
  // decode16 builds a normal value's f32 bits directly (the mma path decodes every operand);
  // NaNs decode to a NaN of the same sign, every other value exactly.
  int bad = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    for (const bool bf : {false, true}) {
      const float got = bf ? emu::bf16_to_f32(bits) : emu::f16_to_f32(bits);
      const float want = bf ? trine::bf16_to_f32(bits) : trine::f16_to_f32(bits);
      const bool ok = std::isnan(want) ? (std::isnan(got) && std::signbit(got) == std::signbit(want))
                                       : std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want);
      if (!ok && ++bad <= 5) UNSCOPED_INFO((bf ? "bf16 " : "f16 ") << std::hex << b << ": " << got << " want " << want);
    }
  }
  CHECK(bad == 0);
}
