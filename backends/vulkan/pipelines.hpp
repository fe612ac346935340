// Compute pipelines made on first use and kept: one per (shader, specialization constants). Every
// shader takes N storage buffers at set 0, bindings 0..N-1, and up to 128 bytes of push constants.
// Their VkPipelineCache is persisted under $XDG_CACHE_HOME/trine (else ~/.cache/trine), one file
// per device and driver, so a second process starts fast; a file that is not this device's and
// driver's cache is ignored, never handed to the driver.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

namespace trine::vulkan {

// SPIR-V compiled from backends/vulkan/shaders/*.comp at build time (shaders.cpp is generated).
struct EmbeddedShader {
  const char* name;  // the file name without .comp
  const std::uint32_t* words;
  std::size_t count;
};
std::span<const EmbeddedShader> embedded_shaders();

// The embedded shaders this process has made a pipeline of, on any device: what a test run
// dispatched (debug::shaders_never_dispatched compares it with embedded_shaders()).
std::vector<std::string> shaders_used();
// How many dispatches of `shader` (as the op files name it, any float-controls form) this process
// has recorded, on any device: Pipelines::get counts each.
std::uint64_t shader_dispatches(const std::string& shader);

inline constexpr std::uint32_t k_push_bytes = 128;
inline constexpr std::uint32_t k_max_bindings = 7;  // attention: q, k, v, y, valid, its report, mask

struct Pipeline {
  vk::Pipeline pipeline;
  vk::PipelineLayout layout;
  vk::DescriptorSetLayout set_layout;
};

class Pipelines {
 public:
  // `form`: the suffix of the shaders' float-controls form this device runs (DeviceCaps::shader_form).
  Pipelines(const vk::raii::Device& device, const vk::PhysicalDeviceProperties& props, std::string form);
  ~Pipelines();  // writes the pipeline cache file; never throws
  // The pipeline for `shader` with `bindings` storage buffers and the specialization constants
  // `spec` (constant_id i = spec[i]); made on first use. Thread-safe.
  Pipeline get(const char* shader, std::uint32_t bindings, std::span<const std::uint32_t> spec);

 private:
  struct Layout {
    vk::raii::DescriptorSetLayout set{nullptr};
    vk::raii::PipelineLayout pipeline{nullptr};
  };
  const vk::raii::Device& device_;
  vk::PhysicalDeviceProperties props_;
  std::string form_;
  std::string cache_path_;
  vk::raii::PipelineCache cache_{nullptr};
  std::mutex mu_;
  std::vector<Layout> layouts_;  // index = binding count
  std::map<std::string, vk::raii::ShaderModule> modules_;
  std::map<std::pair<std::string, std::vector<std::uint32_t>>, vk::raii::Pipeline> pipelines_;
};

}  // namespace trine::vulkan
