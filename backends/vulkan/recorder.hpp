// What the op files record with: dispatches of embedded shaders over storage buffers, buffer copies,
// temporaries and the words shaders report errors in, with the barriers between them computed here
// from what each command reads and writes. No Vulkan headers: the op files stay quick to compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "trine/error.hpp"

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
  // `reusable`: the command buffers may be submitted again after the first submission completes
  // (a replayed batch), so they are not recorded for one submission only.
  explicit Recorder(DeviceContext& ctx, bool reusable = false);
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
  // Device-side copies of several regions of src's data into dst's, as one command (no barriers
  // between them: the regions of dst must not overlap). Offsets in bytes, any alignment.
  struct Region {
    std::size_t src_offset, dst_offset, bytes;
  };
  void copy(Allocation* src, Allocation* dst, std::span<const Region> regions);
  // A buffer of `bytes` that lives until the submission completes.
  Allocation* temporary(std::size_t bytes);
  // A host-visible, mapped buffer of `bytes` that lives until the submission completes.
  Allocation* staging(std::size_t bytes);
  // dst's mapped data at dst_offset <- src's bytes, copied on the host just before each submission
  // of the recording (an upload that starts a submission needs no staging on host-visible memory).
  void upload_host(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes);
  // A staging copy of host memory (made just before each submission), uploaded into dst by a
  // recorded copy (for uploads that must happen between device commands).
  void upload_staged(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes);
  // Data the recording itself computed (an op's table): copied into a staging buffer now, once,
  // and uploaded into dst by a recorded copy; a replay uploads the same bytes again.
  void upload_constant(const void* src, Allocation* dst, std::size_t dst_offset, std::size_t bytes);
  // dst <- src's bytes at offset, copied on the host once the submission completes (via a staging
  // buffer the device fills at this point of the command stream).
  void readback_staged(Allocation* src, std::size_t offset, void* dst, std::size_t bytes);

  // dst <- src's bytes at offset, copied on the host from the mapped memory once the submission
  // completes (a readback that ends the submission needs no staging on host-visible memory).
  void readback_host(Allocation* src, std::size_t offset, void* dst, std::size_t bytes);

  // The entry of the submission that the commands recorded from now on belong to (the backend says
  // before recording each), so that an error the device reports (report_words) names it.
  void set_entry(std::size_t index) noexcept;
  // `words` 32-bit words in which a call's shaders report what only the device can see is wrong
  // (gather's first index outside its table): set to 0xFFFFFFFF here, at this point of every
  // submission of the recording (replays included), and read by the host once the submission has
  // completed (through a staging copy that finish() records where the device's memory is not
  // mapped). `check` turns the words into the call's error, or nothing when all went well; the
  // submission then fails with it as the current entry's error (reported(), which the completion
  // asks). A submission with such words has host steps: work that depends on it waits on the host,
  // and so sees the failure, rather than on the device.
  using WordsCheck = std::function<std::optional<Error>(std::span<const std::uint32_t> words)>;
  Allocation* report_words(std::size_t words, WordsCheck check);

  bool empty() const noexcept { return commands_ == 0; }
  // Ends the current command buffer at the next command, which goes into a new one, submitted
  // after it (a
  // very large batch split so that no single submission runs long enough to risk a driver
  // timeout). Each command buffer starts with a barrier after all earlier work on the queue.
  void cut();
  // Ends recording: the final barrier that makes device writes visible to the host.
  void finish();

  // The recorded state the submission keeps alive until completion (command buffers, descriptor
  // pools, temporaries) and the host copies to run before and after it. Shared: a replayed batch's
  // state is also held by the backend between runs.
  struct State;
  using StatePtr = std::shared_ptr<State>;
  StatePtr take_state();

 private:
  Allocation* cached(std::size_t bytes, detail::MemoryKind kind);
  void begin_if_needed();
  void access(std::span<const Binding> bindings);

  DeviceContext& ctx_;
  StatePtr state_;
  std::size_t commands_ = 0;
};

// Runs the host copies that go before the device work, then submits the command buffers in
// order, the first after timeline value `wait_value` (0: none); returns the value the last signals
// (0 when nothing was recorded for the device: then only the host copies ran).
std::uint64_t submit_state(Recorder::State& state, std::uint64_t wait_value);
// Runs the host copies of a completed submission. Never throws.
void complete_state(Recorder::State& state) noexcept;
// The first error the device reported in a completed submission (Recorder::report_words), with the
// index of the entry that recorded it.
struct ReportedError {
  std::size_t entry;
  Error error;
};
std::optional<ReportedError> reported(const Recorder::State& state);
// Whether the host has work left once the device is done (copies out, reported words).
bool has_host_steps(const Recorder::State& state) noexcept;
// How many command buffers the state submits, and the bytes of temporaries it holds.
std::size_t command_buffer_count(const Recorder::State& state) noexcept;
std::size_t temporary_bytes(const Recorder::State& state) noexcept;

}  // namespace trine::vulkan
