// Tensor: creation, views sharing storage, host round trips, dtype conversion, devices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "trine/debug.hpp"
#include "trine/trine.hpp"

using namespace trine;

TEST_CASE("creation: from, zeros, full, arange, random", "[tensor]") {
  Tensor a = Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.strides() == Shape{3, 1});
  CHECK(a.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(Tensor::zeros({4}).to_vector() == std::vector<float>(4, 0.0f));
  CHECK(Tensor::full({2, 2}, 2.5f).to_vector() == std::vector<float>(4, 2.5f));
  CHECK(Tensor::arange(0, 5).to_vector() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(Tensor::arange(1, 2, 0.25f).to_vector() == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
  CHECK(Tensor::arange(3, 1).numel() == 0);
  Tensor s = Tensor::from(std::vector<float>{42}, Shape{});
  CHECK(s.rank() == 0);
  CHECK(s.item() == 42.0f);

  auto r1 = Tensor::random({1000}, 5).to_vector();
  auto r2 = Tensor::random({1000}, 5).to_vector();
  auto r3 = Tensor::random({1000}, 6).to_vector();
  CHECK(r1 == r2);
  CHECK(r1 != r3);
  double mean = 0;
  for (float v : r1) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
    mean += v;
  }
  CHECK(std::abs(mean / 1000) < 0.1);
  auto r4 = Tensor::random({10}, 1, 2.0f, 3.0f).to_vector();
  for (float v : r4) CHECK((v >= 2.0f && v < 3.0f));
}

TEST_CASE("random stays in its half-open range after rounding to f16 and bf16", "[tensor]") {
  // high = 1 is representable: draws just below it round up to it unless trine steps them back.
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (auto [low, high] : {std::pair{-1.0f, 1.0f}, std::pair{0.0f, 0.001f}, std::pair{1000.0f, 1001.0f},
                              std::pair{-0.3f, 0.7f}}) {
      const auto v = Tensor::random({1 << 16}, 5, low, high, t).to_vector();
      float lo = v[0], hi = v[0];
      for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
      INFO(dtype_name(t) << " [" << low << ", " << high << "): drew [" << lo << ", " << hi << "]");
      CHECK(lo >= low);
      CHECK(hi < high);
    }
  }
  // a range that holds no bf16 value is an error, not a silent value outside it
  CHECK_THROWS_AS(Tensor::random({4}, 1, 1000.1f, 1000.2f, DType::bf16), Error);
}

TEST_CASE("views share storage: reshape, slice, transpose, permute, broadcast_to", "[tensor]") {
  Tensor a = Tensor::arange(0, 24).reshape({2, 3, 4});
  CHECK(a.is_contiguous());
  Tensor t = a.transpose(0, 2);
  CHECK(t.shares_storage(a));
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK_FALSE(t.is_contiguous());
  auto tv = t.to_vector();
  CHECK(tv[0] == 0.0f);
  CHECK(tv[1] == 12.0f);  // t[0,0,1] = a[1,0,0]
  CHECK(tv[2] == 4.0f);   // t[0,1,0] = a[0,1,0]

  Tensor s = a.slice(2, 1, 4, 2);  // columns 1 and 3
  CHECK(s.shares_storage(a));
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK(s.to_vector() == std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(a.slice(0, -1, 2).to_vector()[0] == 12.0f);
  CHECK(a.slice(1, 2, 2).numel() == 0);

  Tensor p = a.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.to_vector()[1] == 4.0f);  // p[0,0,1] = a[0,1,0]

  Tensor r = a.reshape({6, -1});
  CHECK(r.shape() == Shape{6, 4});
  CHECK(r.shares_storage(a));
  Tensor rt = t.reshape({24});  // not contiguous: copies
  CHECK_FALSE(rt.shares_storage(a));
  CHECK(rt.to_vector()[1] == 12.0f);

  Tensor b = Tensor::from(std::vector<float>{1, 2, 3}, {3}).broadcast_to({2, 3});
  CHECK(b.strides() == Shape{0, 1});
  CHECK(b.to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("ops read views without changing the viewed tensor", "[tensor]") {
  Tensor a = Tensor::arange(0, 12).reshape({3, 4});
  Tensor y = relu(scale(a.transpose(), -1.0f, 5.0f));
  CHECK(y.shape() == Shape{4, 3});
  CHECK(y.to_vector() == std::vector<float>{5, 1, 0, 4, 0, 0, 3, 0, 0, 2, 0, 0});
  CHECK(a.to_vector()[11] == 11.0f);
  CHECK(debug::guards_intact(a));
  CHECK(debug::guards_intact(y));
}

TEST_CASE("f16 and bf16 storage round trips and casts", "[tensor]") {
  std::vector<float> v = {0.0f, 1.0f, -2.5f, 65504.0f, 1e-7f, 3.14159f, 70000.0f};
  auto h = Tensor::from(v, {7}, DType::f16);
  CHECK(h.dtype() == DType::f16);
  auto hv = h.to_vector();
  CHECK(hv[1] == 1.0f);
  CHECK(hv[2] == -2.5f);
  CHECK(hv[3] == 65504.0f);
  CHECK(std::isinf(hv[6]));
  CHECK(hv[5] == Approx(3.140625f));
  auto b = Tensor::from(v, {7}, DType::bf16).to_vector();
  CHECK(b[5] == 3.140625f);
  CHECK(b[6] == 70144.0f);
  CHECK(h.astype(DType::f32).to_vector() == hv);
  CHECK(h.astype(DType::bf16).dtype() == DType::bf16);
  CHECK(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)) == 1.0f);  // tie to even
  CHECK(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048)) == 1.0f + 4.0f / 2048);
}

TEST_CASE("devices and backend status", "[tensor]") {
  auto devs = devices();
  REQUIRE(!devs.empty());
  CHECK(devs[0].device == Device::cpu());
  CHECK(devs[0].capabilities.find("isa=") != std::string::npos);
  auto st = backend_status();
  REQUIRE(st.size() == 3);
  CHECK(st[0].available);
  // vulkan: available exactly when this machine has a Vulkan device (lavapipe counts); either way it says why
  bool vulkan_devices = false;
  for (const auto& d : devs) vulkan_devices = vulkan_devices || d.device.kind == DeviceKind::vulkan;
  CHECK(st[1].available == vulkan_devices);
  CHECK_FALSE(st[1].reason.empty());
  CHECK_FALSE(st[2].available);  // cuda: a later issue
  CHECK(Device::parse("cuda:1") == Device{DeviceKind::cuda, 1});
  CHECK(Device::parse("cpu").str() == "cpu");
  Tensor a = Tensor::arange(0, 4);
  CHECK(a.to(Device::cpu()).shares_storage(a));
  CHECK(a.contiguous().shares_storage(a));
  CHECK(!a.transpose(0, 0).to_vector().empty());
}
