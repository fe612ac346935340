// Internal state of one running CTA (warps, registers, shared and local memory, barriers, the
// checker's shadow) and the per-family execute functions the warp loop dispatches to.
#pragma once

#include <bit>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/interp.hpp"

namespace trine::cuda::emu {

struct PendingCopy {  // a cp.async in flight: the source was read at issue, it lands at the wait
  std::uint64_t dst = 0;  // shared offset
  std::uint8_t data[16] = {};
  std::uint8_t bytes = 0;
  std::uint8_t lane = 0;
  std::int32_t group = -1;  // -1: not committed yet
  std::int32_t line = 0;
};

struct Warp {
  std::uint64_t* r = nullptr;  // reg_count x 32 slots, register-major
  std::uint32_t live = 0;      // lanes that exist and have not exited
  std::uint32_t active = 0;    // lanes at pc
  std::uint32_t blocked = 0;   // lanes waiting at a barrier
  std::int32_t pc = 0;
  std::int32_t waiting_min = INT_MAX;  // least pc among live lanes neither active nor blocked
  std::int32_t lane_pc[32] = {};
  int index = 0;
  std::vector<PendingCopy> pending;
  std::int32_t groups[32] = {};  // cp.async groups committed per lane
};

// One byte of shared memory as racecheck and initcheck see it.
struct ShadowByte {
  std::uint32_t write_epoch = 0, read_epoch = 0;  // 0: never in this launch
  std::int32_t writer = -1, reader = -1;          // linear thread ids
  std::int32_t write_line = 0, read_line = 0;
  std::int32_t reader2 = -1, read2_line = 0;      // the last reader from another warp than `reader`
  std::int32_t async_lane_thread = -1;            // a cp.async into this byte has not landed
};

struct Barrier {
  std::uint32_t arrived = 0;
  std::uint32_t expected = 0;  // 0: all live threads of the CTA
  std::vector<std::uint32_t> waiting;  // per warp: lanes blocked on it
};

class Reporter;

struct Cta {
  const Module* module = nullptr;
  const Kernel* kernel = nullptr;
  const LaunchConfig* config = nullptr;
  Reporter* reporter = nullptr;
  std::uint32_t ctaid[3] = {};
  std::uint32_t nthreads = 0;
  std::vector<std::uint8_t> shared;
  std::vector<std::uint8_t> local;
  std::vector<std::uint64_t> regs;
  std::vector<Warp> warps;
  Barrier bars[16];
  std::vector<ShadowByte> shadow;  // shared bytes, when racecheck or initcheck is on
  std::uint32_t epoch = 1;         // bumped by every completed barrier
  bool checking = false;
  bool stop = false;  // a finding that ends the launch
  std::string pending_init;  // the first initcheck finding, reported when the block ends clean
  std::uint64_t executed = 0;
  std::uint64_t steps = 0;  // warp instructions of this CTA, against the timeout
  std::uint64_t hit_begin = 0, hit_end = 0;  // the allocation the last checked global access was in

  std::int32_t thread_id(const Warp& w, int lane) const { return w.index * 32 + lane; }
  std::string thread_text(int tid) const;
  std::string block_text() const;
};

// Collects findings across CTAs; thread-safe.
class Reporter {
 public:
  explicit Reporter(const CheckOptions& o) : options_(o) {}
  // Records a finding and the CUresult it makes the launch return (the first one wins).
  void report(CUresult code, const std::string& text);
  CUresult result() const { return result_; }
  int errors() const { return errors_; }
  std::string text() const;

 private:
  CheckOptions options_;
  mutable std::mutex mu_;
  CUresult result_ = CUDA_SUCCESS;
  int errors_ = 0;
  std::vector<std::string> texts_;
};

inline int lanes(std::uint32_t m) { return std::popcount(m); }
template <class F>
inline void for_lanes(std::uint32_t m, F&& f) {
  if (m == 0xffffffffu) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (m) {
      f(std::countr_zero(m));
      m &= m - 1;
    }
  }
}

// Family executors; each runs `in` for the lanes in m. Control flow stays in cta.cpp.
void exec_int(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_float(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_cvt(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_mem(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_cp_async(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_warp_op(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void exec_mma(Cta& cta, Warp& w, const Instr& in, std::uint32_t m);
void land_copies(Cta& cta, Warp& w, int lane, int keep_groups);

// Memory access through the checker: returns the host address for a lane's access of `size`
// bytes, or null when the access is illegal (reported; the launch stops).
std::uint8_t* access(Cta& cta, Warp& w, int lane, Space space, std::uint64_t addr, int size, bool write,
                     const Instr& in, bool atomic = false);
// Records racecheck/initcheck state for a shared access that `access` already allowed.
void shadow_shared(Cta& cta, Warp& w, int lane, std::uint64_t off, int size, bool write, const Instr& in);
void report_sync(Cta& cta, const Instr& in, const std::string& what);

}  // namespace trine::cuda::emu
