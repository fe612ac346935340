// The table of kernel generators, built once.
#include "backends/cuda_ptx/kernels/registry.hpp"

namespace trine::cuda::kernels {

const std::vector<Generator>& generators() {
  static const std::vector<Generator> table = [] {
    return std::vector<Generator>{
        unary_generator(),      binary_generator(), bias_act_generator(),      reduce_generator(),
        softmax_generator(),    norm_generator(),   dot_generator(),           gemv_generator(),
        cast_generator(),       rope_generator(),   matmul_simple_generator(), matmul_tiled_generator(),
        matmul_mma_generator(), conv2d_generator(), attention_generator(),
    };
  }();
  return table;
}

const Generator* find_generator(std::string_view name) noexcept {
  for (const Generator& g : generators()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

}  // namespace trine::cuda::kernels
