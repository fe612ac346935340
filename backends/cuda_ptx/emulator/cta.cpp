// The execution core: the grid loop over CTAs (serial or over a few std::threads), warp set-up,
// the per-warp instruction loop with min-PC scheduling (divergence and reconvergence), exit, and
// CTA barriers with their synccheck.
#include "backends/cuda_ptx/emulator/cta.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

namespace trine::cuda::emu {
namespace {

void init_warp_consts(Cta& cta, Warp& w) {
  const Kernel& k = *cta.kernel;
  const LaunchConfig& c = *cta.config;
  for (const ConstSlot& s : k.consts) {
    std::uint64_t* slot = w.r + static_cast<std::size_t>(s.reg) * 32;
    for (int l = 0; l < 32; ++l) {
      const std::uint32_t t = static_cast<std::uint32_t>(w.index * 32 + l);
      const std::uint32_t tx = t % c.block[0], ty = t / c.block[0] % c.block[1], tz = t / (c.block[0] * c.block[1]);
      std::uint64_t v = 0;
      switch (s.special) {
        case SpecialReg::none: v = s.value; break;
        case SpecialReg::tid_x: v = tx; break;
        case SpecialReg::tid_y: v = ty; break;
        case SpecialReg::tid_z: v = tz; break;
        case SpecialReg::ntid_x: v = c.block[0]; break;
        case SpecialReg::ntid_y: v = c.block[1]; break;
        case SpecialReg::ntid_z: v = c.block[2]; break;
        case SpecialReg::ctaid_x: v = cta.ctaid[0]; break;
        case SpecialReg::ctaid_y: v = cta.ctaid[1]; break;
        case SpecialReg::ctaid_z: v = cta.ctaid[2]; break;
        case SpecialReg::nctaid_x: v = c.grid[0]; break;
        case SpecialReg::nctaid_y: v = c.grid[1]; break;
        case SpecialReg::nctaid_z: v = c.grid[2]; break;
        case SpecialReg::laneid: v = static_cast<std::uint64_t>(l); break;
        case SpecialReg::warpid: v = static_cast<std::uint64_t>(w.index); break;
        case SpecialReg::nwarpid: v = cta.warps.size(); break;
        case SpecialReg::lanemask_eq: v = 1u << l; break;
        case SpecialReg::lanemask_lt: v = (1u << l) - 1; break;
        case SpecialReg::lanemask_le: v = static_cast<std::uint32_t>((2ull << l) - 1); break;
        case SpecialReg::lanemask_gt: v = ~static_cast<std::uint32_t>((2ull << l) - 1); break;
        case SpecialReg::lanemask_ge: v = ~((1u << l) - 1); break;
        case SpecialReg::smid: v = 0; break;
        case SpecialReg::nsmid: v = 108; break;
        case SpecialReg::gridid: v = 1; break;
        case SpecialReg::dynamic_smem_size: v = c.dynamic_shared; break;
        case SpecialReg::total_smem_size: v = cta.shared.size(); break;
        case SpecialReg::clock: case SpecialReg::clock64: v = 0; break;
      }
      slot[l] = v;
    }
  }
}

// Picks the least pc among runnable lanes (min-PC scheduling): structured code reconverges at
// the immediate post-dominator because the lanes that went ahead wait there.
bool reschedule(Warp& w) {
  const std::uint32_t runnable = w.live & ~w.blocked;
  if (!runnable) {
    w.active = 0;
    return false;
  }
  std::int32_t best = INT_MAX;
  for_lanes(runnable, [&](int l) { best = std::min(best, w.lane_pc[l]); });
  std::uint32_t act = 0;
  std::int32_t second = INT_MAX;
  for_lanes(runnable, [&](int l) {
    if (w.lane_pc[l] == best) act |= 1u << l;
    else second = std::min(second, w.lane_pc[l]);
  });
  w.pc = best;
  w.active = act;
  w.waiting_min = second;
  return true;
}

// Moves the active lanes to new_pc (all of them) and merges or yields to lanes waiting elsewhere.
inline void goto_pc(Warp& w, std::int32_t new_pc) {
  w.pc = new_pc;
  if (new_pc >= w.waiting_min) {
    for_lanes(w.active, [&](int l) { w.lane_pc[l] = new_pc; });
    reschedule(w);
  }
}

void split_branch(Warp& w, std::uint32_t taken, std::int32_t target) {
  for_lanes(w.active, [&](int l) { w.lane_pc[l] = (taken >> l & 1) ? target : w.pc + 1; });
  reschedule(w);
}

void arrive(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  const std::uint64_t* R = w.r;
  const int first = std::countr_zero(m);
  const std::uint32_t id = static_cast<std::uint32_t>(R[in.ops[0].reg[0] * 32 + first]);
  if (id >= 16) {
    report_sync(cta, in, "barrier id " + std::to_string(id) + " is out of range (0..15)");
    return;
  }
  if ((in.flags & kAligned) && m != w.live && cta.checking && cta.config->check.synccheck) {
    report_sync(cta, in, "Divergent thread(s) in warp " + std::to_string(w.index) + ": bar.sync reached by lanes 0x" +
                             [&] { char b[16]; std::snprintf(b, sizeof b, "%08x", m); return std::string(b); }() +
                             " of live lanes 0x" +
                             [&] { char b[16]; std::snprintf(b, sizeof b, "%08x", w.live); return std::string(b); }());
    return;
  }
  Barrier& b = cta.bars[id];
  if (in.n_ops > 1) b.expected = static_cast<std::uint32_t>(R[in.ops[1].reg[0] * 32 + first]);
  if (in.n_ops > 1 && (b.expected % 32 || b.expected == 0 || b.expected > cta.warps.size() * 32))
    report_sync(cta, in, "barrier thread count " + std::to_string(b.expected) + " is not a positive multiple of 32 within the CTA");
  b.arrived += static_cast<std::uint32_t>(lanes(m));
  if (in.mode == Mode::bar_sync) {
    if (b.waiting.size() < cta.warps.size()) b.waiting.resize(cta.warps.size());
    b.waiting[static_cast<std::size_t>(w.index)] |= m;
    w.blocked |= m;
    for_lanes(m, [&](int l) { w.lane_pc[l] = w.pc + 1; });
    w.active &= ~m;
  }
}

std::uint32_t live_threads(const Cta& cta) {
  std::uint32_t n = 0;
  for (const Warp& w : cta.warps) n += static_cast<std::uint32_t>(lanes(w.live));
  return n;
}

// Completes the barriers whose counts are met; returns whether any lane was released.
bool release_barriers(Cta& cta) {
  bool released = false;
  const std::uint32_t live = live_threads(cta);
  for (Barrier& b : cta.bars) {
    if (b.arrived == 0) continue;
    const std::uint32_t need = b.expected ? b.expected : live;
    if (b.arrived < need) continue;
    for (std::size_t i = 0; i < b.waiting.size(); ++i) {
      cta.warps[i].blocked &= ~b.waiting[i];
      released |= b.waiting[i] != 0;
      b.waiting[i] = 0;
    }
    b.arrived = 0;
    b.expected = 0;
    ++cta.epoch;
  }
  return released;
}

void run_warp(Cta& cta, Warp& w) {
  const Instr* code = cta.kernel->code.data();
  std::uint64_t* R = w.r;
  std::uint64_t executed = 0;
  const std::uint64_t limit = cta.config->max_warp_instructions_per_cta;
  while (!cta.stop) {
    if (!w.active && !reschedule(w)) break;
    if (++cta.steps > limit) {
      char text[200];
      std::snprintf(text, sizeof text, "Launch timed out: block %s executed more than %llu warp instructions (an endless loop?) at line %d in %s",
                    cta.block_text().c_str(), static_cast<unsigned long long>(limit), code[w.pc].line, cta.kernel->name.c_str());
      cta.reporter->report(CUDA_ERROR_LAUNCH_TIMEOUT, text);
      cta.stop = true;
      break;
    }
    const Instr& in = code[w.pc];
    std::uint32_t m = w.active;
    if (in.guard >= 0) {
      const std::uint64_t* p = R + in.guard * 32;
      std::uint32_t pm = 0;
      for_lanes(m, [&](int l) { pm |= static_cast<std::uint32_t>(p[l] & 1) << l; });
      m = in.guard_negate ? (m & ~pm) : pm;
    }
    executed += static_cast<std::uint64_t>(lanes(w.active));
    switch (in.op) {
      case Op::bra:
        if (m == w.active) goto_pc(w, static_cast<std::int32_t>(in.ops[0].imm));
        else if (m == 0) goto_pc(w, w.pc + 1);
        else split_branch(w, m, static_cast<std::int32_t>(in.ops[0].imm));
        continue;
      case Op::ret: case Op::exit:
        if (m) {
          // copies still in flight land before the thread is gone, as on the hardware
          for_lanes(m, [&](int l) { land_copies(cta, w, l, 0); });
          w.live &= ~m;
          w.active &= ~m;
        }
        if (w.active) goto_pc(w, w.pc + 1);
        continue;
      case Op::bar:
        if (m) arrive(cta, w, in, m);
        if (w.active) goto_pc(w, w.pc + 1);
        continue;
      case Op::mov: case Op::add: case Op::sub: case Op::mul: case Op::mad: case Op::div: case Op::rem:
      case Op::min: case Op::max: case Op::neg: case Op::abs: case Op::and_: case Op::or_: case Op::xor_:
      case Op::not_: case Op::shl: case Op::shr: case Op::popc: case Op::clz: case Op::brev: case Op::bfe:
      case Op::setp: case Op::selp: case Op::cvta: case Op::prmt: case Op::fma: case Op::copysign:
      case Op::lop3: case Op::dp4a: case Op::bfi: case Op::bfind: case Op::shf:
        if (m) {
          if (is_float(in.type) && in.op != Op::mov && in.op != Op::selp) exec_float(cta, w, in, m);
          else exec_int(cta, w, in, m);
        }
        break;
      case Op::ex2: case Op::lg2: case Op::rcp: case Op::sqrt: case Op::rsqrt: case Op::sin: case Op::cos:
      case Op::tanh:
        if (m) exec_float(cta, w, in, m);
        break;
      case Op::cvt:
        if (m) exec_cvt(cta, w, in, m);
        break;
      case Op::ld: case Op::st: case Op::atom: case Op::red: case Op::ldmatrix:
        if (m) exec_mem(cta, w, in, m);
        break;
      case Op::cp_async: case Op::cp_async_commit: case Op::cp_async_wait:
        if (m) exec_cp_async(cta, w, in, m);
        break;
      case Op::shfl: case Op::vote: case Op::bar_warp: case Op::activemask: case Op::redux:
        if (m) exec_warp_op(cta, w, in, m);
        break;
      case Op::mma:
        if (m) exec_mma(cta, w, in, m);
        break;
      case Op::nop: break;
      case Op::testp:
        report_sync(cta, in, "testp is not supported");
        break;
    }
    // straight-line flow: pc + 1, merging with lanes that wait there
    if (++w.pc == w.waiting_min) {
      for_lanes(w.active, [&](int l) { w.lane_pc[l] = w.pc; });
      reschedule(w);
    }
  }
  cta.executed += executed;
}

void run_cta(Cta& cta) {
  const Kernel& k = *cta.kernel;
  const LaunchConfig& c = *cta.config;
  cta.nthreads = c.block[0] * c.block[1] * c.block[2];
  const std::size_t nwarps = (cta.nthreads + 31) / 32;
  cta.warps.assign(nwarps, Warp{});
  cta.regs.assign(nwarps * static_cast<std::size_t>(k.reg_count) * 32, 0);
  std::fill(cta.shared.begin(), cta.shared.end(), 0);
  std::fill(cta.local.begin(), cta.local.end(), 0);
  if (!cta.shadow.empty()) std::fill(cta.shadow.begin(), cta.shadow.end(), ShadowByte{});
  for (auto& b : cta.bars) b = Barrier{};
  cta.epoch = 1;
  cta.steps = 0;
  cta.pending_init.clear();
  for (std::size_t i = 0; i < nwarps; ++i) {
    Warp& w = cta.warps[i];
    w.index = static_cast<int>(i);
    w.r = cta.regs.data() + i * static_cast<std::size_t>(k.reg_count) * 32;
    const std::uint32_t n = std::min<std::uint32_t>(32, cta.nthreads - static_cast<std::uint32_t>(i) * 32);
    w.live = n == 32 ? 0xffffffffu : (1u << n) - 1;
    w.active = w.live;
    init_warp_consts(cta, w);
  }
  while (!cta.stop) {
    for (Warp& w : cta.warps)
      if (!cta.stop) run_warp(cta, w);
    if (live_threads(cta) == 0 || cta.stop) break;
    if (!release_barriers(cta)) {
      // every live thread waits at a barrier that cannot complete
      char head[160];
      std::snprintf(head, sizeof head, "barrier reached by only part of the block: %u live thread(s) of %u in block %s wait at a barrier that cannot complete;",
                    live_threads(cta), cta.nthreads, cta.block_text().c_str());
      std::string text = head;
      for (const Barrier& b : cta.bars)
        if (b.arrived) {
          char part[96];
          std::snprintf(part, sizeof part, " %u arrived, %u expected", b.arrived, b.expected ? b.expected : cta.nthreads);
          text += part;
        }
      Instr none;
      report_sync(cta, none, text);
      break;
    }
  }
  if (!cta.stop && !cta.pending_init.empty()) {
    cta.reporter->report(CUDA_ERROR_LAUNCH_FAILED, cta.pending_init);
    cta.stop = true;
  }
}

}  // namespace

std::string Cta::thread_text(int tid) const {
  const auto t = static_cast<std::uint32_t>(tid);
  const auto& b = config->block;
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", t % b[0], t / b[0] % b[1], t / (b[0] * b[1]));
  return buf;
}
std::string Cta::block_text() const {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", ctaid[0], ctaid[1], ctaid[2]);
  return buf;
}

LaunchResult launch_kernel(const Module& module, const Kernel& kernel, const LaunchConfig& config) {
  LaunchResult out;
  const std::uint64_t nblocks = std::uint64_t{config.grid[0]} * config.grid[1] * config.grid[2];
  const std::uint64_t nthreads = std::uint64_t{config.block[0]} * config.block[1] * config.block[2];
  if (nblocks == 0 || nthreads == 0 || nthreads > 1024) {
    out.result = CUDA_ERROR_INVALID_VALUE;
    out.report = "[launch] invalid grid or block dimensions";
    return out;
  }
  Reporter reporter(config.check);
  const bool checking = config.check.enabled;
  const bool shadowing = checking && (config.check.racecheck || config.check.initcheck);
  std::atomic<std::uint64_t> next{0}, executed{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    Cta cta;
    cta.module = &module;
    cta.kernel = &kernel;
    cta.config = &config;
    cta.reporter = &reporter;
    cta.checking = checking;
    cta.shared.resize(kernel.dynamic_offset + config.dynamic_shared);
    if (kernel.dynamic_offset + config.dynamic_shared == 0) cta.shared.resize(0);
    cta.local.resize(static_cast<std::size_t>(kernel.local_bytes) * ((nthreads + 31) / 32 * 32));
    if (shadowing) cta.shadow.resize(cta.shared.size());
    // CTAs are handed out in order; a stop after a finding skips the rest, as a failed launch does
    for (std::uint64_t b; !stop && (b = next.fetch_add(1)) < nblocks;) {
      cta.ctaid[0] = static_cast<std::uint32_t>(b % config.grid[0]);
      cta.ctaid[1] = static_cast<std::uint32_t>(b / config.grid[0] % config.grid[1]);
      cta.ctaid[2] = static_cast<std::uint32_t>(b / (std::uint64_t{config.grid[0]} * config.grid[1]));
      cta.stop = false;
      run_cta(cta);
      if (cta.stop) stop = true;
    }
    executed += cta.executed;
  };
  const int nt = static_cast<int>(std::min<std::uint64_t>(std::max(1, config.threads), nblocks));
  if (nt <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int i = 0; i < nt; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  out.result = reporter.result();
  out.errors = reporter.errors();
  out.report = reporter.text();
  out.thread_instructions = executed;
  return out;
}

std::vector<std::uint8_t> pack_params(const Kernel& kernel, void* const* params) {
  std::vector<std::uint8_t> buf(kernel.param_bytes + 8, 0);
  for (std::size_t i = 0; i < kernel.params.size(); ++i)
    if (params && params[i]) std::memcpy(buf.data() + kernel.params[i].offset, params[i], kernel.params[i].size);
  return buf;
}

}  // namespace trine::cuda::emu
