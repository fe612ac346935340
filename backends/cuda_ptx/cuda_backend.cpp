// The cuda_ptx backend over the Driver API table: memory, transfers and kernel launches on one
// stream per device, completions as events, so it runs the same on libcuda and on the emulator.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <type_traits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "backends/backend.hpp"
#include "backends/entries.hpp"
#include "backends/widen.hpp"
#include "backends/cuda_ptx/cuda_launch.hpp"
#include "backends/cuda_ptx/host_memory.hpp"
#include "backends/cuda_ptx/driver/driver_api.hpp"
#include "backends/cuda_ptx/driver/check.hpp"
#include "backends/cuda_ptx/driver/libcuda_loader.hpp"
#include "backends/cuda_ptx/driver/emulator_loader.hpp"
#include "tensor/make.hpp"
#include "trine/error.hpp"

namespace trine::cuda {
namespace {

struct DeviceState {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string name;
  int sm = 0;  // compute capability x 10 + minor
  int multiprocessors = 0;
  int shared_per_block = 0;
  std::size_t total_memory = 0;
  DeviceKernels kernels;  // modules, dot partials, rope tables of this context
  // Batches seen before, by signature: run once, then captured as a CUDA graph and replayed.
  struct Recorded {
    int runs = 0;
    CUgraphExec exec = nullptr;
    TransferStats stats;  // what one run transfers
    std::uint64_t last_use = 0;
    // With device-checked entries (a gather, a write at a position, attention with valid): the
    // page-locked words the graph's copies of the checks write, each replay's own copied out of
    // them by a host function queued after it.
    std::shared_ptr<IndexChecks> graph_words;
  };
  std::map<std::string, Recorded> recorded;
};

class CudaCompletion;

// A submission in flight and its completion, held by the backend until the stream has passed it.
// The completion holds only its event: a Storage -> writer -> submission -> Storage cycle would
// keep memory alive when nobody reads the result.
struct InFlight {
  std::shared_ptr<CudaCompletion> done;
  std::shared_ptr<detail::Submission> submission;
  std::shared_ptr<PinnedStaging> staging;  // null unless uploads waited for another backend's work
};

// The entries to enqueue, which may include gathers the backend inserted (a strided input copied
// into a contiguous temporary the submission owns). Errors name the recorded entry and position.
class CudaSubmission final : public detail::Submission {
 public:
  std::vector<detail::Entry> entries;
  std::vector<std::size_t> serves;    // per entry: the index in `entries` of the recorded entry it is part of
  std::vector<std::size_t> position;  // per entry: that recorded entry's position, as the caller counts
  std::size_t recorded = 0;           // how many entries the caller recorded
  std::exception_ptr failed;          // set when encoding failed (a temporary could not be allocated)
  // For submissions of several entries: every pointer, size and parameter they pass to the driver,
  // so that an identical later submission (a batch run again) can replay a graph of this one.
  std::string signature;
};

// A storage in a batch signature: its handle (the device pointer a recorded graph holds).
void storage_key(std::string& key, const detail::Storage& s) {
  const auto h = reinterpret_cast<std::uintptr_t>(s.handle());
  key.append(reinterpret_cast<const char*>(&h), sizeof h);
}

class CudaBackend;

// Other backends' completions a submission waits for without blocking the submitting thread: a
// host function on the stream waits for them, ahead of the submission's work, and keeps the
// first failure for the submission's completion to report.
struct ForeignWaits {
  std::vector<std::shared_ptr<detail::Completion>> waits;
  std::string what;  // the op the failure is reported under
  std::mutex mu;
  std::exception_ptr error;

  static void run(void* user_data) {
    std::unique_ptr<std::shared_ptr<ForeignWaits>> holder(static_cast<std::shared_ptr<ForeignWaits>*>(user_data));
    ForeignWaits& f = **holder;
    for (const auto& w : f.waits) {
      try {
        w->wait();
      } catch (...) {  // reported just below
      }
    }
    std::exception_ptr e = detail::failed_dependency(f.waits, f.what.c_str());
    f.waits.clear();  // the work they did is over: hold nothing longer than needed
    std::lock_guard lock(f.mu);
    f.error = e;
  }
};

// On the emulator, the checker's finding behind a failed call ("Invalid __global__ read ..."),
// to append to the error; nothing on a GPU.
std::string checker_report(bool emulated) {
  if (!emulated) return {};
  const std::string report = emulator_last_report();
  return report.empty() ? std::string() : ": " + report;
}

// `checks`: the submission's device-side input checks, read when the event has passed. `upstream`:
// earlier completions on this stream the work read from that may still fail that way (their
// kernels ran, their checks are not read yet): their failure is this work's too, as a failed
// dependency's is.
class CudaCompletion final : public detail::Completion {
 public:
  CudaCompletion(const DriverApi& api, CUcontext ctx, CUevent event, std::shared_ptr<ForeignWaits> foreign,
                 bool emulated, std::shared_ptr<IndexChecks> checks = nullptr,
                 std::vector<std::shared_ptr<detail::Completion>> upstream = {}, std::string what = {})
      : api_(api),
        ctx_(ctx),
        event_(event),
        foreign_(std::move(foreign)),
        emulated_(emulated),
        checks_(std::move(checks)),
        upstream_(std::move(upstream)),
        what_(std::move(what)) {}
  ~CudaCompletion() override {
    if (event_) {
      api_.cuCtxSetCurrent(ctx_);
      api_.cuEventDestroy(event_);
    }
  }
  bool poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      api_.cuCtxSetCurrent(ctx_);
      const CUresult r = api_.cuEventQuery(event_);
      if (r == CUDA_ERROR_NOT_READY) return false;
      finish_locked(r, "cuEventQuery");
    }
    return true;
  }
  void wait() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!done_) {
        api_.cuCtxSetCurrent(ctx_);
        finish_locked(api_.cuEventSynchronize(event_), "cuEventSynchronize");
      }
    }
    if (error_) std::rethrow_exception(error_);
  }
  bool wait_for(std::chrono::nanoseconds timeout) override {
    // The Driver API has no timed event wait: poll, with short sleeps while more than a sleep's
    // overshoot (~50 us of timer slack) is left, so wait_for(1us) returns after about 1 us.
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!poll()) {
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) return false;
      if (left > std::chrono::microseconds(200)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return true;
  }
  std::exception_ptr error() override {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  // Whether the work may still fail for a reason its event does not carry (a device-side check).
  bool may_fail_at_completion() {
    std::lock_guard<std::mutex> lock(mu_);
    return checks_ || !upstream_.empty();
  }

 private:
  void finish_locked(CUresult r, const char* call) {
    done_ = true;
    if (r == CUDA_SUCCESS && foreign_) {
      const std::shared_ptr<ForeignWaits> foreign = std::move(foreign_);
      std::lock_guard lock(foreign->mu);
      error_ = foreign->error;  // an input from another device failed: this work's result is void
    }
    if (r == CUDA_SUCCESS && !error_ && !upstream_.empty()) {
      // Earlier on the stream: their events have passed too. (Each only ever locks older ones.)
      for (const auto& u : upstream_) u->poll();
      error_ = detail::failed_dependency(upstream_, what_.c_str());
    }
    if (r == CUDA_SUCCESS && !error_ && checks_) error_ = checks_->error();
    upstream_.clear();
    checks_.reset();  // the stream has written its words: they can serve other checks
    if (r != CUDA_SUCCESS) {
      error_ = std::make_exception_ptr(Error(ErrorCode::driver_error, std::string("[cuda] the device reported ") +
                                                                          result_name(&api_, r) + " from " + call +
                                                                          " while running earlier work" +
                                                                          checker_report(emulated_)));
    }
  }

  const DriverApi& api_;
  CUcontext ctx_;
  CUevent event_;
  std::shared_ptr<ForeignWaits> foreign_;
  bool emulated_;
  std::shared_ptr<IndexChecks> checks_;
  std::vector<std::shared_ptr<detail::Completion>> upstream_;
  std::string what_;
  std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
};

class CudaBackend final : public detail::Backend {
 public:
  CudaBackend(DriverProvider provider, std::vector<DeviceState> devices)
      : provider_(std::move(provider)), api_(*provider_.api), devices_(std::move(devices)) {}

  ~CudaBackend() override {
    for (auto& d : devices_) {
      api_.cuCtxSetCurrent(d.context);
      api_.cuStreamSynchronize(d.stream);
      in_flight_.clear();
      for (auto& [sig, rec] : d.recorded)
        if (rec.exec) api_.cuGraphExecDestroy(rec.exec);
      d.kernels.release(api_);
      api_.cuStreamDestroy(d.stream);
      api_.cuDevicePrimaryCtxRelease(d.device);
    }
  }

  DeviceKind kind() const noexcept override { return DeviceKind::cuda; }

  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      const auto& d = devices_[i];
      out.push_back({Device{DeviceKind::cuda, static_cast<int>(i)},
                     d.name + (provider_.emulated ? " (emulated, software)" : ""),
                     "sm_" + std::to_string(d.sm) + "; " + std::to_string(d.multiprocessors) + " SMs; " +
                         std::to_string(d.shared_per_block / 1024) + " KiB shared/block; " +
                         std::to_string(d.total_memory >> 20) + " MiB; driver: " + provider_.name,
                     provider_.emulated, provider_.name});
    }
    return out;
  }

  void* allocate(int index, std::size_t bytes) override {
    auto& d = device(index);
    std::lock_guard<std::mutex> lock(mu_);
    current(d);
    CUdeviceptr p = 0;
    const CUresult r = api_.cuMemAlloc(&p, bytes ? bytes : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw Error(ErrorCode::out_of_memory,
                  "[allocate] cuda:" + std::to_string(index) + " could not allocate " + std::to_string(bytes) + " bytes");
    }
    check(r, "cuMemAlloc", "allocate");
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  }

  void deallocate(int index, void* handle) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    api_.cuCtxSetCurrent(devices_[static_cast<std::size_t>(index)].context);
    api_.cuMemFree(ptr(handle));
  }

  // Every allocation is a driver call, and cuMemFree waits for the device to be idle: blocks of
  // every size are cached (a sync call then allocates nothing), up to 3/4 of the device's memory
  // (the emulated device's memory is the host's: the host default there).
  std::size_t cache_min_block() const noexcept override { return 1; }
  std::size_t cache_limit(int index) const noexcept override {
    if (provider_.emulated || index < 0 || static_cast<std::size_t>(index) >= devices_.size()) return 0;
    return static_cast<std::size_t>(devices_[static_cast<std::size_t>(index)].total_memory / 4 * 3);
  }

  // Device memory: never host-addressable here; Upload and Readback entries cross.
  void* host_pointer(void*) const noexcept override { return nullptr; }

  bool supports(const detail::OpCall& call) const override {
    for (const auto& t : call.inputs)
      if (t.defined() && t.device().kind != DeviceKind::cuda) return false;
    if (!detail::output_writable(call)) return false;
    const int sm = devices_[static_cast<std::size_t>(call.output.device().index)].sm;
    return can_launch(call, sm) || widens_at(call, sm);
  }

  bool widens(const detail::OpCall& call) const override {
    if (!detail::has_16bit(call)) return false;
    const int sm = devices_[static_cast<std::size_t>(call.output.device().index)].sm;
    return !can_launch(call, sm) && widens_at(call, sm);
  }

  // A 16-bit call whose kernel reads and writes f32 only runs as its f32 form between casts
  // (backends/widen.hpp; encode inserts them): when the f32 form and each cast have a kernel.
  bool widens_at(const detail::OpCall& call, int sm) const { return widen_form(call, sm).has_value(); }
  std::optional<detail::WidenForm> widen_form(const detail::OpCall& call, int sm) const {
    return detail::widen_form(call, *this, [&](const detail::OpCall& c) { return can_launch(c, sm); });
  }

  // A call whose kernel needs contiguous inputs gets each strided one copied (the gather kernel,
  // a `copy` entry) into a contiguous temporary first; the submission owns the temporaries.
  std::string unsupported_reason(const detail::OpCall& call) const override {
    for (const auto& t : call.inputs)
      if (t.defined() && t.device().kind != DeviceKind::cuda) return "an input is on " + t.device().str();
    if (!detail::output_writable(call)) return "the output is not contiguous";
    const int sm = devices_[static_cast<std::size_t>(call.output.device().index)].sm;
    // A 16-bit call refused in its f32 form too: the f32 form's reason (shapes, limits).
    if (detail::has_16bit(call)) {
      const detail::OpCall wide = detail::widened_call(call, const_cast<CudaBackend*>(this));
      if (!can_launch(wide, sm)) return refusal(wide, sm);
    }
    return refusal(call, sm);
  }

  std::unique_ptr<detail::Submission> encode(std::vector<detail::Entry> entries) override {
    auto s = std::make_unique<CudaSubmission>();
    s->recorded = entries.size();
    s->entries.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      // Entry i becomes its parts: the casts around a 16-bit call its kernel runs in f32 only
      // (backends/widen.hpp), and before each part the gathers of its strided inputs.
      std::vector<detail::Entry> parts;
      std::size_t main_part = 0;
      const std::size_t first = s->entries.size();
      std::size_t main_entry = static_cast<std::size_t>(-1);  // where parts[main_part] went, once pushed
      try {
        auto* call = std::get_if<detail::OpCall>(&entries[i]);
        const int sm = call ? device(call->output.device().index).sm : 0;
        std::optional<detail::WidenForm> form;
        if (call && detail::has_16bit(*call) && !can_launch(*call, sm)) form = widen_form(*call, sm);
        if (form) {
          detail::Widened w = detail::widen(*call, *form);
          for (auto& c : w.before) parts.emplace_back(std::move(c));
          main_part = parts.size();
          parts.emplace_back(std::move(w.call));
          for (auto& c : w.after) parts.emplace_back(std::move(c));
        } else {
          parts.push_back(std::move(entries[i]));
        }
        for (std::size_t p = 0; p < parts.size(); ++p) {
          if (auto* part = std::get_if<detail::OpCall>(&parts[p])) {
            for (std::size_t input : needs_gather(*part, device(part->output.device().index).sm)) {
              const Tensor& view = part->inputs[input];
              Tensor tmp = detail::empty_tensor(view.shape(), view.dtype(), view.device(), false);
              detail::OpCall gather{OpKind::copy, {view}, tmp, NoParams{}, {}};
              s->entries.emplace_back(std::move(gather));
              part->inputs[input] = std::move(tmp);
            }
          }
          if (p == main_part) main_entry = s->entries.size();
          s->entries.push_back(std::move(parts[p]));
        }
      } catch (const Error& err) {
        // A temporary that could not be allocated: raised when the submission runs, as any failure
        // of its entries is.
        const detail::Entry& named = main_entry < s->entries.size() ? s->entries[main_entry]
                                     : parts.empty()                ? entries[i]
                                                                    : parts[main_part];
        s->failed = std::make_exception_ptr(
            detail::entry_error(named, i, entries.size(), err, Device{DeviceKind::cuda, detail::device_of(named)}));
        return s;
      }
      for (std::size_t k = first; k < s->entries.size(); ++k) {
        s->serves.push_back(main_entry);
        s->position.push_back(i);
      }
    }
    if (s->entries.size() > 1 && !sync_each_launch_) s->signature = detail::signature_of(s->entries, storage_key);
    return s;
  }

  // One stream per device: this backend's own earlier submissions are ordered by the stream.
  // Other backends' completions still pending are waited for by a host function queued on the
  // stream ahead of the work (on the calling thread instead when it is about to wait anyway).
  std::shared_ptr<detail::Completion> submit(std::unique_ptr<detail::Submission> submission,
                                             std::span<const std::shared_ptr<detail::Completion>> waits,
                                             bool caller_waits) override {
    auto& s = static_cast<CudaSubmission&>(*submission);
    std::vector<std::shared_ptr<detail::Completion>> pending, upstream;
    for (const auto& w : waits) {
      if (auto* c = dynamic_cast<CudaCompletion*>(w.get())) {  // ordered by the stream already
        // (may_fail_at_completion first: most never can, and then no driver call is made)
        if (c->may_fail_at_completion() && !c->poll()) upstream.push_back(w);
        continue;
      }
      if (!caller_waits && !w->poll()) {
        pending.push_back(w);
        continue;
      }
      try {
        w->wait();
      } catch (...) {  // reported just below
      }
    }
    if (s.failed) return detail::completed(s.failed);
    if (auto e = detail::failed_dependency(waits, s.entries.empty() ? "cuda" : detail::entry_name(s.entries[s.serves.front()])))
      return detail::completed(e);
    const int index = s.entries.empty() ? 0 : detail::device_of(s.entries.front());
    auto& d = device(index);
    // A submission that waits for another backend's work blocks its stream in a host function until
    // that work is done, and the driver's implicitly synchronizing calls (cuMemFree, cuMemFreeHost,
    // cuMemAllocHost: they wait for the device to be idle) would then wait for it too, on this thread,
    // which may be the one that was to finish it. So every such call this submission makes comes
    // before the host function is queued: the finished submissions' memory is freed first, and the
    // page-locked buffers and check words are allocated before it.
    if (!pending.empty()) {
      std::vector<InFlight> finished;
      {
        std::lock_guard<std::mutex> lock(mu_);
        current(d);
        reap_locked(finished);
      }
    }
    std::vector<InFlight> finished;  // destroyed after the lock is released: freeing storage takes it
    std::lock_guard<std::mutex> lock(mu_);
    current(d);
    reap_locked(finished);
    std::shared_ptr<ForeignWaits> foreign;
    if (!pending.empty()) {
      foreign = std::make_shared<ForeignWaits>();
      foreign->waits = std::move(pending);
      foreign->what = s.entries.empty() ? "cuda" : detail::entry_name(s.entries[s.serves.front()]);
    }
    ++stats_.submissions;
    std::size_t i = 0;
    // While another backend's work is pending, an upload cannot hand its source to
    // cuMemcpyHtoDAsync: from pageable memory the driver may read it during the call, before the
    // host function has waited for that work (seen on a real GPU; the emulator reads such a source
    // at the call too). The submission's uploads then go through page-locked buffers that a host
    // function fills once the work is done, and the submission is not recorded as a graph.
    std::shared_ptr<PinnedStaging> staging;
    if (foreign) {
      for (const auto& e : s.entries)
        if (std::holds_alternative<detail::Upload>(e) && std::get<detail::Upload>(e).bytes) {
          staging = std::make_shared<PinnedStaging>();
          staging->api = &api_;
          break;
        }
    }
    DeviceState::Recorded* rec = s.signature.empty() || staging ? nullptr : &recorded_entry(d, s.signature);
    std::shared_ptr<IndexChecks> checks;
    try {
      if (staging) {
        for (const auto& e : s.entries) {
          const auto* u = std::get_if<detail::Upload>(&e);
          if (!u || !u->bytes) continue;
          i = static_cast<std::size_t>(&e - s.entries.data());  // an error names this upload
          void* pinned = nullptr;
          check(api_.cuMemAllocHost(&pinned, u->bytes), "cuMemAllocHost", "upload");
          staging->buffers.push_back(pinned);
        }
        i = 0;
      }
      checks = index_checks(s, index);
      if (foreign) {
        auto* holder = new std::shared_ptr<ForeignWaits>(foreign);
        if (const CUresult r = api_.cuLaunchHostFunc(d.stream, &ForeignWaits::run, holder); r != CUDA_SUCCESS) {
          delete holder;
          check(r, "cuLaunchHostFunc", foreign->what.c_str());
        }
      }
      if (rec && rec->exec) {
        replay(d, *rec, s, checks);
      } else if (rec && rec->runs > 0) {
        capture(d, s, *rec, i);  // the second run: recorded as a graph, then launched
        replay(d, *rec, s, checks);
      } else {
        for (; i < s.entries.size(); ++i) enqueue(d, s.entries[i], staging.get(), checks.get(), s.position[i]);
        if (rec) ++rec->runs;
      }
    } catch (const Error& e) {
      // Host functions and copies already queued may still write the staging buffers and the
      // checks' words: let them finish.
      if (staging || checks) api_.cuStreamSynchronize(d.stream);
      return detail::completed(std::make_exception_ptr(detail::entry_error(
          s.entries[s.serves[i]], s.position[i], s.recorded, e, Device{DeviceKind::cuda, index})));
    }
    CUevent event = nullptr;
    check(api_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "submit");
    check(api_.cuEventRecord(event, d.stream), "cuEventRecord", "submit");
    if (checks && checks->checks.empty()) checks.reset();  // no checking launch had work
    auto done = std::make_shared<CudaCompletion>(
        api_, d.context, event, std::move(foreign), provider_.emulated, std::move(checks), std::move(upstream),
        s.entries.empty() ? std::string("cuda") : detail::entry_name(s.entries[s.serves.front()]));
    in_flight_.push_back({done, std::shared_ptr<detail::Submission>(std::move(submission)), std::move(staging)});
    return done;
  }

  void synchronize() override {
    std::vector<InFlight> finished;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& d : devices_) {
      current(d);
      api_.cuStreamSynchronize(d.stream);
    }
    reap_locked(finished);
  }

  TransferStats transfer_stats() const noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  static CUdeviceptr ptr(const void* handle) { return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(handle)); }
  static CUdeviceptr ptr(const detail::Storage& s, std::size_t offset) { return ptr(s.handle()) + offset; }

  DeviceState& device(int index) {
    if (index < 0 || static_cast<std::size_t>(index) >= devices_.size())
      throw Error(ErrorCode::device_unavailable, "[cuda] cuda:" + std::to_string(index) + " does not exist");
    return devices_[static_cast<std::size_t>(index)];
  }

  void current(const DeviceState& d) { check(api_.cuCtxSetCurrent(d.context), "cuCtxSetCurrent", "cuda"); }

  void check(CUresult r, const char* call, const char* what) const {
    if (r != CUDA_SUCCESS && provider_.emulated && r != CUDA_ERROR_OUT_OF_MEMORY) {
      try {
        check_driver(&api_, r, what, call);
      } catch (const Error& e) {
        throw Error(e.code(), e.what() + checker_report(true));
      }
    }
    check_driver(&api_, r, what, call);
  }

  // The page-locked words for the device-side checks of the submission's entries (one per entry
  // whose kernel checks), or null when none does.
  std::shared_ptr<IndexChecks> index_checks(const CudaSubmission& s, int index) {
    std::size_t count = 0;
    for (const auto& e : s.entries)
      if (const auto* call = std::get_if<detail::OpCall>(&e); call && checks_on_device(*call)) ++count;
    if (count == 0) return nullptr;
    auto checks = std::make_shared<IndexChecks>();
    check(pinned_words_->take(count, checks->words), "cuMemAllocHost", "submit");
    checks->pool = pinned_words_;
    checks->recorded = s.recorded;
    checks->device = Device{DeviceKind::cuda, index};
    return checks;
  }

  // `checks` and `position` (the recorded entry's position): where a checking launch's result goes.
  void enqueue(DeviceState& d, const detail::Entry& e, PinnedStaging* staging = nullptr, IndexChecks* checks = nullptr,
               std::size_t position = 0) {
    switch (e.index()) {
      case 0: {
        const auto& call = std::get<detail::OpCall>(e);
        const char* name = op_info(call.op).name;
        if (auto c = launch(api_, d.stream, DeviceShape{d.sm, d.multiprocessors}, call, d.kernels)) {
          if (!checks || checks->checks.size() >= checks->words.size())
            throw Error(ErrorCode::internal, std::string("[") + name + "] a device-side check has no word to go to");
          std::uint64_t* word = checks->words[checks->checks.size()];
          check(api_.cuMemcpyDtoHAsync(word, c->slot, sizeof *word, d.stream), "cuMemcpyDtoHAsync", name);
          checks->checks.push_back({call.op, position, *c});
        }
        if (sync_each_launch_) check(api_.cuStreamSynchronize(d.stream), "cuStreamSynchronize", name);
        return;
      }
      case 1: {
        const auto& u = std::get<detail::Upload>(e);
        const void* src = u.src;
        if (u.bytes && staging) {
          // allocated by submit before the host function that waits was queued, one per upload
          if (staging->used >= staging->buffers.size())
            throw Error(ErrorCode::internal, "[upload] no page-locked buffer was set aside for this upload");
          void* pinned = staging->buffers[staging->used++];
          auto copy = std::make_unique<HostCopy>(HostCopy{pinned, u.src, u.bytes});
          check(api_.cuLaunchHostFunc(d.stream, &HostCopy::run, copy.get()), "cuLaunchHostFunc", "upload");
          copy.release();  // HostCopy::run owns it now
          src = pinned;
        }
        if (u.bytes) check(api_.cuMemcpyHtoDAsync(ptr(*u.dst, u.offset), src, u.bytes, d.stream), "cuMemcpyHtoDAsync", "upload");
        ++stats_.uploads;
        stats_.upload_bytes += u.bytes;
        return;
      }
      case 2: {
        const auto& r = std::get<detail::Readback>(e);
        if (r.bytes) check(api_.cuMemcpyDtoHAsync(r.dst, ptr(*r.src, r.offset), r.bytes, d.stream), "cuMemcpyDtoHAsync", "readback");
        ++stats_.readbacks;
        stats_.readback_bytes += r.bytes;
        return;
      }
      default: {
        const auto& c = std::get<detail::DeviceCopy>(e);
        if (c.bytes)
          check(api_.cuMemcpyDtoDAsync(ptr(*c.dst, c.dst_offset), ptr(*c.src, c.src_offset), c.bytes, d.stream),
                "cuMemcpyDtoDAsync", "device_copy");
        ++stats_.device_copies;
        stats_.device_copy_bytes += c.bytes;
        return;
      }
    }
  }

  // The record of a batch signature on `d`, made on first sight. At most 32 are kept: the least
  // recently used goes, with its graph (a launch of it already queued still runs).
  DeviceState::Recorded& recorded_entry(DeviceState& d, const std::string& signature) {
    auto it = d.recorded.find(signature);
    if (it == d.recorded.end()) {
      if (d.recorded.size() >= 32) {
        auto oldest = d.recorded.begin();
        for (auto r = d.recorded.begin(); r != d.recorded.end(); ++r)
          if (r->second.last_use < oldest->second.last_use) oldest = r;
        if (oldest->second.exec) api_.cuGraphExecDestroy(oldest->second.exec);
        d.recorded.erase(oldest);
      }
      it = d.recorded.emplace(signature, DeviceState::Recorded{}).first;
    }
    it->second.last_use = ++use_clock_;
    return it->second;
  }

  // Records the submission's work on the stream as a graph instead of running it. `i` follows the
  // entry being recorded, for the error.
  void capture(DeviceState& d, const CudaSubmission& s, DeviceState::Recorded& rec, std::size_t& i) {
    // The graph's copies of its checks go to words of its own (the submission's words change with
    // every run): a replay copies them into the run's words (replay below).
    rec.graph_words = index_checks(s, detail::device_of(s.entries.front()));
    check(api_.cuStreamBeginCapture(d.stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture", "batch");
    const TransferStats before = stats_;
    CUgraph graph = nullptr;
    try {
      for (; i < s.entries.size(); ++i) enqueue(d, s.entries[i], nullptr, rec.graph_words.get(), s.position[i]);
    } catch (...) {
      if (api_.cuStreamEndCapture(d.stream, &graph) == CUDA_SUCCESS && graph) api_.cuGraphDestroy(graph);
      throw;
    }
    --i;  // errors below are the submission's, named after its last entry
    // Only the words are kept: the checks' messages hold this run's call (and its tensors).
    if (rec.graph_words) rec.graph_words->checks.clear();
    rec.stats = stats_;
    rec.stats.uploads -= before.uploads;
    rec.stats.upload_bytes -= before.upload_bytes;
    rec.stats.readbacks -= before.readbacks;
    rec.stats.readback_bytes -= before.readback_bytes;
    rec.stats.device_copies -= before.device_copies;
    rec.stats.device_copy_bytes -= before.device_copy_bytes;
    stats_ = before;  // counted when the graph runs
    check(api_.cuStreamEndCapture(d.stream, &graph), "cuStreamEndCapture", "batch");
    const CUresult r = api_.cuGraphInstantiate(&rec.exec, graph, 0);
    api_.cuGraphDestroy(graph);
    if (r != CUDA_SUCCESS) rec.exec = nullptr;
    check(r, "cuGraphInstantiate", "batch");
  }

  // A host function queued after a replayed graph: the graph's check words into the run's own.
  struct CheckCopy {
    std::shared_ptr<IndexChecks> from, to;
    static void run(void* p) {
      std::unique_ptr<CheckCopy> c(static_cast<CheckCopy*>(p));
      const std::size_t n = std::min(c->from->words.size(), c->to->words.size());
      for (std::size_t w = 0; w < n; ++w) *c->to->words[w] = *c->from->words[w];
    }
  };

  // Launches the recorded graph. With device checks, `checks` (the submission's words) gets each
  // check planned again for this run's entries (their messages name this run's tensors), and a
  // host function after the graph copies the graph's words into its own.
  void replay(DeviceState& d, const DeviceState::Recorded& rec, const CudaSubmission& s,
              const std::shared_ptr<IndexChecks>& checks) {
    check(api_.cuGraphLaunch(rec.exec, d.stream), "cuGraphLaunch", "batch");
    if (checks && rec.graph_words) {
      checks->checks.clear();
      for (std::size_t e = 0; e < s.entries.size(); ++e) {
        const auto* call = std::get_if<detail::OpCall>(&s.entries[e]);
        if (!call || !checks_on_device(*call)) continue;
        if (auto c = planned_check(*call, d.sm)) checks->checks.push_back({call->op, s.position[e], std::move(*c)});
      }
      auto* copy = new CheckCopy{rec.graph_words, checks};
      if (const CUresult r = api_.cuLaunchHostFunc(d.stream, &CheckCopy::run, copy); r != CUDA_SUCCESS) {
        delete copy;
        check(r, "cuLaunchHostFunc", "batch");
      }
    }
    stats_.uploads += rec.stats.uploads;
    stats_.upload_bytes += rec.stats.upload_bytes;
    stats_.readbacks += rec.stats.readbacks;
    stats_.readback_bytes += rec.stats.readback_bytes;
    stats_.device_copies += rec.stats.device_copies;
    stats_.device_copy_bytes += rec.stats.device_copy_bytes;
    ++stats_.replays;
  }

  // Moves the submissions whose end the stream has passed (in order: the stream is FIFO) to
  // `finished`, for the caller to drop once it has released the lock.
  void reap_locked(std::vector<InFlight>& finished) {
    while (!in_flight_.empty() && in_flight_.front().done->poll()) {
      finished.push_back(std::move(in_flight_.front()));
      in_flight_.pop_front();
    }
  }

  DriverProvider provider_;
  const DriverApi& api_;
  std::vector<DeviceState> devices_;
  mutable std::mutex mu_;
  std::deque<InFlight> in_flight_;
  std::shared_ptr<PinnedWords> pinned_words_ = std::make_shared<PinnedWords>(api_);
  std::uint64_t use_clock_ = 0;
  TransferStats stats_;
  const bool sync_each_launch_ = [] {
    const char* v = std::getenv("TRINE_CUDA_SYNC");
    return v && *v == '1';
  }();
};

// The devices of a provider, with their primary contexts and streams; empty with `reason` set when
// the driver has none or fails.
std::vector<DeviceState> open_devices(const DriverApi& api, std::string& reason) {
  std::vector<DeviceState> out;
  auto fail = [&](CUresult r, const char* call) {
    reason = std::string(call) + " failed: " + result_name(&api, r);
    for (auto& d : out) api.cuDevicePrimaryCtxRelease(d.device);
    out.clear();
    return out;
  };
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) return fail(r, "cuInit");
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) return fail(r, "cuDeviceGetCount");
  if (count == 0) {
    reason = "the driver reports no CUDA device";
    return out;
  }
  for (int i = 0; i < count; ++i) {
    DeviceState d;
    if (CUresult r = api.cuDeviceGet(&d.device, i); r != CUDA_SUCCESS) return fail(r, "cuDeviceGet");
    char name[256] = {};
    api.cuDeviceGetName(name, sizeof(name), d.device);
    d.name = name;
    int major = 0, minor = 0;
    api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device);
    api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device);
    d.sm = major * 10 + minor;
    api.cuDeviceGetAttribute(&d.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d.device);
    api.cuDeviceGetAttribute(&d.shared_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d.device);
    api.cuDeviceTotalMem(&d.total_memory, d.device);
    if (CUresult r = api.cuDevicePrimaryCtxRetain(&d.context, d.device); r != CUDA_SUCCESS)
      return fail(r, "cuDevicePrimaryCtxRetain");
    out.push_back(d);
    if (CUresult r = api.cuCtxSetCurrent(d.context); r != CUDA_SUCCESS) return fail(r, "cuCtxSetCurrent");
    if (CUresult r = api.cuStreamCreate(&out.back().stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      return fail(r, "cuStreamCreate");
  }
  return out;
}

}  // namespace
}  // namespace trine::cuda

namespace trine::detail {

// TRINE_CUDA_EMULATOR=1 runs the backend on the PTX emulator; otherwise libcuda.so.1 is opened at
// run time. Neither: the backend is unavailable, with the reason trine-info shows.
// An op with neither a kernel nor a refusal (kernels/<family>.cpp) is a broken build, not a missing
// device: the error it throws escapes start-up, as the cpu backend's does, so every call of every
// backend fails naming the op and the file, on machines with no GPU too.
std::unique_ptr<Backend> make_cuda_backend(std::string& reason, bool& built) {
  built = true;
  cuda::require_kernels();
  const char* emu = std::getenv("TRINE_CUDA_EMULATOR");
  cuda::DriverProvider provider = emu && *emu == '1' ? cuda::emulator_provider() : cuda::libcuda_provider();
  if (!provider.api) {
    reason = provider.reason + (emu && *emu == '1' ? "" : " (TRINE_CUDA_EMULATOR=1 runs it on the PTX emulator)");
    return nullptr;
  }
  auto devices = cuda::open_devices(*provider.api, reason);
  if (devices.empty()) {
    reason = provider.name + ": " + reason;
    return nullptr;
  }
  reason = provider.name + (provider.emulated ? " (software: kernels run on the CPU)" : "");
  return std::make_unique<cuda::CudaBackend>(std::move(provider), std::move(devices));
}

}  // namespace trine::detail
