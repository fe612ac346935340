// Memory instructions: ld/st in every state space (vectors included), atom/red on global and
// shared memory, ldmatrix, and cp.async with its commit and wait groups. Every address goes through
// access() so the checker sees each byte a lane touches.
#include <atomic>
#include <cstring>

#include "backends/cuda_ptx/emulator/cta.hpp"
#include "backends/cuda_ptx/emulator/float_util.hpp"

namespace trine::cuda::emu {
namespace {

inline std::uint64_t lane_address(const Warp& w, const Operand& a, int lane) {
  const std::uint64_t base = a.reg[0] >= 0 ? w.r[a.reg[0] * 32 + lane] : 0;
  return base + static_cast<std::uint64_t>(a.imm);
}

inline std::uint64_t load_bits(const std::uint8_t* p, int bytes, bool sign) {
  switch (bytes) {
    case 1: { std::uint8_t v; std::memcpy(&v, p, 1); return sign ? static_cast<std::uint64_t>(static_cast<std::int8_t>(v)) : v; }
    case 2: { std::uint16_t v; std::memcpy(&v, p, 2); return sign ? static_cast<std::uint64_t>(static_cast<std::int16_t>(v)) : v; }
    case 4: { std::uint32_t v; std::memcpy(&v, p, 4); return sign ? static_cast<std::uint64_t>(static_cast<std::int32_t>(v)) : v; }
    default: { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

template <class T>
T atomic_apply(AtomOp op, T* p, T b, T c, bool is_float_add, bool shared) {
  // Shared memory belongs to one CTA on one host thread; global memory may be shared by CTAs
  // running in parallel, so it goes through std::atomic_ref.
  auto update = [&](T old) -> T {
    switch (op) {
      case AtomOp::add:
        if (is_float_add) {
          if constexpr (sizeof(T) == 4) return static_cast<T>(bits_f32(as_f32(old) + as_f32(b)));
          else return static_cast<T>(bits_f64(as_f64(old) + as_f64(b)));
        }
        return static_cast<T>(old + b);
      case AtomOp::min: return std::min(old, b);
      case AtomOp::max: return std::max(old, b);
      case AtomOp::exch: return b;
      case AtomOp::cas: return old == b ? c : old;
      case AtomOp::and_: return old & b;
      case AtomOp::or_: return old | b;
      case AtomOp::xor_: return old ^ b;
      case AtomOp::inc: return old >= b ? T(0) : static_cast<T>(old + 1);
      case AtomOp::dec: return (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      case AtomOp::none: return old;
    }
    return old;
  };
  if (shared) {
    const T old = *p;
    *p = update(old);
    return old;
  }
  std::atomic_ref<T> ref(*p);
  T old = ref.load();
  while (!ref.compare_exchange_weak(old, update(old))) {
  }
  return old;
}

void do_atom(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  const bool red = in.op == Op::red;
  const Operand& addr = in.ops[red ? 0 : 1];
  const std::uint64_t* b = w.r + in.ops[red ? 1 : 2].reg[0] * 32;
  const std::uint64_t* c = in.atom == AtomOp::cas ? w.r + in.ops[3].reg[0] * 32 : b;
  const int bytes = type_bytes(in.type);
  const bool fadd = is_float(in.type);
  for_lanes(m, [&](int l) {
    const std::uint64_t a = lane_address(w, addr, l);
    std::uint8_t* p = access(cta, w, l, in.space, a, bytes, true, in, true);
    if (!p) return;
    std::uint64_t old = 0;
    const bool sh = in.space == Space::shared || (in.space == Space::generic && (a & kWindowMask) == kSharedWindow);
    if (bytes == 4) {
      auto* q = reinterpret_cast<std::uint32_t*>(p);
      if (is_signed(in.type))
        old = static_cast<std::uint32_t>(atomic_apply<std::int32_t>(in.atom, reinterpret_cast<std::int32_t*>(q), static_cast<std::int32_t>(b[l]), static_cast<std::int32_t>(c[l]), false, sh));
      else
        old = atomic_apply<std::uint32_t>(in.atom, q, static_cast<std::uint32_t>(b[l]), static_cast<std::uint32_t>(c[l]), fadd, sh);
    } else if (bytes == 8) {
      if (is_signed(in.type))
        old = static_cast<std::uint64_t>(atomic_apply<std::int64_t>(in.atom, reinterpret_cast<std::int64_t*>(p), static_cast<std::int64_t>(b[l]), static_cast<std::int64_t>(c[l]), false, sh));
      else
        old = atomic_apply<std::uint64_t>(in.atom, reinterpret_cast<std::uint64_t*>(p), b[l], c[l], fadd, sh);
    } else {
      report_sync(cta, in, "atomics of " + std::to_string(bytes) + " bytes are not supported");
      return;
    }
    if (!red) w.r[in.ops[0].reg[0] * 32 + l] = old;
  });
}

void do_ldmatrix(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  if (m != 0xffffffffu && cta.checking && cta.config->check.synccheck)
    return report_sync(cta, in, "ldmatrix executed by a partial warp (active lanes do not cover the warp)");
  // thread 8*i + r supplies the address of row r of matrix i; each row is eight b16 elements
  std::uint16_t mat[4][8][8];
  for (int i = 0; i < in.vec; ++i)
    for (int r = 0; r < 8; ++r) {
      const int src = 8 * i + r;
      const std::uint64_t a = lane_address(w, in.ops[1], src);
      for (int c = 0; c < 8; ++c) {
        const std::uint8_t* p = access(cta, w, src, in.space == Space::generic ? Space::generic : Space::shared, a + 2 * c, 2, false, in);
        if (!p) return;
        std::memcpy(&mat[i][r][c], p, 2);
      }
    }
  for_lanes(m, [&](int l) {
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < in.vec; ++i) {
      const std::uint16_t lo = (in.flags & kTrans) ? mat[i][2 * t][g] : mat[i][g][2 * t];
      const std::uint16_t hi = (in.flags & kTrans) ? mat[i][2 * t + 1][g] : mat[i][g][2 * t + 1];
      w.r[in.ops[0].reg[i] * 32 + l] = static_cast<std::uint64_t>(hi) << 16 | lo;
    }
  });
}

}  // namespace

void exec_mem(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  if (in.op == Op::atom || in.op == Op::red) return do_atom(cta, w, in, m);
  if (in.op == Op::ldmatrix) return do_ldmatrix(cta, w, in, m);
  const bool load = in.op == Op::ld;
  const Operand& addr = in.ops[load ? 1 : 0];
  const Operand& val = in.ops[load ? 0 : 1];
  const int bytes = type_bytes(in.type);
  const int n = in.vec;
  const bool sign = is_signed(in.type);
  // fast path: unchecked global scalar access is a plain host access
  if (!cta.checking && in.space == Space::global && n == 1) {
    std::uint64_t* v = w.r + val.reg[0] * 32;
    if (load) for_lanes(m, [&](int l) { v[l] = load_bits(reinterpret_cast<const std::uint8_t*>(lane_address(w, addr, l)), bytes, sign); });
    else for_lanes(m, [&](int l) { std::memcpy(reinterpret_cast<void*>(lane_address(w, addr, l)), &v[l], static_cast<std::size_t>(bytes)); });
    return;
  }
  for_lanes(m, [&](int l) {
    const std::uint64_t a = lane_address(w, addr, l);
    // a vector access is one access of n * bytes, aligned to its full size
    std::uint8_t* p = access(cta, w, l, in.space, a, bytes * n, !load, in);
    if (!p) return;
    for (int i = 0; i < n; ++i) {
      const int r = val.kind == OperandKind::vec ? val.reg[i] : val.reg[0];
      if (load) w.r[r * 32 + l] = load_bits(p + i * bytes, bytes, sign);
      else std::memcpy(p + i * bytes, &w.r[r * 32 + l], static_cast<std::size_t>(bytes));
    }
  });
}

void land_copies(Cta& cta, Warp& w, int lane, int keep_groups) {
  auto& pend = w.pending;
  const std::int32_t last = w.groups[lane];
  for (std::size_t i = 0; i < pend.size();) {
    PendingCopy& c = pend[i];
    const bool due = c.lane == lane && (keep_groups == 0 || (c.group >= 0 && c.group <= last - keep_groups));
    if (!due) {
      ++i;
      continue;
    }
    std::memcpy(cta.shared.data() + c.dst, c.data, c.bytes);
    if (!cta.shadow.empty())
      for (int b = 0; b < c.bytes; ++b) {
        ShadowByte& s = cta.shadow[c.dst + static_cast<std::uint64_t>(b)];
        s.async_lane_thread = -1;
        s.writer = cta.thread_id(w, lane);
        s.write_line = c.line;
        s.write_epoch = cta.epoch;
      }
    pend[i] = pend.back();
    pend.pop_back();
  }
}

void exec_cp_async(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  if (in.op == Op::cp_async_commit) {
    for_lanes(m, [&](int l) {
      ++w.groups[l];
      for (auto& c : w.pending)
        if (c.lane == l && c.group < 0) c.group = w.groups[l];
    });
    return;
  }
  if (in.op == Op::cp_async_wait) {
    // wait_all also waits for copies not yet committed
    for_lanes(m, [&](int l) { land_copies(cta, w, l, (in.flags & kUni) ? 0 : in.vec); });
    return;
  }
  const int bytes = in.vec;
  for_lanes(m, [&](int l) {
    const std::uint64_t dst = lane_address(w, in.ops[0], l);
    const std::uint64_t src = lane_address(w, in.ops[1], l);
    const std::uint64_t src_size = (in.flags & kZfill) ? w.r[in.ops[3].reg[0] * 32 + l] : static_cast<std::uint64_t>(bytes);
    std::uint8_t* d = access(cta, w, l, Space::shared, dst, bytes, true, in);
    if (!d) return;
    PendingCopy c;
    c.dst = static_cast<std::uint64_t>(d - cta.shared.data());
    c.bytes = static_cast<std::uint8_t>(bytes);
    c.lane = static_cast<std::uint8_t>(l);
    c.line = in.line;
    const int n = static_cast<int>(std::min<std::uint64_t>(src_size, static_cast<std::uint64_t>(bytes)));
    if (n > 0) {  // the bytes past src-size are zero-filled and not read
      const std::uint8_t* s = access(cta, w, l, Space::global, src, n == bytes ? bytes : n, false, in);
      if (!s) return;
      std::memcpy(c.data, s, static_cast<std::size_t>(n));
    }
    if (!cta.shadow.empty())
      for (int b = 0; b < bytes; ++b) cta.shadow[c.dst + static_cast<std::uint64_t>(b)].async_lane_thread = cta.thread_id(w, l);
    w.pending.push_back(c);
  });
}

}  // namespace trine::cuda::emu
