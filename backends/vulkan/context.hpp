// The Vulkan instance (with the validation layer and its messenger on request), the physical
// devices it finds, and one logical device per physical device, created on first use.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "backends/vulkan/pipelines.hpp"
#include "backends/vulkan/pool.hpp"
#include "trine/device.hpp"

namespace trine::vulkan {

// Which memory types storage and staging buffers come from. Storage is mapped (no staging) only
// in memory that is device-local and host-visible, coherent and cached: lavapipe, integrated GPUs.
// A discrete GPU's BAR (device-local, host-visible, coherent, not cached) is no such memory: the
// host reads it over PCIe uncached, and a readback from it ran at 60-120 MB/s on an H100. There,
// storage is device-local (preferring a type the host cannot see: the whole of VRAM), and staging
// prefers host-cached memory, which the host reads at memory speed.
struct MemoryChoice {
  std::uint32_t memory_type = 0;
  bool mapped = false;  // storage memory the host reads and writes directly
  std::uint32_t staging_type = 0;
  bool has_staging = false;
};
MemoryChoice choose_memory(const vk::PhysicalDeviceMemoryProperties& mem);

// What the ops and the memory code need to know about one physical device.
struct DeviceCaps {
  std::string name;
  vk::PhysicalDeviceType type = vk::PhysicalDeviceType::eOther;
  std::string driver;     // driver name, info and version, for DeviceInfo::driver
  bool software = false;  // device type CPU (lavapipe): never chosen automatically unless opted in
  std::uint32_t api_version = 0;
  std::uint32_t subgroup_size = 0;
  vk::SubgroupFeatureFlags subgroup_ops;
  std::uint32_t shared_memory = 0;
  std::uint32_t max_workgroup_invocations = 0;
  std::uint32_t max_workgroup_size[3] = {};
  std::uint32_t max_workgroup_count[3] = {};
  std::uint64_t max_storage_buffer_range = 0;
  std::uint64_t min_storage_offset_alignment = 0;
  std::uint32_t max_push_constants = 0;
  std::uint32_t max_allocation_count = 0;
  std::uint64_t max_allocation_size = 0;
  std::uint64_t heap_bytes = 0;  // the heap storage buffers come from
  std::uint32_t memory_type = 0;
  bool host_coherent = false;      // that memory type is host-visible and coherent: no staging
  std::uint32_t staging_type = 0;  // host-visible and coherent, for staging buffers (may equal memory_type)
  bool has_staging = false;
  bool robust_access = false;  // the device has robustBufferAccess (enabled unless gpu_validation)
  // TRINE_VULKAN_VALIDATION=gpu: the layer's GPU-assisted validation checks every shader access and
  // skips the out-of-bounds ones; robustBufferAccess stays off, or the layer would only warn.
  bool gpu_validation = false;
  // The workgroup reductions (reduce, softmax, norm) use their subgroup variants: the device has
  // subgroup arithmetic and vote in compute shaders with a size dividing the workgroup, and is not
  // a software device (lavapipe measured no faster with them), unless TRINE_VULKAN_SUBGROUPS=1
  // forces them (tests) or =0 rules them out.
  bool subgroup_reductions = false;
  bool subgroup_usable = false;  // what the device has, whatever the choice
  bool timeline = false;
  bool f16 = false, int8 = false, storage16 = false, storage8 = false;
  // shaderFloat64, enabled on the device where present: pow's double-precision shaders need it
  // (kernels/unary.cpp refuses pow without it).
  bool float64 = false;
  // VkPhysicalDeviceFloatControlsProperties: the shaders' float-controls form (common.glsl) the
  // pipelines take: "_ieee_denorm" where both are supported, "_ieee" where only NaN/inf are, else "".
  bool preserve_nan32 = false, preserve_denorm32 = false;
  // The device offers VK_KHR_cooperative_matrix (tensor-core tiles from shaders). No kernel uses it
  // yet (16-bit matmul runs the plain rows and tiled shaders); trine-info says which (issue 33).
  bool coop_matrix = false;
  const char* shader_form() const noexcept {
    return preserve_nan32 && preserve_denorm32 ? "_ieee_denorm" : preserve_nan32 ? "_ieee" : "";
  }
  std::uint32_t queue_family = 0;
  // Loop iterations one invocation may run before the driver silently cuts the loop short (0: no
  // such limit). llvmpipe (lavapipe) stops every shader loop near 65535 iterations to guard against
  // hangs, and a cut loop is a wrong answer, not an error: ops split or refuse work past this.
  std::uint32_t loop_budget = 0;
};

// Validation messages (warnings and errors), kept until someone takes them.
struct MessageLog {
  std::mutex mu;
  std::vector<std::string> messages;
  std::atomic<std::uint64_t> count{0};
  void add(std::string m);
  std::vector<std::string> take();
  // The messages after the first `since` ones, joined (for an error), without taking them.
  std::string since(std::uint64_t first);
};
MessageLog& message_log();

// One logical device: its compute queue, the timeline semaphore every submission signals, and the
// pipelines made on it.
class DeviceContext {
 public:
  DeviceContext(const vk::raii::PhysicalDevice& physical, const DeviceCaps& caps, int index);

  const DeviceCaps& caps() const noexcept { return caps_; }
  int index() const noexcept { return index_; }
  const vk::raii::Device& device() const noexcept { return device_; }
  const vk::raii::PhysicalDevice& physical() const noexcept { return physical_; }
  Pipelines& pipelines() noexcept { return *pipelines_; }
  // The memory every buffer on this device is bound in (memory.hpp allocates through it).
  MemoryPool& memory_pool() noexcept { return *memory_pool_; }
  const vk::raii::Semaphore& timeline() const noexcept { return timeline_; }

  // Submits one command buffer after `wait_value` of the timeline (0: no wait) and returns the
  // value it signals. Values increase in queue order: the queue is used under one lock.
  std::uint64_t submit(vk::CommandBuffer cb, std::uint64_t wait_value);
  // The timeline's current value (what the device has finished).
  std::uint64_t completed_value() const;
  std::uint64_t last_submitted() const noexcept { return last_value_.load(std::memory_order_acquire); }
  // Blocks until the timeline reaches `value`, at most `timeout_ns`; true when reached.
  bool wait_value(std::uint64_t value, std::uint64_t timeout_ns) const;
  // An empty command buffer (recorded once) submitted on the timeline as every submission is and
  // waited for as a sync call waits: the driver's floor under a call (debug::bare_submit).
  void submit_empty_and_wait();

  bool lost() const noexcept { return lost_.load(); }
  void mark_lost() noexcept { lost_.store(true); }

  // A finished submission's command pool (with its command buffers) and descriptor pools, kept
  // for the next recording instead of destroyed: creating them anew was part of every sync call.
  // Reset by whoever takes them. At most k_recycled_kept are kept.
  struct Recycled {
    vk::raii::CommandPool pool{nullptr};
    std::vector<vk::raii::CommandBuffer> cbs;  // freed before their pool
    std::vector<vk::raii::DescriptorPool> descriptor_pools;
  };
  std::optional<Recycled> take_recycled();
  void give_back(Recycled r) noexcept;
  static constexpr std::size_t k_recycled_kept = 16;

 private:
  vk::raii::PhysicalDevice physical_;
  DeviceCaps caps_;
  int index_;
  vk::raii::Device device_;
  vk::raii::Queue queue_;
  vk::raii::Semaphore timeline_;
  std::unique_ptr<Pipelines> pipelines_;
  std::unique_ptr<MemoryPool> memory_pool_;  // after device_: destroyed before it
  std::mutex queue_mu_;
  std::uint64_t next_value_ = 1;
  std::atomic<std::uint64_t> last_value_{0};
  std::atomic<bool> lost_{false};
  std::mutex recycled_mu_;
  std::vector<Recycled> recycled_;  // after device_: destroyed before it
  std::mutex empty_mu_;
  vk::raii::CommandPool empty_pool_{nullptr};
  vk::raii::CommandBuffer empty_cb_{nullptr};  // freed before its pool
};

// TRINE_VULKAN_VALIDATION: unset or 0 off, 1 the Khronos validation layer (with synchronization
// validation), gpu that and GPU-assisted validation; anything else is Error(invalid_argument).
enum class Validation { off, on, gpu };

class Instance {
 public:
  // Throws trine::Error: invalid_argument for a bad TRINE_VULKAN_VALIDATION, device_unavailable
  // when Vulkan cannot start.
  Instance();
  const std::vector<DeviceInfo>& infos() const noexcept { return infos_; }
  const DeviceCaps& caps(int index) const { return caps_[static_cast<std::size_t>(index)]; }
  std::size_t count() const noexcept { return caps_.size(); }
  // The logical device for `index`, created on first use (Error(device_unavailable) if it fails).
  DeviceContext& device(int index);
  bool validation() const noexcept { return validation_ != Validation::off; }

 private:
  vk::raii::Context context_;
  vk::raii::Instance instance_{nullptr};
  std::optional<vk::raii::DebugUtilsMessengerEXT> messenger_;
  std::vector<vk::raii::PhysicalDevice> physical_;
  std::vector<DeviceCaps> caps_;
  std::vector<DeviceInfo> infos_;
  std::vector<std::unique_ptr<DeviceContext>> devices_;
  std::vector<std::unique_ptr<std::once_flag>> once_;
  std::vector<std::string> failed_;
  Validation validation_ = Validation::off;
};

}  // namespace trine::vulkan
