// `trine-ptx run`: parses the command line, builds the kernel's arguments (scalars and buffers the
// checker knows as allocations), runs the kernel on the emulator, prints findings, an ERROR
// SUMMARY line and, on request, the buffers.
#include "backends/cuda_ptx/emulator/run_cli.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/float_util.hpp"
#include "backends/cuda_ptx/emulator/interp.hpp"
#include "backends/cuda_ptx/emulator/parser.hpp"

namespace trine::cuda::emu {
namespace {

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Arg {
  std::vector<std::uint8_t> bytes;  // a scalar's value, or the buffer's contents
  bool buffer = false;
  std::string type;
  std::uint64_t count = 0;
  std::uint64_t device = 0;  // a buffer's address, aligned to 256
  std::unique_ptr<std::uint8_t[]> storage;
};

int type_size(const std::string& t) {
  if (t == "u8" || t == "s8" || t == "b8") return 1;
  if (t == "u16" || t == "s16" || t == "b16" || t == "f16" || t == "bf16") return 2;
  if (t == "u32" || t == "s32" || t == "b32" || t == "f32") return 4;
  if (t == "u64" || t == "s64" || t == "b64" || t == "f64") return 8;
  throw Usage("unknown type '" + t + "' (u8..u64, s8..s64, b8..b64, f16, bf16, f32, f64)");
}

// One element of type t holding v (a number written in decimal, hex or floating notation).
void put_value(const std::string& t, const std::string& text, std::uint8_t* out) {
  char* end = nullptr;
  const int size = type_size(t);
  if (t[0] == 'f' || t == "bf16") {
    const double v = std::strtod(text.c_str(), &end);
    if (*end || text.empty()) throw Usage("'" + text + "' is not a number");
    std::uint64_t bits = 0;
    if (t == "f64") bits = bits_f64(v);
    else if (t == "f32") bits = bits_f32(static_cast<float>(v));
    else if (t == "f16") bits = f16_from(v);
    else bits = bf16_from(v);
    std::memcpy(out, &bits, static_cast<std::size_t>(size));
    return;
  }
  const long long v = t[0] == 's' ? std::strtoll(text.c_str(), &end, 0) : static_cast<long long>(std::strtoull(text.c_str(), &end, 0));
  if (*end || text.empty()) throw Usage("'" + text + "' is not an integer");
  std::memcpy(out, &v, static_cast<std::size_t>(size));
}

// The seeded pattern: small values that exercise signs and fractions and never overflow.
void put_pattern(const std::string& t, std::uint64_t i, std::uint8_t* out) {
  const std::uint64_t h = (i * 2654435761u + 12345) % 1000;
  if (t[0] == 'f' || t == "bf16") put_value(t, std::to_string((static_cast<double>(h) - 500.0) / 256.0), out);
  else put_value(t, std::to_string(h % 100), out);
}

Arg parse_arg(const std::string& spec) {
  Arg a;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) throw Usage("argument '" + spec + "' is not TYPE:VALUE or buf:TYPE:COUNT");
  if (spec.compare(0, colon, "buf") != 0) {
    a.type = spec.substr(0, colon);
    a.bytes.resize(static_cast<std::size_t>(type_size(a.type)));
    put_value(a.type, spec.substr(colon + 1), a.bytes.data());
    return a;
  }
  a.buffer = true;
  const std::string rest = spec.substr(colon + 1);
  const auto c2 = rest.find(':');
  if (c2 == std::string::npos) throw Usage("buffer '" + spec + "' needs buf:TYPE:COUNT");
  a.type = rest.substr(0, c2);
  const int size = type_size(a.type);
  const auto eq = rest.find('=', c2);
  const std::string count_text = rest.substr(c2 + 1, eq == std::string::npos ? std::string::npos : eq - c2 - 1);
  char* end = nullptr;
  a.count = std::strtoull(count_text.c_str(), &end, 0);
  if (*end || count_text.empty() || a.count == 0) throw Usage("buffer '" + spec + "' has no element count");
  const std::uint64_t bytes = a.count * static_cast<std::uint64_t>(size);
  a.storage.reset(new std::uint8_t[bytes + 256]());
  a.device = (reinterpret_cast<std::uint64_t>(a.storage.get()) + 255) & ~std::uint64_t{255};
  auto* data = reinterpret_cast<std::uint8_t*>(a.device);
  if (eq == std::string::npos) {
    for (std::uint64_t i = 0; i < a.count; ++i) put_pattern(a.type, i, data + i * static_cast<std::uint64_t>(size));
  } else if (rest[eq + 1] == '@') {
    std::ifstream f(rest.substr(eq + 2), std::ios::binary);
    if (!f) throw Usage("cannot read '" + rest.substr(eq + 2) + "'");
    f.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(bytes));
  } else {
    std::vector<std::uint8_t> one(static_cast<std::size_t>(size));
    put_value(a.type, rest.substr(eq + 1), one.data());
    for (std::uint64_t i = 0; i < a.count; ++i) std::memcpy(data + i * static_cast<std::uint64_t>(size), one.data(), one.size());
  }
  a.bytes.resize(8);
  std::memcpy(a.bytes.data(), &a.device, 8);
  return a;
}

void parse_dims(const std::string& text, std::uint32_t out[3]) {
  std::stringstream ss(text);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    if (i == 3) throw Usage("'" + text + "' has more than three dimensions");
    char* end = nullptr;
    const auto v = std::strtoul(part.c_str(), &end, 0);
    if (*end || part.empty() || v == 0) throw Usage("'" + text + "' is not X[,Y,Z] with positive sizes");
    out[i++] = static_cast<std::uint32_t>(v);
  }
}

std::string element_text(const std::string& t, const std::uint8_t* p) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<std::size_t>(type_size(t)));
  char buf[64];
  if (t == "f32") std::snprintf(buf, sizeof buf, "%g", static_cast<double>(as_f32(bits)));
  else if (t == "f64") std::snprintf(buf, sizeof buf, "%g", as_f64(bits));
  else if (t == "f16") std::snprintf(buf, sizeof buf, "%g", static_cast<double>(f16_to_f32(static_cast<std::uint16_t>(bits))));
  else if (t == "bf16") std::snprintf(buf, sizeof buf, "%g", static_cast<double>(bf16_to_f32(static_cast<std::uint16_t>(bits))));
  else if (t[0] == 's') {
    const int shift = 64 - 8 * type_size(t);
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(static_cast<std::int64_t>(bits << shift) >> shift));
  } else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(bits));
  return buf;
}

int run(int argc, char** argv) {
  int i = 1;
  if (i < argc && std::string(argv[i]) == "run") ++i;
  std::string file, kernel_name, dump_dir;
  LaunchConfig config;
  bool dump = false;
  std::vector<Arg> args;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--kernel") kernel_name = value();
    else if (a == "--grid") parse_dims(value(), config.grid);
    else if (a == "--block") parse_dims(value(), config.block);
    else if (a == "--arg") args.push_back(parse_arg(value()));
    else if (a == "--shared") config.dynamic_shared = static_cast<std::uint32_t>(std::strtoul(value().c_str(), nullptr, 0));
    else if (a == "--threads") config.threads = std::max(1, std::atoi(value().c_str()));
    else if (a == "--no-check") config.check.enabled = false;
    else if (a == "--dump") dump = true;
    else if (a == "--dump-dir") dump_dir = value();
    else if (!a.empty() && a[0] == '-') throw Usage("unknown option " + a);
    else if (file.empty()) file = a;
    else throw Usage("unexpected argument " + a);
  }
  if (file.empty()) throw Usage("no PTX file given");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Usage("cannot read " + file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Module module = load_ptx(text);
  if (kernel_name.empty() && module.kernels.size() == 1) kernel_name = module.kernels[0].name;
  const Kernel* k = module.find(kernel_name);
  if (!k) throw Usage("no kernel '" + kernel_name + "' in " + file);
  if (args.size() != k->params.size())
    throw Usage("kernel " + k->name + " takes " + std::to_string(k->params.size()) + " parameters, " + std::to_string(args.size()) + " --arg given");
  AllocationTable table;
  std::vector<void*> ptrs;
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (args[p].bytes.size() != k->params[p].size)
      throw Usage("--arg " + std::to_string(p + 1) + " has " + std::to_string(args[p].bytes.size()) + " bytes; parameter " +
                  k->params[p].name + " has " + std::to_string(k->params[p].size));
    if (args[p].buffer) table.add(args[p].device, args[p].count * static_cast<std::uint64_t>(type_size(args[p].type)), "arg " + std::to_string(p + 1));
    ptrs.push_back(args[p].bytes.data());
  }
  const auto params = pack_params(*k, ptrs.data());
  config.params = params.data();
  config.allocations = &table;
  const LaunchResult r = launch_kernel(module, *k, config);
  std::printf("========= TRINE PTX EMULATOR\n");
  std::istringstream report(r.report);
  for (std::string line; std::getline(report, line);) std::printf("========= %s\n", line.c_str());
  if (r.result != CUDA_SUCCESS && r.report.empty()) std::printf("========= launch failed with CUresult %d\n", r.result);
  const int errors = r.result == CUDA_SUCCESS ? 0 : std::max(1, r.errors);
  std::printf("========= ERROR SUMMARY: %d error%s\n", errors, errors == 1 ? "" : "s");
  for (std::size_t p = 0; p < args.size(); ++p) {
    if (!args[p].buffer) continue;
    const auto* data = reinterpret_cast<const std::uint8_t*>(args[p].device);
    const int size = type_size(args[p].type);
    if (dump) {
      std::printf("arg %zu (%s[%llu]):", p + 1, args[p].type.c_str(), static_cast<unsigned long long>(args[p].count));
      for (std::uint64_t e = 0; e < args[p].count; ++e) std::printf(" %s", element_text(args[p].type, data + e * static_cast<std::uint64_t>(size)).c_str());
      std::printf("\n");
    }
    if (!dump_dir.empty()) {
      std::ofstream f(dump_dir + "/arg" + std::to_string(p + 1) + ".bin", std::ios::binary);
      f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(args[p].count * static_cast<std::uint64_t>(size)));
    }
  }
  return errors ? 1 : 0;
}

}  // namespace

int run_ptx_command(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Usage& e) {
    std::fprintf(stderr, "trine-ptx run: %s\nusage: trine-ptx run FILE.ptx --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] "
                         "[--arg u32:1000 | f32:0.5 | buf:f32:1024[=0|=@file]]... [--shared BYTES] [--no-check] "
                         "[--threads N] [--dump] [--dump-dir DIR]\n", e.what());
  } catch (const PtxError& e) {
    std::fprintf(stderr, "trine-ptx run: %s: %s\n", e.code() == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_INVALID_PTX", e.what());
  }
  return 2;
}

}  // namespace trine::cuda::emu
