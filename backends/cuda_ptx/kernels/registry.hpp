// The kernel generators: one entry per op family with its shipped configurations, the generator
// that prints a configuration's PTX for a target, its parameter list and its launch geometry.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_ptx/ptx/types.hpp"

namespace trine::cuda::kernels {

struct Launch {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;  // all shared memory is static today
};

struct Generator {
  std::string_view name;             // the family: "unary", "matmul_tiled", ...
  std::string_view ops;              // the ops of ops.def it serves
  std::vector<std::string> configs;  // shipped configurations
  // The module's PTX for one configuration and target: one .entry named kernel_name(name, config).
  // Throws Error(invalid_argument) for an unknown configuration, Error(unsupported) for a target
  // that lacks an instruction the configuration needs.
  std::string (*generate)(const std::string& config, ptx::Target target);
  // The kernel's parameters in launch order (what cuLaunchKernel's params array must hold).
  std::string_view params;
  // How problem sizes map to the grid and block (documented in `geometry_sizes`).
  std::string_view geometry_sizes;
  Launch (*geometry)(const std::string& config, std::span<const std::int64_t> sizes);
};

const std::vector<Generator>& generators();
const Generator* find_generator(std::string_view name) noexcept;
// "trine_<family>_<config>": the .entry name cuModuleGetFunction looks up.
std::string kernel_name(std::string_view family, std::string_view config);

// Helpers the generators share.
[[noreturn]] void unknown_config(std::string_view family, std::string_view config);
std::uint32_t blocks_for(std::int64_t work, std::int64_t per_block, std::int64_t cap = 65535);
// sizes[i], or 1 where the caller passed fewer sizes (a geometry rule never reads past the span).
std::int64_t size_at(std::span<const std::int64_t> sizes, std::size_t i) noexcept;

// The families (one file each).
Generator unary_generator();
Generator binary_generator();
Generator bias_act_generator();
Generator reduce_generator();
Generator softmax_generator();
Generator norm_generator();
Generator dot_generator();
Generator gemv_generator();
Generator cast_generator();
Generator rope_generator();
Generator matmul_simple_generator();
Generator matmul_tiled_generator();
Generator matmul_mma_generator();
Generator conv2d_generator();
Generator attention_generator();

}  // namespace trine::cuda::kernels
