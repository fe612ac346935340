// The PTX emulator's provider of the Driver API table, from its own library: libtrine does not
// contain the emulator (about 4.5k lines users do not ship), and opens libtrine_ptx_emulator.so only
// when TRINE_CUDA_EMULATOR=1 asks for the emulated device.
#pragma once

#include <string>

#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda {

// Opens the emulator's library once per process (beside libtrine first, then by the loader's
// search path) and returns its provider. Never throws: without the library the provider has
// api == nullptr and says where it looked.
const DriverProvider& emulator_provider();

// The emulator's checker findings for its most recent launch that had any; empty when none, or
// when the emulator was never opened.
std::string emulator_last_report();

}  // namespace trine::cuda
