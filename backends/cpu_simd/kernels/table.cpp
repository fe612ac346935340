// Assembles this ISA's kernel table from the op-family files, one per TRINE_FAMILY of ops.def (compiled once per ISA).
#include "backends/cpu_simd/isa.hpp"

namespace trine::cpu::TRINE_ISA_NS {

const KernelTable& table() {
  static const KernelTable t = [] {
    KernelTable k;
    k.isa = TRINE_ISA_NAME;
#define TRINE_FAMILY(name) register_##name(k);
#include "trine/ops.def"
    require_complete(k);  // a kernel file that forgot an entry fails here, at start-up
    return k;
  }();
  return t;
}

}  // namespace trine::cpu::TRINE_ISA_NS
