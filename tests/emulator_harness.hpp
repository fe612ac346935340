// A small harness for emulator tests: load PTX, make buffers the checker knows about, launch with
// scalar or pointer arguments, read results back.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/interp.hpp"
#include "backends/cuda_ptx/emulator/parser.hpp"

namespace trine::test {

template <class T>
class EmuBuffer {
 public:
  EmuBuffer(std::shared_ptr<std::vector<std::uint8_t>> bytes) : bytes_(std::move(bytes)) {}
  T& operator[](std::size_t i) { return reinterpret_cast<T*>(bytes_->data())[i]; }
  std::uint64_t ptr() const { return reinterpret_cast<std::uint64_t>(bytes_->data()); }
  std::size_t size() const { return bytes_->size() / sizeof(T); }

 private:
  std::shared_ptr<std::vector<std::uint8_t>> bytes_;
};

class EmuRun {
 public:
  explicit EmuRun(const std::string& ptx) : module_(cuda::emu::load_ptx(ptx)) {}

  template <class T>
  EmuBuffer<T> buffer(std::size_t n) {
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(n * sizeof(T), 0);
    allocations_.add(reinterpret_cast<std::uint64_t>(bytes->data()), bytes->size());
    keep_.push_back(bytes);
    return EmuBuffer<T>(bytes);
  }

  cuda::emu::CheckOptions check;
  int threads = 1;
  std::uint64_t max_warp_instructions_per_cta = 1ull << 32;

  template <class... Args>
  cuda::emu::LaunchResult launch(const std::string& name, std::vector<std::uint32_t> grid, std::vector<std::uint32_t> block,
                                 Args... args) {
    return launch_with(name, grid, block, 0, args...);
  }

  template <class... Args>
  cuda::emu::LaunchResult launch_with(const std::string& name, std::vector<std::uint32_t> grid,
                                      std::vector<std::uint32_t> block, std::uint32_t dynamic_shared, Args... args) {
    const cuda::emu::Kernel* k = module_.find(name);
    if (!k) throw std::runtime_error("no kernel " + name);
    std::vector<std::vector<std::uint8_t>> storage;
    (storage.push_back(bytes_of(args)), ...);
    std::vector<void*> ptrs;
    for (auto& s : storage) ptrs.push_back(s.data());
    const auto params = cuda::emu::pack_params(*k, ptrs.data());
    cuda::emu::LaunchConfig c;
    for (int i = 0; i < 3; ++i) c.grid[i] = i < static_cast<int>(grid.size()) ? grid[i] : 1;
    for (int i = 0; i < 3; ++i) c.block[i] = i < static_cast<int>(block.size()) ? block[i] : 1;
    c.dynamic_shared = dynamic_shared;
    c.params = params.data();
    c.check = check;
    c.allocations = &allocations_;
    c.threads = threads;
    c.max_warp_instructions_per_cta = max_warp_instructions_per_cta;
    return cuda::emu::launch_kernel(module_, *k, c);
  }

  const cuda::emu::Module& module() const { return module_; }

 private:
  template <class T>
  static std::vector<std::uint8_t> bytes_of(T v) {
    std::vector<std::uint8_t> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
  }
  cuda::emu::Module module_;
  cuda::emu::AllocationTable allocations_;
  std::vector<std::shared_ptr<std::vector<std::uint8_t>>> keep_;
};

}  // namespace trine::test

namespace trine::test {

// A one-kernel module `t(.param .u64 out, .param .u64 in)` with common registers declared and
// %rd0 = out, %rd1 = in, %r0 = %tid.x, %rd3 = in + 4 * tid, %rd4 = out + 4 * tid set up.
inline std::string emu_kernel(const std::string& body, const std::string& decls = "") {
  return R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry t(.param .u64 out, .param .u64 in)
{
  .reg .pred %p<8>;
  .reg .b16 %h<8>;
  .reg .b32 %r<40>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<16>;
  .reg .f64 %fd<8>;
)" + decls + R"(
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [in];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.s64 %rd4, %rd0, %rd2;
)" + body + R"(
  ret;
}
)";
}

}  // namespace trine::test
