// What the op files record with: dispatches of embedded shaders over storage buffers, buffer copies
// and temporaries, with the barriers between them computed here from what each command reads and
// writes. No Vulkan headers: the op files stay quick to compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

namespace trine::detail {
enum class MemoryKind;
}

namespace trine::vulkan {

struct Allocation;
struct DeviceCaps;
class DeviceContext;

// An allocation's data bound to a shader: all of it, or `range` bytes from `offset` (a multiple of
// the device's storage-buffer offset alignment) for tensors bound in pieces.
struct Binding {
  Allocation* alloc;
  bool write;
  std::size_t offset = 0;
  std::size_t range = 0;  // 0: to the end of the data
};

class Recorder {
 public:
  explicit Recorder(DeviceContext& ctx);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const DeviceCaps& caps() const noexcept;
  DeviceContext& context() noexcept { return ctx_; }

  // One dispatch of `shader` (bindings 0..n-1 in order, push constants, specialization constants)
  // over `groups` workgroups: split into a 2-D grid past the device's per-dimension limit, so a
  // shader derives its group index with linear_group() (shaders/common.glsl) and bounds-checks it.
  void dispatch(const char* shader, std::initializer_list<Binding> bindings, const void* push, std::size_t push_bytes,
                std::uint64_t groups, std::initializer_list<std::uint32_t> spec = {});
  // Device-side copy of `bytes` from src's data at src_offset to dst's data at dst_offset.
  void copy(Allocation* src, std::size_t src_offset, Allocation* dst, std::size_t dst_offset, std::size_t bytes);
  // A buffer of `bytes` that lives until the submission completes.
  Allocation* temporary(std::size_t bytes);
  // A host-visible, mapped buffer of `bytes` that lives until the submission completes.
  Allocation* staging(std::size_t bytes);
  // A staging copy of host memory, uploaded into dst by a recorded copy (for uploads that must
  // happen between device commands).
  void upload_staged(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes);
  // dst <- src's bytes at offset, copied on the host once the submission completes (via a staging
  // buffer the device fills at this point of the command stream).
  void readback_staged(Allocation* src, std::size_t offset, void* dst, std::size_t bytes);

  // dst <- src's bytes at offset, copied on the host from the mapped memory once the submission
  // completes (a readback that ends the submission needs no staging on host-visible memory).
  void readback_host(Allocation* src, std::size_t offset, void* dst, std::size_t bytes);
  bool has_host_steps() const noexcept;

  bool empty() const noexcept { return commands_ == 0; }
  // Ends recording: the final barrier that makes device writes visible to the host.
  void finish();

  // The recorded state the submission keeps alive until completion (command buffer, descriptor
  // pools, temporaries) and the host copies to run after it.
  struct State;
  struct StateDeleter {
    void operator()(State* s) const noexcept;
  };
  using StatePtr = std::unique_ptr<State, StateDeleter>;
  StatePtr take_state();
  void* command_buffer() const noexcept;  // VkCommandBuffer, for submit

 private:
  Allocation* cached(std::size_t bytes, detail::MemoryKind kind);
  void begin_if_needed();
  void access(std::span<const Binding> bindings);

  DeviceContext& ctx_;
  StatePtr state_;
  std::size_t commands_ = 0;
};

// Runs the host copies of a completed submission and frees what it held. Never throws.
void complete_state(Recorder::State& state) noexcept;
bool has_host_steps(const Recorder::State& state) noexcept;

}  // namespace trine::vulkan
