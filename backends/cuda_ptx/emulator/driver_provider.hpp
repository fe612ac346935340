// The Driver API provider backed by the PTX emulator: the same function table libcuda fills, so
// the cuda_ptx backend runs unchanged on the CPU, checker reports included.
#pragma once

#include <string>

#include "backends/cuda_ptx/driver/driver_api.hpp"
#include "backends/cuda_ptx/emulator/interp.hpp"

namespace trine::cuda::emu {

// The emulated device: shaped like an sm_80 part and named as emulated. Always available.
DriverProvider emulator_provider();

// The checker's findings for the most recent launch that had any (empty when none yet).
std::string last_report();

// Checker settings for later launches (on by default; TRINE_EMU_CHECK=0 turns it off) and the
// number of host threads CTAs run on (TRINE_EMU_THREADS, default the hardware threads).
void set_check_options(const CheckOptions& options);
void set_cta_threads(int threads);

}  // namespace trine::cuda::emu
