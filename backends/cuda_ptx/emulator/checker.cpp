// The checker: memcheck (bounds and alignment in every space, against the global allocation
// table), racecheck and initcheck on shared memory (byte shadow, epochs between barriers), and the
// report text in compute-sanitizer's vocabulary.
#include <cstdio>
#include <sstream>

#include "backends/cuda_ptx/emulator/cta.hpp"

namespace trine::cuda::emu {
namespace {

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

const char* space_name(Space s) {
  switch (s) {
    case Space::global: return "__global__";
    case Space::shared: return "__shared__";
    case Space::local: return "__local__";
    case Space::param: return "__param__";
    case Space::const_: return "__constant__";
    case Space::generic: return "__global__";
  }
  return "";
}

std::string where(const Cta& cta, const Instr& in, int tid) {
  return "    at line " + std::to_string(in.line) + " in " + cta.kernel->name + "\n    by thread " + cta.thread_text(tid) +
         " in block " + cta.block_text() + "\n";
}

std::uint8_t* fail(Cta& cta, Warp& w, int lane, Space space, std::uint64_t addr, int size, bool write, const Instr& in,
                   CUresult code, const std::string& detail) {
  std::string text = "Invalid " + std::string(space_name(space)) + (write ? " write" : " read") + " of size " +
                     std::to_string(size) + " bytes\n" + where(cta, in, cta.thread_id(w, lane)) + "    Address " + hex(addr) +
                     " " + detail;
  cta.reporter->report(code, text);
  cta.stop = true;
  return nullptr;
}

}  // namespace

// ---- AllocationTable ----
void AllocationTable::add(std::uint64_t base, std::uint64_t size, std::string label) {
  std::lock_guard lock(mu_);
  blocks_[base] = Entry{size, std::move(label)};
}
bool AllocationTable::remove(std::uint64_t base) {
  std::lock_guard lock(mu_);
  return blocks_.erase(base) > 0;
}
bool AllocationTable::owns(std::uint64_t base) const {
  std::lock_guard lock(mu_);
  return blocks_.count(base) > 0;
}
std::uint64_t AllocationTable::size_of(std::uint64_t base) const {
  std::lock_guard lock(mu_);
  const auto it = blocks_.find(base);
  return it == blocks_.end() ? 0 : it->second.size;
}
bool AllocationTable::contains(std::uint64_t addr, std::uint64_t size) const {
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) return false;
  --it;
  return addr >= it->first && addr + size <= it->first + it->second.size;
}
void AllocationTable::find(std::uint64_t addr, std::uint64_t& begin, std::uint64_t& end) const {
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) return;
  --it;
  if (addr < it->first + it->second.size) begin = it->first, end = it->first + it->second.size;
}
std::string AllocationTable::describe_nearest(std::uint64_t addr, std::uint64_t size) const {
  std::lock_guard lock(mu_);
  if (blocks_.empty()) return "and no allocation exists";
  auto after = blocks_.upper_bound(addr);
  std::string best;
  std::uint64_t best_dist = ~0ull;
  if (after != blocks_.end() && after->first - addr < best_dist) {
    best_dist = after->first - addr;
    best = "and is " + std::to_string(best_dist) + " bytes before the nearest allocation at " + hex(after->first) +
           " of size " + std::to_string(after->second.size) + " bytes";
  }
  if (after != blocks_.begin()) {
    auto before = std::prev(after);
    const std::uint64_t end = before->first + before->second.size;
    const std::uint64_t dist = addr + size > end ? addr + size - end : 0;
    const std::uint64_t from_end = addr >= end ? addr - end : 0;
    if (dist < best_dist || from_end < best_dist)
      best = "and is " + std::to_string(from_end) + " bytes after the nearest allocation at " + hex(before->first) +
             " of size " + std::to_string(before->second.size) + " bytes";
  }
  return best;
}

// ---- Reporter ----
void Reporter::report(CUresult code, const std::string& text) {
  std::lock_guard lock(mu_);
  if (result_ == CUDA_SUCCESS) result_ = code;
  ++errors_;
  if (static_cast<int>(texts_.size()) < options_.max_reports) texts_.push_back(text);
}
std::string Reporter::text() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& t : texts_) out += t + "\n";
  return out;
}

void report_sync(Cta& cta, const Instr& in, const std::string& what) {
  std::string text = "Barrier error detected. " + what + "\n";
  if (in.line > 0) text += "    at line " + std::to_string(in.line) + " in " + cta.kernel->name + "\n";
  text += "    in block " + cta.block_text() + "\n";
  cta.reporter->report(CUDA_ERROR_LAUNCH_FAILED, text);
  cta.stop = true;
}

std::uint8_t* access(Cta& cta, Warp& w, int lane, Space space, std::uint64_t addr, int size, bool write,
                     const Instr& in, bool atomic) {
  if (cta.stop) return nullptr;  // one finding ends the launch; later lanes add nothing
  if (space == Space::generic) {
    const std::uint64_t window = addr & kWindowMask;
    if (window == kSharedWindow) space = Space::shared, addr &= ~kWindowMask;
    else if (window == kLocalWindow) space = Space::local, addr &= ~kWindowMask;
    else space = Space::global;
  }
  const bool check = cta.checking && cta.config->check.memcheck;
  const bool pow2 = (size & (size - 1)) == 0;
  if (check && pow2 && addr % static_cast<std::uint64_t>(size) != 0)
    return fail(cta, w, lane, space, addr, size, write, in, CUDA_ERROR_MISALIGNED_ADDRESS, "is misaligned");
  switch (space) {
    case Space::shared: {
      // bounds are checked even with the checker off: an overrun would corrupt the host heap
      if (addr + static_cast<std::uint64_t>(size) > cta.shared.size())
        return fail(cta, w, lane, space, addr, size, write, in, CUDA_ERROR_ILLEGAL_ADDRESS,
                    "is out of bounds\n    and is " + std::to_string(addr + size - cta.shared.size()) +
                        " bytes after the end of the block's " + std::to_string(cta.shared.size()) + " bytes of shared memory");
      if (!cta.shadow.empty() && !atomic) shadow_shared(cta, w, lane, addr, size, write, in);
      else if (!cta.shadow.empty())
        for (int b = 0; b < size; ++b) cta.shadow[addr + static_cast<std::uint64_t>(b)].write_epoch = cta.epoch;
      return cta.stop ? nullptr : cta.shared.data() + addr;
    }
    case Space::local: {
      const std::uint64_t per_thread = cta.kernel->local_bytes;
      if (addr + static_cast<std::uint64_t>(size) > per_thread)
        return fail(cta, w, lane, space, addr, size, write, in, CUDA_ERROR_ILLEGAL_ADDRESS,
                    "is out of bounds of the thread's " + std::to_string(per_thread) + " bytes of local memory");
      return cta.local.data() + static_cast<std::uint64_t>(cta.thread_id(w, lane)) * per_thread + addr;
    }
    case Space::param:
      if (write || addr + static_cast<std::uint64_t>(size) > cta.kernel->param_bytes)
        return fail(cta, w, lane, space, addr, size, write, in, CUDA_ERROR_ILLEGAL_ADDRESS,
                    "is outside the kernel's " + std::to_string(cta.kernel->param_bytes) + " bytes of parameters");
      return const_cast<std::uint8_t*>(cta.config->params) + addr;
    case Space::global: case Space::const_: case Space::generic: {
      if (check && addr >= cta.hit_begin && addr + static_cast<std::uint64_t>(size) <= cta.hit_end) {
        // inside the allocation the last access found: no table lookup
      } else if (check) {
        const auto& g = cta.module->global_init;
        const auto gbase = reinterpret_cast<std::uint64_t>(g.data());
        const bool in_module = addr >= gbase && addr + static_cast<std::uint64_t>(size) <= gbase + g.size();
        const bool ok = in_module || (cta.config->allocations && cta.config->allocations->contains(addr, static_cast<std::uint64_t>(size)));
        if (ok && !in_module) cta.config->allocations->find(addr, cta.hit_begin, cta.hit_end);
        if (!ok)
          return fail(cta, w, lane, Space::global, addr, size, write, in, CUDA_ERROR_ILLEGAL_ADDRESS,
                      "is out of bounds\n    " + (cta.config->allocations ? cta.config->allocations->describe_nearest(addr, static_cast<std::uint64_t>(size))
                                                                          : std::string("and no allocation table was given")));
      } else if (addr < 4096) {
        // never dereference a null-page pointer on the host, checker or not
        return fail(cta, w, lane, Space::global, addr, size, write, in, CUDA_ERROR_ILLEGAL_ADDRESS, "is out of bounds");
      }
      return reinterpret_cast<std::uint8_t*>(addr);
    }
  }
  return nullptr;
}

namespace {

// The findings of shadow_shared, out of line: inline, their strings' stack frame (poisoned and
// unpoisoned on every call under AddressSanitizer) cost every shared access. The emulated matmul
// conformance cases took 16.9 s with them inline, 13.1 s without (Zen 3, release build).
[[gnu::noinline, gnu::cold]] void report_race(Cta& cta, const Instr& in, std::int32_t me, std::uint64_t byte,
                                              const char* first, std::int32_t other, std::int32_t other_line,
                                              const char* second, const char* kind) {
  std::string text = "Error: Race reported between " + std::string(first) + " access at line " +
                     std::to_string(other_line) + " in " + cta.kernel->name + " by thread " + cta.thread_text(other) +
                     "\n    and " + second + " access at line " + std::to_string(in.line) + " in " + cta.kernel->name +
                     " by thread " + cta.thread_text(me) + " in block " + cta.block_text() + "\n    (" + kind +
                     " hazard on __shared__ byte " + hex(byte) + ", no barrier between them)";
  cta.reporter->report(CUDA_ERROR_LAUNCH_FAILED, text);
  cta.stop = true;
}

[[gnu::noinline, gnu::cold]] void report_async_pending(Cta& cta, const Instr& in, std::int32_t me, std::uint64_t byte,
                                                       std::int32_t issuer) {
  std::string text = "Error: cp.async target read or written before its wait: __shared__ byte " + hex(byte) +
                     " at line " + std::to_string(in.line) + " in " + cta.kernel->name + " by thread " +
                     cta.thread_text(me) + " in block " + cta.block_text() + "\n    (the copy was issued by thread " +
                     cta.thread_text(issuer) + "; cp.async.wait_group/wait_all must come first)";
  cta.reporter->report(CUDA_ERROR_LAUNCH_FAILED, text);
  cta.stop = true;
}

// Held back until the block ends: a race that explains the read is the better report.
[[gnu::noinline, gnu::cold]] void note_uninitialized(Cta& cta, const Instr& in, std::int32_t me, std::uint64_t off,
                                                     int size) {
  cta.pending_init = "Uninitialized __shared__ memory read of size " + std::to_string(size) + " bytes\n" +
                     where(cta, in, me) + "    Address " + hex(off) + " was never written in this launch";
}

}  // namespace

void shadow_shared(Cta& cta, Warp& w, int lane, std::uint64_t off, int size, bool write, const Instr& in) {
  const CheckOptions& o = cta.config->check;
  const bool racecheck = o.racecheck, initcheck = o.initcheck;
  const std::int32_t me = cta.thread_id(w, lane);
  const std::int32_t warp = me / 32;
  const std::uint32_t e = cta.epoch;
  // Hazards are reported between threads of different warps: a warp runs in lockstep here.
  auto other_warp = [warp](std::int32_t t) { return t >= 0 && t / 32 != warp; };
  ShadowByte* const bytes = cta.shadow.data() + off;
  for (int i = 0; i < size; ++i) {
    ShadowByte& s = bytes[i];
    const std::uint64_t at = off + static_cast<std::uint64_t>(i);
    if (racecheck && s.async_lane_thread >= 0) return report_async_pending(cta, in, me, at, s.async_lane_thread);
    if (write) {
      if (racecheck && s.write_epoch == e && other_warp(s.writer))
        return report_race(cta, in, me, at, "Write", s.writer, s.write_line, "Write", "WAW");
      if (racecheck && s.read_epoch == e && other_warp(s.reader))
        return report_race(cta, in, me, at, "Read", s.reader, s.read_line, "Write", "WAR");
      if (racecheck && s.read_epoch == e && other_warp(s.reader2))
        return report_race(cta, in, me, at, "Read", s.reader2, s.read2_line, "Write", "WAR");
      s.write_epoch = e, s.writer = me, s.write_line = in.line;
    } else {
      if (initcheck && s.write_epoch == 0 && cta.pending_init.empty()) note_uninitialized(cta, in, me, off, size);
      if (racecheck && s.write_epoch == e && other_warp(s.writer))
        return report_race(cta, in, me, at, "Write", s.writer, s.write_line, "Read", "RAW");
      // keep one reader from another warp too: warp 0 reads, warp 1 reads and then writes is a race
      if (s.read_epoch != e)
        s.reader2 = -1;
      else if (other_warp(s.reader))
        s.reader2 = s.reader, s.read2_line = s.read_line;
      s.read_epoch = e, s.reader = me, s.read_line = in.line;
    }
  }
}

}  // namespace trine::cuda::emu
