// trine-ptx: prints the PTX of any cuda_ptx kernel for a target and configuration, lists the
// kernels (--list), and runs any PTX file's kernel on the emulator with its checker (`run`).
#include <cstdio>
#include <cstring>
#include <string>

#include "backends/cuda_ptx/emulator/run_cli.hpp"
#include "backends/cuda_ptx/kernels/generator.hpp"
#include "trine/error.hpp"

namespace {

using trine::cuda::kernels::Generator;
using trine::cuda::ptx::Target;

void usage() {
  std::fputs(
      "usage: trine-ptx --list\n"
      "       trine-ptx <family> <config> [sm_75|sm_80|sm_86|sm_89|sm_90|sm_120]   (default sm_80)\n"
      "       trine-ptx run FILE.ptx --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--arg SPEC]...\n"
      "                 [--shared BYTES] [--no-check] [--threads N] [--dump] [--dump-dir DIR]\n"
      "             runs one kernel of any PTX file on the emulator and prints the checker's findings;\n"
      "             SPEC: u32:1000, f32:0.5, buf:f32:1024 (seeded), buf:f32:1024=0, buf:f32:1024=@FILE\n",
      stderr);
}

int list() {
  for (const Generator* g : trine::cuda::kernels::generators()) {
    std::string ops;
    for (trine::OpKind op : g->ops) ops += std::string(ops.empty() ? "" : " ") + trine::op_info(op).name;
    std::printf("%s  (ops: %s)\n", std::string(g->name).c_str(), ops.c_str());
    std::printf("  params: %.*s\n", static_cast<int>(g->params.size()), g->params.data());
    std::printf("  launch: %.*s\n", static_cast<int>(g->geometry_sizes.size()), g->geometry_sizes.data());
    std::printf("  configs:");
    for (std::string_view c : g->configs) std::printf(" %.*s", static_cast<int>(c.size()), c.data());
    std::printf("\n");
  }
  return 0;
}

// One shipped kernel's module; the names are looked up among the shipped ones, exactly.
int print(const char* family, const char* config, const char* target_name) {
  const Generator* g = trine::cuda::kernels::find_generator(family);
  if (!g) {
    std::fprintf(stderr, "trine-ptx: no kernel family '%s' (see --list)\n", family);
    return 1;
  }
  Target target = Target::sm_80;
  if (target_name) {
    auto t = trine::cuda::ptx::parse_target(target_name);
    if (!t) {
      std::fprintf(stderr, "trine-ptx: unknown target '%s'\n", target_name);
      return 1;
    }
    target = *t;
  }
  const auto index = g->find(config);
  if (!index) {
    std::fprintf(stderr, "trine-ptx: [ptx] kernel family '%s' has no configuration '%s'\n", family, config);
    return 1;
  }
  std::fputs(g->generate(*index, target).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Any PTX file, ours or not, on the emulator with the checker: compute-sanitizer's report format.
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) return trine::cuda::emu::run_ptx_command(argc - 1, argv + 1);
  try {
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) return list();
    if (argc < 3 || argc > 4) {
      usage();
      return 1;
    }
    return print(argv[1], argv[2], argc == 4 ? argv[3] : nullptr);
  } catch (const trine::Error& e) {
    std::fprintf(stderr, "trine-ptx: %s\n", e.what());
    return 1;
  }
}
