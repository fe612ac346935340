// Pipelines and their layouts, made on first use from the embedded SPIR-V.
#include "backends/vulkan/pipelines.hpp"

#include <cstring>

#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

Pipelines::Pipelines(const vk::raii::Device& device) : device_(device) {
  layouts_.resize(k_max_bindings + 1);
  const vk::PushConstantRange push{vk::ShaderStageFlagBits::eCompute, 0, k_push_bytes};
  for (std::uint32_t n = 1; n <= k_max_bindings; ++n) {
    std::vector<vk::DescriptorSetLayoutBinding> b;
    for (std::uint32_t i = 0; i < n; ++i)
      b.push_back({i, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute});
    layouts_[n].set = TRINE_VK(device_.createDescriptorSetLayout(vk::DescriptorSetLayoutCreateInfo({}, b)));
    vk::DescriptorSetLayout set = *layouts_[n].set;
    layouts_[n].pipeline = TRINE_VK(device_.createPipelineLayout(vk::PipelineLayoutCreateInfo({}, set, push)));
  }
}

Pipeline Pipelines::get(const char* shader, std::uint32_t bindings, std::span<const std::uint32_t> spec) {
  if (bindings == 0 || bindings > k_max_bindings)
    throw Error(ErrorCode::internal, std::string("[vulkan] shader ") + shader + " asks for a bad binding count");
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(std::string(shader), std::vector<std::uint32_t>(spec.begin(), spec.end()));
  auto it = pipelines_.find(key);
  if (it == pipelines_.end()) {
    auto mod = modules_.find(key.first);
    if (mod == modules_.end()) {
      const EmbeddedShader* found = nullptr;
      for (const auto& s : embedded_shaders())
        if (key.first == s.name) found = &s;
      if (!found) throw Error(ErrorCode::internal, std::string("[vulkan] no embedded shader named ") + shader);
      vk::ShaderModuleCreateInfo info({}, found->count * 4, found->words);
      mod = modules_.emplace(key.first, TRINE_VK(device_.createShaderModule(info))).first;
    }
    std::vector<vk::SpecializationMapEntry> entries;
    for (std::uint32_t i = 0; i < spec.size(); ++i) entries.push_back({i, i * 4, 4});
    vk::SpecializationInfo spec_info(static_cast<std::uint32_t>(entries.size()), entries.data(), spec.size() * 4,
                                     spec.data());
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *mod->second, "main",
                                            spec.empty() ? nullptr : &spec_info);
    vk::ComputePipelineCreateInfo info({}, stage, *layouts_[bindings].pipeline);
    it = pipelines_.emplace(key, TRINE_VK(device_.createComputePipeline(nullptr, info))).first;
  }
  return {*it->second, *layouts_[bindings].pipeline, *layouts_[bindings].set};
}

}  // namespace trine::vulkan
