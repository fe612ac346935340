// trine-info: the devices this machine has, the CPU ISA chosen and why, and why any backend is missing.
#include <cstdio>
#include <exception>

#include "trine/debug.hpp"
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
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trine-info: %s\n", e.what());
    return 1;
  }
}
