// The cpu_simd backend: guarded host allocations, ISA choice, and submissions run on the pool.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <xsimd/config/xsimd_cpuid.hpp>

#include "backends/backend.hpp"
#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/thread_pool.hpp"
#include "trine/debug.hpp"
#include "trine/error.hpp"

namespace trine::cpu {
namespace {

// Every allocation is [header | front guard | data | back guard]; the header keeps the size.
constexpr std::size_t k_align = 64;
constexpr std::size_t k_guard = 64;
constexpr unsigned char k_sentinel = 0xA5;

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
    const KernelTable& (*table)();
    const char* why_best;
  };
  // Best first: the default is the first one this CPU has.
  const Isa isas[] = {
      {"avx512", have.avx512bw && have.avx512dq && have.avx512cd && have.avx512f, &avx512::table,
       "best this CPU supports (avx512f/cd/dq/bw present)"},
      {"avx2", static_cast<bool>(have.fma3_avx2), &avx2::table,
       "best this CPU supports (avx2+fma present, no avx512bw)"},
      {"sse4_2", static_cast<bool>(have.sse4_2), &sse4_2::table, "best this CPU supports (no avx2+fma)"},
  };
  IsaChoice c;
  const char* env = std::getenv("TRINE_CPU_ISA");
  const std::string want = env ? env : "";
  for (const Isa& isa : isas) {
    if (!want.empty() && want != isa.name) continue;
    if (!isa.present) {
      if (want.empty()) continue;
      c.error = "TRINE_CPU_ISA=" + want + " was requested but this CPU does not support it";
      return c;
    }
    return {&isa.table(), isa.name, want.empty() ? isa.why_best : "TRINE_CPU_ISA=" + want, {}};
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

class CpuCompletion final : public detail::Completion {
 public:
  explicit CpuCompletion(std::exception_ptr error) : error_(std::move(error)) {}
  bool poll() override { return true; }
  void wait() override {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
};

class CpuSubmission final : public detail::Submission {
 public:
  std::vector<detail::OpCall> calls;
};

class CpuBackend final : public detail::Backend {
 public:
  explicit CpuBackend(const KernelTable& table) : table_(table) {}

  DeviceKind kind() const noexcept override { return DeviceKind::cpu; }

  std::vector<DeviceInfo> devices() const override {
    const auto& c = isa_choice();
    return {DeviceInfo{Device::cpu(), "cpu (" + c.name + ", " + std::to_string(thread_count()) + " threads)",
                       "isa=" + c.name + " (" + c.reason + "); threads=" + std::to_string(thread_count())}};
  }

  void* allocate(int index, std::size_t bytes) override {
    if (index != 0)
      throw Error(ErrorCode::device_unavailable, "[allocate] cpu:" + std::to_string(index) + " does not exist");
    const std::size_t limit = physical_memory_bytes();
    if (bytes > limit || bytes > SIZE_MAX - 3 * k_align) {
      throw Error(ErrorCode::out_of_memory, "[allocate] " + std::to_string(bytes) +
                                                " bytes on cpu exceed the machine's " + std::to_string(limit) +
                                                " bytes of memory");
    }
    std::size_t padded = (bytes + k_align - 1) / k_align * k_align;
    std::size_t total = k_align + k_guard + padded + k_guard;
    void* base = std::aligned_alloc(k_align, total);
    if (!base) {
      throw Error(ErrorCode::out_of_memory, "[allocate] cpu could not allocate " + std::to_string(bytes) + " bytes");
    }
    auto* b = static_cast<unsigned char*>(base);
    std::memcpy(b, &bytes, sizeof(bytes));
    std::memset(b + k_align, k_sentinel, k_guard);
    std::memset(b + k_align + k_guard + bytes, k_sentinel, padded - bytes + k_guard);
    return b + k_align + k_guard;
  }

  void deallocate(void* handle) noexcept override {
    if (handle) std::free(static_cast<unsigned char*>(handle) - k_align - k_guard);
  }

  std::optional<bool> guards_intact(const void* handle) const noexcept override {
    const auto* data = static_cast<const unsigned char*>(handle);
    const unsigned char* base = data - k_align - k_guard;
    std::size_t bytes;
    std::memcpy(&bytes, base, sizeof(bytes));
    std::size_t padded = (bytes + k_align - 1) / k_align * k_align;
    for (std::size_t i = 0; i < k_guard; ++i)
      if (base[k_align + i] != k_sentinel) return false;
    for (std::size_t i = bytes; i < padded + k_guard; ++i)
      if (data[i] != k_sentinel) return false;
    return true;
  }

  void* host_pointer(void* handle) const noexcept override { return handle; }

  void copy_from_host(void* handle, std::size_t offset, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(static_cast<unsigned char*>(handle) + offset, src, bytes);
  }
  void copy_to_host(const void* handle, std::size_t offset, void* dst, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, static_cast<const unsigned char*>(handle) + offset, bytes);
  }

  bool supports(const detail::OpCall& call) const override {
    // Every op of the table runs here, for every dtype the op table lets through.
    for (const auto& t : call.inputs) {
      if (t.defined() && t.device().kind != DeviceKind::cpu) return false;
    }
    return call.output.defined() && call.output.is_contiguous() && call.output.device().kind == DeviceKind::cpu;
  }

  std::unique_ptr<detail::Submission> encode(std::span<const detail::OpCall> calls) override {
    auto s = std::make_unique<CpuSubmission>();
    s->calls.assign(calls.begin(), calls.end());
    return s;
  }

  // Runs the ops in order on the calling thread, each kernel spreading itself over the pool.
  // Completion is immediate; a later issue moves this onto a worker for true async.
  std::shared_ptr<detail::Completion> submit(std::unique_ptr<detail::Submission> submission) override {
    auto* s = dynamic_cast<CpuSubmission*>(submission.get());
    if (!s) throw Error(ErrorCode::internal, "[cpu] submit got a submission from another backend");
    std::exception_ptr error;
    try {
      for (const auto& call : s->calls) execute(table_, call);
    } catch (...) {
      error = std::current_exception();
    }
    return std::make_shared<CpuCompletion>(error);
  }

 private:
  const KernelTable& table_;
};

}  // namespace
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

}  // namespace trine::debug
