// Assembles this ISA's kernel table from the op-family files (compiled once per ISA).
#include "backends/cpu_simd/isa.hpp"

namespace trine::cpu::TRINE_ISA_NS {

const KernelTable& table() {
  static const KernelTable t = [] {
    KernelTable k;
    k.isa = TRINE_ISA_NAME;
    register_gemm(k);
    register_conv2d(k);
    register_elementwise(k);
    register_softmax(k);
    register_norm(k);
    register_reduce(k);
    register_attention(k);
    register_rope(k);
    register_convert(k);
    require_complete(k);  // a kernel file that forgot an entry fails here, at start-up
    return k;
  }();
  return t;
}

}  // namespace trine::cpu::TRINE_ISA_NS
