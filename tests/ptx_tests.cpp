// The cuda_ptx emitter, generators and loader without a GPU: emitted text has the PTX grammar's
// shape and is deterministic; every shipped kernel compiles with ptxas for all six targets with no
// spills (registers, shared memory and spills printed per kernel); the loader reports a missing libcuda.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "backends/cuda_ptx/driver/check.hpp"
#include "backends/cuda_ptx/driver/libcuda_loader.hpp"
#include "backends/cuda_ptx/kernels/generator.hpp"
#include "backends/cuda_ptx/ptx/instructions.hpp"
#include "trine/error.hpp"

namespace {

using namespace trine::cuda::ptx;
namespace kernels = trine::cuda::kernels;

// A small kernel with most of the emitter's features: params, special registers, a loop with a
// loop-carried register, a guard, shared memory and vector accesses.
std::string small_kernel(Target target) {
  Kernel k("small", target);
  k.set_max_threads(128);
  Ptr<Global, F32> x = param_ptr<F32>(k, "x");
  Reg<U32> n = param<U32>(k, "n");
  Ptr<Shared, F32> tile = shared_array<F32>(k, "tile", 128, 16);
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<F32> acc = mov<F32>(k, 0.0f);
  for_range<U32>(k, tid, n, 128u,
                 [&](Reg<U32> i) { assign(k, acc, V<F32>(add(k, acc, V<F32>(ld(k, element(k, x, i)))))); });
  st(k, element(k, tile, tid), V<F32>(acc));
  bar_sync(k);
  auto v = ld_v<4>(k, tile.at(4));
  Reg<F32> s = add(k, v[0], V<F32>(v[3]));
  Kernel::Guard g(k, setp(k, Cmp::eq, tid, V<U32>(0u)), false);
  st(k, x, V<F32>(s));
  Module m(target);
  m.add(k);
  return m.text();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("emitted text has the PTX grammar's shape", "[ptx][emitter]") {
  std::string text = small_kernel(Target::sm_75);
  INFO(text);
  CHECK(text.find(".version 6.3\n.target sm_75\n.address_size 64\n") != std::string::npos);
  CHECK(text.find(".visible .entry small(\n\t.param .u64 x,\n\t.param .u32 n\n)\n.maxntid 128, 1, 1\n{") !=
        std::string::npos);
  CHECK(text.find("\t.shared .align 16 .b8 s_tile[512];") != std::string::npos);
  CHECK(text.find("ld.shared.v4.f32 {%f") != std::string::npos);
  CHECK(std::regex_search(text, std::regex(R"(\t@%p\d+ st\.global\.f32 \[%ud\d+\], %f\d+;)")));
  CHECK(std::regex_search(text, std::regex(R"(\$L_1:\n\tsetp\.lt\.u32 %p\d+, %u\d+, %u\d+;\n\t@%p\d+ bra \$L_0;)")));

  // Every line inside the body is a declaration, a label, or one (optionally guarded) instruction.
  const std::regex decl(R"(\t\.reg \.(pred|b16|b32|b64|u8|u16|u32|u64|s8|s16|s32|s64|f32|f64) %[a-z]+<\d+>;)");
  const std::regex shared(R"(\t\.shared \.align \d+ \.b8 [A-Za-z_][A-Za-z0-9_]*\[\d+\];)");
  const std::regex label(R"(\$L_\d+:)");
  const std::regex instruction(
      R"(\t(@!?%p\d+ )?[a-z][a-z0-9]*(\.[a-z0-9]+)*( (\{[^}]*\}|\[[^\]]*\]|[$%A-Za-z0-9_.\-]+)(, (\{[^}]*\}|\[[^\]]*\]|[$%A-Za-z0-9_.\-]+))*)?;)");
  bool in_body = false;
  std::map<std::string, int> declared;  // register stem -> count
  for (const std::string& line : lines_of(text)) {
    if (line == "{") {
      in_body = true;
      continue;
    }
    if (line == "}") break;
    if (!in_body) continue;
    INFO(line);
    bool ok = std::regex_match(line, decl) || std::regex_match(line, shared) || std::regex_match(line, label) ||
              std::regex_match(line, instruction);
    CHECK(ok);
  }
  // Registers are declared once per type, after the body was built: every use is below the count.
  std::smatch m;
  std::string rest = text;
  const std::regex decl_find(R"(\.reg \.[a-z0-9]+ %([a-z]+)<(\d+)>;)");
  while (std::regex_search(rest, m, decl_find)) {
    CHECK(declared.count(m[1]) == 0);
    declared[m[1]] = std::stoi(m[2]);
    rest = m.suffix();
  }
  const std::regex use(R"(%([a-z]+)(\d+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), use); it != std::sregex_iterator(); ++it) {
    std::string stem = (*it)[1];
    if (stem == "tid" || stem == "ntid" || stem == "ctaid" || stem == "nctaid" || stem == "laneid") continue;
    INFO(it->str());
    REQUIRE(declared.count(stem) == 1);
    CHECK(std::stoi((*it)[2]) < declared[stem]);
  }
}

TEST_CASE("generation is deterministic", "[ptx][emitter]") {
  CHECK(small_kernel(Target::sm_80) == small_kernel(Target::sm_80));
  for (const kernels::Generator* g : kernels::generators())
    CHECK(g->generate(0, Target::sm_86) == g->generate(0, Target::sm_86));
}

TEST_CASE(".version is the lowest the target and the instructions need", "[ptx][emitter]") {
  CHECK(small_kernel(Target::sm_80).find(".version 7.0\n") != std::string::npos);
  CHECK(small_kernel(Target::sm_86).find(".version 7.1\n") != std::string::npos);
  CHECK(small_kernel(Target::sm_89).find(".version 7.8\n") != std::string::npos);
  CHECK(small_kernel(Target::sm_90).find(".version 7.8\n") != std::string::npos);
  CHECK(small_kernel(Target::sm_120).find(".version 8.7\n") != std::string::npos);
  // An instruction the target lacks is an error naming it, not bad PTX.
  Kernel k("bf16", Target::sm_75);
  Reg<F32> f = mov<F32>(k, 1.0f);
  try {
    cvt<BF16>(k, f, Round::rn);
    FAIL("cvt to bf16 on sm_75 should throw");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::unsupported);
    CHECK(std::string(e.what()).starts_with("[ptx]"));
  }
  Kernel k80("bf16", Target::sm_80);
  cvt<BF16>(k80, mov<F32>(k80, 1.0f), Round::rn);
  CHECK(k80.version_needed() == 70);
}

TEST_CASE("generators: names, unknown configurations, launch geometry", "[ptx][generators]") {
  std::set<std::string_view> names;
  for (const kernels::Generator* g : kernels::generators()) {
    INFO(g->name);
    CHECK(names.insert(g->name).second);  // the module cache and the .entry names tell them apart by name
    CHECK_FALSE(g->ops.empty());
    CHECK_FALSE(g->configs.empty());
    CHECK_FALSE(g->params.empty());
    CHECK(kernels::find_generator(g->name) == g);
    for (std::size_t c = 0; c < g->configs.size(); ++c) {
      INFO(g->configs[c]);
      CHECK(g->find(g->configs[c]) == c);  // names are unique within the family
      std::string text = g->generate(c, Target::sm_80);
      CHECK(text.find(".visible .entry " + kernels::kernel_name(g->name, g->configs[c]) + "(") != std::string::npos);
      std::array<std::int64_t, 4> sizes = {3, 100, 70, 5};
      kernels::Launch l = g->geometry(c, sizes);
      for (int d = 0; d < 3; ++d) {
        CHECK(l.grid[d] >= 1);
        CHECK(l.block[d] >= 1);
      }
      CHECK(l.block[0] * l.block[1] * l.block[2] <= 1024);
      kernels::Launch none = g->geometry(c, {});  // missing sizes read as 1, never past the span
      CHECK(none.grid[0] >= 1);
    }
    CHECK_FALSE(g->find("no_such_config"));
    try {
      g->generate(g->configs.size(), Target::sm_80);
      FAIL("a configuration past the table accepted");
    } catch (const trine::Error& e) {
      CHECK(e.code() == trine::ErrorCode::invalid_argument);
    }
  }
  CHECK(kernels::find_generator("no_such_family") == nullptr);
}

// ---- ptxas ----
namespace {

std::string find_ptxas() {
  std::vector<std::filesystem::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0, end; start <= p.size(); start = end + 1) {
      end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      dirs.emplace_back(p.substr(start, end - start));
    }
  }
  if (const char* home = std::getenv("CUDA_HOME")) dirs.emplace_back(std::filesystem::path(home) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& d : dirs) {
    auto candidate = d / "ptxas";
    if (!d.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

struct PtxasResult {
  std::string kernel, target;
  bool ok = false;
  int registers = -1, smem = 0, spill_stores = -1, spill_loads = -1;
  std::string log;
};

// Theoretical occupancy (resident warps per SM over the most it holds) from ptxas's registers and
// static shared memory and the launch's block size, with each target's per-SM limits as NVIDIA's
// compute capability tables give them: threads, blocks, shared memory (1 KiB of it reserved per
// block from sm_80 on), 64K registers allocated per warp in units of 256.
struct SmLimits {
  int threads, blocks, smem;
  bool reserve_1k;
};
SmLimits sm_limits(const std::string& target) {
  if (target == "sm_75") return {1024, 16, 64 * 1024, false};
  if (target == "sm_80") return {2048, 32, 164 * 1024, true};
  if (target == "sm_86") return {1536, 16, 100 * 1024, true};
  if (target == "sm_89") return {1536, 24, 100 * 1024, true};
  if (target == "sm_90") return {2048, 32, 228 * 1024, true};
  return {1536, 32, 100 * 1024, true};  // sm_120
}
double occupancy(const std::string& target, int registers, int smem, int block_threads) {
  const SmLimits l = sm_limits(target);
  const int warps = (block_threads + 31) / 32;
  const int per_warp = (std::max(registers, 1) * 32 + 255) / 256 * 256;
  int blocks = std::min(l.blocks, l.threads / (warps * 32));
  blocks = std::min(blocks, 65536 / per_warp / warps);
  const int block_smem = smem + (l.reserve_1k ? 1024 : 0);
  if (block_smem > 0) blocks = std::min(blocks, l.smem / block_smem);
  return static_cast<double>(blocks * warps) / (l.threads / 32);
}

int number_before(const std::string& log, const std::string& suffix) {
  std::smatch m;
  if (std::regex_search(log, m, std::regex(R"((\d+) )" + suffix))) return std::stoi(m[1]);
  return -1;
}

PtxasResult run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& kernel, Target t,
                      const std::string& dir, int job) {
  PtxasResult r;
  r.kernel = kernel;
  r.target = std::string(target_name(t));
  std::string file = dir + "/job" + std::to_string(job) + ".ptx";
  std::ofstream(file) << ptx;
  std::string cmd = ptxas + " -arch=" + r.target + " -v " + file + " -o /dev/null 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) r.log += buf;
  r.ok = pclose(pipe) == 0;
  r.registers = number_before(r.log, "registers");
  int smem = number_before(r.log, "bytes smem");
  r.smem = smem < 0 ? 0 : smem;
  r.spill_stores = number_before(r.log, "bytes spill stores");
  r.spill_loads = number_before(r.log, "bytes spill loads");
  std::filesystem::remove(file);
  return r;
}

}  // namespace

TEST_CASE("every shipped kernel compiles with ptxas on every target, without spills", "[ptx][ptxas]") {
  std::string ptxas = find_ptxas();
  if (ptxas.empty()) {
    const char* allow = std::getenv("TRINE_ALLOW_NO_PTXAS");
    std::string why = "ptxas not found on PATH, under $CUDA_HOME/bin or /usr/local/cuda/bin";
    if (allow && std::string(allow) == "1") {
      WARN("SKIPPED: " << why << " (TRINE_ALLOW_NO_PTXAS=1)");
      return;
    }
    FAIL(why << "; install the CUDA toolkit or set TRINE_ALLOW_NO_PTXAS=1 to accept not checking the kernels");
  }
  struct Job {
    std::string kernel;
    Target target;
    std::string ptx;
    int block_threads;
  };
  std::vector<Job> jobs;
  for (const kernels::Generator* g : kernels::generators()) {
    for (std::size_t c = 0; c < g->configs.size(); ++c) {
      const std::vector<std::int64_t> sizes(4, 1024);
      const kernels::Launch l = g->geometry(c, sizes);
      const int threads = static_cast<int>(l.block[0] * l.block[1] * l.block[2]);
      const std::string name = std::string(g->name) + "." + std::string(g->configs[c]);
      for (Target t : all_targets) jobs.push_back(Job{name, t, g->generate(c, t), threads});
    }
  }
  std::string dir = (std::filesystem::temp_directory_path() / ("trine_ptxas_" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  std::vector<PtxasResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      results[i] = run_ptxas(ptxas, jobs[i].ptx, jobs[i].kernel, jobs[i].target, dir, int(i));
    }
  };
  // Two ptxas processes at a time: the build machines have two cores.
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  std::filesystem::remove_all(dir);

  std::printf("%-34s %-7s %5s %7s %7s %6s %4s\n", "kernel", "target", "regs", "smem", "spills", "block", "occ");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PtxasResult& r = results[i];
    std::printf("%-34s %-7s %5d %7d %3d/%-3d %6d %3.0f%%\n", r.kernel.c_str(), r.target.c_str(), r.registers, r.smem,
                r.spill_stores, r.spill_loads, jobs[i].block_threads,
                100 * occupancy(r.target, r.registers, r.smem, jobs[i].block_threads));
  }
  std::fflush(stdout);
  // TRINE_PTXAS_TABLE=file writes the table of docs/cuda_ptx.md: registers / occupancy per target.
  if (const char* table = std::getenv("TRINE_PTXAS_TABLE"); table && *table) {
    std::ofstream md(table);
    md << "| kernel.config | block | smem (B) |";
    for (Target t : all_targets) md << ' ' << target_name(t) << " |";
    md << "\n|---|---|---|";
    for (std::size_t t = 0; t < all_targets.size(); ++t) md << "---|";
    md << '\n';
    for (std::size_t i = 0; i < results.size(); i += all_targets.size()) {
      // shared memory as on most targets (sm_80's), with the targets that differ
      const int smem = results[i + 1].smem;
      md << "| " << results[i].kernel << " | " << jobs[i].block_threads << " | " << smem;
      for (std::size_t t = 0; t < all_targets.size(); ++t)
        if (results[i + t].smem != smem) md << " (" << results[i + t].target << ": " << results[i + t].smem << ")";
      md << " |";
      for (std::size_t t = 0; t < all_targets.size(); ++t) {
        const PtxasResult& r = results[i + t];
        char cell[32];
        std::snprintf(cell, sizeof cell, " %d / %.0f%% |", r.registers,
                      100 * occupancy(r.target, r.registers, r.smem, jobs[i + t].block_threads));
        md << cell;
      }
      md << '\n';
    }
  }
  for (const PtxasResult& r : results) {
    INFO(r.kernel << " " << r.target << "\n" << r.log);
    CHECK(r.ok);
    CHECK(r.registers > 0);
    CHECK(r.spill_stores == 0);
    CHECK(r.spill_loads == 0);
  }
}

// ---- the driver loader ----
TEST_CASE("the libcuda loader reports a missing driver with a reason", "[ptx][driver]") {
  trine::cuda::DriverProvider p = trine::cuda::load_libcuda("/nonexistent/libcuda.so.1");
  CHECK(p.api == nullptr);
  CHECK(p.reason.find("cannot open /nonexistent/libcuda.so.1") != std::string::npos);

  const trine::cuda::DriverProvider& system = trine::cuda::libcuda_provider();
  if (system.api == nullptr) {
    CHECK_FALSE(system.reason.empty());
  } else {
    CHECK(system.name.starts_with("libcuda.so.1"));
  }
  // The toolkit's stub library has every symbol but cannot start a driver.
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (std::filesystem::exists(stub)) {
    trine::cuda::DriverProvider s = trine::cuda::load_libcuda(stub);
    INFO(s.reason);
    CHECK(s.api == nullptr);
    CHECK(s.reason.find("cuInit(0) failed: CUDA_ERROR_") != std::string::npos);
  }
}

TEST_CASE("driver calls fail as trine::Error naming the op, the call and the error", "[ptx][driver]") {
  using namespace trine::cuda;
  DriverApi api;  // an empty table: every entry missing
  try {
    CUdeviceptr ptr = 0;
    TRINE_CU(&api, "matmul", cuMemAlloc, &ptr, 64);
    FAIL("missing entry not reported");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::driver_error);
    CHECK(std::string(e.what()) == "[matmul] cuMemAlloc(&ptr, 64) failed: CUDA_ERROR_NOT_SUPPORTED (801)");
  }
  api.cuCtxSynchronize = [] { return CUDA_ERROR_ILLEGAL_ADDRESS; };
  try {
    TRINE_CU(&api, "attention", cuCtxSynchronize);
    FAIL("error not reported");
  } catch (const trine::Error& e) {
    CHECK(std::string(e.what()) == "[attention] cuCtxSynchronize() failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  }
  api.cuMemAlloc = [](CUdeviceptr*, std::size_t) { return CUDA_ERROR_OUT_OF_MEMORY; };
  CUdeviceptr p = 0;
  CHECK_THROWS_MATCHES(TRINE_CU(&api, "copy", cuMemAlloc, &p, 1), trine::Error,
                       Catch::Predicate<trine::Error>(
                           [](const trine::Error& e) { return e.code() == trine::ErrorCode::out_of_memory; }));
  CHECK(std::string(result_name(nullptr, 12345)) == "CUDA_ERROR_(unnamed)");
  CHECK(std::string(result_name(nullptr, CUDA_ERROR_INVALID_PTX)) == "CUDA_ERROR_INVALID_PTX");
}

TEST_CASE("a rejected module load carries the JIT error log", "[ptx][driver]") {
  using namespace trine::cuda;
  DriverApi api;
  api.cuModuleLoadDataEx = [](CUmodule*, const void*, unsigned n, CUjit_option* options, void** values) {
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) std::snprintf(static_cast<char*>(values[i]), 64, "line 7: bad");
    }
    return CUDA_ERROR_INVALID_PTX;
  };
  try {
    load_module(&api, ".version 7.0", "softmax");
    FAIL("rejected PTX not reported");
  } catch (const trine::Error& e) {
    CHECK(e.code() == trine::ErrorCode::driver_error);
    CHECK(std::string(e.what()) ==
          "[softmax] cuModuleLoadDataEx(ptx) failed: CUDA_ERROR_INVALID_PTX (218); JIT log: line 7: bad");
  }
}
