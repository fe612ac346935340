// The cpu_simd backend: guarded host allocations, ISA choice, and submissions run on the pool.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <xsimd/config/xsimd_cpuid.hpp>

#include "backends/backend.hpp"
#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/thread_pool.hpp"
#include "backends/entries.hpp"
#include "tensor/storage.hpp"
#include "trine/debug.hpp"
#include "trine/error.hpp"

namespace trine::cpu {
namespace {

using detail::entry_error;
using detail::entry_name;
using detail::failed_dependency;

// Every allocation is [header | front guard | data | back guard]; the header keeps the size.
constexpr std::size_t k_align = 64;
constexpr std::size_t k_guard = 64;
constexpr unsigned char k_sentinel = 0xA5;
// Blocks from 4 MiB up are aligned to 2 MiB and advised as transparent huge pages (Debian's
// default THP mode is madvise: only advised memory gets them). A streaming op over 4 KiB pages
// takes a TLB miss every 4 KiB per array, and the hardware prefetchers stop at each page edge: on
// the Zen 5 here, one thread's relu on 16M floats went from 22-28 to 35-38 GB/s and dot from
// 12-20 to 28-31 GB/s. The cost: up to one 2 MiB page more of memory per large block.
constexpr std::size_t k_huge_page = std::size_t{2} << 20;
constexpr std::size_t k_huge_from = std::size_t{4} << 20;

// TRINE_CPU_HUGE_PAGES: unset or 1 advises blocks from k_huge_from up as huge pages, 0 leaves them
// on the kernel's default pages; any other value is Error(invalid_argument) at the first large
// allocation. Read once.
bool huge_pages_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("TRINE_CPU_HUGE_PAGES");
    if (!env || !*env) return true;
    const std::string v(env);
    if (v != "0" && v != "1")
      throw Error(ErrorCode::invalid_argument, "[cpu] TRINE_CPU_HUGE_PAGES must be 0 or 1, got '" + v + "'");
    return v == "1";
  }();
  return allowed;
}

struct IsaChoice {
  const KernelTable* table = nullptr;
  std::string name;
  std::string reason;
  std::string error;  // non-empty: the backend cannot start
};

IsaChoice choose_isa() {
  const auto have = xsimd::available_architectures();
  struct Isa {
    const char* name;
    bool present;
    const KernelTable& (*table)();  // null: not built (TRINE_CPU_ISAS)
    const char* why_best;
  };
#if defined(TRINE_CPU_BUILT_AVX512)
  constexpr auto avx512_table = &avx512::table;
#else
  constexpr const KernelTable& (*avx512_table)() = nullptr;
#endif
#if defined(TRINE_CPU_BUILT_AVX2)
  constexpr auto avx2_table = &avx2::table;
#else
  constexpr const KernelTable& (*avx2_table)() = nullptr;
#endif
  constexpr auto sse4_2_table = &sse4_2::table;  // always built (CMakeLists.txt)
  // Best first: the default is the first one built that this CPU has.
  const Isa isas[] = {
      {"avx512", have.avx512bw && have.avx512dq && have.avx512cd && have.avx512f, avx512_table,
       "best this CPU supports (avx512f/cd/dq/bw present)"},
      // F16C too (the conversions use it): every AVX2 CPU made has it, xsimd does not ask.
      {"avx2", have.fma3_avx2 && __builtin_cpu_supports("f16c"), avx2_table,
       "best this CPU supports (avx2+fma+f16c present, no avx512bw)"},
      {"sse4_2", static_cast<bool>(have.sse4_2), sse4_2_table, "best this CPU supports (no avx2+fma+f16c)"},
  };
  IsaChoice c;
  const char* env = std::getenv("TRINE_CPU_ISA");
  const std::string want = env ? env : "";
  std::string built;
  bool all_built = true;
  for (const Isa& isa : isas) {
    if (isa.table) built += std::string(built.empty() ? "" : ", ") + isa.name;
    all_built = all_built && isa.table;
  }
  for (const Isa& isa : isas) {
    if (!want.empty() && want != isa.name) continue;
    if (!isa.table) {
      if (want.empty()) continue;
      c.error = "TRINE_CPU_ISA=" + want + " was requested but this build has no " + want +
                " kernels (built with TRINE_CPU_ISAS: " + built + ")";
      return c;
    }
    if (!isa.present) {
      if (want.empty()) continue;
      c.error = "TRINE_CPU_ISA=" + want + " was requested but this CPU does not support it";
      return c;
    }
    const std::string why = isa.why_best + (all_built ? std::string() : "; built: " + built);
    return {&isa.table(), isa.name, want.empty() ? why : "TRINE_CPU_ISA=" + want, {}};
  }
  c.error = want.empty() ? "this CPU lacks SSE4.2, the oldest instruction set trine's kernels are built for"
                         : "TRINE_CPU_ISA='" + want + "' is not one of sse4_2, avx2, avx512";
  return c;
}

const IsaChoice& isa_choice() {
  static const IsaChoice c = choose_isa();
  return c;
}

std::size_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return SIZE_MAX;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(size);
}

class CpuSubmission final : public detail::Submission {
 public:
  std::vector<detail::Entry> entries;
};

// Work below this runs on the submitting thread when nothing it depends on is pending: handing it
// to the executor thread (a wake-up, tens of microseconds on these VMs) would cost more than it.
constexpr double k_inline_flops = 2e5;
constexpr double k_inline_bytes = 256 * 1024;

bool is_tiny(const std::vector<detail::Entry>& entries) {
  double flops = 0, bytes = 0;
  for (const auto& e : entries) {
    if (const auto* call = std::get_if<detail::OpCall>(&e)) {
      flops += call->cost.flops;
      bytes += call->cost.bytes;
    } else if (const auto* u = std::get_if<detail::Upload>(&e)) {
      bytes += static_cast<double>(u->bytes);
    } else if (const auto* r = std::get_if<detail::Readback>(&e)) {
      bytes += static_cast<double>(r->bytes);
    } else {
      bytes += 2.0 * static_cast<double>(std::get<detail::DeviceCopy>(e).bytes);
    }
  }
  return flops < k_inline_flops && bytes < k_inline_bytes;
}

class CpuBackend final : public detail::Backend {
 public:
  explicit CpuBackend(const KernelTable& table) : table_(table) {}

  DeviceKind kind() const noexcept override { return DeviceKind::cpu; }

  std::vector<DeviceInfo> devices() const override {
    const auto& c = isa_choice();
    return {DeviceInfo{Device::cpu(), "cpu (" + c.name + ", " + std::to_string(thread_count()) + " threads)",
                       "isa=" + c.name + " (" + c.reason + "); threads=" + std::to_string(thread_count()), false,
                       "trine cpu_simd " + c.name}};
  }

  void* allocate(int index, std::size_t bytes) override {
    if (index != 0)
      throw Error(ErrorCode::device_unavailable, "[allocate] cpu:" + std::to_string(index) + " does not exist");
    // Asked once: sysconf(_SC_PHYS_PAGES) is a sysinfo system call, a third of a tiny op's time.
    static const std::size_t limit = physical_memory_bytes();
    if (bytes > limit || bytes > SIZE_MAX - 3 * k_align) {
      throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) +
                                                " bytes on cpu exceed the machine's " + std::to_string(limit) +
                                                " bytes of memory");
    }
    std::size_t padded = (bytes + k_align - 1) / k_align * k_align;
    std::size_t total = k_align + k_guard + padded + k_guard;
    void* base = nullptr;
    if (total >= k_huge_from && huge_pages_allowed()) {
      total = (total + k_huge_page - 1) / k_huge_page * k_huge_page;
      base = std::aligned_alloc(k_huge_page, total);
      if (base) (void)madvise(base, total, MADV_HUGEPAGE);  // a hint: without THP it changes nothing
    } else {
      base = std::aligned_alloc(k_align, total);
    }
    if (!base) {
      throw Error(ErrorCode::out_of_memory, "[allocate] cpu could not allocate " + std::to_string(bytes) + " bytes");
    }
    auto* b = static_cast<unsigned char*>(base);
    std::memcpy(b, &bytes, sizeof(bytes));  // bytes in use (prepare() updates it)
    std::memset(b + k_align, k_sentinel, k_guard);
    std::memset(b + k_align + k_guard + bytes, k_sentinel, padded - bytes + k_guard);
    return b + k_align + k_guard;
  }

  // Guards follow the bytes in use: the front guard stays, a back guard is written right after them
  // (the block may be a larger size class, or reused).
  void prepare(void* handle, std::size_t bytes) noexcept override {
    auto* data = static_cast<unsigned char*>(handle);
    std::memcpy(data - k_align - k_guard, &bytes, sizeof(bytes));
    std::memset(data + bytes, k_sentinel, k_guard);  // inside the block: bytes <= its capacity
  }

  void deallocate(int, void* handle) noexcept override {
    if (handle) std::free(static_cast<unsigned char*>(handle) - k_align - k_guard);
  }

  std::optional<bool> guards_intact(const void* handle) const noexcept override {
    const auto* data = static_cast<const unsigned char*>(handle);
    const unsigned char* base = data - k_align - k_guard;
    std::size_t bytes;
    std::memcpy(&bytes, base, sizeof(bytes));
    for (std::size_t i = 0; i < k_guard; ++i)
      if (base[k_align + i] != k_sentinel) return false;
    for (std::size_t i = bytes; i < bytes + k_guard; ++i)
      if (data[i] != k_sentinel) return false;
    return true;
  }

  // Host memory: coherent, and ordered once the writer's completion is observed.
  void* host_pointer(void* handle) const noexcept override { return handle; }

  bool supports(const detail::OpCall& call) const override {
    // Every op the table registers a kernel for runs here, for every dtype the op table lets through.
    if (!table_.ops.find(call.op)) return false;
    for (const auto& t : call.inputs) {
      if (t.defined() && t.device().kind != DeviceKind::cpu) return false;
    }
    return detail::output_writable(call) && call.output.device().kind == DeviceKind::cpu;
  }

  std::string unsupported_reason(const detail::OpCall& call) const override {
    const char* why = table_.ops.refusal(call.op);
    return why ? why : "";
  }

  std::unique_ptr<detail::Submission> encode(std::vector<detail::Entry> entries) override {
    auto s = std::make_unique<CpuSubmission>();
    s->entries = std::move(entries);
    return s;
  }

  // Runs on the submitting thread when the work is tiny, or the caller waits anyway and the
  // executor is idle, and nothing it depends on is pending; otherwise a task on the pool's executor
  // (FIFO, so it runs after every earlier cpu submission), which first waits for other backends'
  // completions it depends on.
  std::shared_ptr<detail::Completion> submit(std::unique_ptr<detail::Submission> submission,
                                             std::span<const std::shared_ptr<detail::Completion>> waits,
                                             bool caller_waits) override {
    auto* s = static_cast<CpuSubmission*>(submission.get());  // only ever our own encode()'s
    submissions_.fetch_add(1, std::memory_order_relaxed);
    bool deps_done = true;
    for (const auto& w : waits) deps_done = deps_done && w->poll();
    if (deps_done && (is_tiny(s->entries) || (caller_waits && queue_idle()))) {
      if (auto e = failed_dependency(waits, first_name(s->entries))) return detail::completed(e);
      return detail::completed(run(s->entries));
    }
    auto done = std::make_shared<detail::HostCompletion>();
    std::shared_ptr<detail::Submission> owned(std::move(submission));
    post([this, owned, waits = std::vector<std::shared_ptr<detail::Completion>>(waits.begin(), waits.end()), done] {
      auto& entries = static_cast<CpuSubmission&>(*owned).entries;
      for (const auto& w : waits) {
        try {
          w->wait();
        } catch (...) {  // reported by failed_dependency below
        }
      }
      std::exception_ptr error = failed_dependency(waits, first_name(entries));
      if (!error) error = run(entries);
      entries.clear();  // drop the storages before signalling, so memory is free when waiters wake
      done->finish(error);
    });
    return done;
  }

  void synchronize() override {
    auto marker = std::make_shared<detail::HostCompletion>();
    post([marker] { marker->finish(nullptr); });
    marker->wait();
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
    return t;
  }

 private:
  static const char* first_name(const std::vector<detail::Entry>& entries) {
    return entries.empty() ? "cpu" : entry_name(entries.front());
  }

  static unsigned char* bytes_of(const detail::Storage& s) { return static_cast<unsigned char*>(s.handle()); }

  void run_entry(const detail::Entry& e) {
    switch (e.index()) {
      case 0: execute(table_, std::get<detail::OpCall>(e)); return;
      case 1: {
        const auto& u = std::get<detail::Upload>(e);
        if (u.bytes) std::memcpy(bytes_of(*u.dst) + u.offset, u.src, u.bytes);
        uploads_.fetch_add(1, std::memory_order_relaxed);
        upload_bytes_.fetch_add(u.bytes, std::memory_order_relaxed);
        return;
      }
      case 2: {
        const auto& r = std::get<detail::Readback>(e);
        if (r.bytes) std::memcpy(r.dst, bytes_of(*r.src) + r.offset, r.bytes);
        readbacks_.fetch_add(1, std::memory_order_relaxed);
        readback_bytes_.fetch_add(r.bytes, std::memory_order_relaxed);
        return;
      }
      default: {
        const auto& c = std::get<detail::DeviceCopy>(e);
        if (c.bytes) std::memmove(bytes_of(*c.dst) + c.dst_offset, bytes_of(*c.src) + c.src_offset, c.bytes);
        device_copies_.fetch_add(1, std::memory_order_relaxed);
        device_copy_bytes_.fetch_add(c.bytes, std::memory_order_relaxed);
        return;
      }
    }
  }

  // Runs every entry in order; the first failure stops the submission and becomes its error, naming
  // the entry's op and, in a batch, its position.
  std::exception_ptr run(const std::vector<detail::Entry>& entries) noexcept {
    std::size_t i = 0;
    try {
      for (; i < entries.size(); ++i) run_entry(entries[i]);
      return nullptr;
    } catch (const Error& e) {
      // A single op's own error already names it; one raised below the op (a bad environment
      // variable read by a kernel) gets the op and the device.
      if (entries.size() == 1 &&
          std::string_view(e.what()).starts_with(std::string("[") + entry_name(entries[0]) + "]"))
        return std::current_exception();
      return std::make_exception_ptr(entry_error(entries[i], i, entries.size(), e, Device::cpu()));
    } catch (const std::bad_alloc&) {
      return std::make_exception_ptr(Error(ErrorCode::out_of_memory, std::string("[") + entry_name(entries[i]) +
                                                                         "] out of host memory for temporaries"));
    } catch (const std::exception& e) {
      return std::make_exception_ptr(
          Error(ErrorCode::internal, std::string("[") + entry_name(entries[i]) + "] unexpected failure: " + e.what()));
    }
  }

  const KernelTable& table_;
  std::atomic<std::uint64_t> uploads_{0}, upload_bytes_{0}, readbacks_{0}, readback_bytes_{0}, device_copies_{0},
      device_copy_bytes_{0}, submissions_{0};
};

}  // namespace

namespace {
// TRINE_CPU_STREAM_BYTES as a byte count, or -1 when it is unset; anything else is an error.
i64 stream_bytes_env() {
  static const i64 bytes = [] {
    if (const char* env = std::getenv("TRINE_CPU_STREAM_BYTES"); env && *env) {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(env, &end, 10);
      if (*end != '\0' || errno != 0 || v < 0 || !std::isdigit(static_cast<unsigned char>(*env)))
        throw Error(ErrorCode::invalid_argument,
                    std::string("[cpu] TRINE_CPU_STREAM_BYTES must be a byte count, got '") + env + "'");
      return static_cast<i64>(v);
    }
    return i64{-1};
  }();
  return bytes;
}
}  // namespace

i64 stream_store_bytes() {
  static const i64 bytes = [] {
    if (stream_bytes_env() >= 0) return stream_bytes_env();
    // The first CPU's level-3 cache as /sys lists it; glibc's sysconf(_SC_LEVEL3_CACHE_SIZE)
    // said 320 MiB on a VM whose /sys and lscpu say 32.
    i64 llc = i64{32} << 20;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream level_file(dir + "level"), size_file(dir + "size");
      int level = 0;
      std::string size;
      if (!(level_file >> level) || !(size_file >> size) || level != 3 || size.empty()) continue;
      const i64 v = std::atoll(size.c_str());
      llc = size.back() == 'K' ? v << 10 : size.back() == 'M' ? v << 20 : v;
    }
    return std::clamp<i64>(llc, i64{4} << 20, i64{64} << 20);
  }();
  return bytes;
}

i64 stream_transpose_bytes() {
  const i64 env = stream_bytes_env();
  return env >= 0 ? env : i64{1} << 20;
}

bool amx_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("TRINE_CPU_AMX");
    if (!env || !*env) return true;
    const std::string v(env);
    if (v != "0" && v != "1")
      throw Error(ErrorCode::invalid_argument, "[cpu] TRINE_CPU_AMX must be 0 or 1, got '" + v + "'");
    return v == "1";
  }();
  return allowed;
}

int winograd_forced() {
  static const int forced = [] {
    const char* env = std::getenv("TRINE_CPU_WINOGRAD");
    if (!env || !*env) return -1;
    const std::string v(env);
    if (v == "auto") return -1;
    if (v == "0" || v == "2" || v == "4") return v[0] - '0';
    throw Error(ErrorCode::invalid_argument, "[cpu] TRINE_CPU_WINOGRAD must be auto, 0, 2 or 4, got '" + v + "'");
  }();
  return forced;
}

}  // namespace trine::cpu

namespace trine::detail {

std::unique_ptr<Backend> make_cpu_backend(std::string& reason, bool& built) {
  built = true;
  const auto& c = cpu::isa_choice();
  if (!c.error.empty()) {
    reason = c.error;
    return nullptr;
  }
  try {
    int threads = cpu::thread_count();
    reason = "isa " + c.name + " (" + c.reason + "), " + std::to_string(threads) + " threads";
  } catch (const Error& e) {
    reason = e.what();
    return nullptr;
  }
  return std::make_unique<cpu::CpuBackend>(*c.table);
}

}  // namespace trine::detail

namespace trine::debug {

bool guards_intact(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "[guards_intact] undefined tensor");
  auto r = t.storage()->backend().guards_intact(t.storage()->handle());
  if (!r) throw Error(ErrorCode::unsupported, "[guards_intact] " + t.device().str() + " keeps no allocation guards");
  return *r;
}

std::string cpu_isa() { return cpu::isa_choice().error.empty() ? cpu::isa_choice().name : "none"; }
std::string cpu_isa_reason() {
  const auto& c = cpu::isa_choice();
  return c.error.empty() ? c.reason : c.error;
}
void bare_submit(Device device) {
  if (!detail::backend_for(device, "bare_submit").bare_submit(device.index)) {
    throw Error(ErrorCode::unsupported, "[bare_submit] " + device.str() + " has no submission of its own to time");
  }
}
std::string cpu_bf16_matmul() {
  (void)cpu::amx_allowed();  // a bad TRINE_CPU_AMX is an error whichever kernel would run
  const auto& c = cpu::isa_choice();
  return c.error.empty() ? c.table->bf16_gemm_kind() : "none";
}

std::string cpu_conv2d_path(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const auto& c = cpu::isa_choice();
  if (!c.error.empty()) return "none";
  if (x.rank() != 4 || w.rank() != 4 || p.groups < 1 || x[1] % p.groups || w[0] % p.groups || w[1] != x[1] / p.groups)
    throw Error(ErrorCode::invalid_argument,
                "[cpu_conv2d_path] shapes " + x.str() + " and " + w.str() + " do not fit a conv2d");
  cpu::Conv2dArgs a;
  a.N = x[0], a.C = x[1], a.H = x[2], a.W = x[3];
  a.K = w[0], a.R = w[2], a.S = w[3];
  a.stride_h = p.stride.h, a.stride_w = p.stride.w, a.pad_h = p.padding.h, a.pad_w = p.padding.w;
  a.dil_h = p.dilation.h, a.dil_w = p.dilation.w, a.groups = p.groups;
  a.P = (a.H + 2 * a.pad_h - a.dil_h * (a.R - 1) - 1) / a.stride_h + 1;
  a.Q = (a.W + 2 * a.pad_w - a.dil_w * (a.S - 1) - 1) / a.stride_w + 1;
  return c.table->conv2d_path(a);
}

}  // namespace trine::debug
