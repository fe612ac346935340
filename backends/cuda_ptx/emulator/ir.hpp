// The decoded form of a PTX module the emulator executes: opcodes, types and modifiers as small
// enums, every operand resolved to a register index (immediates and special registers included).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda_ptx/driver/driver_api.hpp"

namespace trine::cuda::emu {

// A rejection: the CUresult to return, the PTX line (0 when none) and a readable message.
class PtxError : public std::runtime_error {
 public:
  PtxError(CUresult code, int line, const std::string& msg)
      : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ": " + msg : msg), code_(code), line_(line) {}
  CUresult code() const { return code_; }
  int line() const { return line_; }

 private:
  CUresult code_;
  int line_;
};

enum class Op : std::uint8_t {
  mov, add, sub, mul, mad, fma, div, rem, min, max, neg, abs, and_, or_, xor_, not_, shl, shr, popc, clz, brev,
  bfe, setp, selp, cvt, cvta, ex2, lg2, rcp, sqrt, rsqrt, sin, cos, tanh, ld, st, atom, red, bra, ret, exit, bar,
  bar_warp, shfl, vote, mma, ldmatrix, cp_async, cp_async_commit, cp_async_wait, nop, copysign, testp, prmt,
  activemask, redux, lop3, dp4a, bfi, bfind, shf
};

enum class Type : std::uint8_t {
  none, pred, b8, b16, b32, b64, u8, u16, u32, u64, s8, s16, s32, s64, f16, f16x2, bf16, bf16x2, f32, f64
};

constexpr int type_bytes(Type t) {
  switch (t) {
    case Type::none: return 0;
    case Type::pred: return 1;
    case Type::b8: case Type::u8: case Type::s8: return 1;
    case Type::b16: case Type::u16: case Type::s16: case Type::f16: case Type::bf16: return 2;
    case Type::b32: case Type::u32: case Type::s32: case Type::f32: case Type::f16x2: case Type::bf16x2: return 4;
    case Type::b64: case Type::u64: case Type::s64: case Type::f64: return 8;
  }
  return 0;
}
constexpr bool is_signed(Type t) { return t == Type::s8 || t == Type::s16 || t == Type::s32 || t == Type::s64; }
constexpr bool is_float(Type t) {
  return t == Type::f16 || t == Type::f16x2 || t == Type::bf16 || t == Type::bf16x2 || t == Type::f32 ||
         t == Type::f64;
}

enum class Rnd : std::uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi, rna };
enum class Cmp : std::uint8_t { eq, ne, lt, le, gt, ge, lo, ls, hi, hs, equ, neu, ltu, leu, gtu, geu, num, nan };
enum class BoolOp : std::uint8_t { none, and_, or_, xor_ };
enum class Space : std::uint8_t { generic, param, global, shared, local, const_ };
enum class AtomOp : std::uint8_t { none, add, min, max, exch, cas, and_, or_, xor_, inc, dec };
enum class Mode : std::uint8_t {
  none, shfl_bfly, shfl_down, shfl_up, shfl_idx, vote_all, vote_any, vote_uni, vote_ballot, bar_sync, bar_arrive,
  mma_m16n8k16, mma_m16n8k8, mul_lo, mul_hi, mul_wide, shf_l, shf_r
};

// Instruction flags (bits of Instr::flags).
enum : std::uint16_t {
  kSat = 1, kFtz = 2, kApprox = 4, kUni = 8, kTrans = 16, kAligned = 32, kZfill = 64, kToGeneric = 128,
  kRelu = 256, kAccF16 = 1024, kWrap = 2048  // kAccF16: an mma's C is f16x2 pairs; kWrap: shf.wrap
};

// An operand after decoding: every value lives in a register slot (immediates and special registers
// are materialised as constant slots), so the hot loop reads R[reg * 32 + lane] and nothing else.
enum class OperandKind : std::uint8_t { none, reg, vec, addr, label };
struct Operand {
  OperandKind kind = OperandKind::none;
  std::uint8_t count = 0;   // registers in a vec (1..4); for reg 1, or 2 for the `%p|%q` pair
  bool negate = false;      // `!%p`
  std::int32_t reg[4] = {-1, -1, -1, -1};  // addr: reg[0] is the base (-1: none)
  std::int64_t imm = 0;     // addr: byte offset; label: instruction index
};

struct Instr {
  Op op = Op::nop;
  Type type = Type::none;   // the instruction's (destination) type
  Type type2 = Type::none;  // cvt/setp/mma/shfl second type (cvt: source)
  Rnd rnd = Rnd::none;
  Cmp cmp = Cmp::eq;
  BoolOp bool_op = BoolOp::none;
  Space space = Space::generic;
  AtomOp atom = AtomOp::none;
  Mode mode = Mode::none;
  std::uint8_t vec = 1;     // ld/st .v2/.v4; ldmatrix .x1/.x2/.x4; cp.async bytes
  std::uint8_t n_ops = 0;
  std::uint16_t flags = 0;
  std::int32_t guard = -1;  // predicate register guarding the instruction, -1: none
  bool guard_negate = false;
  std::int32_t line = 0;    // PTX source line
  Operand ops[5];
};

// A named storage symbol inside a kernel or the module (.shared, .local, .global, .const).
struct Symbol {
  std::string name;
  Space space = Space::generic;
  std::uint32_t align = 1;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;  // offset within its window (shared, local) or module storage (global, const)
};

struct Param {
  std::string name;
  std::uint32_t size = 0;
  std::uint32_t align = 1;
  std::uint32_t offset = 0;
};

// What a constant slot holds at warp start.
enum class SpecialReg : std::uint8_t {
  none, tid_x, tid_y, tid_z, ntid_x, ntid_y, ntid_z, ctaid_x, ctaid_y, ctaid_z, nctaid_x, nctaid_y, nctaid_z,
  laneid, warpid, nwarpid, lanemask_eq, lanemask_lt, lanemask_le, lanemask_gt, lanemask_ge, smid, nsmid,
  gridid, dynamic_smem_size, total_smem_size, clock, clock64
};
struct ConstSlot {
  std::int32_t reg = 0;
  SpecialReg special = SpecialReg::none;  // none: the value below
  std::uint64_t value = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  std::uint32_t param_bytes = 0;
  std::vector<Instr> code;
  std::vector<std::string> reg_names;  // by register index, for reports
  std::int32_t reg_count = 0;
  std::vector<ConstSlot> consts;       // slots filled at warp start
  std::vector<Symbol> shared;          // static shared variables
  std::uint32_t shared_bytes = 0;      // static shared size; dynamic shared starts at dynamic_offset
  std::uint32_t dynamic_offset = 0;
  std::uint32_t local_bytes = 0;       // per thread
  std::vector<Symbol> local;
  std::uint32_t reqntid[3] = {0, 0, 0};
};

struct Module {
  int version_major = 0, version_minor = 0;
  std::string target;
  int address_size = 64;
  std::vector<Kernel> kernels;
  std::vector<Symbol> globals;           // module .global / .const variables
  std::vector<std::uint8_t> global_init;  // their storage (initialisers applied)
  const Kernel* find(const std::string& name) const {
    for (const auto& k : kernels)
      if (k.name == name) return &k;
    return nullptr;
  }
};

}  // namespace trine::cuda::emu
