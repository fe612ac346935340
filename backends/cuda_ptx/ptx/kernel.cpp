// Kernel and Module: the text a kernel prints, register declarations from the per-type counters, and
// the .version each module needs.
#include "backends/cuda_ptx/ptx/kernel.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "trine/error.hpp"

namespace trine::cuda::ptx {

std::string_view target_name(Target t) noexcept {
  switch (t) {
    case Target::sm_75: return "sm_75";
    case Target::sm_80: return "sm_80";
    case Target::sm_86: return "sm_86";
    case Target::sm_89: return "sm_89";
    case Target::sm_90: return "sm_90";
    case Target::sm_120: return "sm_120";
  }
  return "sm_?";
}

int target_sm(Target t) noexcept {
  switch (t) {
    case Target::sm_75: return 75;
    case Target::sm_80: return 80;
    case Target::sm_86: return 86;
    case Target::sm_89: return 89;
    case Target::sm_90: return 90;
    case Target::sm_120: return 120;
  }
  return 0;
}

int target_min_version(Target t) noexcept {
  // PTX ISA release notes: the version that introduced each target.
  switch (t) {
    case Target::sm_75: return 63;
    case Target::sm_80: return 70;
    case Target::sm_86: return 71;
    case Target::sm_89: return 78;
    case Target::sm_90: return 78;
    case Target::sm_120: return 87;
  }
  return 0;
}

std::optional<Target> parse_target(std::string_view name) noexcept {
  for (Target t : all_targets) {
    if (target_name(t) == name) return t;
  }
  return std::nullopt;
}

Kernel::Kernel(std::string name, Target target) : name_(std::move(name)), target_(target) {}

void Kernel::require(int version, int min_sm, std::string_view what) {
  if (target_sm(target_) < min_sm) {
    throw Error(ErrorCode::unsupported, "[ptx] " + name_ + ": " + std::string(what) + " needs sm_" +
                                            std::to_string(min_sm) + ", target is " +
                                            std::string(target_name(target_)));
  }
  version_ = std::max(version_, version);
}

int Kernel::add_param(std::string_view name, std::string_view type) {
  params_.push_back(ParamDecl{std::string(name), type});
  return static_cast<int>(params_.size()) - 1;
}

int Kernel::add_shared(std::string_view name, std::int64_t bytes, int align) {
  if (align <= 0 || (align & (align - 1)) != 0) {
    throw Error(ErrorCode::internal, "[ptx] shared array alignment must be a power of two");
  }
  shared_.push_back(SharedDecl{"s_" + std::string(name), bytes, align});
  // What the CTA will occupy, padding included, for the report and launch checks.
  shared_total_ = (shared_total_ + align - 1) / align * align + bytes;
  return static_cast<int>(shared_.size()) - 1;
}

std::string Kernel::reg_text(std::string_view prefix, int id) {
  std::string s = "%";
  s += prefix;
  s += std::to_string(id);
  return s;
}

std::string Kernel::imm_text(std::string_view, float v) {
  // Hex keeps every bit (NaN, -0, denormals) and prints the same everywhere.
  char buf[16];
  std::snprintf(buf, sizeof buf, "0f%08X", std::bit_cast<std::uint32_t>(v));
  return buf;
}

std::string Kernel::imm_text(std::string_view, double v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0d%016llX", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
  return buf;
}

std::string Kernel::imm_text(std::string_view, std::uint64_t v) { return std::to_string(v); }
std::string Kernel::imm_text(std::string_view, std::int64_t v) { return std::to_string(v); }

std::string Kernel::address_text(const std::string& base, std::int64_t offset) {
  std::string s = "[" + base;
  if (offset > 0) s += "+" + std::to_string(offset);
  if (offset < 0) s += std::to_string(offset);
  return s + "]";
}

std::string Kernel::label_text(Label l) const { return "$L_" + std::to_string(l.id); }

void Kernel::emit(std::string_view opcode, std::initializer_list<std::string> operands) {
  std::string line = "\t";
  if (guard_) line += *guard_ + " ";
  line += opcode;
  bool first = true;
  for (const std::string& op : operands) {
    line += first ? " " : ", ";
    line += op;
    first = false;
  }
  line += ";";
  body_.push_back(std::move(line));
}

void Kernel::emit_label(Label l) {
  if (guard_) throw Error(ErrorCode::internal, "[ptx] a label cannot be placed under a predicate guard");
  body_.push_back(label_text(l) + ":");
}

Kernel::Guard::Guard(Kernel& k, Reg<Pred> p, bool negate) : k_(k) {
  if (k.guard_) throw Error(ErrorCode::internal, "[ptx] predicate guards do not nest");
  k.guard_ = (negate ? "@!" : "@") + k.text(p);
}

Kernel::Guard::~Guard() { k_.guard_.reset(); }

std::string Kernel::text() const {
  std::string s = ".visible .entry " + name_ + "(";
  for (std::size_t i = 0; i < params_.size(); ++i) {
    s += i == 0 ? "\n" : ",\n";
    s += "\t.param .";
    s += params_[i].type;
    s += " " + params_[i].name;
  }
  s += "\n)\n";
  if (max_block_[0] > 0) {
    s += ".maxntid " + std::to_string(max_block_[0]) + ", " + std::to_string(max_block_[1]) + ", " +
         std::to_string(max_block_[2]) + "\n";
  }
  if (min_blocks_ > 0) s += ".minnctapersm " + std::to_string(min_blocks_) + "\n";
  s += "{\n";
  // Declared after the body was built: each type's counter is final now.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, type_slot_count> decls = {{
      {Pred::decl, Pred::prefix},
      {B16::decl, B16::prefix},
      {B32::decl, B32::prefix},
      {B64::decl, B64::prefix},
      {U8::decl, U8::prefix},
      {U16::decl, U16::prefix},
      {U32::decl, U32::prefix},
      {U64::decl, U64::prefix},
      {S8::decl, S8::prefix},
      {S16::decl, S16::prefix},
      {S32::decl, S32::prefix},
      {S64::decl, S64::prefix},
      {F16::decl, F16::prefix},
      {BF16::decl, BF16::prefix},
      {F32::decl, F32::prefix},
      {F64::decl, F64::prefix},
      {F16x2::decl, F16x2::prefix},
      {BF16x2::decl, BF16x2::prefix},
  }};
  for (int slot = 0; slot < type_slot_count; ++slot) {
    if (counts_[slot] == 0) continue;
    s += "\t.reg .";
    s += decls[slot].first;
    s += " %";
    s += decls[slot].second;
    s += "<" + std::to_string(counts_[slot]) + ">;\n";
  }
  for (const SharedDecl& d : shared_) {
    s += "\t.shared .align " + std::to_string(d.align) + " .b8 " + d.name + "[" + std::to_string(d.bytes) + "];\n";
  }
  for (const std::string& line : body_) s += line + "\n";
  s += "\tret;\n}\n";
  return s;
}

void Module::add(const Kernel& k) {
  if (k.target() != target_) throw Error(ErrorCode::internal, "[ptx] kernel target differs from the module's");
  kernels_.push_back(k.text());
  version_ = std::max(version_, k.version_needed());
}

int Module::version() const noexcept { return std::max(version_, target_min_version(target_)); }

std::string Module::text() const {
  int v = version();
  std::string s = "//\n// Generated by trine's PTX emitter\n//\n\n";
  s += ".version " + std::to_string(v / 10) + "." + std::to_string(v % 10) + "\n";
  s += ".target ";
  s += target_name(target_);
  s += "\n.address_size 64\n";
  for (const std::string& k : kernels_) s += "\n" + k;
  return s;
}

}  // namespace trine::cuda::ptx
