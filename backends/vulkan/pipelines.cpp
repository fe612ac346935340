// Pipelines and their layouts, made on first use from the embedded SPIR-V.
#include "backends/vulkan/pipelines.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "backends/cache_dir.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

namespace {

struct UsedShaders {
  std::mutex mu;
  std::set<std::string> names;
  std::map<std::string, std::uint64_t> dispatches;  // by the name the op files dispatch
};
UsedShaders& used_shaders() {
  static UsedShaders used;
  return used;
}

std::string cache_path(const vk::PhysicalDeviceProperties& p) {
  const std::filesystem::path dir = detail::cache_dir();
  if (dir.empty()) return {};
  char name[96];
  std::snprintf(name, sizeof(name), "vulkan-%04x-%04x-%08x.pipelines", p.vendorID, p.deviceID, p.driverVersion);
  return (dir / name).string();
}

// Whether `data` starts with this device's VkPipelineCacheHeaderVersionOne (vendor, device and
// pipelineCacheUUID): anything else (another driver's cache, a truncated or corrupt file) is ignored.
bool cache_matches(const std::vector<char>& data, const vk::PhysicalDeviceProperties& p) {
  if (data.size() < 16 + VK_UUID_SIZE) return false;
  std::uint32_t header[4];
  std::memcpy(header, data.data(), sizeof(header));
  return header[0] >= 16 + VK_UUID_SIZE && header[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         header[2] == p.vendorID && header[3] == p.deviceID &&
         std::memcmp(data.data() + 16, p.pipelineCacheUUID.data(), VK_UUID_SIZE) == 0;
}

}  // namespace

Pipelines::Pipelines(const vk::raii::Device& device, const vk::PhysicalDeviceProperties& props, std::string form)
    : device_(device), props_(props), form_(std::move(form)), cache_path_(cache_path(props)) {
  std::vector<char> data;
  if (!cache_path_.empty()) {
    std::ifstream in(cache_path_, std::ios::binary);
    if (in) data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!cache_matches(data, props_)) data.clear();
  }
  cache_ = TRINE_VK(device_.createPipelineCache(vk::PipelineCacheCreateInfo({}, data.size(), data.data())));
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

Pipelines::~Pipelines() {
  if (cache_path_.empty()) return;
  try {
    const std::vector<std::uint8_t> data = cache_.getData();
    std::filesystem::create_directories(std::filesystem::path(cache_path_).parent_path());
    // Written beside and renamed over: a reader never sees half a file.
    const std::string tmp = cache_path_ + "." + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
      if (!out) {
        out.close();
        std::filesystem::remove(tmp);
        return;
      }
    }
    std::filesystem::rename(tmp, cache_path_);
  } catch (...) {  // a cache that cannot be written costs the next process time, nothing else
  }
}

std::vector<std::string> shaders_used() {
  std::lock_guard<std::mutex> lock(used_shaders().mu);
  return {used_shaders().names.begin(), used_shaders().names.end()};
}

std::uint64_t shader_dispatches(const std::string& shader) {
  std::lock_guard<std::mutex> lock(used_shaders().mu);
  const auto it = used_shaders().dispatches.find(shader);
  return it == used_shaders().dispatches.end() ? 0 : it->second;
}

Pipeline Pipelines::get(const char* shader, std::uint32_t bindings, std::span<const std::uint32_t> spec) {
  if (bindings == 0 || bindings > k_max_bindings)
    throw Error(ErrorCode::internal, std::string("[vulkan] shader ") + shader + " asks for a bad binding count");
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(std::string(shader), std::vector<std::uint32_t>(spec.begin(), spec.end()));
  {
    std::lock_guard<std::mutex> used_lock(used_shaders().mu);
    ++used_shaders().dispatches[key.first];
  }
  auto it = pipelines_.find(key);
  if (it == pipelines_.end()) {
    auto mod = modules_.find(key.first);
    if (mod == modules_.end()) {
      const std::string name = key.first + form_;  // the device's float-controls form of it
      const EmbeddedShader* found = nullptr;
      for (const auto& s : embedded_shaders())
        if (name == s.name) found = &s;
      if (!found) throw Error(ErrorCode::internal, "[vulkan] no embedded shader named " + name);
      vk::ShaderModuleCreateInfo info({}, found->count * 4, found->words);
      mod = modules_.emplace(key.first, TRINE_VK(device_.createShaderModule(info))).first;
      std::lock_guard<std::mutex> used_lock(used_shaders().mu);
      used_shaders().names.insert(name);
    }
    std::vector<vk::SpecializationMapEntry> entries;
    for (std::uint32_t i = 0; i < spec.size(); ++i) entries.push_back({i, i * 4, 4});
    vk::SpecializationInfo spec_info(static_cast<std::uint32_t>(entries.size()), entries.data(), spec.size() * 4,
                                     spec.data());
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *mod->second, "main",
                                            spec.empty() ? nullptr : &spec_info);
    vk::ComputePipelineCreateInfo info({}, stage, *layouts_[bindings].pipeline);
    it = pipelines_.emplace(key, TRINE_VK(device_.createComputePipeline(cache_, info))).first;
  }
  return {*it->second, *layouts_[bindings].pipeline, *layouts_[bindings].set};
}

}  // namespace trine::vulkan
