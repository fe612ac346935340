// Warp-collective instructions: shfl.sync, vote.sync, bar.warp.sync with their member-mask
// synccheck, and mma.sync (m16n8k16, m16n8k8; f16/bf16 in, f32 accumulate) with the PTX ISA
// fragment layouts (groupID = lane >> 2, threadID_in_group = lane % 4).
#include <algorithm>
#include <cstdio>

#include "backends/cuda_ptx/emulator/cta.hpp"
#include "backends/cuda_ptx/emulator/float_util.hpp"

namespace trine::cuda::emu {
namespace {

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::uint32_t existing_lanes(const Cta& cta, const Warp& w) {
  const std::uint32_t n = std::min<std::uint32_t>(32, cta.nthreads - static_cast<std::uint32_t>(w.index) * 32);
  return n == 32 ? 0xffffffffu : (1u << n) - 1;
}

// The member mask must name exactly the lanes executing the instruction (lanes beyond the block
// never exist and are ignored). Returns false after reporting a mismatch.
bool check_members(Cta& cta, const Warp& w, const Instr& in, std::uint32_t mask, std::uint32_t m, const char* what) {
  if (!cta.checking || !cta.config->check.synccheck) return true;
  if ((mask & existing_lanes(cta, w)) == m) return true;
  report_sync(cta, in, std::string(what) + " member mask " + hex32(mask) + " does not match the active threads " + hex32(m) +
                           " of warp " + std::to_string(w.index));
  return false;
}

void do_shfl(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  const std::uint64_t *a = R + in.ops[1].reg[0] * 32, *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32;
  const std::uint64_t* mk = R + in.ops[4].reg[0] * 32;
  const int first = std::countr_zero(m);
  if (!check_members(cta, w, in, static_cast<std::uint32_t>(mk[first]), m, "shfl.sync")) return;
  std::uint64_t src[32];
  for (int l = 0; l < 32; ++l) src[l] = a[l];  // read every source before any destination is written
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  std::uint64_t* p = in.ops[0].count > 1 ? R + in.ops[0].reg[1] * 32 : nullptr;
  for_lanes(m, [&](int lane) {
    const int bval = static_cast<int>(b[lane] & 31), cval = static_cast<int>(c[lane] & 31);
    const int mask = static_cast<int>((c[lane] >> 8) & 31);
    const int max_lane = (lane & mask) | (cval & ~mask), min_lane = lane & mask;
    int j = lane;
    bool ok = false;
    switch (in.mode) {
      case Mode::shfl_up: j = lane - bval, ok = j >= max_lane; break;
      case Mode::shfl_down: j = lane + bval, ok = j <= max_lane; break;
      case Mode::shfl_bfly: j = lane ^ bval, ok = j <= max_lane; break;
      default: j = min_lane | (bval & ~mask), ok = j <= max_lane; break;
    }
    if (!ok) j = lane;
    if (ok && !((m >> j) & 1) && cta.checking && cta.config->check.synccheck) {
      report_sync(cta, in, "shfl.sync lane " + std::to_string(lane) + " reads lane " + std::to_string(j) + ", which is not active");
      return;
    }
    d[lane] = src[j] & 0xffffffffull;
    if (p) p[lane] = ok;
  });
}

void do_vote(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  const std::uint64_t* mk = R + in.ops[2].reg[0] * 32;
  if (!check_members(cta, w, in, static_cast<std::uint32_t>(mk[std::countr_zero(m)]), m, "vote.sync")) return;
  const bool neg = in.ops[1].negate;
  std::uint32_t ballot = 0;
  for_lanes(m, [&](int l) { ballot |= static_cast<std::uint32_t>(((a[l] & 1) != 0) != neg) << l; });
  std::uint64_t v = 0;
  switch (in.mode) {
    case Mode::vote_all: v = ballot == m; break;
    case Mode::vote_any: v = ballot != 0; break;
    case Mode::vote_uni: v = ballot == m || ballot == 0; break;
    default: v = ballot; break;
  }
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  for_lanes(m, [&](int l) { d[l] = v; });
}

float half_value(std::uint64_t reg, int half, Type t) {
  const auto bits = static_cast<std::uint16_t>(reg >> (16 * half));
  return t == Type::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
}

}  // namespace

void exec_warp_op(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  switch (in.op) {
    case Op::shfl: return do_shfl(cta, w, in, m);
    case Op::vote: return do_vote(cta, w, in, m);
    case Op::activemask:
      for_lanes(m, [&](int l) { w.r[in.ops[0].reg[0] * 32 + l] = m; });
      return;
    case Op::redux: {
      const std::uint64_t* a = w.r + in.ops[1].reg[0] * 32;
      if (!check_members(cta, w, in, static_cast<std::uint32_t>(w.r[in.ops[2].reg[0] * 32 + std::countr_zero(m)]), m, "redux.sync"))
        return;
      const bool sign = in.type == Type::s32;
      std::uint32_t acc = static_cast<std::uint32_t>(a[std::countr_zero(m)]);
      for_lanes(m & (m - 1), [&](int l) {
        const auto v = static_cast<std::uint32_t>(a[l]);
        switch (in.atom) {
          case AtomOp::add: acc += v; break;
          case AtomOp::min: acc = sign ? static_cast<std::uint32_t>(std::min<std::int32_t>(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v))) : std::min(acc, v); break;
          case AtomOp::max: acc = sign ? static_cast<std::uint32_t>(std::max<std::int32_t>(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v))) : std::max(acc, v); break;
          case AtomOp::and_: acc &= v; break;
          case AtomOp::or_: acc |= v; break;
          case AtomOp::xor_: acc ^= v; break;
          default: break;
        }
      });
      for_lanes(m, [&](int l) { w.r[in.ops[0].reg[0] * 32 + l] = acc; });
      return;
    }
    case Op::bar_warp:
      check_members(cta, w, in, static_cast<std::uint32_t>(w.r[in.ops[0].reg[0] * 32 + std::countr_zero(m)]), m, "bar.warp.sync");
      return;
    default: return;
  }
}

void exec_mma(Cta& cta, Warp& w, const Instr& in, std::uint32_t m) {
  if (m != 0xffffffffu) {
    report_sync(cta, in, "mma.sync executed by lanes " + hex32(m) + ": every lane of the warp must execute it");
    return;
  }
  const bool k16 = in.mode == Mode::mma_m16n8k16;
  const int K = k16 ? 16 : 8;
  float A[16][16], B[16][8], C[16][8];
  const std::uint64_t* R = w.r;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    const int na = k16 ? 8 : 4, nb = k16 ? 4 : 2;
    for (int i = 0; i < na; ++i) {
      const int row = g + 8 * ((i >> 1) & 1), col = 2 * t + (i & 1) + 8 * (i >= 4);
      A[row][col] = half_value(R[in.ops[1].reg[i >> 1] * 32 + lane], i & 1, in.type2);
    }
    for (int i = 0; i < nb; ++i) {
      const int row = 2 * t + (i & 1) + 8 * (i >= 2), col = g;
      B[row][col] = half_value(R[in.ops[2].reg[i >> 1] * 32 + lane], i & 1, in.type2);
    }
    for (int i = 0; i < 4; ++i)
      C[g + 8 * (i >= 2)][2 * t + (i & 1)] = (in.flags & kAccF16) ? half_value(R[in.ops[3].reg[i >> 1] * 32 + lane], i & 1, Type::f16)
                                                                  : as_f32(R[in.ops[3].reg[i] * 32 + lane]);
  }
  // products of f16/bf16 are exact in double; the sum is rounded once to the D type
  double D[16][8];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      double s = C[r][c];
      for (int k = 0; k < K; ++k) s += static_cast<double>(A[r][k]) * B[k][c];
      D[r][c] = s;
    }
  std::uint64_t* W = w.r;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    if (in.type == Type::f16) {  // d0, d1 (row g) and d2, d3 (row g + 8) as f16x2 pairs
      for (int i = 0; i < 2; ++i) {
        const int row = g + 8 * i;
        W[in.ops[0].reg[i] * 32 + lane] = static_cast<std::uint64_t>(f16_from(D[row][2 * t + 1])) << 16 | f16_from(D[row][2 * t]);
      }
    } else {
      for (int i = 0; i < 4; ++i) W[in.ops[0].reg[i] * 32 + lane] = bits_f32(static_cast<float>(D[g + 8 * (i >= 2)][2 * t + (i & 1)]));
    }
  }
}

}  // namespace trine::cuda::emu
