// Opening libtrine_ptx_emulator.so: the two C entry points it exports (emulator/entry.cpp) and
// where the library is looked for.
#include "backends/cuda_ptx/driver/emulator_loader.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace trine::cuda {
namespace {

// The file name, with the SONAME's version so a stale library of another version is not taken.
constexpr const char* k_library = "libtrine_ptx_emulator.so." TRINE_EMULATOR_SOVERSION;

using ProviderFn = void (*)(DriverProvider*);
using ReportFn = void (*)(std::string*);

struct Opened {
  DriverProvider provider;
  ReportFn report = nullptr;
};

// The folder libtrine itself was loaded from (the emulator is installed beside it), or empty.
std::filesystem::path own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&emulator_provider), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  auto path = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : path.parent_path();
}

Opened open_emulator() {
  Opened o;
  o.provider.emulated = true;
  const std::filesystem::path beside = own_folder() / k_library;
  void* lib = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string tried = beside.string();
  if (!lib) {
    lib = dlopen(k_library, RTLD_NOW | RTLD_LOCAL);
    tried += ", then the loader's search path";
  }
  if (!lib) {
    const char* why = dlerror();
    o.provider.reason = std::string("TRINE_CUDA_EMULATOR=1 asks for the PTX emulator, but ") + k_library +
                        " did not open (looked at " + tried + ")" + (why ? std::string(": ") + why : "");
    return o;
  }
  auto provider = reinterpret_cast<ProviderFn>(dlsym(lib, "trine_ptx_emulator_provider"));
  o.report = reinterpret_cast<ReportFn>(dlsym(lib, "trine_ptx_emulator_last_report"));
  if (!provider || !o.report) {
    o.provider.reason = std::string(k_library) + " lacks its entry points (a library of another build?)";
    o.report = nullptr;
    return o;  // the library stays open: unloading code that may have run is not worth the risk
  }
  provider(&o.provider);
  return o;
}

const Opened& opened() {
  static const Opened o = open_emulator();
  return o;
}

}  // namespace

const DriverProvider& emulator_provider() { return opened().provider; }

std::string emulator_last_report() {
  std::string report;
  if (const Opened& o = opened(); o.report) o.report(&report);
  return report;
}

}  // namespace trine::cuda
