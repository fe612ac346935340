// A kernel generator: one kernel of an op family with its shipped configurations, the PTX of a
// configuration for a target, its parameter list and its launch geometry. Each family file
// (kernels/<family>.cpp) defines its generators and registers them with its ops (plan.hpp);
// generators() is what they registered.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_ptx/ptx/types.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine::cuda::kernels {

// The storage dtype of a kernel's tensor input.
enum class Elem { f32, f16, bf16, i32 };

struct Launch {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;  // all shared memory is static today
};

// A family file keeps its configurations as a table of typed entries ({name, the data it builds
// from}); a plan picks an entry by its data and passes its index, and the generator builds from the
// entry. The names are names only: the .entry's suffix, the module cache key, trine-ptx's argument.
struct Generator {
  std::string_view name;                  // "unary", "matmul_tiled", ...
  std::vector<OpKind> ops;                // the ops of ops.def it serves
  std::vector<std::string_view> configs;  // the shipped configurations' names, by index
  // The module's PTX for configuration `config` (an index into configs) and a target: one .entry
  // named kernel_name(name, configs[config]). Throws Error(invalid_argument) for an index past the
  // table, Error(unsupported) for a target that lacks an instruction the configuration needs.
  std::string (*generate)(std::size_t config, ptx::Target target);
  // The kernel's parameters in launch order (what cuLaunchKernel's params array must hold).
  std::string_view params;
  // How problem sizes map to the grid and block (documented in `geometry_sizes`).
  std::string_view geometry_sizes;
  Launch (*geometry)(std::size_t config, std::span<const std::int64_t> sizes);
  // The kernel covers any amount of work with a grid-stride loop, so a launch caps its grid at
  // what the device keeps resident.
  bool resident_grid = false;

  // The index of the configuration named `config` exactly (command lines name them), or nullopt.
  std::optional<std::size_t> find(std::string_view config) const noexcept {
    for (std::size_t i = 0; i < configs.size(); ++i)
      if (configs[i] == config) return i;
    return std::nullopt;
  }
};

// Every generator the family files register, in ops.def's family order: what trine-ptx lists and
// the ptxas test compiles. Building it checks the op table complete (plan.hpp's table()).
const std::vector<const Generator*>& generators();
// The generator named `name` (command lines name them), or nullptr.
const Generator* find_generator(std::string_view name);
// "trine_<family>_<config>": the .entry name cuModuleGetFunction looks up.
std::string kernel_name(std::string_view family, std::string_view config);

// Helpers the generators share.
[[noreturn]] void unknown_config(std::string_view family, std::size_t config, std::size_t count);
std::uint32_t blocks_for(std::int64_t work, std::int64_t per_block, std::int64_t cap = 65535);
// A launch's grid: x up to 2^31 - 1 blocks, y and z up to 65535 (every target trine builds for).
inline constexpr std::int64_t max_grid_x = 2147483647;
inline constexpr std::int64_t max_grid_yz = 65535;
// sizes[i], or 1 where the caller passed fewer sizes (a geometry rule never reads past the span).
std::int64_t size_at(std::span<const std::int64_t> sizes, std::size_t i) noexcept;

// Entry `config` of a family's configuration table; Error(invalid_argument) past its end.
template <class Config, std::size_t N>
const Config& config_at(const Config (&table)[N], std::size_t config, std::string_view family) {
  if (config >= N) unknown_config(family, config, N);
  return table[config];
}

// The names of a configuration table's entries, in order.
template <class Config, std::size_t N>
std::vector<std::string_view> config_names(const Config (&table)[N]) {
  std::vector<std::string_view> names;
  for (const Config& c : table) names.push_back(c.name);
  return names;
}

// The index of the first entry `match` accepts, or nullopt: how a plan picks its configuration.
template <class Config, std::size_t N, class Match>
std::optional<std::size_t> find_config(const Config (&table)[N], Match&& match) {
  for (std::size_t i = 0; i < N; ++i)
    if (match(table[i])) return i;
  return std::nullopt;
}

// The same where the family ships a configuration for every call its plan takes: none is a bug,
// Error(internal) naming the family.
template <class Config, std::size_t N, class Match>
std::size_t config_index(const Config (&table)[N], std::string_view family, Match&& match) {
  if (auto i = find_config(table, match)) return *i;
  throw Error(ErrorCode::internal,
              "[cuda] kernel family '" + std::string(family) + "' ships no configuration for this call");
}

}  // namespace trine::cuda::kernels
