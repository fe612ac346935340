// The PTX text parser: tokens, module directives, kernel signatures, declarations and statements,
// kept as text; decoder.cpp turns statements into the compact executable form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_ptx/emulator/ir.hpp"

namespace trine::cuda::emu {

struct ParsedOperand {
  enum class Kind { name, literal, addr, vec, pair };
  Kind kind = Kind::name;
  bool negate = false;
  std::vector<std::string> names;  // name: 1; vec: n ("_" is a sink); pair: 2; addr: base (may be empty)
  std::string literal;             // literal text (sign included)
  std::int64_t offset = 0;         // addr byte offset
};

struct ParsedStatement {
  int line = 0;
  std::string guard;  // predicate register name, empty: none
  bool guard_negate = false;
  std::string opcode;  // with its modifiers: "ld.global.v4.f32"
  std::vector<ParsedOperand> operands;
};

struct RegDecl {
  std::string type;  // ".b32", ".pred", ...
  std::string name;  // base name
  int count = -1;    // `%r<N>`: N registers %r0..%r(N-1); -1: a single register
  int line = 0;
};

struct VarDecl {  // .shared / .local / .global / .const variable
  std::string space, type, name;
  std::uint32_t align = 0;
  std::uint64_t elements = 1;
  bool is_extern = false;
  bool unsized = false;  // `name[]`
  std::vector<std::string> init;  // initialiser literals
  int line = 0;
};

struct ParamDecl {
  std::string type, name;
  std::uint32_t align = 0;
  std::uint64_t elements = 1;
  int line = 0;
};

struct ParsedKernel {
  std::string name;
  int line = 0;
  std::vector<ParamDecl> params;
  std::vector<RegDecl> regs;
  std::vector<VarDecl> vars;
  std::vector<ParsedStatement> statements;
  std::vector<std::pair<std::string, int>> labels;  // label -> index of the next statement
  std::uint32_t reqntid[3] = {0, 0, 0};
};

struct ParsedModule {
  int version_major = 0, version_minor = 0;
  std::string target;
  int address_size = 64;
  std::vector<ParsedKernel> kernels;
  std::vector<VarDecl> globals;
};

// Parses PTX text; throws PtxError (CUDA_ERROR_INVALID_PTX with the line) on malformed input.
ParsedModule parse_ptx(std::string_view text);

// Parses and decodes in one step (decoder.cpp).
Module load_ptx(std::string_view text);

}  // namespace trine::cuda::emu
