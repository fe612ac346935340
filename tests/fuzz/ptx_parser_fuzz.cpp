// libFuzzer target for the emulator's PTX front end: parse and decode arbitrary text. Every
// rejection must be a PtxError with one of the two documented codes; any other exception, a
// crash, a sanitizer report or a hang is a finding. A module that decodes must satisfy the
// invariants the interpreter relies on without checking (register and label indices in range).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "backends/cuda_ptx/emulator/parser.hpp"

namespace emu = trine::cuda::emu;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "ptx_parser_fuzz: %s\n", what.c_str());
  std::abort();
}

void check_operand(const emu::Kernel& k, const emu::Operand& o, std::size_t pc) {
  auto reg_ok = [&](std::int32_t r) { return r >= 0 && r < k.reg_count; };
  switch (o.kind) {
    case emu::OperandKind::none: return;
    case emu::OperandKind::reg:
    case emu::OperandKind::vec:
      if (o.count < 1 || o.count > 4) finding(k.name + ": operand with " + std::to_string(o.count) + " registers at " + std::to_string(pc));
      for (int i = 0; i < o.count; ++i)
        if (!reg_ok(o.reg[i])) finding(k.name + ": register index out of range at " + std::to_string(pc));
      return;
    case emu::OperandKind::addr:
      if (o.reg[0] != -1 && !reg_ok(o.reg[0])) finding(k.name + ": address base out of range at " + std::to_string(pc));
      return;
    case emu::OperandKind::label:
      if (o.imm < 0 || static_cast<std::uint64_t>(o.imm) >= k.code.size())
        finding(k.name + ": label outside the code at " + std::to_string(pc));
      return;
  }
  finding(k.name + ": operand of unknown kind at " + std::to_string(pc));
}

void check_module(const emu::Module& m) {
  for (const emu::Kernel& k : m.kernels) {
    if (k.reg_names.size() != static_cast<std::size_t>(k.reg_count)) finding(k.name + ": reg_names and reg_count differ");
    if (k.code.empty() || k.code.back().op != emu::Op::exit) finding(k.name + ": code does not end in exit");
    for (const emu::ConstSlot& c : k.consts)
      if (c.reg < 0 || c.reg >= k.reg_count) finding(k.name + ": constant slot out of range");
    for (std::size_t pc = 0; pc < k.code.size(); ++pc) {
      const emu::Instr& in = k.code[pc];
      if (in.n_ops > 5) finding(k.name + ": more than 5 operands");
      if (in.guard != -1 && (in.guard < 0 || in.guard >= k.reg_count)) finding(k.name + ": guard out of range");
      for (int i = 0; i < in.n_ops; ++i) check_operand(k, in.ops[i], pc);
    }
    std::uint64_t end = 0;
    for (const emu::Param& p : k.params) end = std::max<std::uint64_t>(end, std::uint64_t{p.offset} + p.size);
    if (end > k.param_bytes) finding(k.name + ": a parameter lies past param_bytes");
    // variables inside their windows (a dynamic .extern .shared array has size 0 at dynamic_offset)
    for (const emu::Symbol& s : k.shared)
      if (s.offset + s.size > std::max(k.shared_bytes, k.dynamic_offset) || k.dynamic_offset < k.shared_bytes)
        finding(k.name + ": shared variable '" + s.name + "' lies past the static shared size");
    for (const emu::Symbol& s : k.local)
      if (s.offset + s.size > k.local_bytes) finding(k.name + ": local variable '" + s.name + "' lies past local_bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check_module(emu::load_ptx(text));
  } catch (const emu::PtxError& e) {
    if (e.code() != trine::cuda::CUDA_ERROR_INVALID_PTX && e.code() != trine::cuda::CUDA_ERROR_NOT_SUPPORTED)
      finding("PtxError with code " + std::to_string(static_cast<int>(e.code())) + ": " + e.what());
    if (std::string_view(e.what()).empty()) finding("PtxError with an empty message");
  } catch (const std::exception& e) {
    finding(std::string("exception other than PtxError: ") + e.what());
  } catch (...) {
    finding("exception of unknown type");
  }
  return 0;
}
