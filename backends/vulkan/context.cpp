// Instance, validation messenger, physical-device capabilities and logical devices.
#include "backends/vulkan/context.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backends/vulkan/debug.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {

void MessageLog::add(std::string m) {
  std::lock_guard<std::mutex> lock(mu);
  messages.push_back(std::move(m));
  count.fetch_add(1);
}

std::vector<std::string> MessageLog::take() {
  std::lock_guard<std::mutex> lock(mu);
  return std::exchange(messages, {});
}

std::string MessageLog::since(std::uint64_t first) {
  std::lock_guard<std::mutex> lock(mu);
  const std::uint64_t taken = count.load() - messages.size();  // messages already taken
  std::string out;
  for (std::size_t i = first > taken ? first - taken : 0; i < messages.size(); ++i) out += messages[i] + "\n";
  return out;
}

MessageLog& message_log() {
  static MessageLog log;
  return log;
}

std::vector<std::string> take_validation_messages() { return message_log().take(); }

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// TRINE_VULKAN_SUBGROUPS: unset (the device decides), 0 or 1; anything else is an error.
int subgroups_from_env() {
  const char* v = std::getenv("TRINE_VULKAN_SUBGROUPS");
  if (!v || !*v) return -1;
  if (std::strcmp(v, "0") == 0) return 0;
  if (std::strcmp(v, "1") == 0) return 1;
  throw Error(ErrorCode::invalid_argument, std::string("[vulkan] TRINE_VULKAN_SUBGROUPS must be 0 or 1, got '") + v + "'");
}

Validation validation_from_env() {
  const char* v = std::getenv("TRINE_VULKAN_VALIDATION");
  if (!v || !*v || std::strcmp(v, "0") == 0) return Validation::off;
  if (std::strcmp(v, "1") == 0) return Validation::on;
  if (std::strcmp(v, "gpu") == 0) return Validation::gpu;
  throw Error(ErrorCode::invalid_argument,
              std::string("[vulkan] TRINE_VULKAN_VALIDATION must be 0, 1 or gpu, got '") + v + "'");
}

// Every validation warning and error lands in the log (and on stderr, so a failing test shows it).
VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  std::string m = std::string("validation ") + level + ": " + (data && data->pMessage ? data->pMessage : "?");
  std::fprintf(stderr, "[vulkan] %s\n", m.c_str());
  message_log().add(std::move(m));
  return VK_FALSE;
}

std::string version_str(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

std::string subgroup_ops_str(vk::SubgroupFeatureFlags f) {
  std::string s;
  auto add = [&](vk::SubgroupFeatureFlagBits b, const char* n) {
    if (!(f & b)) return;
    if (!s.empty()) s += '|';
    s += n;
  };
  add(vk::SubgroupFeatureFlagBits::eBasic, "basic");
  add(vk::SubgroupFeatureFlagBits::eVote, "vote");
  add(vk::SubgroupFeatureFlagBits::eArithmetic, "arithmetic");
  add(vk::SubgroupFeatureFlagBits::eBallot, "ballot");
  add(vk::SubgroupFeatureFlagBits::eShuffle, "shuffle");
  add(vk::SubgroupFeatureFlagBits::eShuffleRelative, "shuffle_relative");
  add(vk::SubgroupFeatureFlagBits::eClustered, "clustered");
  add(vk::SubgroupFeatureFlagBits::eQuad, "quad");
  return s.empty() ? "none" : s;
}

}  // namespace

MemoryChoice choose_memory(const vk::PhysicalDeviceMemoryProperties& mem) {
  using F = vk::MemoryPropertyFlagBits;
  const vk::MemoryPropertyFlags local = F::eDeviceLocal, host = F::eHostVisible | F::eHostCoherent,
                                cached = host | F::eHostCached;
  // The first type with every flag of `want` and none of `avoid`; -1 where there is none.
  auto find = [&](vk::MemoryPropertyFlags want, vk::MemoryPropertyFlags avoid) {
    for (std::uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
      const auto f = mem.memoryTypes[i].propertyFlags;
      if ((f & want) == want && !(f & avoid)) return static_cast<int>(i);
    }
    return -1;
  };
  MemoryChoice m;
  if (const int t = find(local | cached, {}); t >= 0) {
    m.memory_type = m.staging_type = static_cast<std::uint32_t>(t);
    m.mapped = m.has_staging = true;
    return m;
  }
  int t = find(local, F::eHostVisible);
  if (t < 0) t = find(local, {});
  m.memory_type = static_cast<std::uint32_t>(t < 0 ? 0 : t);
  int st = find(cached, {});
  if (st < 0) st = find(host, local);
  if (st < 0) st = find(host, {});
  m.has_staging = st >= 0;
  m.staging_type = static_cast<std::uint32_t>(st < 0 ? 0 : st);
  return m;
}

namespace {

DeviceCaps read_caps(const vk::raii::PhysicalDevice& pd) {
  DeviceCaps c;
  auto props = pd.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties,
                                 vk::PhysicalDeviceDriverProperties>();
  const auto& p = props.get<vk::PhysicalDeviceProperties2>().properties;
  const auto& sg = props.get<vk::PhysicalDeviceSubgroupProperties>();
  c.name = p.deviceName.data();
  c.type = p.deviceType;
  c.software = p.deviceType == vk::PhysicalDeviceType::eCpu;
  {
    const auto& dp = props.get<vk::PhysicalDeviceDriverProperties>();
    c.driver = std::string(dp.driverName.data()) + " " + dp.driverInfo.data() + " (" + std::to_string(p.driverVersion) + ")";
  }
  c.api_version = p.apiVersion;
  c.subgroup_size = sg.subgroupSize;
  // Half of llvmpipe's 65535, leaving room for the shaders' short loops around the long one.
  if (props.get<vk::PhysicalDeviceDriverProperties>().driverID == vk::DriverId::eMesaLlvmpipe) c.loop_budget = 32768;
  c.subgroup_ops = sg.supportedOperations;
  {
    using F = vk::SubgroupFeatureFlagBits;
    const bool ops = (sg.supportedOperations & F::eBasic) && (sg.supportedOperations & F::eArithmetic) &&
                     (sg.supportedOperations & F::eVote);
    const bool stage = static_cast<bool>(sg.supportedStages & vk::ShaderStageFlagBits::eCompute);
    // The reduction shaders' workgroups are 128 wide: whole subgroups, at most 128 partials.
    const bool size = sg.subgroupSize >= 4 && sg.subgroupSize <= 128 && 128 % sg.subgroupSize == 0;
    c.subgroup_reductions = ops && stage && size && !c.software;
    c.subgroup_usable = ops && stage && size;
  }
  c.shared_memory = p.limits.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  }
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  c.min_storage_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  c.max_push_constants = p.limits.maxPushConstantsSize;
  c.max_allocation_count = p.limits.maxMemoryAllocationCount;
  auto p11 = pd.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceMaintenance3Properties,
                               vk::PhysicalDeviceFloatControlsProperties>();
  c.max_allocation_size = p11.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize;
  {
    const auto& fc = p11.get<vk::PhysicalDeviceFloatControlsProperties>();
    c.preserve_nan32 = fc.shaderSignedZeroInfNanPreserveFloat32;
    c.preserve_denorm32 = fc.shaderDenormPreserveFloat32;
  }

  auto feats = pd.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                               vk::PhysicalDeviceVulkan12Features>();
  const auto& f10 = feats.get<vk::PhysicalDeviceFeatures2>().features;
  const auto& f11 = feats.get<vk::PhysicalDeviceVulkan11Features>();
  const auto& f12 = feats.get<vk::PhysicalDeviceVulkan12Features>();
  c.robust_access = f10.robustBufferAccess;
  c.float64 = f10.shaderFloat64;
  c.timeline = f12.timelineSemaphore;
  c.f16 = f12.shaderFloat16;
  c.int8 = f12.shaderInt8;
  c.storage16 = f11.storageBuffer16BitAccess;
  c.storage8 = f12.storageBuffer8BitAccess;

  for (const auto& e : pd.enumerateDeviceExtensionProperties())
    if (std::string_view(e.extensionName.data()) == "VK_KHR_cooperative_matrix") c.coop_matrix = true;

  const auto mem = pd.getMemoryProperties();
  const MemoryChoice m = choose_memory(mem);
  c.memory_type = m.memory_type;
  c.host_coherent = m.mapped;
  c.staging_type = m.staging_type;
  c.has_staging = m.has_staging;
  // Tests take the discrete-GPU path on lavapipe: storage memory treated as unmappable, every
  // upload and readback through a staging buffer and a copy on the device.
  if (env_on("TRINE_VULKAN_FORCE_STAGING")) c.host_coherent = false;
  // Tests give lavapipe a discrete GPU's shape: a largest allocation below maxStorageBufferRange
  // (an H100: 4292870144 bytes against 4 GiB), so a storage can be in range and still not fit.
  if (const char* env = std::getenv("TRINE_VULKAN_MAX_ALLOCATION_BYTES"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end == '\0' && v > 0) c.max_allocation_size = std::min<std::uint64_t>(c.max_allocation_size, v);
  }
  c.heap_bytes = mem.memoryHeaps[mem.memoryTypes[c.memory_type].heapIndex].size;

  const auto families = pd.getQueueFamilyProperties();
  c.queue_family = UINT32_MAX;
  for (std::uint32_t i = 0; i < families.size(); ++i) {
    if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
      c.queue_family = i;
      break;
    }
  }
  return c;
}

std::string capability_line(const DeviceCaps& c) {
  auto mib = [](std::uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
  return std::string("type=") + vk::to_string(c.type) + (c.software ? " (software)" : "") + "; vulkan " +
         version_str(c.api_version) + "; subgroup " + std::to_string(c.subgroup_size) + " (" +
         subgroup_ops_str(c.subgroup_ops) + "), reductions " + (c.subgroup_reductions ? "on" : "off") + "; shared " +
         std::to_string(c.shared_memory / 1024) + " KiB; workgroup <= " + std::to_string(c.max_workgroup_invocations) +
         " [" + std::to_string(c.max_workgroup_size[0]) + "," + std::to_string(c.max_workgroup_size[1]) + "," +
         std::to_string(c.max_workgroup_size[2]) + "], count <= [" + std::to_string(c.max_workgroup_count[0]) + "," +
         std::to_string(c.max_workgroup_count[1]) + "," + std::to_string(c.max_workgroup_count[2]) +
         "]; maxStorageBufferRange " + mib(c.max_storage_buffer_range) + "; largest allocation " +
         mib(c.max_allocation_size) + "; heap " + mib(c.heap_bytes) +
         (c.host_coherent ? " host-visible coherent" : " device-local") + "; f16 " + (c.f16 ? "yes" : "no") + ", f64 " +
         (c.float64 ? "yes" : "no") + ", int8 " + (c.int8 ? "yes" : "no") + "; shaders keep " +
         (c.preserve_nan32 && c.preserve_denorm32 ? "NaN/inf and subnormals"
          : c.preserve_nan32                      ? "NaN/inf (subnormals may flush)"
                                                  : "what the driver keeps (no float controls)") +
         "; robustBufferAccess " +
         (!c.robust_access   ? "absent"
          : c.gpu_validation ? "off (GPU-assisted validation checks every access)"
                             : "on") +
         (c.coop_matrix ? "; cooperative matrices offered (VK_KHR_cooperative_matrix), no kernel uses them yet"
                        : "; no cooperative matrices (VK_KHR_cooperative_matrix absent)") +
         (c.loop_budget ? "; shader loops cut at ~65535 iterations (ops split or refuse past " +
                              std::to_string(c.loop_budget) + ")"
                        : "");
}

}  // namespace

DeviceContext::DeviceContext(const vk::raii::PhysicalDevice& physical, const DeviceCaps& caps, int index)
    : physical_(physical), caps_(caps), index_(index), device_(nullptr), queue_(nullptr), timeline_(nullptr) {
  const float priority = 1.0f;
  vk::DeviceQueueCreateInfo queue_info({}, caps_.queue_family, 1, &priority);
  // robustBufferAccess: an out-of-range shader access is discarded instead of corrupting memory
  // (on lavapipe the device's memory is the host heap). Under GPU-assisted validation it stays off:
  // the instrumented shaders skip out-of-bounds accesses themselves, and the layer reports them as
  // errors only on a device without robustness (with it, as warnings a layer setting can mute).
  vk::PhysicalDeviceFeatures2 f10;
  f10.features.robustBufferAccess = caps_.robust_access && !caps_.gpu_validation;
  f10.features.shaderFloat64 = caps_.float64;
  vk::PhysicalDeviceVulkan12Features f12;
  f12.timelineSemaphore = VK_TRUE;
  f10.pNext = &f12;
  vk::DeviceCreateInfo info({}, queue_info);
  info.pNext = &f10;
  device_ = TRINE_VK(physical_.createDevice(info));
  queue_ = TRINE_VK(device_.getQueue(caps_.queue_family, 0));
  vk::SemaphoreTypeCreateInfo type(vk::SemaphoreType::eTimeline, 0);
  timeline_ = TRINE_VK(device_.createSemaphore(vk::SemaphoreCreateInfo({}, &type)));
  pipelines_ = std::make_unique<Pipelines>(device_, physical_.getProperties(), caps_.shader_form());
  memory_pool_ = std::make_unique<MemoryPool>(device_, physical_, caps_, index_);
}

std::uint64_t DeviceContext::submit(vk::CommandBuffer cb, std::uint64_t wait_value) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  const std::uint64_t signal = next_value_;
  const vk::PipelineStageFlags stage = vk::PipelineStageFlagBits::eAllCommands;
  vk::Semaphore sem = *timeline_;
  vk::TimelineSemaphoreSubmitInfo tinfo(wait_value ? 1u : 0u, &wait_value, 1, &signal);
  vk::SubmitInfo info(wait_value ? 1u : 0u, &sem, &stage, 1, &cb, 1, &sem);
  info.pNext = &tinfo;
  try {
    TRINE_VK(queue_.submit(info));
  } catch (const Error&) {
    mark_lost();
    throw;
  }
  ++next_value_;
  last_value_.store(signal, std::memory_order_release);
  return signal;
}

void DeviceContext::submit_empty_and_wait() {
  std::lock_guard<std::mutex> lock(empty_mu_);
  if (!*empty_cb_) {
    empty_pool_ = TRINE_VK(device_.createCommandPool(vk::CommandPoolCreateInfo({}, caps_.queue_family)));
    auto cbs = TRINE_VK(device_.allocateCommandBuffers(
        vk::CommandBufferAllocateInfo(*empty_pool_, vk::CommandBufferLevel::ePrimary, 1)));
    empty_cb_ = std::move(cbs.front());
    TRINE_VK(empty_cb_.begin(vk::CommandBufferBeginInfo{}));
    TRINE_VK(empty_cb_.end());
  }
  if (!wait_value(submit(*empty_cb_, 0), UINT64_MAX)) {
    throw Error(ErrorCode::driver_error, "[bare_submit] vulkan:" + std::to_string(index_) + ": the wait timed out");
  }
}

std::optional<DeviceContext::Recycled> DeviceContext::take_recycled() {
  std::lock_guard<std::mutex> lock(recycled_mu_);
  if (recycled_.empty()) return std::nullopt;
  Recycled r = std::move(recycled_.back());
  recycled_.pop_back();
  return r;
}

void DeviceContext::give_back(Recycled r) noexcept {
  if (lost() || !*r.pool) return;  // after a device loss nothing is reused
  std::lock_guard<std::mutex> lock(recycled_mu_);
  if (recycled_.size() < k_recycled_kept) recycled_.push_back(std::move(r));
}

std::uint64_t DeviceContext::completed_value() const { return TRINE_VK(timeline_.getCounterValue()); }

bool DeviceContext::wait_value(std::uint64_t value, std::uint64_t timeout_ns) const {
  vk::Semaphore sem = *timeline_;
  vk::SemaphoreWaitInfo info({}, sem, value);
  const vk::Result r = TRINE_VK(device_.waitSemaphores(info, timeout_ns));
  return r == vk::Result::eSuccess;
}

Instance::Instance() : validation_(validation_from_env()) {
  const int subgroups = subgroups_from_env();
  const bool validation = validation_ != Validation::off;
  try {
    vk::ApplicationInfo app("trine", 1, "trine", 1, VK_API_VERSION_1_2);
    std::vector<const char*> layers, extensions;
    vk::DebugUtilsMessengerCreateInfoEXT messenger_info(
        {}, vk::DebugUtilsMessageSeverityFlagBitsEXT::eWarning | vk::DebugUtilsMessageSeverityFlagBitsEXT::eError,
        vk::DebugUtilsMessageTypeFlagBitsEXT::eGeneral | vk::DebugUtilsMessageTypeFlagBitsEXT::eValidation |
            vk::DebugUtilsMessageTypeFlagBitsEXT::ePerformance,
        &on_message);
    if (validation) {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    vk::InstanceCreateInfo info({}, &app, layers, extensions);
    // Synchronization validation checks the barriers the recorder computes; TRINE_VULKAN_VALIDATION=gpu
    // adds GPU-assisted validation: the layer instruments every shader so that a storage-buffer
    // access out of bounds is skipped and reported (its gpuav_buffer_oob setting, on by default;
    // layer 1.3.239 bounds an access by its VkBuffer's size, not by the binding's range).
    std::vector<vk::ValidationFeatureEnableEXT> features{vk::ValidationFeatureEnableEXT::eSynchronizationValidation};
    if (validation_ == Validation::gpu) features.push_back(vk::ValidationFeatureEnableEXT::eGpuAssisted);
    vk::ValidationFeaturesEXT validation_features(features, {});
    // The messenger also sees instance creation and destruction.
    if (validation) {
      validation_features.pNext = &messenger_info;
      info.pNext = &validation_features;
    }
    instance_ = TRINE_VK(context_.createInstance(info));
    if (validation) messenger_.emplace(TRINE_VK(instance_.createDebugUtilsMessengerEXT(messenger_info)));
    physical_ = TRINE_VK(instance_.enumeratePhysicalDevices());
  } catch (const Error& e) {
    throw Error(ErrorCode::device_unavailable,
                std::string(e.what()) + (validation ? " (TRINE_VULKAN_VALIDATION needs the Khronos "
                                                      "validation layer installed)"
                                                    : ""));
  }
  for (std::size_t i = 0; i < physical_.size(); ++i) {
    DeviceCaps c = read_caps(physical_[i]);
    c.gpu_validation = validation_ == Validation::gpu;
    if (subgroups >= 0) c.subgroup_reductions = subgroups == 1 && c.subgroup_usable;
    const int index = static_cast<int>(i);
    infos_.push_back({Device{DeviceKind::vulkan, index}, c.name, capability_line(c), c.software, c.driver});
    caps_.push_back(std::move(c));
    devices_.emplace_back();
    once_.push_back(std::make_unique<std::once_flag>());
    failed_.emplace_back();
  }
}

DeviceContext& Instance::device(int index) {
  const auto i = static_cast<std::size_t>(index);
  std::call_once(*once_[i], [&] {
    const DeviceCaps& c = caps_[i];
    try {
      if (c.api_version < VK_API_VERSION_1_2)
        throw Error(ErrorCode::device_unavailable, "needs Vulkan 1.2, device has " + version_str(c.api_version));
      if (!c.timeline) throw Error(ErrorCode::device_unavailable, "no timeline semaphores");
      if (c.queue_family == UINT32_MAX) throw Error(ErrorCode::device_unavailable, "no compute queue");
      devices_[i] = std::make_unique<DeviceContext>(physical_[i], c, index);
    } catch (const Error& e) {
      failed_[i] = e.what();
    }
  });
  if (!devices_[i]) {
    throw Error(ErrorCode::device_unavailable,
                "[vulkan] vulkan:" + std::to_string(index) + " (" + caps_[i].name + ") could not start: " + failed_[i]);
  }
  return *devices_[i];
}

}  // namespace trine::vulkan
