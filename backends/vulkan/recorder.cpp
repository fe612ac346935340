// One command buffer per submission, with exactly the buffer barriers its commands need: a command
// that reads a buffer an earlier command wrote, or writes one an earlier command touched, waits
// for it; independent commands run without barriers between them.
#include "backends/vulkan/recorder.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "backends/assert.hpp"
#include "backends/backend.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/vk_check.hpp"
#include "tensor/memory_cache.hpp"

namespace trine::vulkan {

namespace {
constexpr std::uint32_t k_sets_per_pool = 64;

struct Hazard {
  bool read = false;
  bool written = false;
};

constexpr auto k_device_stages = vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer;
}  // namespace

struct Recorder::State {
  explicit State(DeviceContext& c) : ctx(c) {}
  ~State() {
    // A recording kept for replays goes when the backend drops it (at exit, or to free memory):
    // its temporaries go straight back to the driver, not into a cache that may be released already.
    for (const Temporary& t : temporaries) {
      if (reusable) {
        t.backend->deallocate(t.device.index, t.alloc);
      } else {
        detail::cached_deallocate(*t.backend, t.device, t.alloc, t.bytes, t.kind);
      }
    }
    // The submission has finished (or was never submitted): its pools go back for reuse.
    ctx.give_back(DeviceContext::Recycled{std::move(pool), std::move(cbs), std::move(descriptor_pools)});
  }

  vk::raii::CommandBuffer& cb() noexcept { return cbs[used - 1]; }

  DeviceContext& ctx;
  bool reusable = false;
  vk::raii::CommandPool pool{nullptr};
  std::vector<vk::raii::CommandBuffer> cbs;  // [0, used) recorded, the rest reset
  std::size_t used = 0;
  std::vector<vk::raii::DescriptorPool> descriptor_pools;  // [0, pools_used) in use, the rest reset
  std::size_t pools_used = 0;
  std::uint32_t sets_in_pool = k_sets_per_pool;
  // Back to the memory cache when the submission completes (the state goes after the device is done).
  struct Temporary {
    Allocation* alloc;
    std::size_t bytes;
    detail::MemoryKind kind;
    detail::Backend* backend;
    Device device;
  };
  std::vector<Temporary> temporaries;
  struct HostCopy {
    const unsigned char* src;
    void* dst;
    std::size_t bytes;
  };
  std::vector<HostCopy> before;  // host uploads into mapped memory, run before each submission
  std::vector<HostCopy> after;   // host copies out of mapped memory, run once the device has finished
  // report_words: what the device wrote (a temporary), and where the host reads it (the same when
  // mapped, else a staging copy finish() records)
  struct Report {
    Allocation* words;
    Allocation* host;
    std::size_t count;
    std::size_t entry;
    WordsCheck check;
  };
  std::vector<Report> reports;
  std::size_t entry = 0;                         // set_entry
  std::unordered_map<VkBuffer, Hazard> hazards;  // of the open command buffer
  bool open = false;                             // cb() is being recorded
  bool cut = false;                              // the next command starts a new command buffer
  bool finished = false;
};

Recorder::Recorder(DeviceContext& ctx, bool reusable) : ctx_(ctx), state_(std::make_shared<State>(ctx)) {
  state_->reusable = reusable;
}
Recorder::~Recorder() = default;

const DeviceCaps& Recorder::caps() const noexcept { return ctx_.caps(); }

void Recorder::begin_if_needed() {
  State& s = *state_;
  if (s.open && !s.cut) return;
  if (s.open) {
    TRINE_VK(s.cb().end());
    s.open = false;
  }
  s.cut = false;
  const auto& dev = ctx_.device();
  if (!*s.pool) {
    if (auto r = ctx_.take_recycled()) {  // a finished submission's pools, reset
      TRINE_VK(r->pool.reset({}));
      for (auto& dp : r->descriptor_pools) TRINE_VK(dp.reset());
      s.pool = std::move(r->pool);
      s.cbs = std::move(r->cbs);
      s.descriptor_pools = std::move(r->descriptor_pools);
    } else {
      s.pool = TRINE_VK(dev.createCommandPool(
          vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eTransient, ctx_.caps().queue_family)));
    }
  }
  if (s.used == s.cbs.size()) {
    auto more = TRINE_VK(
        dev.allocateCommandBuffers(vk::CommandBufferAllocateInfo(*s.pool, vk::CommandBufferLevel::ePrimary, 1)));
    s.cbs.push_back(std::move(more.front()));
  }
  ++s.used;
  const vk::CommandBufferUsageFlags flags =
      s.reusable ? vk::CommandBufferUsageFlags{} : vk::CommandBufferUsageFlagBits::eOneTimeSubmit;
  TRINE_VK(s.cb().begin(vk::CommandBufferBeginInfo(flags)));
  // Work submitted earlier on this queue (the storages' last writers, or the previous command
  // buffer of this recording) before anything here: one barrier whose first scope is every
  // earlier command in queue order.
  vk::MemoryBarrier before(vk::AccessFlagBits::eMemoryWrite,
                           vk::AccessFlagBits::eMemoryRead | vk::AccessFlagBits::eMemoryWrite);
  s.cb().pipelineBarrier(vk::PipelineStageFlagBits::eAllCommands, k_device_stages, {}, before, {}, {});
  s.hazards.clear();
  s.open = true;
}

// Barriers for the hazards `bindings` create against earlier commands, then records their accesses.
void Recorder::access(std::span<const Binding> bindings) {
  State& s = *state_;
  std::vector<vk::BufferMemoryBarrier> barriers;
  for (const Binding& b : bindings) {
    VkBuffer buf = *b.alloc->buffer;
    auto it = s.hazards.find(buf);
    if (it == s.hazards.end()) continue;
    const bool conflict = it->second.written || (b.write && it->second.read);
    if (!conflict) continue;
    const bool dup = std::any_of(barriers.begin(), barriers.end(), [&](const vk::BufferMemoryBarrier& m) {
      return static_cast<VkBuffer>(m.buffer) == buf;
    });
    if (!dup) {
      barriers.push_back(
          vk::BufferMemoryBarrier(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite |
                                      vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eTransferRead,
                                  vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite |
                                      vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite,
                                  VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED, buf, 0, VK_WHOLE_SIZE));
    }
    s.hazards.erase(it);
  }
  if (!barriers.empty()) s.cb().pipelineBarrier(k_device_stages, k_device_stages, {}, {}, barriers, {});
  for (const Binding& b : bindings) {
    Hazard& h = s.hazards[*b.alloc->buffer];
    h.read = h.read || !b.write;
    h.written = h.written || b.write;
  }
}

void Recorder::dispatch(const char* shader, std::initializer_list<Binding> bindings, const void* push,
                        std::size_t push_bytes, std::uint64_t groups, std::initializer_list<std::uint32_t> spec) {
  if (groups == 0) return;
  begin_if_needed();
  State& s = *state_;
  const DeviceCaps& c = ctx_.caps();
  auto range_of = [](const Binding& b) { return b.range ? b.range : b.alloc->range() - b.offset; };
  for (const Binding& b : bindings) {
    TRINE_ASSERT(b.offset % std::max<std::uint64_t>(c.min_storage_offset_alignment, 1) == 0,
                 std::string("[vulkan] ") + shader + " bound at a misaligned offset");
    TRINE_ASSERT(b.offset + range_of(b) <= b.alloc->capacity,
                 std::string("[vulkan] ") + shader + " bound past the end of its buffer");
    // refusal() (ops.hpp) turned away every call that binds more: record_op asked it first.
    TRINE_ASSERT(range_of(b) <= c.max_storage_buffer_range,
                 std::string("[vulkan] ") + shader + " binds " + std::to_string(range_of(b)) +
                     " bytes, over maxStorageBufferRange, in a call the limits check let through");
  }
  const Pipeline p = ctx_.pipelines().get(shader, static_cast<std::uint32_t>(bindings.size()),
                                          std::span<const std::uint32_t>(spec.begin(), spec.size()));
  if (s.sets_in_pool == k_sets_per_pool) {
    if (s.pools_used == s.descriptor_pools.size()) {
      const vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, k_sets_per_pool * k_max_bindings);
      s.descriptor_pools.push_back(
          TRINE_VK(ctx_.device().createDescriptorPool(vk::DescriptorPoolCreateInfo({}, k_sets_per_pool, size))));
    }
    ++s.pools_used;
    s.sets_in_pool = 0;
  }
  ++s.sets_in_pool;
  vk::DescriptorSetAllocateInfo alloc_info(*s.descriptor_pools[s.pools_used - 1], p.set_layout);
  vk::DescriptorSet set = TRINE_VK((*ctx_.device()).allocateDescriptorSets(alloc_info)).front();
  std::vector<vk::DescriptorBufferInfo> infos;
  for (const Binding& b : bindings) infos.push_back({*b.alloc->buffer, b.alloc->guard + b.offset, range_of(b)});
  std::vector<vk::WriteDescriptorSet> writes;
  for (std::uint32_t i = 0; i < infos.size(); ++i)
    writes.push_back(vk::WriteDescriptorSet(set, i, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &infos[i]));
  (*ctx_.device()).updateDescriptorSets(writes, {});

  access(std::span<const Binding>(bindings.begin(), bindings.size()));
  s.cb().bindPipeline(vk::PipelineBindPoint::eCompute, p.pipeline);
  (*s.cb()).bindDescriptorSets(vk::PipelineBindPoint::eCompute, p.layout, 0, set, {});
  if (push_bytes)
    (*s.cb()).pushConstants(p.layout, vk::ShaderStageFlagBits::eCompute, 0, static_cast<std::uint32_t>(push_bytes),
                            push);
  const std::uint64_t max_x = c.max_workgroup_count[0];
  const std::uint64_t x = std::min(groups, max_x);
  const std::uint64_t y = (groups + x - 1) / x;
  // Never more than some binding's 32-bit words (at most 2^30, maxStorageBufferRange being 32-bit),
  // and every device launches at least 65535 x 65535: the limits check needs no case for it.
  TRINE_ASSERT(y <= c.max_workgroup_count[1], std::string("[vulkan] ") + shader + " needs " + std::to_string(groups) +
                                                  " workgroups, more than the device can launch at once");
  s.cb().dispatch(static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1);
  ++commands_;
}

void Recorder::copy(Allocation* src, std::size_t src_offset, Allocation* dst, std::size_t dst_offset,
                    std::size_t bytes) {
  if (bytes == 0) return;
  begin_if_needed();
  const Binding b[] = {{src, false}, {dst, true}};
  access(b);
  state_->cb().copyBuffer(*src->buffer, *dst->buffer,
                          vk::BufferCopy(src->guard + src_offset, dst->guard + dst_offset, bytes));
  ++commands_;
}

void Recorder::copy(Allocation* src, Allocation* dst, std::span<const Region> regions) {
  std::vector<vk::BufferCopy> copies;
  copies.reserve(regions.size());
  for (const Region& r : regions)
    if (r.bytes) copies.emplace_back(src->guard + r.src_offset, dst->guard + r.dst_offset, r.bytes);
  if (copies.empty()) return;
  begin_if_needed();
  const Binding b[] = {{src, false}, {dst, true}};
  access(b);
  state_->cb().copyBuffer(*src->buffer, *dst->buffer, copies);
  ++commands_;
}

// Through the memory cache, like a tensor's memory: reused, counted and released in one place.
Allocation* Recorder::cached(std::size_t bytes, detail::MemoryKind kind) {
  const Device device{DeviceKind::vulkan, ctx_.index()};
  detail::Backend& backend = detail::backend_for(device, "vulkan");
  state_->temporaries.reserve(state_->temporaries.size() + 1);  // no throw once allocated
  auto* a = static_cast<Allocation*>(detail::cached_allocate(backend, device, bytes, kind));
  state_->temporaries.push_back({a, bytes, kind, &backend, device});
  return a;
}

Allocation* Recorder::temporary(std::size_t bytes) { return cached(bytes, detail::MemoryKind::storage); }

Allocation* Recorder::staging(std::size_t bytes) {
  // Where storage memory is host-visible and coherent, it is the staging type: a temporary.
  return cached(bytes, ctx_.caps().host_coherent ? detail::MemoryKind::storage : detail::MemoryKind::staging);
}

void Recorder::upload_host(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes) {
  TRINE_ASSERT(dst->mapped, "[vulkan] a host upload into memory the host cannot map");
  if (bytes) state_->before.push_back({static_cast<const unsigned char*>(src), dst->data() + dst_offset, bytes});
}

void Recorder::upload_staged(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes) {
  if (bytes == 0) return;
  Allocation* staging = this->staging(bytes);
  state_->before.push_back({static_cast<const unsigned char*>(src), staging->data(), bytes});
  copy(staging, 0, dst, dst_offset, bytes);
}

void Recorder::upload_constant(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes) {
  if (bytes == 0) return;
  Allocation* staging = this->staging(bytes);
  std::memcpy(staging->data(), src, bytes);
  copy(staging, 0, dst, dst_offset, bytes);
}

void Recorder::readback_staged(Allocation* src, std::size_t offset, void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  Allocation* staging = this->staging(bytes);
  copy(src, offset, staging, 0, bytes);
  state_->after.push_back({staging->data(), dst, bytes});
}

void Recorder::readback_host(Allocation* src, std::size_t offset, void* dst, std::size_t bytes) {
  if (bytes) state_->after.push_back({src->data() + offset, dst, bytes});
}

void Recorder::set_entry(std::size_t index) noexcept { state_->entry = index; }

Allocation* Recorder::report_words(std::size_t words, WordsCheck check) {
  Allocation* a = temporary(words * 4);
  begin_if_needed();
  const Binding b[] = {{a, true}};
  access(b);
  state_->cb().fillBuffer(*a->buffer, a->guard, words * 4, 0xFFFFFFFFu);
  ++commands_;
  state_->reports.push_back({a, a->mapped ? a : nullptr, words, state_->entry, std::move(check)});
  return a;
}

void Recorder::cut() { state_->cut = state_->open; }

void Recorder::finish() {
  State& s = *state_;
  if (!s.open || s.finished) return;
  for (State::Report& r : s.reports) {  // words the host cannot map: read through staging
    if (r.host) continue;
    r.host = staging(r.count * 4);
    copy(r.words, 0, r.host, 0, r.count * 4);
  }  // Device writes become visible to host reads after the timeline signal is observed.
  vk::MemoryBarrier after(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                          vk::AccessFlagBits::eHostRead);
  s.cb().pipelineBarrier(k_device_stages, vk::PipelineStageFlagBits::eHost, {}, after, {}, {});
  TRINE_VK(s.cb().end());
  s.open = false;
  s.finished = true;
}

Recorder::StatePtr Recorder::take_state() { return std::move(state_); }

std::uint64_t submit_state(Recorder::State& state, std::uint64_t wait_value) {
  TRINE_ASSERT(state.finished || state.used == 0, "[vulkan] a recording submitted before it was finished");
  for (const auto& c : state.before) std::memcpy(c.dst, c.src, c.bytes);
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < state.used; ++i) value = state.ctx.submit(*state.cbs[i], i == 0 ? wait_value : 0);
  return value;
}

void complete_state(Recorder::State& state) noexcept {
  for (const auto& c : state.after) std::memcpy(c.dst, c.src, c.bytes);
}

std::optional<ReportedError> reported(const Recorder::State& state) {
  for (const auto& r : state.reports) {
    const auto* words = reinterpret_cast<const std::uint32_t*>(r.host->data());
    if (auto e = r.check(std::span<const std::uint32_t>(words, r.count))) return ReportedError{r.entry, std::move(*e)};
  }
  return std::nullopt;
}

bool has_host_steps(const Recorder::State& state) noexcept { return !state.after.empty() || !state.reports.empty(); }

std::size_t command_buffer_count(const Recorder::State& state) noexcept { return state.used; }

std::size_t temporary_bytes(const Recorder::State& state) noexcept {
  std::size_t n = 0;
  for (const auto& t : state.temporaries) n += t.bytes;
  return n;
}

}  // namespace trine::vulkan
