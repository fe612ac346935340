// The memory cache: large blocks are reused, the limit holds, the cache is released and the
// allocation retried when a device runs out, and memory that work in flight uses is never handed out.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "backends/backend.hpp"
#include "tensor/memory_cache.hpp"
#include "tensor/storage.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

namespace {

// A device with a fixed budget, to make out-of-memory happen on demand.
class BudgetBackend final : public detail::Backend {
 public:
  explicit BudgetBackend(std::size_t budget) : budget_(budget) {}
  DeviceKind kind() const noexcept override { return DeviceKind::cuda; }
  std::vector<DeviceInfo> devices() const override { return {}; }
  void* allocate(int, std::size_t bytes) override {
    if (used_ + bytes > budget_) throw Error(ErrorCode::out_of_memory, "[allocate] budget exceeded");
    used_ += bytes;
    void* p = std::malloc(bytes ? bytes : 1);
    sizes_[p] = bytes;
    ++allocations;
    return p;
  }
  void deallocate(int, void* handle) noexcept override {
    used_ -= sizes_[handle];
    sizes_.erase(handle);
    std::free(handle);
  }
  void* host_pointer(void* handle) const noexcept override { return handle; }
  bool supports(const detail::OpCall&) const override { return false; }
  std::unique_ptr<detail::Submission> encode(std::vector<detail::Entry>) override { return nullptr; }
  std::shared_ptr<detail::Completion> submit(std::unique_ptr<detail::Submission>,
                                             std::span<const std::shared_ptr<detail::Completion>>, bool) override {
    return detail::completed();
  }
  void synchronize() override {}
  TransferStats transfer_stats() const noexcept override { return {}; }

  int allocations = 0;

 private:
  std::size_t budget_, used_ = 0;
  std::map<void*, std::size_t> sizes_;
};

}  // namespace

TEST_CASE("large blocks are reused; small ones are not cached", "[memory]") {
  memory::clear_cache();
  const auto before = memory::stats();
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1 << 20});  // 4 MiB
    first = t.storage()->handle();
  }
  CHECK(memory::stats().cached_bytes >= std::size_t{4} << 20);
  Tensor again = Tensor::empty({1 << 20});
  CHECK(again.storage()->handle() == first);
  CHECK(memory::stats().hits == before.hits + 1);
  // a slightly smaller tensor of the same size class takes the block too, with its guards moved
  void* second = again.storage()->handle();
  again = Tensor();
  Tensor smaller = Tensor::full({(1 << 20) - 1000}, 1.0f);
  CHECK(smaller.storage()->handle() == second);
  CHECK(debug::guards_intact(smaller));
  CHECK(relu(smaller).to_vector().back() == 1.0f);
  const auto small_before = memory::stats();
  { Tensor s = Tensor::empty({16}); }
  CHECK(memory::stats().cached_bytes == small_before.cached_bytes);
}

TEST_CASE("the cache limit holds and clear_cache empties it", "[memory]") {
  memory::clear_cache();
  const std::size_t limit = memory::stats().cache_limit;
  memory::set_cache_limit(std::size_t{6} << 20);
  { Tensor a = Tensor::empty({1 << 20}), b = Tensor::empty({1 << 20}); }  // 2 x 4 MiB, room for one
  CHECK(memory::stats().cached_bytes <= std::size_t{6} << 20);
  CHECK(memory::stats().cached_bytes >= std::size_t{4} << 20);
  memory::set_cache_limit(0);
  CHECK(memory::stats().cached_bytes == 0);
  { Tensor c = Tensor::empty({1 << 20}); }
  CHECK(memory::stats().cached_bytes == 0);
  memory::set_cache_limit(limit);
  { Tensor d = Tensor::empty({1 << 20}); }
  memory::clear_cache();
  CHECK(memory::stats().cached_bytes == 0);
  CHECK_THROWS_AS(memory::stats(Device::parse("cpu:2")), Error);
}

TEST_CASE("out of memory releases the cache and retries once", "[memory]") {
  BudgetBackend be(std::size_t{10} << 20);  // 10 MiB
  const Device dev{DeviceKind::cuda, 7};    // a cache of its own, not the real cuda device's
  void* a = detail::cached_allocate(be, dev, std::size_t{4} << 20);
  void* b = detail::cached_allocate(be, dev, std::size_t{4} << 20);
  detail::cached_deallocate(be, dev, a, std::size_t{4} << 20);  // cached, still counted by the device
  detail::cached_deallocate(be, dev, b, std::size_t{4} << 20);
  // 6 MiB does not fit beside the 8 MiB the cache holds; released, it does
  void* c = detail::cached_allocate(be, dev, std::size_t{6} << 20);
  REQUIRE(c != nullptr);
  // and when it still does not fit, out_of_memory reaches the caller
  try {
    detail::cached_allocate(be, dev, std::size_t{8} << 20);
    FAIL("an allocation over the budget should fail");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::out_of_memory);
  }
  detail::cached_deallocate(be, dev, c, std::size_t{6} << 20);
  const int before = be.allocations;
  detail::cached_deallocate(be, dev, detail::cached_allocate(be, dev, std::size_t{6} << 20), std::size_t{6} << 20);
  CHECK(be.allocations == before);  // served from the cache
}

TEST_CASE("memory that work in flight uses is not handed out again", "[memory][async]") {
  memory::clear_cache();
  Tensor a = Tensor::random({1024, 1024}, 1);
  const Tensor expect = matmul(a, a);
  Future<Tensor> f = async::matmul(a, a);
  a = Tensor();  // the submission still reads it
  // Memory allocated and overwritten while the matmul may still run. A backend hands a block on
  // once the work no longer reads it, which may be a moment before the future reports ready (the
  // cpu drops a submission's storages before signalling), so the test is the result, not the
  // handles: had `a`'s block been handed out in flight, the writes below would show in it.
  std::vector<Tensor> taken;
  for (int i = 0; i < 4 && !f.ready(); ++i) taken.push_back(Tensor::random({1024, 1024}, 100 + i));
  INFO(taken.size() << " tensors allocated and written while the matmul ran");
  CHECK(f.get().to_vector() == expect.to_vector());
}

namespace {

// The kernel's THP mode, the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
// ("always", "madvise" or "never"), or empty where the file is missing.
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const auto a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

// AnonHugePages (kB) of the mapping of this process that holds `p`, from /proc/self/smaps.
long huge_kb_at(const void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

}  // namespace

TEST_CASE("large cpu blocks are on transparent huge pages unless TRINE_CPU_HUGE_PAGES=0", "[memory][huge_pages]") {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") {
    WARN("transparent huge pages are '" << mode << "' on this kernel: nothing to check");
    return;
  }
  const char* env = std::getenv("TRINE_CPU_HUGE_PAGES");
  const bool off = env && std::string(env) == "0";
  // 32 MiB, written by the op: sixteen 2 MiB pages the kernel can back with huge ones.
  Tensor t = Tensor::full({8 << 20}, 1.0f, DType::f32, Device::cpu());
  const auto& s = *t.storage();
  const long kb = huge_kb_at(s.backend().host_pointer(s.handle()));
  INFO("THP mode " << mode << ", AnonHugePages of the block's mapping: " << kb << " kB");
  REQUIRE(kb >= 0);
  if (!off) {
    CHECK(kb >= 2048);  // at least one huge page (the kernel may lack free 2 MiB pages for some)
  } else if (mode == "madvise") {
    CHECK(kb == 0);  // not advised: 4 KiB pages
  }
}

TEST_CASE("TRINE_CPU_HUGE_PAGES set to anything but 0 or 1 is an error naming the variable",
          "[huge_pages_env_bad][.]") {
  // Run by ctest with TRINE_CPU_HUGE_PAGES=yes: the first large cpu allocation fails with it.
  try {
    (void)Tensor::full({8 << 20}, 1.0f, DType::f32, Device::cpu());
    FAIL("no error for TRINE_CPU_HUGE_PAGES=" << std::getenv("TRINE_CPU_HUGE_PAGES"));
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("TRINE_CPU_HUGE_PAGES"));
  }
}
