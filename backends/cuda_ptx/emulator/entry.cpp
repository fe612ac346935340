// What libtrine_ptx_emulator.so exports to libtrine (driver/emulator_loader.cpp): its Driver API
// provider and its checker's last report, as C symbols found with dlsym. Both sides are built
// together, so the C++ types they pass are the same.
#include <string>

#include "backends/cuda_ptx/emulator/driver_provider.hpp"

extern "C" __attribute__((visibility("default"))) void trine_ptx_emulator_provider(trine::cuda::DriverProvider* out) {
  *out = trine::cuda::emu::emulator_provider();
}

extern "C" __attribute__((visibility("default"))) void trine_ptx_emulator_last_report(std::string* out) {
  *out = trine::cuda::emu::last_report();
}
