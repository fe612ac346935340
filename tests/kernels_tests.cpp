// The cpu_simd kernels' own checks: the kernel table's completeness check, allocation failures
// named after the op, and the release-on assert. ctest runs this once per ISA (TRINE_CPU_ISA).
#include <sys/resource.h>
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/assert.hpp"
#include "backends/cpu_simd/kernel_table.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

TEST_CASE("require_complete names a missing kernel and the file to add it to", "[kernels]") {
  // SSE4.2 is the oldest ISA the kernels are built for: a CPU running the tests has it.
  const trine::cpu::KernelTable& full = trine::cpu::sse4_2::table();
  CHECK_NOTHROW(trine::cpu::require_complete(full));
  trine::cpu::KernelTable t = full;
  t.ops = {};  // every op but rope registered again
  for (int i = 0; i < trine::TRINE_OP_COUNT; ++i) {
    const auto op = static_cast<trine::OpKind>(i);
    if (op != trine::OpKind::rope) t.ops.add(op, *full.ops.find(op));
  }
  try {
    trine::cpu::require_complete(t);
    FAIL("a table without rope passed");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::internal);
    CHECK_THAT(e.what(), Catch::Contains("'rope'") && Catch::Contains("sse4_2") &&
                             Catch::Contains("backends/cpu_simd/kernels/rope.cpp"));
  }
  t.ops.refuse(trine::OpKind::rope, "a test's reason");  // an explicit refusal completes it
  CHECK_NOTHROW(trine::cpu::require_complete(t));
  t.convert = nullptr;
  CHECK_THROWS_WITH(trine::cpu::require_complete(t), Catch::Contains("'convert'"));
}

TEST_CASE("TRINE_ASSERT throws Error(internal) with its place and condition", "[kernels]") {
  const int rows = 0;
  try {
    TRINE_ASSERT(rows > 0, "[test] rows must be positive");
    FAIL("the assert did not fire");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::internal);
    const std::string what = e.what();
    CHECK(what.rfind("[test] rows must be positive", 0) == 0);
    CHECK_THAT(what, Catch::Contains("`rows > 0`") && Catch::Contains("tests/kernels_tests.cpp:"));
  }
  CHECK_NOTHROW([] { TRINE_ASSERT(1 + 1 == 2, "[test] arithmetic"); }());
}

TEST_CASE("an allocation that fails inside a kernel is out_of_memory named after the op", "[kernels]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("skipped: sanitizer runtimes reserve more address space than the limit this test sets");
  return;
#else
  // A transposed input makes relu copy it to a contiguous temporary as large as the output. Under
  // an address-space limit with room for the output but not the copy, the temporary fails.
  const std::int64_t rows = 4096, cols = 8192;  // 128 MiB
  const auto x = trine::Tensor::zeros({rows, cols}).transpose();
  (void)trine::relu(trine::Tensor::zeros({64, 64}).transpose());  // warm up: first-use allocations
  // Blocks cached by earlier tests could serve the output and the copy without a new mapping; the
  // limit is meant for this test's own two allocations.
  trine::memory::clear_cache();
  std::size_t vm_kib = 0;
  {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoul(line.substr(7));
  }
  REQUIRE(vm_kib > 0);
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  const rlim_t bytes = static_cast<rlim_t>(rows * cols * 4);
  rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(vm_kib) * 1024 + bytes + bytes / 2;
  REQUIRE(setrlimit(RLIMIT_AS, &lim) == 0);
  std::string what;
  trine::ErrorCode code = trine::ErrorCode::internal;
  bool threw = false;
  try {
    (void)trine::relu(x);
  } catch (const trine::Error& e) {
    threw = true;
    what = e.what();
    code = e.code();
  } catch (...) {
    what = "an exception other than trine::Error";
  }
  setrlimit(RLIMIT_AS, &old);
  INFO(what);
  REQUIRE(threw);
  CHECK(code == trine::ErrorCode::out_of_memory);
  CHECK(what.rfind("[relu] ", 0) == 0);
  // The device stays usable.
  CHECK(trine::relu(trine::Tensor::full({4}, -1.0f)).to_vector() == std::vector<float>(4, 0.0f));
#endif
}

namespace {

// The kernel tables this build has (TRINE_CPU_ISAS) and this CPU can run, with the ISA's name.
std::vector<const trine::cpu::KernelTable*> runnable_tables() {
  std::vector<const trine::cpu::KernelTable*> t{&trine::cpu::sse4_2::table()};
#if defined(TRINE_CPU_BUILT_AVX2)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    t.push_back(&trine::cpu::avx2::table());
#endif
#if defined(TRINE_CPU_BUILT_AVX512)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512vl"))
    t.push_back(&trine::cpu::avx512::table());
#endif
  return t;
}

std::uint32_t f32_bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Every f32 class the conversions round differently: zeros, f16 subnormals and the 2^-25 tie,
// ties to even in both formats, the f16 overflow edge (65504, 65519.99, 65520), infinities, quiet
// and signalling NaNs with payloads, then random bit patterns over the whole range.
std::vector<float> conversion_inputs() {
  std::vector<std::uint32_t> bits = {0x00000000u, 0x80000000u, 0x33000000u, 0x33000001u, 0x33800000u, 0x387fc000u,
                                     0x387fe000u, 0x38800000u, 0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u,
                                     0x477fe000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                                     0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fa5a5a5u, 0x00000001u, 0x807fffffu};
  std::uint64_t s = 7;
  while (bits.size() < (1u << 16)) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    bits.push_back(static_cast<std::uint32_t>(s >> 32));
  }
  std::vector<float> v;
  for (std::uint32_t b : bits) v.push_back(std::bit_cast<float>(b));
  return v;
}

}  // namespace

TEST_CASE("convert kernels round every f32, f16 and bf16 value as the scalar conversions do", "[kernels]") {
  using trine::DType;
  const std::vector<float> f = conversion_inputs();
  std::vector<std::uint16_t> all16(1u << 16);
  for (std::size_t i = 0; i < all16.size(); ++i) all16[i] = static_cast<std::uint16_t>(i);
  const auto n32 = static_cast<std::int64_t>(f.size()), n16 = static_cast<std::int64_t>(all16.size());
  for (const auto* t : runnable_tables()) {
    INFO("isa " << t->isa);
    std::vector<std::uint16_t> h(f.size()), want16(f.size());
    for (DType to : {DType::f16, DType::bf16}) {
      INFO("f32 to " << trine::dtype_name(to));
      t->convert(DType::f32, to, f.data(), 1, h.data(), n32);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < f.size(); ++i) {
        want16[i] = to == DType::f16 ? trine::f32_to_f16(f[i]) : trine::f32_to_bf16(f[i]);
        if (h[i] != want16[i] && bad++ < 5)
          INFO("input bits " << f32_bits(f[i]) << " got " << h[i] << " want " << want16[i]);
      }
      CHECK(bad == 0);
    }
    std::vector<float> out(all16.size());
    for (DType from : {DType::f16, DType::bf16}) {
      INFO(trine::dtype_name(from) << " to f32, every bit pattern");
      t->convert(from, DType::f32, all16.data(), 1, out.data(), n16);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < all16.size(); ++i) {
        const float want = from == DType::f16 ? trine::f16_to_f32(all16[i]) : trine::bf16_to_f32(all16[i]);
        // NaN stays NaN; the hardware may set the quiet bit of a signalling one.
        const bool same = std::isnan(want) ? std::isnan(out[i]) : f32_bits(out[i]) == f32_bits(want);
        if (!same) ++bad;
      }
      CHECK(bad == 0);
    }
    // f16 <-> bf16 goes through f32, as the scalar cast does.
    std::vector<std::uint16_t> cross(all16.size());
    t->convert(DType::f16, DType::bf16, all16.data(), 1, cross.data(), n16);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < all16.size(); ++i) {
      if (cross[i] != trine::f32_to_bf16(trine::f16_to_f32(all16[i]))) ++bad;
    }
    CHECK(bad == 0);
  }
}

namespace {

// Transposes a cols x src_ld source (values from convert) into a 64-byte aligned rows x dst_ld
// destination and checks it, padding between rows included, against convert element by element.
void check_transpose(const trine::cpu::KernelTable& t, std::int64_t rows, std::int64_t cols, std::int64_t src_ld,
                     std::int64_t dst_ld, trine::DType from, trine::DType to, bool stream) {
  using trine::DType;
  auto bytes_of = [](DType d) { return static_cast<std::int64_t>(trine::dtype_size(d)); };
  INFO(rows << "x" << cols << " src_ld " << src_ld << " dst_ld " << dst_ld << " " << trine::dtype_name(from) << " to "
            << trine::dtype_name(to) << (stream ? " streamed" : ""));
  std::vector<float> vals(static_cast<std::size_t>(cols * src_ld));
  for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i % 251) * 0.37f - 40.0f;
  std::vector<std::uint8_t> src(vals.size() * static_cast<std::size_t>(bytes_of(from)));
  t.convert(DType::f32, from, vals.data(), 1, src.data(), static_cast<std::int64_t>(vals.size()));
  const std::size_t dst_bytes = static_cast<std::size_t>(rows * dst_ld * bytes_of(to));
  std::unique_ptr<std::uint8_t, decltype(&std::free)> dst(
      static_cast<std::uint8_t*>(std::aligned_alloc(64, (dst_bytes + 63) / 64 * 64)), &std::free);
  std::memset(dst.get(), 0xab, dst_bytes);
  std::vector<std::uint8_t> want(dst_bytes, 0xab);
  t.transpose(from, to, src.data(), src_ld, dst.get(), dst_ld, rows, cols, stream);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      t.convert(from, to, src.data() + (c * src_ld + r) * bytes_of(from), 1,
                want.data() + (r * dst_ld + c) * bytes_of(to), 1);
    }
  }
  CHECK(std::memcmp(dst.get(), want.data(), dst_bytes) == 0);
}

}  // namespace

TEST_CASE("transpose kernel: every dtype pair, edges of every vector width, padded strides", "[kernels]") {
  using trine::DType;
  const DType types[] = {DType::f32, DType::f16, DType::bf16};
  for (const auto* t : runnable_tables()) {
    INFO("isa " << t->isa);
    for (std::int64_t rows : {1, 3, 8, 9, 16, 17, 37}) {
      for (std::int64_t cols : {1, 4, 8, 15, 16, 33}) {
        for (DType from : types)
          for (DType to : types) check_transpose(*t, rows, cols, rows + 5, cols + 3, from, to, false);
      }
    }
    // Streamed: an f32 destination with 64-byte aligned rows takes the non-temporal strips (16
    // columns a strip) for as many whole lines as there are; the columns and rows left over, and
    // every other case (rows not aligned, another destination dtype), the normal stores.
    for (std::int64_t rows : {1, 7, 8, 16, 37}) {
      for (std::int64_t cols : {15, 16, 33, 64}) {
        for (std::int64_t dst_ld : {cols + (16 - cols % 16) % 16 + 16, cols + 3}) {  // aligned rows, then not
          for (DType from : types)
            for (DType to : types) check_transpose(*t, rows, cols, rows + 5, dst_ld, from, to, true);
        }
      }
    }
  }
}

TEST_CASE("bf16 x bf16 matmul: subnormal inputs flush to zero exactly where a bf16 kernel runs", "[kernels][bf16]") {
  // 2^-133 is a bf16 subnormal (bits 0x0001). vdpbf16ps and AMX's tdpbf16ps read it as 0; the f32
  // path (other ISAs, CPUs without avx512_bf16 or AMX) keeps it. Either way the behaviour is
  // pinned, and it shows which path ran: docs/ops.md documents both.
  const float tiny = std::ldexp(1.0f, -133);
  const std::vector<float> av{tiny, 1.0f, 0.5f, 2.0f}, bv{1.0f, 0.0f, 0.0f, 1.0f};
  const auto a = trine::Tensor::from(av, {2, 2}, trine::DType::bf16),
             b = trine::Tensor::from(bv, {2, 2}, trine::DType::bf16);
  const std::vector<float> c = trine::matmul(a, b).to_vector();
  const std::string kind = trine::debug::cpu_bf16_matmul();
  const bool native = kind != "f32";
  INFO("isa " << trine::debug::cpu_isa() << ", bf16 kernel " << kind);
  CHECK(c[0] == (native ? 0.0f : tiny));
  CHECK(c[1] == 1.0f);
  CHECK(c[2] == 0.5f);
  CHECK(c[3] == 2.0f);
}

TEST_CASE("the bf16 x bf16 kernel is one this CPU has, and TRINE_CPU_AMX=0 rules out AMX", "[kernels][bf16]") {
  const std::string kind = trine::debug::cpu_bf16_matmul(), isa = trine::debug::cpu_isa();
  INFO("isa " << isa << ", bf16 kernel " << kind);
  const char* env = std::getenv("TRINE_CPU_AMX");
  if (isa != "avx512") {
    CHECK(kind == "f32");  // the vdpbf16ps and AMX kernels exist only in the avx512 build
  } else if (kind == "amx") {
    CHECK(__builtin_cpu_supports("amx-tile"));
    CHECK(__builtin_cpu_supports("amx-bf16"));
    CHECK(!(env && std::string(env) == "0"));
  } else if (kind == "avx512_bf16") {
    CHECK(__builtin_cpu_supports("avx512bf16"));
  } else {
    CHECK(kind == "f32");
    CHECK(!__builtin_cpu_supports("avx512bf16"));
  }
  if (env && std::string(env) == "0") CHECK(kind != "amx");
}

TEST_CASE("TRINE_CPU_STREAM_BYTES set to anything but a byte count is an error naming the variable",
          "[stream_env_bad][.]") {
  // Run by ctest with TRINE_CPU_STREAM_BYTES=lots: the first op that writes an output says so.
  try {
    (void)trine::relu(trine::Tensor::full({4096}, 1.0f, trine::DType::f32, trine::Device::cpu())).to_vector();
    FAIL("no error for TRINE_CPU_STREAM_BYTES=" << std::getenv("TRINE_CPU_STREAM_BYTES"));
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("TRINE_CPU_STREAM_BYTES"));
    CHECK_THAT(e.what(), Catch::Contains("[relu]"));
  }
}

TEST_CASE("TRINE_CPU_WINOGRAD set to anything but auto, 0, 2 or 4 is an error naming the variable",
          "[winograd_env_bad][.]") {
  // Run by ctest with TRINE_CPU_WINOGRAD=3: an error on every conv2d, Winograd's shape or not.
  const trine::Tensor x = trine::Tensor::random({1, 2, 6, 6}, 1, -1.0f, 1.0f);
  for (std::int64_t r : {1, 3}) {
    const trine::Tensor w = trine::Tensor::random({2, 2, r, r}, 2, -1.0f, 1.0f);
    try {
      (void)trine::conv2d(x, w, trine::Conv2dParams{}).to_vector();
      FAIL("no error for TRINE_CPU_WINOGRAD=" << std::getenv("TRINE_CPU_WINOGRAD"));
    } catch (const trine::Error& e) {
      CHECK(e.code() == trine::ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("TRINE_CPU_WINOGRAD"));
    }
  }
}

TEST_CASE("TRINE_CPU_AMX set to anything but 0 or 1 is an error naming the variable", "[amx_env_bad][.]") {
  // Run by ctest with TRINE_CPU_AMX=2: an error on every ISA, whichever bf16 kernel it has.
  try {
    (void)trine::debug::cpu_bf16_matmul();
    FAIL("no error for TRINE_CPU_AMX=" << std::getenv("TRINE_CPU_AMX"));
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("TRINE_CPU_AMX"));
  }
}
