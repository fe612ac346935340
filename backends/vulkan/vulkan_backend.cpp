// The Vulkan backend: devices, buffers, and submissions (one command buffer each, signalling the
// device's timeline semaphore), with dependencies waited for on the device where they are ours and
// on the host, in a submit thread, where they are not.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "backends/backend.hpp"
#include "backends/entries.hpp"
#include "backends/widen.hpp"
#include "backends/vulkan/completion.hpp"
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#include "backends/vulkan/ops.hpp"
#include "backends/vulkan/vk_check.hpp"

namespace trine::vulkan {
namespace {

// The entries as given: recording happens at submit, once the backend knows which dependencies
// are still running (uploads straight into mapped memory need none).
// Where the entries of a submission came from when encode added some (the casts around a 16-bit
// call whose kernel runs in f32 only, backends/widen.hpp): per entry, the index in `entries` of the
// recorded entry it is part of and that entry's position, of `recorded`. Empty: entry i is the
// caller's entry i.
struct Origins {
  std::vector<std::size_t> serves, position;
  std::size_t recorded = 0;
};

class VulkanSubmission final : public detail::Submission {
 public:
  std::vector<detail::Entry> entries;
  Origins origins;
  int device = 0;
  std::exception_ptr failed;  // set when encoding failed (a temporary could not be allocated)
};

Allocation* alloc_of(const detail::Storage& s) { return static_cast<Allocation*>(s.handle()); }

// A storage in a replay signature: its buffer's id (a recorded command buffer names the VkBuffer)
// and the bytes its bindings span.
void storage_key(std::string& key, const detail::Storage& s) {
  const Allocation* a = alloc_of(s);
  const std::uint64_t v[2] = {a->id, a->bytes};
  key.append(reinterpret_cast<const char*>(v), sizeof v);
}

// The most work (flops + bytes, as the op table estimates them) one command buffer is given before
// the recording moves on to the next: no single submission should run long enough for a driver to
// take it for a hang (Windows resets a GPU after 2 s). A single op larger than this still goes as
// one. TRINE_VULKAN_SUBMIT_BUDGET sets it; the default allows ~0.1-0.4 s of a slow integrated GPU,
// and ~1 s of lavapipe.
std::uint64_t default_budget(const DeviceCaps& caps) { return caps.software ? (1ull << 32) : (1ull << 34); }

// TRINE_VULKAN_SUBMIT_BUDGET: a positive integer, or unset (0 returned); anything else is an error.
std::uint64_t budget_from_env(std::string& error) {
  const char* v = std::getenv("TRINE_VULKAN_SUBMIT_BUDGET");
  if (!v) return 0;
  std::uint64_t n = 0;
  const char* end = v + std::strlen(v);
  const auto r = std::from_chars(v, end, n);
  if (r.ec != std::errc() || r.ptr != end || n == 0) {
    error = std::string("[vulkan] TRINE_VULKAN_SUBMIT_BUDGET=") + v +
            ": expected a positive integer (work per command buffer, in flops + bytes)";
  }
  return n;
}

// What one submission moved, counted into the backend's totals when it is submitted.
struct Counts {
  std::uint64_t uploads = 0, upload_bytes = 0, readbacks = 0, readback_bytes = 0, device_copies = 0,
                device_copy_bytes = 0;
};

class VulkanBackend final : public detail::Backend {
 public:
  explicit VulkanBackend(std::unique_ptr<Instance> instance) : instance_(std::move(instance)) {
    budget_ = budget_from_env(budget_error_);
  }

  ~VulkanBackend() override {
    {
      std::lock_guard<std::mutex> lock(thread_mu_);
      stopping_ = true;
    }
    thread_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(inflight_mu_);
    inflight_.clear();  // each waits for its own work in its destructor
  }

  DeviceKind kind() const noexcept override { return DeviceKind::vulkan; }
  std::vector<DeviceInfo> devices() const override { return instance_->infos(); }

  void* allocate(int index, std::size_t bytes) override { return allocate_buffer(instance_->device(index), bytes); }
  void* allocate_staging(int index, std::size_t bytes) override {
    return allocate_buffer(instance_->device(index), bytes, /*staging=*/true);
  }
  bool fits(int index, std::size_t bytes) const noexcept override {
    // The physical device's limits: asking opens no logical device.
    if (!instance_ || index < 0 || static_cast<std::size_t>(index) >= instance_->count()) return true;
    return fits_allocation(instance_->caps(index), bytes);
  }
  void deallocate(int, void* handle) noexcept override { free_buffer(static_cast<Allocation*>(handle)); }
  // Every allocation creates and binds a buffer (and large ones their memory): cached whatever its size.
  std::size_t cache_min_block() const noexcept override { return 1; }
  // A discrete GPU's own memory (not host memory, as lavapipe's and an integrated GPU's is): 3/4 of
  // its heap, so a loop over large tensors keeps finding its blocks (a miss is vkAllocateMemory).
  std::size_t cache_limit(int index) const noexcept override {
    if (!instance_ || index < 0 || static_cast<std::size_t>(index) >= instance_->count()) return 0;
    const auto& caps = instance_->caps(index);
    return caps.software || caps.host_coherent ? 0 : static_cast<std::size_t>(caps.heap_bytes / 4 * 3);
  }
  void prepare(void* handle, std::size_t bytes) noexcept override {
    reuse_buffer(*static_cast<Allocation*>(handle), bytes);
  }
  void* host_pointer(void* handle) const noexcept override { return static_cast<Allocation*>(handle)->data(); }

  std::optional<debug::DeviceMemoryStats> device_memory(int index) const override {
    return instance_->device(index).memory_pool().stats();
  }

  bool bare_submit(int index) override {
    instance_->device(index).submit_empty_and_wait();
    return true;
  }
  std::optional<bool> guards_intact(const void* handle) const noexcept override {
    const auto* a = static_cast<const Allocation*>(handle);
    if (!a->mapped) return std::nullopt;
    return vulkan::guards_intact(*a);
  }

  bool supports(const detail::OpCall& call) const override {
    for (const auto& t : call.inputs)
      if (t.defined() && t.device().kind != DeviceKind::vulkan) return false;
    const Device d = call.output.defined() ? call.output.device() : Device::cpu();
    if (d.kind != DeviceKind::vulkan || !detail::output_writable(call) || d.index < 0 ||
        static_cast<std::size_t>(d.index) >= instance_->count())
      return false;
    // The same answer the recorder acts on (record_op): nothing accepted here is refused at submit.
    if (supports_op(call)) return refusal(instance_->caps(d.index), d.index, call).empty();
    return widens(call);
  }

  // A 16-bit call whose kernel reads and writes f32 only runs as its f32 form between casts
  // (backends/widen.hpp; encode inserts them): when the f32 form and each cast run on the device.
  bool widens(const detail::OpCall& call) const override { return widen_form(call).has_value(); }
  std::optional<detail::WidenForm> widen_form(const detail::OpCall& call) const {
    if (!detail::has_16bit(call) || supports_op(call)) return std::nullopt;
    const int index = call.output.device().index;
    const DeviceCaps& caps = instance_->caps(index);
    return detail::widen_form(call, *this,
                              [&](const detail::OpCall& c) { return supports_op(c) && refusal(caps, index, c).empty(); });
  }

  std::string unsupported_reason(const detail::OpCall& call) const override {
    if (const char* why = vulkan_ops().refusal(call.op)) return why;  // an op this backend refuses
    const Device d = call.output.defined() ? call.output.device() : Device::cpu();
    if (d.kind != DeviceKind::vulkan || d.index < 0 || static_cast<std::size_t>(d.index) >= instance_->count())
      return {};
    if (!supports_op(call) && detail::has_16bit(call)) {
      // Its f32 form's reason (a limit it is over), as that is what would run.
      const detail::OpCall wide = detail::widened_call(call, const_cast<VulkanBackend*>(this));
      if (!supports_op(wide)) return {};
      return refusal(instance_->caps(d.index), d.index, wide);
    }
    if (!supports_op(call)) return {};
    return refusal(instance_->caps(d.index), d.index, call);
  }

  std::unique_ptr<detail::Submission> encode(std::vector<detail::Entry> entries) override {
    auto s = std::make_unique<VulkanSubmission>();
    if (!entries.empty()) s->device = device_of(entries.front());
    // asked once per entry: widen_form() walks the op's limits
    std::vector<std::optional<detail::WidenForm>> wide(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (const auto* c = std::get_if<detail::OpCall>(&entries[i])) wide[i] = widen_form(*c);
    if (std::none_of(wide.begin(), wide.end(), [](const auto& f) { return f.has_value(); })) {
      s->entries = std::move(entries);
      return s;
    }
    Origins& o = s->origins;
    o.recorded = entries.size();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto* c = std::get_if<detail::OpCall>(&entries[i]);
      if (!wide[i]) {
        o.serves.push_back(s->entries.size());
        o.position.push_back(i);
        s->entries.push_back(std::move(entries[i]));
        continue;
      }
      // Temporaries are allocated here; one that cannot be is the recorded entry's error, raised
      // when the submission runs (as a failure while recording would be).
      detail::Widened w;
      try {
        w = detail::widen(*c, *wide[i]);
      } catch (const Error& err) {
        s->failed = std::make_exception_ptr(
            entry_error(entries[i], i, entries.size(), err, Device{DeviceKind::vulkan, s->device}));
        return s;
      }
      const std::size_t main = s->entries.size() + w.before.size();
      auto add = [&](detail::OpCall&& call) {
        o.serves.push_back(main);
        o.position.push_back(i);
        s->entries.emplace_back(std::move(call));
      };
      for (auto& b : w.before) add(std::move(b));
      add(std::move(w.call));
      for (auto& a : w.after) add(std::move(a));
    }
    return s;
  }

  std::shared_ptr<detail::Completion> submit(std::unique_ptr<detail::Submission> submission,
                                             std::span<const std::shared_ptr<detail::Completion>> waits,
                                             bool caller_waits) override {
    auto* s = dynamic_cast<VulkanSubmission*>(submission.get());
    if (!s) throw Error(ErrorCode::internal, "[vulkan] submit got a submission from another backend");
    if (s->failed) return detail::completed(s->failed);
    submissions_.fetch_add(1, std::memory_order_relaxed);
    reap();
    DeviceContext& ctx = instance_->device(s->device);
    auto done = std::make_shared<VulkanCompletion>(ctx);
    std::vector<std::shared_ptr<detail::Completion>> deps(waits.begin(), waits.end());

    bool settled = true;
    for (const auto& w : deps) settled = w->poll() && settled;
    // Our own submitted work is waited for on the device; anything else (another backend, work
    // still queued in the submit thread, host copies yet to run) on the host.
    std::uint64_t device_value = 0;
    bool device_ok = true;
    if (!settled) {
      for (const auto& w : deps) {
        if (w->poll()) continue;
        auto* vc = dynamic_cast<VulkanCompletion*>(w.get());
        const std::uint64_t v = vc && &vc->context() == &ctx ? vc->device_wait_value() : 0;
        if (v == 0) device_ok = false;
        device_value = std::max(device_value, v);
      }
    }
    if (settled || device_ok || caller_waits) {
      if (!settled && !device_ok) {
        for (const auto& w : deps) {
          try {
            w->wait();
          } catch (...) {  // reported by failed_dependency
          }
        }
        device_value = 0;
      }
      run(ctx, std::move(s->entries), s->origins, deps, device_value, done);
      track(done);
      return done;
    }
    std::shared_ptr<VulkanSubmission> owned(static_cast<VulkanSubmission*>(submission.release()));
    post([this, &ctx, owned, deps, done] {
      for (const auto& w : deps) {
        try {
          w->wait();
        } catch (...) {  // reported by failed_dependency
        }
      }
      run(ctx, std::move(owned->entries), owned->origins, deps, 0, done);
    });
    track(done);
    return done;
  }

  bool drop_recordings() noexcept override {
    std::map<std::pair<int, std::string>, Kept> dropped;  // destroyed after the lock is released
    std::lock_guard<std::mutex> lock(kept_mu_);
    dropped.swap(kept_);
    return !dropped.empty();
  }

  void synchronize() override {
    auto marker = std::make_shared<std::promise<void>>();
    auto f = marker->get_future();
    post([marker] { marker->set_value(); });
    f.wait();
    std::vector<std::shared_ptr<VulkanCompletion>> all;
    {
      std::lock_guard<std::mutex> lock(inflight_mu_);
      all = inflight_;
    }
    for (auto& c : all) {
      try {
        c->wait();
      } catch (...) {  // raised where the results are read
      }
    }
    reap();
  }

  TransferStats transfer_stats() const noexcept override {
    TransferStats t;
    t.uploads = uploads_.load();
    t.upload_bytes = upload_bytes_.load();
    t.readbacks = readbacks_.load();
    t.readback_bytes = readback_bytes_.load();
    t.device_copies = device_copies_.load();
    t.device_copy_bytes = device_copy_bytes_.load();
    t.submissions = submissions_.load();
    t.replays = replays_.load();
    t.driver_submits = driver_submits_.load();
    return t;
  }

 private:
  // Records and submits `entries` (dependencies already satisfied, or waited for through
  // `wait_value` on the device), finishing `done`. Never throws: failures become done's error.
  // A submission of several entries identical to an earlier one (a batch run again, the same call
  // on the same buffers) is not recorded again: the earlier recording is submitted once more.
  void run(DeviceContext& ctx, std::vector<detail::Entry> entries, const Origins& origins,
           const std::vector<std::shared_ptr<detail::Completion>>& deps, std::uint64_t wait_value,
           const std::shared_ptr<VulkanCompletion>& done) noexcept {
    if (entries.empty()) return done->finished(nullptr, nullptr);
    const char* first = entry_name(entries.front());
    if (auto e = failed_dependency(deps, first)) return done->finished(nullptr, e);
    const std::uint64_t messages_before = message_log().count.load();
    std::size_t i = 0;
    try {
      if (!budget_error_.empty()) throw Error(ErrorCode::invalid_argument, budget_error_);
      if (ctx.lost()) throw Error(ErrorCode::driver_error, "the device was lost earlier; it cannot run work any more");
      std::string signature;
      if (entries.size() > 1) {
        signature = detail::signature_of(entries, storage_key);
        signature.push_back(wait_value ? 'w' : '-');  // leading uploads go through staging when waiting
      }
      Counts counts;
      Recorder::StatePtr state = signature.empty() ? nullptr : replayable(ctx, signature, counts, done);
      const bool replay = state != nullptr;
      if (!replay) {
        Recorder rec(ctx, /*reusable=*/!signature.empty());
        // Leading uploads go straight into mapped memory when nothing is still running before them;
        // trailing readbacks are read from mapped memory after completion. Anything between device
        // commands goes through a staging buffer at its place in the command stream.
        std::size_t lead = 0;
        while (lead < entries.size() && entries[lead].index() == 1) ++lead;
        std::size_t tail = entries.size();
        while (tail > lead && entries[tail - 1].index() == 2) --tail;
        const std::uint64_t budget = budget_ ? budget_ : default_budget(ctx.caps());
        double work = 0;
        for (; i < entries.size(); ++i) {
          if (const auto* op = std::get_if<detail::OpCall>(&entries[i])) {
            if (work > 0 && work + op->cost.flops + op->cost.bytes > static_cast<double>(budget)) {
              rec.cut();
              work = 0;
            }
            work += op->cost.flops + op->cost.bytes;
          }
          rec.set_entry(i);
          record(rec, entries[i], i < lead && wait_value == 0, i >= tail, counts);
        }
        rec.finish();
        state = rec.take_state();
      }
      i = entries.size() - 1;  // failures from here on are the submission's: named by its last entry
      const std::uint64_t value = submit_state(*state, wait_value);
      add(counts, replay, command_buffer_count(*state));
      if (value == 0) return done->finished(std::move(state), nullptr);  // host copies only
      std::exception_ptr late;
      if (message_log().count.load() != messages_before) {
        late = std::make_exception_ptr(Error(ErrorCode::internal, std::string("[") + first +
                                                                      "] the Vulkan validation layer reported: " +
                                                                      message_log().since(messages_before)));
      }
      if (!signature.empty() && !replay) keep(ctx, std::move(signature), state, counts, done);
      done->submitted(value, std::move(state), std::move(entries), late);
    } catch (const Error& e) {
      // Named as the caller recorded it: an entry encode added is part of a recorded one.
      const std::size_t at = std::min(i, entries.size() - 1);
      const bool mapped = at < origins.serves.size();
      done->finished(nullptr, std::make_exception_ptr(entry_error(
                                  entries[mapped ? origins.serves[at] : at], mapped ? origins.position[at] : at,
                                  mapped ? origins.recorded : entries.size(), e,
                                  Device{DeviceKind::vulkan, detail::device_of(entries.front())})));
    } catch (const std::exception& e) {
      done->finished(
          nullptr, std::make_exception_ptr(Error(
                       ErrorCode::internal, std::string("[") + first + "] unexpected failure on vulkan: " + e.what())));
    }
  }

  void add(const Counts& c, bool replay, std::size_t command_buffers) {
    uploads_.fetch_add(c.uploads, std::memory_order_relaxed);
    upload_bytes_.fetch_add(c.upload_bytes, std::memory_order_relaxed);
    readbacks_.fetch_add(c.readbacks, std::memory_order_relaxed);
    readback_bytes_.fetch_add(c.readback_bytes, std::memory_order_relaxed);
    device_copies_.fetch_add(c.device_copies, std::memory_order_relaxed);
    device_copy_bytes_.fetch_add(c.device_copy_bytes, std::memory_order_relaxed);
    driver_submits_.fetch_add(command_buffers, std::memory_order_relaxed);
    if (replay) replays_.fetch_add(1, std::memory_order_relaxed);
  }

  // A recording kept for replay: its state (command buffers, descriptor sets, temporaries), what
  // one run moves, and its last submission, which must have finished (host copies included)
  // before the same command buffers and temporaries are used again.
  struct Kept {
    Recorder::StatePtr state;
    Counts counts;
    std::weak_ptr<VulkanCompletion> last;
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t k_kept_max = 32;  // per device, least recently used dropped
  // Kept states hold their temporaries out of the memory cache: larger ones are not kept.
  static constexpr std::size_t k_kept_temporary_bytes = std::size_t{4} << 20;

  // The kept state for `signature`, if its last run has finished, now taken by `done` (no other
  // thread replays it until `done` finishes); `counts` gets what a run moves.
  Recorder::StatePtr replayable(DeviceContext& ctx, const std::string& signature, Counts& counts,
                                const std::shared_ptr<VulkanCompletion>& done) {
    std::lock_guard<std::mutex> lock(kept_mu_);
    auto it = kept_.find({ctx.index(), signature});
    if (it == kept_.end()) return nullptr;
    if (auto last = it->second.last.lock(); last && !last->poll()) return nullptr;  // still running
    it->second.last = done;
    it->second.last_use = ++kept_clock_;
    counts = it->second.counts;
    return it->second.state;
  }
  void keep(DeviceContext& ctx, std::string signature, const Recorder::StatePtr& state, const Counts& counts,
            const std::shared_ptr<VulkanCompletion>& done) {
    if (temporary_bytes(*state) > k_kept_temporary_bytes) return;
    std::lock_guard<std::mutex> lock(kept_mu_);
    std::size_t on_device = 0;
    auto oldest = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->first.first != ctx.index()) continue;
      ++on_device;
      if (oldest == kept_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (on_device >= k_kept_max) kept_.erase(oldest);  // a run of it still in flight keeps its own reference
    kept_[{ctx.index(), std::move(signature)}] = Kept{state, counts, done, ++kept_clock_};
  }

  void record(Recorder& rec, const detail::Entry& e, bool host_upload, bool host_readback, Counts& n) {
    switch (e.index()) {
      case 0: record_op(rec, std::get<detail::OpCall>(e)); return;
      case 1: {
        const auto& u = std::get<detail::Upload>(e);
        Allocation* a = alloc_of(*u.dst);
        if (host_upload && a->mapped) {
          rec.upload_host(u.src, a, u.offset, u.bytes);
        } else {
          rec.upload_staged(u.src, a, u.offset, u.bytes);
        }
        ++n.uploads;
        n.upload_bytes += u.bytes;
        return;
      }
      case 2: {
        const auto& r = std::get<detail::Readback>(e);
        Allocation* a = alloc_of(*r.src);
        if (host_readback && a->mapped) {
          rec.readback_host(a, r.offset, r.dst, r.bytes);
        } else {
          rec.readback_staged(a, r.offset, r.dst, r.bytes);
        }
        ++n.readbacks;
        n.readback_bytes += r.bytes;
        return;
      }
      default: {
        const auto& c = std::get<detail::DeviceCopy>(e);
        rec.copy(alloc_of(*c.src), c.src_offset, alloc_of(*c.dst), c.dst_offset, c.bytes);
        ++n.device_copies;
        n.device_copy_bytes += c.bytes;
        return;
      }
    }
  }

  // Keeps each completion until its work has finished, so dropping every handle to it neither
  // blocks nor frees memory the device still uses.
  void track(const std::shared_ptr<VulkanCompletion>& c) {
    std::lock_guard<std::mutex> lock(inflight_mu_);
    inflight_.push_back(c);
  }
  void reap() {
    std::vector<std::shared_ptr<VulkanCompletion>> done;
    {
      std::lock_guard<std::mutex> lock(inflight_mu_);
      auto it = std::partition(inflight_.begin(), inflight_.end(), [](const auto& c) { return !c->poll(); });
      done.assign(std::make_move_iterator(it), std::make_move_iterator(inflight_.end()));
      inflight_.erase(it, inflight_.end());
    }
  }

  // The submit thread: submissions that must first wait on the host, in submission order.
  void post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(thread_mu_);
    tasks_.push_back(std::move(task));
    if (!thread_.joinable()) thread_ = std::thread([this] { thread_main(); });
    thread_cv_.notify_one();
  }
  void thread_main() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(thread_mu_);
        thread_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::unique_ptr<Instance> instance_;
  std::mutex inflight_mu_;
  std::vector<std::shared_ptr<VulkanCompletion>> inflight_;
  std::mutex thread_mu_;
  std::condition_variable thread_cv_;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> uploads_{0}, upload_bytes_{0}, readbacks_{0}, readback_bytes_{0}, device_copies_{0},
      device_copy_bytes_{0}, submissions_{0}, replays_{0}, driver_submits_{0};
  std::uint64_t budget_ = 0;  // TRINE_VULKAN_SUBMIT_BUDGET, 0: the device's default
  std::string budget_error_;  // a malformed TRINE_VULKAN_SUBMIT_BUDGET: every submission fails with it
  std::mutex kept_mu_;
  std::map<std::pair<int, std::string>, Kept> kept_;  // by device index and signature
  std::uint64_t kept_clock_ = 0;
};

}  // namespace
}  // namespace trine::vulkan

namespace trine::detail {

std::unique_ptr<Backend> make_vulkan_backend(std::string& reason, bool& built) {
  built = true;
  // Every op has its kernel or a refusal (vulkan::vulkan_ops() throws Error(internal) naming each
  // one that has neither, and its family's file). Asked before any device and outside the catch
  // below: a missing kernel is this build's bug, not a device being unavailable, so it propagates
  // and every use of trine fails with it, with or without a Vulkan driver, as the cpu's does.
  (void)vulkan::vulkan_ops();
  try {
    auto instance = std::make_unique<vulkan::Instance>();
    if (instance->count() == 0) {
      reason = "the Vulkan loader found no physical device (install a driver: mesa-vulkan-drivers gives lavapipe)";
      return nullptr;
    }
    reason = std::to_string(instance->count()) + " device(s):";
    for (const auto& d : instance->infos()) {
      reason += ' ';
      reason += d.device.str();
      reason += ' ';
      reason += d.name;
      reason += ';';
    }
    if (instance->validation()) reason += " validation layer on";
    return std::make_unique<vulkan::VulkanBackend>(std::move(instance));
  } catch (const Error& e) {
    reason = e.what();
  } catch (const std::exception& e) {
    reason = std::string("Vulkan could not start: ") + e.what();
  }
  return nullptr;
}

}  // namespace trine::detail
