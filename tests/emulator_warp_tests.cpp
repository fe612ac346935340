// Warp and CTA behaviour in the PTX emulator: divergence and reconvergence, shuffles, votes,
// barriers with shared memory, atomics, ldmatrix + mma.sync against a scalar product, cp.async.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/float_util.hpp"
#include "tests/emulator_harness.hpp"

using namespace trine::cuda;
using trine::test::emu_kernel;
using trine::test::EmuRun;

namespace {

std::vector<std::uint32_t> run_block(const std::string& body, std::uint32_t threads, const std::string& decls = "",
                                     std::vector<std::uint32_t> input = {}) {
  EmuRun run(emu_kernel(body, decls));
  auto out = run.buffer<std::uint32_t>(threads * 8 + 64);
  auto in = run.buffer<std::uint32_t>(std::max<std::size_t>(input.size(), 64));
  for (std::size_t i = 0; i < input.size(); ++i) in[i] = input[i];
  auto r = run.launch("t", {1}, {threads}, out.ptr(), in.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = 0; i < threads * 8; ++i) v.push_back(out[i]);
  return v;
}

}  // namespace

TEST_CASE("divergent branches reconverge and a loop with per-lane trip counts", "[emulator][warp]") {
  // lanes < 10 take one path, the rest another; after the join a full-mask shuffle must see the
  // whole warp again (synccheck would report a partial warp otherwise)
  const auto v = run_block(R"(
  setp.lt.u32 %p1, %r0, 10;
  @%p1 bra LOW;
  mov.u32 %r1, 200;
  bra.uni JOIN;
LOW:
  mov.u32 %r1, 100;
JOIN:
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
LOOP:
  setp.ge.u32 %p2, %r3, %r0;
  @%p2 bra END;
  add.u32 %r2, %r2, %r3;
  add.u32 %r3, %r3, 1;
  bra LOOP;
END:
  shfl.sync.idx.b32 %r4, %r1, 0, 0x1f, 0xffffffff;
  add.u32 %r5, %r1, %r2;
  add.u32 %r5, %r5, %r4;
  st.global.u32 [%rd4], %r5;
)", 32);
  for (std::uint32_t l = 0; l < 32; ++l) CHECK(v[l] == (l < 10 ? 100u : 200u) + l * (l - 1) / 2 + 100u);
}

TEST_CASE("shfl.sync modes and vote.sync", "[emulator][warp]") {
  const auto v = run_block(R"(
  mul.lo.u32 %r1, %r0, 10;
  shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffffffff;
  shfl.sync.down.b32 %r3|%p1, %r1, 1, 0x1f, 0xffffffff;
  shfl.sync.up.b32 %r4|%p2, %r1, 1, 0, 0xffffffff;
  shfl.sync.idx.b32 %r5, %r1, 5, 0x1f, 0xffffffff;
  selp.u32 %r6, 1, 0, %p1;
  selp.u32 %r7, 1, 0, %p2;
  and.b32 %r8, %r0, 1;
  setp.eq.u32 %p3, %r8, 1;
  vote.sync.ballot.b32 %r9, %p3, 0xffffffff;
  vote.sync.all.pred %p4, %p3, 0xffffffff;
  vote.sync.any.pred %p5, %p3, 0xffffffff;
  selp.u32 %r10, 1, 0, %p4;
  selp.u32 %r11, 1, 0, %p5;
  shfl.sync.bfly.b32 %r12, %r1, 4, 0x101f, 0xffffffff;
  mul.wide.u32 %rd5, %r0, 32;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v4.u32 [%rd6], {%r2, %r3, %r4, %r5};
  st.global.v4.u32 [%rd6+16], {%r6, %r7, %r9, %r10};
  setp.lt.u32 %p6, %r0, 32;
  vote.sync.all.pred %p7, %p6, 0xffffffff;
  selp.u32 %r15, 2, 0, %p7;
  add.u32 %r11, %r11, %r10;
  add.u32 %r11, %r11, %r15;
  st.global.u32 [%rd6+28], %r11;
  mov.u32 %r13, %laneid;
  mov.u32 %r14, %lanemask_lt;
  add.u32 %r13, %r13, %r14;
  st.global.u32 [%rd6+16], %r13;
)", 32);
  for (std::uint32_t l = 0; l < 32; ++l) {
    const auto* o = &v[l * 8];
    INFO("lane " << l);
    CHECK(o[0] == (l ^ 1) * 10);
    CHECK(o[1] == (l < 31 ? (l + 1) * 10 : l * 10));
    CHECK(o[2] == (l > 0 ? (l - 1) * 10 : 0));
    CHECK(o[3] == 50);
    CHECK(o[4] == l + ((1u << l) - 1));
    CHECK(o[5] == (l > 0 ? 1u : 0u));
    CHECK(o[6] == 0xaaaaaaaau);
    CHECK(o[7] == 3u);  // any(odd) = 1, all(odd) = 0, all(true) = 1 weighted 2
  }
}

TEST_CASE("bar.sync orders a shared-memory reduction across warps", "[emulator][warp]") {
  const auto v = run_block(R"(
  shl.b32 %r1, %r0, 2;
  mov.u32 %r2, sdata;
  add.u32 %r3, %r2, %r1;
  st.shared.u32 [%r3], %r0;
  bar.sync 0;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra DONE;
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
SUM:
  shl.b32 %r6, %r5, 2;
  add.u32 %r7, %r2, %r6;
  ld.shared.u32 %r8, [%r7];
  add.u32 %r4, %r4, %r8;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p2, %r5, 128;
  @%p2 bra SUM;
  st.global.u32 [%rd0], %r4;
DONE:
)", 128, ".shared .align 4 .b32 sdata[128];");
  CHECK(v[0] == 127u * 128u / 2u);
}

TEST_CASE("atomics on global and shared memory", "[emulator][warp]") {
  EmuRun run(emu_kernel(R"(
  atom.global.add.u32 %r1, [%rd0], 1;
  cvt.rn.f32.u32 %f1, %r0;
  red.global.add.f32 [%rd0+4], %f1;
  atom.global.max.s32 %r2, [%rd0+8], %r0;
  atom.global.min.s32 %r2, [%rd0+12], %r0;
  mov.u32 %r3, sh;
  atom.shared.add.u32 %r4, [%r3], %r0;
  bar.sync 0;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra NEXT;
  ld.shared.u32 %r5, [%r3];
  atom.global.add.u32 %r6, [%rd0+16], %r5;
  atom.global.cas.b32 %r7, [%rd0+20], 0, 77;
  atom.global.exch.b32 %r8, [%rd0+24], 5;
  st.global.u32 [%rd0+28], %r8;
  atom.global.or.b32 %r9, [%rd0+32], 0xf0;
  atom.global.inc.u32 %r9, [%rd0+36], 2;
NEXT:
)", ".shared .align 4 .u32 sh;\n  .reg .b32 %q<4>;"));
  auto out = run.buffer<std::uint32_t>(16);
  auto in = run.buffer<std::uint32_t>(16);
  out[2] = 0x80000000u;  // max starts at INT_MIN
  out[3] = 0x7fffffffu;
  out[6] = 9;
  out[9] = 2;
  // shared memory starts zeroed in the emulator but is never read before the atomic writes it
  run.check.initcheck = false;
  auto r = run.launch("t", {3}, {64}, out.ptr(), in.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  CHECK(out[0] == 192);
  CHECK(std::bit_cast<float>(out[1]) == 3.0f * 63.0f * 64.0f / 2.0f);
  CHECK(out[2] == 63);
  CHECK(out[3] == 0);
  CHECK(out[4] == 3 * 63 * 64 / 2);
  CHECK(out[5] == 77);
  CHECK(out[7] == 5);  // the last exchange returned the previous 5
  CHECK(out[8] == 0xf0);
  CHECK(out[9] == 2);  // inc wraps to 0 at the bound 2: 2 -> 0 -> 1 -> 2
}

namespace {

// A 16x16 (A, row-major) times 16x8 (B, row-major) product through ldmatrix and mma.sync.
std::string mma_kernel(const char* type, bool k16) {
  std::string ab = std::string(".") + type + "." + type;
  std::string shape = k16 ? "m16n8k16" : "m16n8k8";
  // A tile 16 x K at sa (row-major), B tile K x 8 at sb (row-major), both copied from `in`
  return emu_kernel(std::string(R"(
  mov.u32 %r1, sa;
  mov.u32 %r2, sb;
  // copy: thread t copies words t and t+32 .. of A (16*16*2 = 512 bytes = 128 words) and B (64 words)
  mov.u32 %r3, %r0;
COPYA:
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r4, [%rd6];
  shl.b32 %r5, %r3, 2;
  add.u32 %r6, %r1, %r5;
  st.shared.u32 [%r6], %r4;
  add.u32 %r3, %r3, 32;
  setp.lt.u32 %p1, %r3, 128;
  @%p1 bra COPYA;
  mov.u32 %r3, %r0;
COPYB:
  add.u32 %r7, %r3, 128;
  mul.wide.u32 %rd5, %r7, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r4, [%rd6];
  shl.b32 %r5, %r3, 2;
  add.u32 %r6, %r2, %r5;
  st.shared.u32 [%r6], %r4;
  add.u32 %r3, %r3, 32;
  setp.lt.u32 %p1, %r3, 64;
  @%p1 bra COPYB;
  bar.sync 0;
  // A: lane l addresses row l % 16, column 8 * (l / 16); B: lane l addresses row l % 16
  and.b32 %r8, %r0, 15;
  shr.u32 %r9, %r0, 4;
  shl.b32 %r10, %r8, 5;
  shl.b32 %r11, %r9, 4;
  add.u32 %r12, %r1, %r10;
  add.u32 %r12, %r12, %r11;
  shl.b32 %r13, %r8, 4;
  add.u32 %r14, %r2, %r13;
)") + (k16 ? R"(
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%r12];
  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r24, %r25}, [%r14];
  mov.f32 %f1, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32)" + ab + R"(.f32 {%f4, %f5, %f6, %f7}, {%r20, %r21, %r22, %r23}, {%r24, %r25}, {%f1, %f1, %f1, %f1};
)" : R"(
  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r20, %r21}, [%r12];
  ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r24}, [%r14];
  mov.f32 %f1, 0f3F800000;
  mma.sync.aligned.m16n8k8.row.col.f32)" + ab + R"(.f32 {%f4, %f5, %f6, %f7}, {%r20, %r21}, {%r24}, {%f1, %f1, %f1, %f1};
)") + R"(
  // D: lane holds rows g and g + 8, columns 2t and 2t + 1
  shr.u32 %r15, %r0, 2;
  and.b32 %r16, %r0, 3;
  shl.b32 %r16, %r16, 1;
  shl.b32 %r17, %r15, 3;
  add.u32 %r17, %r17, %r16;
  mul.wide.u32 %rd7, %r17, 4;
  add.s64 %rd8, %rd0, %rd7;
  st.global.v2.f32 [%rd8], {%f4, %f5};
  st.global.v2.f32 [%rd8+256], {%f6, %f7};
)", ".shared .align 16 .b8 sa[512];\n  .shared .align 16 .b8 sb[256];");
}

void check_mma(const char* type, bool k16) {
  const bool bf = std::string(type) == "bf16";
  const int K = k16 ? 16 : 8;
  EmuRun run(mma_kernel(type, k16));
  auto out = run.buffer<float>(128);
  auto in = run.buffer<std::uint16_t>(384);
  float A[16][16] = {}, B[16][8] = {};
  auto enc = [&](float x) { return bf ? emu::bf16_from(x) : emu::f16_from(x); };
  // A is stored 16 x 16 (row stride 32 bytes) whatever K is; B is K x 8
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      A[r][c] = static_cast<float>((r * 7 + c * 3) % 11 - 5) * 0.25f;
      in[static_cast<std::size_t>(r * 16 + c)] = enc(A[r][c]);
    }
  for (int r = 0; r < K; ++r)
    for (int c = 0; c < 8; ++c) {
      B[r][c] = static_cast<float>((r * 5 + c * 2) % 7 - 3) * 0.5f;
      in[static_cast<std::size_t>(256 + r * 8 + c)] = enc(B[r][c]);
    }
  auto r = run.launch("t", {1}, {32}, out.ptr(), in.ptr());
  INFO(r.report);
  REQUIRE(r.result == CUDA_SUCCESS);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float s = k16 ? 0.0f : 1.0f;
      for (int k = 0; k < K; ++k) s += A[i][k] * B[k][j];
      INFO("D[" << i << "][" << j << "]");
      CHECK(out[static_cast<std::size_t>(i * 8 + j)] == s);
    }
}

}  // namespace

TEST_CASE("ldmatrix and mma.sync m16n8k16 / m16n8k8 match a scalar product", "[emulator][mma]") {
  SECTION("f16 m16n8k16") { check_mma("f16", true); }
  SECTION("bf16 m16n8k16") { check_mma("bf16", true); }
  SECTION("f16 m16n8k8") { check_mma("f16", false); }
  SECTION("bf16 m16n8k8") { check_mma("bf16", false); }
}

TEST_CASE("ldmatrix .trans hands each lane a column pair", "[emulator][mma]") {
  // an 8x8 matrix of b16 values 8 * row + col; .trans gives lane l the elements (2t, g), (2t + 1, g)
  std::vector<std::uint32_t> input(32);
  for (std::uint32_t i = 0; i < 32; ++i) input[i] = (2 * i) | (2 * i + 1) << 16;
  const auto v = run_block(R"(
  mov.u32 %r1, m;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  ld.global.u32 %r4, [%rd3];
  st.shared.u32 [%r3], %r4;
  bar.sync 0;
  and.b32 %r5, %r0, 7;
  shl.b32 %r6, %r5, 4;
  add.u32 %r7, %r1, %r6;
  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r8}, [%r7];
  ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r9}, [%r7];
  mul.wide.u32 %rd5, %r0, 32;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v2.u32 [%rd6], {%r8, %r9};
)", 32, ".shared .align 16 .b8 m[128];", input);
  for (std::uint32_t l = 0; l < 32; ++l) {
    const std::uint32_t g = l / 4, t = l % 4;
    CHECK(v[l * 8] == ((8 * g + 2 * t) | (8 * g + 2 * t + 1) << 16));
    CHECK(v[l * 8 + 1] == ((8 * (2 * t) + g) | (8 * (2 * t + 1) + g) << 16));
  }
}

TEST_CASE("cp.async with commit and wait groups, and the zero-fill form", "[emulator][cp.async]") {
  std::vector<std::uint32_t> input(64);
  for (std::uint32_t i = 0; i < 64; ++i) input[i] = 1000 + i;
  const auto v = run_block(R"(
  mov.u32 %r1, buf;
  shl.b32 %r2, %r0, 4;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd1, %rd5;
  cp.async.cg.shared.global [%r3], [%rd6], 16;
  cp.async.commit_group;
  setp.eq.u32 %p1, %r0, 3;
  selp.u32 %r9, 0, 8, %p1;
  cp.async.ca.shared.global [%r3+64], [%rd6], 8, %r9;
  cp.async.commit_group;
  cp.async.wait_group 0;
  bar.sync 0;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r3];
  mul.wide.u32 %rd7, %r0, 32;
  add.s64 %rd8, %rd0, %rd7;
  st.global.v4.u32 [%rd8], {%r4, %r5, %r6, %r7};
  ld.shared.v2.u32 {%r4, %r5}, [%r3+64];
  st.global.v2.u32 [%rd8+16], {%r4, %r5};
)", 4, ".shared .align 16 .b8 buf[192];", input);
  for (std::uint32_t t = 0; t < 4; ++t)
    for (std::uint32_t j = 0; j < 4; ++j) CHECK(v[t * 8 + j] == 1000 + 4 * t + j);
  CHECK(v[0 * 8 + 4] == 1000);
  CHECK(v[3 * 8 + 4] == 0);  // src-size 0: zero-filled
  CHECK(v[3 * 8 + 5] == 0);
}

TEST_CASE("local memory, generic addresses and f64", "[emulator][exec]") {
  const auto v = run_block(R"(
  mov.u64 %rd10, depot;
  cvta.local.u64 %rd11, %rd10;
  st.local.u32 [depot+4], %r0;
  ld.u32 %r1, [%rd11+4];
  mov.u32 %r2, sh;
  cvta.shared.u64 %rd12, %rd5;
  cvt.u64.u32 %rd13, %r2;
  cvta.shared.u64 %rd12, %rd13;
  shl.b32 %r3, %r0, 2;
  cvt.u64.u32 %rd14, %r3;
  add.s64 %rd15, %rd12, %rd14;
  st.u32 [%rd15], %r1;
  bar.sync 0;
  cvta.to.shared.u64 %rd9, %rd15;
  cvt.u32.u64 %r4, %rd9;
  ld.shared.u32 %r5, [%r4];
  cvt.rn.f64.u32 %fd1, %r5;
  mul.f64 %fd2, %fd1, 0d3FE0000000000000;
  add.rn.f64 %fd3, %fd2, %fd2;
  div.rn.f64 %fd4, %fd3, 3.0;
  cvt.rn.f32.f64 %f1, %fd4;
  mul.wide.u32 %rd6, %r0, 32;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r5;
  st.global.f32 [%rd7+4], %f1;
)", 64, ".local .align 8 .b8 depot[16];\n  .shared .align 4 .b32 sh[64];");
  for (std::uint32_t t = 0; t < 64; ++t) {
    CHECK(v[t * 8] == t);
    CHECK(std::bit_cast<float>(v[t * 8 + 1]) == static_cast<float>(static_cast<double>(t) / 3.0));
  }
}

TEST_CASE("bar.arrive and bar.sync with a thread count: producer and consumer warps", "[emulator][warp]") {
  // warp 0 produces into shared memory and arrives at barrier 1; warp 1 waits there and consumes
  const auto v = run_block(R"(
  mov.u32 %r1, buf;
  shl.b32 %r2, %r0, 2;
  and.b32 %r2, %r2, 127;
  add.u32 %r3, %r1, %r2;
  setp.lt.u32 %p1, %r0, 32;
  @!%p1 bra CONSUME;
  mul.lo.u32 %r4, %r0, 3;
  st.shared.u32 [%r3], %r4;
  bar.arrive 1, 64;
  bra.uni DONE;
CONSUME:
  bar.sync 1, 64;
  ld.shared.u32 %r5, [%r3];
  st.global.u32 [%rd4], %r5;
DONE:
)", 64, ".shared .align 4 .b32 buf[32];");
  for (std::uint32_t t = 32; t < 64; ++t) CHECK(v[t] == (t - 32) * 3);
}

TEST_CASE("CTAs over several host threads give the same bytes", "[emulator][exec]") {
  const std::string ptx = emu_kernel(R"(
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  cvt.rn.f32.u32 %f1, %r3;
  sqrt.rn.f32 %f2, %f1;
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd0, %rd5;
  st.global.f32 [%rd6], %f2;
  atom.global.add.u32 %r4, [%rd1], 1;
)");
  std::vector<float> results[2];
  for (int threads : {1, 2}) {
    EmuRun run(ptx);
    run.threads = threads;
    auto out = run.buffer<float>(64 * 128);
    auto in = run.buffer<std::uint32_t>(4);
    auto r = run.launch("t", {64}, {128}, out.ptr(), in.ptr());
    REQUIRE(r.result == CUDA_SUCCESS);
    CHECK(in[0] == 64 * 128);
    for (std::size_t i = 0; i < out.size(); ++i) results[threads - 1].push_back(out[i]);
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("activemask and redux.sync", "[emulator][warp]") {
  const auto v = run_block(R"(
  setp.lt.u32 %p1, %r0, 20;
  @!%p1 bra HIGH;
  activemask.b32 %r1;
  redux.sync.add.u32 %r2, %r0, 0x000fffff;
  redux.sync.max.s32 %r3, %r0, 0x000fffff;
  bra.uni JOIN;
HIGH:
  activemask.b32 %r1;
  sub.u32 %r5, 0, %r0;
  redux.sync.min.s32 %r2, %r5, 0xfff00000;
  redux.sync.or.b32 %r3, %r0, 0xfff00000;
JOIN:
  mul.wide.u32 %rd5, %r0, 32;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v4.u32 [%rd6], {%r1, %r2, %r3, %r0};
)", 32);
  for (std::uint32_t l = 0; l < 32; ++l) {
    if (l < 20) {
      CHECK(v[l * 8] == 0x000fffffu);
      CHECK(v[l * 8 + 1] == 19u * 20u / 2u);
      CHECK(v[l * 8 + 2] == 19u);
    } else {
      CHECK(v[l * 8] == 0xfff00000u);
      CHECK(static_cast<std::int32_t>(v[l * 8 + 1]) == -31);
      CHECK(v[l * 8 + 2] == 31u);  // 20 | 21 | ... | 31
    }
  }
}

TEST_CASE("nested scopes give their registers names of their own", "[emulator][parser]") {
  // two inline-asm style blocks declare the same names; the outer %r1 stays visible after them
  const auto v = run_block(R"(
  mov.u32 %r1, 5;
  {
    .reg .b32 tmp, %r<3>;
    add.u32 tmp, %tid.x, 100;  // %r0 is shadowed by the scope's own %r<3> here
    mov.u32 %r2, tmp;
    st.global.u32 [%rd4], %r2;
  }
  {
    .reg .b32 tmp;
    mul.lo.u32 tmp, %r1, 2;
    st.global.u32 [%rd0+128], tmp;
  }
  add.u32 %r2, %r1, 1;
  st.global.u32 [%rd0+132], %r2;
)", 32);
  for (std::uint32_t t = 0; t < 32; ++t) CHECK(v[t] == t + 100);
  CHECK(v[32] == 10);
  CHECK(v[33] == 6);
}

TEST_CASE("mma.sync m16n8k16 with f16 accumulators", "[emulator][mma]") {
  // A = all 0.5 (f16x2 0x38003800), B = all 2.0 (0x40004000), C = all 1.0 (0x3c003c00): D = 1 + 16 * 1 = 17
  const auto v = run_block(R"(
  mov.b32 %r1, 0x38003800;
  mov.b32 %r2, 0x40004000;
  mov.b32 %r3, 0x3c003c00;
  mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r4, %r5}, {%r1, %r1, %r1, %r1}, {%r2, %r2}, {%r3, %r3};
  mul.wide.u32 %rd5, %r0, 32;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v2.u32 [%rd6], {%r4, %r5};
)", 32);
  for (std::uint32_t l = 0; l < 32; ++l) {
    CHECK(v[l * 8] == 0x4c404c40u);  // 17.0 in f16 is 0x4c40
    CHECK(v[l * 8 + 1] == 0x4c404c40u);
  }
}
