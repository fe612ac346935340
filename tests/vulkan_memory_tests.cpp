// The Vulkan backend's memory pool (backends/vulkan/pool.hpp) on device 0, under the validation
// layer like tests/vulkan_tests.cpp: small buffers share a few VkDeviceMemory blocks without
// overlapping, freed ranges are reused, emptied blocks go back to the driver, large buffers get
// memory of their own, many threads allocate at once, and maxMemoryAllocationCount is an
// out_of_memory the memory cache recovers from (hidden tag, run by ctest with a low limit).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backends/vulkan/debug.hpp"
#if defined(TRINE_VULKAN_BUILT)  // the Vulkan backend is compiled in (tests/CMakeLists.txt)
#include "backends/vulkan/context.hpp"
#include "backends/vulkan/memory.hpp"
#define TRINE_TEST_VK_MEMORY 1
#endif
#include "tensor/storage.hpp"
#include "tests/harness.hpp"
#include "tests/vulkan_harness.hpp"
#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;
using trine::test::k_vk;
using trine::test::require_no_validation_messages;
using trine::test::require_vulkan;

namespace {

// Storage the host maps (lavapipe unless TRINE_VULKAN_FORCE_STAGING): the only case with guards.
bool host_mapped() {
  for (const auto& d : devices())
    if (d.device == k_vk) return d.capabilities.find("host-visible coherent") != std::string::npos;
  return false;
}

bool all_equal(const Tensor& t, float value) {
  const auto v = t.to_vector();
  return std::all_of(v.begin(), v.end(), [&](float x) { return x == value; });
}

// Every live tensor's buffer lies in its own part of device memory: no two pooled spans overlap.
void require_disjoint(const std::vector<Tensor>& tensors) {
#if defined(TRINE_TEST_VK_MEMORY)
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> spans;  // memory, offset, end
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const auto* a = static_cast<const vulkan::Allocation*>(t.storage()->handle());
    REQUIRE(a->span.size >= a->size);
    spans.emplace_back(reinterpret_cast<std::uint64_t>(static_cast<VkDeviceMemory>(a->span.memory)), a->span.offset,
                       a->span.offset + a->span.size);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (std::get<0>(spans[i]) != std::get<0>(spans[i - 1])) continue;
    INFO("span " << i << " starts at " << std::get<1>(spans[i]) << ", the one before ends at "
                 << std::get<2>(spans[i - 1]));
    REQUIRE(std::get<1>(spans[i]) >= std::get<2>(spans[i - 1]));
  }
#else
  (void)tensors;
#endif
}

}  // namespace

TEST_CASE("vulkan: thousands of small tensors share a few pooled blocks, given back once freed", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = debug::device_memory(k_vk);
  REQUIRE(before.memory_objects_max > 0);
  REQUIRE(before.block_bytes_max >= std::size_t{64} << 10);
  constexpr int n = 3000;
  std::vector<Tensor> tensors;
  for (int i = 0; i < n; ++i) tensors.push_back(Tensor::full({1000}, static_cast<float>(i), DType::f32, k_vk));
  const auto held = debug::device_memory(k_vk);
  INFO("before: " << before.memory_objects << " VkDeviceMemory, " << before.blocks << " blocks; with " << n
                  << " tensors: " << held.memory_objects << ", " << held.blocks << " blocks, " << held.reserved_bytes
                  << " bytes reserved");
  CHECK(held.pooled >= before.pooled + n);
  CHECK(held.pooled_bytes >= before.pooled_bytes + std::size_t{n} * 4000);
  CHECK(held.dedicated == before.dedicated);
  // 12 MB in blocks that double from 4 MiB: a handful of driver allocations, not thousands.
  CHECK(held.memory_objects <= before.memory_objects + 5);
  CHECK(held.memory_objects == held.blocks + held.dedicated);
  CHECK(held.reserved_bytes <= before.reserved_bytes + (std::size_t{64} << 20));
  require_disjoint(tensors);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += !all_equal(tensors[static_cast<std::size_t>(i)], static_cast<float>(i));
  CHECK(wrong == 0);
  if (host_mapped()) {
    int broken = 0;
    for (const auto& t : tensors) broken += !debug::guards_intact(t);
    CHECK(broken == 0);
  }
  // Ops on neighbouring pooled buffers against the reference (guards and inputs checked there too).
  test::check_op(OpKind::add, {tensors[10], tensors[11]}, NoParams{}, "pooled neighbours");
  test::check_op(OpKind::relu, {tensors[n - 1]}, ActParams{}, "the last pooled tensor");

  tensors.clear();
  memory::clear_cache(k_vk);
  const auto after = debug::device_memory(k_vk);
  CHECK(after.pooled == before.pooled);
  CHECK(after.pooled_bytes == before.pooled_bytes);
  // One empty block is kept per memory type (storage, and staging where it is apart).
  CHECK(after.memory_objects <= before.memory_objects + 2);
  require_no_validation_messages();
}

TEST_CASE("vulkan: blocks emptied by clear_cache go back to the driver", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = debug::device_memory(k_vk);
  // 256 KiB tensors (pooled: under a quarter of a block) until the pool has four more blocks.
  std::vector<Tensor> tensors;
  while (debug::device_memory(k_vk).blocks < before.blocks + 4 && tensors.size() < 8192)
    tensors.push_back(Tensor::full({1 << 16}, static_cast<float>(tensors.size()), DType::f32, k_vk));
  const auto held = debug::device_memory(k_vk);
  INFO("before: " << before.blocks << " blocks; with " << tensors.size() << " tensors of 256 KiB: " << held.blocks
                  << " blocks, " << held.reserved_bytes << " bytes reserved");
  REQUIRE(held.blocks >= before.blocks + 4);
  CHECK(held.dedicated == before.dedicated);
  CHECK(all_equal(tensors.back(), static_cast<float>(tensors.size() - 1)));
  tensors.clear();  // into the memory cache, which still holds the buffers ...
  CHECK(debug::device_memory(k_vk).blocks == held.blocks);
  memory::clear_cache(k_vk);  // ... until it gives them back, and the emptied blocks go to the driver
  const auto after = debug::device_memory(k_vk);
  INFO("after clear_cache: " << after.blocks << " blocks, " << after.reserved_bytes << " bytes reserved");
  CHECK(after.pooled == before.pooled);
  // At most one empty block kept per memory type (storage, and staging where it is apart).
  CHECK(after.blocks <= before.blocks + 2);
  CHECK(after.memory_objects + 2 <= held.memory_objects);
  CHECK(after.reserved_bytes < held.reserved_bytes);
  require_no_validation_messages();
}

TEST_CASE("vulkan: a large tensor gets memory of its own, a slightly smaller one a pooled block", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = debug::device_memory(k_vk);
  const std::int64_t large = static_cast<std::int64_t>(before.block_bytes_max / 4 / 4) + 1;  // floats
  Tensor t = Tensor::full({large}, 3.0f, DType::f32, k_vk);
  const auto with_large = debug::device_memory(k_vk);
  CHECK(with_large.dedicated == before.dedicated + 1);
  CHECK(with_large.memory_objects == before.memory_objects + 1);
  CHECK(with_large.blocks == before.blocks);
  CHECK(with_large.reserved_bytes >= before.reserved_bytes + static_cast<std::size_t>(large) * 4);
#if defined(TRINE_TEST_VK_MEMORY)
  CHECK(static_cast<const vulkan::Allocation*>(t.storage()->handle())->span.block == nullptr);
#endif
  // Under a quarter of a block (7/8 of it: the memory cache rounds sizes up by an eighth of their
  // power of two), guards included, is carved from one.
  Tensor u = Tensor::full({(large - 1) / 8 * 7}, 4.0f, DType::f32, k_vk);
  const auto with_both = debug::device_memory(k_vk);
  CHECK(with_both.dedicated == with_large.dedicated);
  CHECK(with_both.pooled == with_large.pooled + 1);
#if defined(TRINE_TEST_VK_MEMORY)
  CHECK(static_cast<const vulkan::Allocation*>(u.storage()->handle())->span.block != nullptr);
#endif
  CHECK(all_equal(t, 3.0f));
  CHECK(all_equal(u, 4.0f));
  if (host_mapped()) CHECK(debug::guards_intact(t));
  t = Tensor();
  u = Tensor();
  memory::clear_cache(k_vk);
  const auto after = debug::device_memory(k_vk);
  CHECK(after.dedicated == before.dedicated);
  CHECK(after.reserved_bytes < with_both.reserved_bytes);
  require_no_validation_messages();
}

TEST_CASE("vulkan: a range freed in a block is reused, its neighbours untouched", "[vulkan]") {
  require_vulkan();
  // No caching: every free goes straight back to the pool.
  const std::size_t limit = memory::stats(k_vk).cache_limit;
  memory::set_cache_limit(0, k_vk);
  std::vector<Tensor> tensors;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t n = 1 + (i * 37) % 500;
    tensors.push_back(Tensor::full({n}, static_cast<float>(i), DType::f32, k_vk));
  }
#if defined(TRINE_TEST_VK_MEMORY)
  auto end_of = [](const Tensor& t) {
    const auto* a = static_cast<const vulkan::Allocation*>(t.storage()->handle());
    return std::make_pair(static_cast<VkDeviceMemory>(a->span.memory), a->span.offset + a->span.size);
  };
  std::vector<std::pair<VkDeviceMemory, std::uint64_t>> ends;
  for (const auto& t : tensors) ends.push_back(end_of(t));
#endif
  for (std::size_t i = 1; i < tensors.size(); i += 2) tensors[i] = Tensor();
  const auto holes = debug::device_memory(k_vk);
  std::vector<Tensor> refill;
  for (int i = 0; i < 100; ++i) refill.push_back(Tensor::full({1}, 1000.0f + static_cast<float>(i), DType::f32, k_vk));
  const auto refilled = debug::device_memory(k_vk);
  CHECK(refilled.memory_objects == holes.memory_objects);
  CHECK(refilled.pooled == holes.pooled + 100);
#if defined(TRINE_TEST_VK_MEMORY)
  // First fit: each one-element buffer lands in a hole below the highest end the 200 reached.
  int beyond = 0;
  for (const auto& t : refill) {
    const auto [memory, end] = end_of(t);
    bool inside = false;
    for (const auto& [m, e] : ends) inside = inside || (m == memory && end <= e);
    beyond += !inside;
  }
  CHECK(beyond == 0);
#endif
  std::vector<Tensor> live = refill;
  for (const auto& t : tensors)
    if (t.defined()) live.push_back(t);
  require_disjoint(live);
  int wrong = 0;
  for (std::size_t i = 0; i < tensors.size(); i += 2) wrong += !all_equal(tensors[i], static_cast<float>(i));
  for (std::size_t i = 0; i < refill.size(); ++i) wrong += !all_equal(refill[i], 1000.0f + static_cast<float>(i));
  CHECK(wrong == 0);
  if (host_mapped()) {
    int broken = 0;
    for (const auto& t : live) broken += !debug::guards_intact(t);
    CHECK(broken == 0);
  }
  memory::set_cache_limit(limit, k_vk);
  require_no_validation_messages();
}

TEST_CASE("vulkan: many threads allocate and free pooled memory at once", "[vulkan]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = debug::device_memory(k_vk);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([w, &wrong] {
      std::vector<Tensor> window;
      for (int i = 0; i < 200; ++i) {
        const float v = static_cast<float>(w * 1000 + i);
        window.push_back(Tensor::full({1 + (w * 7 + i * 13) % 300}, v, DType::f32, k_vk));
        if (window.size() > 16) window.erase(window.begin());
        if (i % 8 == 0) wrong[static_cast<std::size_t>(w)] += !all_equal(window.back(), v);
        if (w == 0 && i % 50 == 0) memory::clear_cache(k_vk);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == std::vector<int>(4, 0));
  memory::clear_cache(k_vk);
  const auto after = debug::device_memory(k_vk);
  CHECK(after.pooled == before.pooled);
  CHECK(after.pooled_bytes == before.pooled_bytes);
  CHECK(after.memory_objects <= before.memory_objects + 2);
  require_no_validation_messages();
}

TEST_CASE("vulkan: device_memory is there for Vulkan devices only", "[vulkan]") {
  require_vulkan();
  try {
    (void)debug::device_memory(Device::cpu());
    FAIL("the cpu reported driver memory");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("[device_memory] cpu") != std::string::npos);
  }
}

// Run by ctest as vulkan_allocation_limit, with TRINE_VULKAN_MAX_ALLOCATIONS=8 lowering the limit
// lavapipe reports (2^32 - 1) to one a test can reach.
TEST_CASE("vulkan: at maxMemoryAllocationCount, out_of_memory; the cache releases and the device works after",
          "[.vulkan_allocation_limit]") {
  require_vulkan();
  memory::clear_cache(k_vk);
  const auto before = debug::device_memory(k_vk);
  REQUIRE(before.memory_objects_max == 8);
  // Large tensors, each its own VkDeviceMemory, until the limit.
  const std::int64_t large = static_cast<std::int64_t>(before.block_bytes_max / 4 / 4) + 1;
  std::vector<Tensor> held;
  std::string message;
  for (int i = 0; i < 16 && message.empty(); ++i) {
    try {
      held.push_back(Tensor::empty({large}, DType::f32, k_vk));
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::out_of_memory);
      message = e.what();
    }
  }
  INFO(message);
  REQUIRE(!message.empty());
  CHECK(debug::device_memory(k_vk).memory_objects == 8);
  CHECK(message.find("[allocate]") == 0);
  CHECK(message.find(" bytes on vulkan:0 (") != std::string::npos);  // the size the memory cache asked for
  CHECK(message.find("maxMemoryAllocationCount") != std::string::npos);
  CHECK(message.find(" 8 ") != std::string::npos);
  // One freed tensor waits in the memory cache; a request of another size class finds no room,
  // the cache gives its buffers back, and the retry succeeds.
  held.pop_back();
  CHECK(memory::stats(k_vk).cached_bytes > 0);
  const auto releases = memory::stats(k_vk).releases;
  Tensor other = Tensor::full({large * 3 / 2}, 2.0f, DType::f32, k_vk);
  CHECK(memory::stats(k_vk).releases == releases + 1);
  CHECK(all_equal(other, 2.0f));
  held.clear();
  other = Tensor();
  memory::clear_cache(k_vk);
  CHECK(debug::device_memory(k_vk).memory_objects <= before.memory_objects + 2);
  // The device works after.
  Tensor x = Tensor::full({1000}, -1.0f, DType::f32, k_vk);
  CHECK(all_equal(relu(x), 0.0f));
  require_no_validation_messages();
}

#if defined(TRINE_TEST_VK_MEMORY)
namespace {

vk::PhysicalDeviceMemoryProperties memory_layout(std::vector<std::pair<vk::MemoryPropertyFlags, std::uint32_t>> types) {
  vk::PhysicalDeviceMemoryProperties m;
  m.memoryHeapCount = 3;
  m.memoryTypeCount = static_cast<std::uint32_t>(types.size());
  for (std::size_t i = 0; i < types.size(); ++i) m.memoryTypes[i] = vk::MemoryType(types[i].first, types[i].second);
  return m;
}

}  // namespace

TEST_CASE("vulkan: storage is mapped only in device-local host-cached memory; else staged through cached memory",
          "[vulkan]") {
  using F = vk::MemoryPropertyFlagBits;
  const vk::MemoryPropertyFlags none{}, dl = F::eDeviceLocal, hv = F::eHostVisible | F::eHostCoherent,
                                hc = hv | F::eHostCached;
  SECTION("lavapipe: one type, all four flags") {
    const auto m = vulkan::choose_memory(memory_layout({{dl | hc, 0}}));
    CHECK(m.mapped);
    CHECK(m.memory_type == 0);
    CHECK(m.staging_type == 0);
  }
  SECTION("a discrete NVIDIA GPU with resizable BAR (the H100 where the BAR was mapped and read at 60-120 MB/s)") {
    // 0: nothing (system heap), 1-2: VRAM, 3: host coherent, 4: host cached, 5: the BAR.
    const auto m = vulkan::choose_memory(memory_layout({{none, 1}, {dl, 0}, {dl, 0}, {hv, 1}, {hc, 1}, {dl | hv, 2}}));
    CHECK_FALSE(m.mapped);
    CHECK(m.memory_type == 1);
    REQUIRE(m.has_staging);
    CHECK(m.staging_type == 4);
  }
  SECTION("an integrated GPU: device-local cached memory is mapped") {
    const auto m = vulkan::choose_memory(memory_layout({{dl, 0}, {dl | hv, 0}, {dl | hc, 0}}));
    CHECK(m.mapped);
    CHECK(m.memory_type == 2);
  }
  SECTION("device-local coherent but uncached memory alone: staged, through the same type") {
    const auto m = vulkan::choose_memory(memory_layout({{dl | hv, 0}}));
    CHECK_FALSE(m.mapped);
    CHECK(m.memory_type == 0);
    REQUIRE(m.has_staging);
    CHECK(m.staging_type == 0);
  }
  SECTION("no host-visible memory: nothing to stage through") {
    const auto m = vulkan::choose_memory(memory_layout({{dl, 0}}));
    CHECK_FALSE(m.mapped);
    CHECK_FALSE(m.has_staging);
  }
}
#endif

TEST_CASE("vulkan: a tensor under the largest allocation whose cache size class is over it is allocated exactly",
          "[vulkan]") {
  require_vulkan();
  // The memory cache rounds a request up by up to 1/8 of its power of two; near a discrete GPU's
  // largest allocation (an H100: 4292870144 bytes) that rounding alone made a fitting tensor fail.
  // ctest's vulkan_allocation_size lowers lavapipe's largest allocation to 64 MiB to meet it.
  const std::uint64_t most = test::capability_bytes(k_vk, "largest allocation");
  REQUIRE(most > 0);
  if (most > (std::uint64_t{256} << 20)) {
    std::printf("largest allocation %llu MiB on %s: over this test's 256 MiB (ctest vulkan_allocation_size lowers it)\n",
                static_cast<unsigned long long>(most >> 20), k_vk.str().c_str());
    return;
  }
  const auto n = static_cast<std::int64_t>((most - 8192) / 4);  // its size class is `most`, over the limit
  for (int round = 0; round < 2; ++round) {  // the exact block is freed, not cached: again works the same
    Tensor x = Tensor::full({n}, -2.0f, DType::f32, k_vk);
    const std::vector<float> y = relu(x).to_vector();
    REQUIRE(y.size() == static_cast<std::size_t>(n));
    CHECK(y.front() == 0.0f);
    CHECK(y.back() == 0.0f);
  }
  require_no_validation_messages();
}
