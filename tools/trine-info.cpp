// trine-info: the devices this machine has, the CPU ISA chosen and why, and why any backend is missing.
#include <cstdio>
#include <exception>

#include "trine/debug.hpp"
#include "trine/dispatch.hpp"
#include "trine/trine.hpp"

int main() {
  try {
    std::printf("trine %s\n", trine::version());
    std::printf("backends:\n");
    for (const auto& s : trine::backend_status()) {
      std::printf("  %-7s %-13s %s\n", trine::device_kind_name(s.kind),
                  s.available ? "available" : (s.built ? "unavailable" : "not built"), s.reason.c_str());
    }
    std::printf("devices:\n");
    for (const auto& d : trine::devices()) {
      std::printf("  %-9s %s\n            %s\n", d.device.str().c_str(), d.name.c_str(), d.capabilities.c_str());
    }
    std::printf("cpu isa: %s (%s)\n", trine::debug::cpu_isa().c_str(), trine::debug::cpu_isa_reason().c_str());
    std::printf("cpu bf16 x bf16 matmul: %s\n", trine::debug::cpu_bf16_matmul().c_str());
    // Where automatic placement may put ops, and from which numbers (docs/dispatch.md).
    const auto& profile = trine::dispatch::active_profile();
    std::printf("dispatch: cost model from %s", profile.source.c_str());
    if (profile.source == "built-in defaults") std::printf(" (trine-bench --calibrate writes %s)", trine::dispatch::profile_path().c_str());
    std::printf("\n");
    for (const auto& d : trine::devices()) {
      std::printf("  %-9s %s%s\n", d.device.str().c_str(), d.software ? "software device, " : "",
                  trine::dispatch::software_allowed(d.device) ? "a candidate for automatic placement"
                                                              : "pinned use only (TRINE_ALLOW_SOFTWARE=1 opts in)");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trine-info: %s\n", e.what());
    return 1;
  }
}
