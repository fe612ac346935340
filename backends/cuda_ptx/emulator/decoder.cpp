// The decoder: parsed PTX statements to the compact executable form. Names become register indices,
// literals and special registers become constant slots, labels become instruction indices, and
// every opcode modifier is checked; anything not understood is CUDA_ERROR_NOT_SUPPORTED.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "backends/cuda_ptx/emulator/parser.hpp"

namespace trine::cuda::emu {
namespace {

[[noreturn]] void invalid(int line, const std::string& msg) { throw PtxError(CUDA_ERROR_INVALID_PTX, line, msg); }
[[noreturn]] void unsupported(int line, const std::string& msg) { throw PtxError(CUDA_ERROR_NOT_SUPPORTED, line, msg); }

const std::map<std::string, Type, std::less<>> kTypes = {
    {"pred", Type::pred}, {"b8", Type::b8},     {"b16", Type::b16},   {"b32", Type::b32},       {"b64", Type::b64},
    {"u8", Type::u8},     {"u16", Type::u16},   {"u32", Type::u32},   {"u64", Type::u64},       {"s8", Type::s8},
    {"s16", Type::s16},   {"s32", Type::s32},   {"s64", Type::s64},   {"f16", Type::f16},       {"f16x2", Type::f16x2},
    {"bf16", Type::bf16}, {"bf16x2", Type::bf16x2}, {"f32", Type::f32}, {"f64", Type::f64}};

const std::map<std::string, Op, std::less<>> kOps = {
    {"mov", Op::mov},     {"add", Op::add},       {"sub", Op::sub},     {"mul", Op::mul},     {"mad", Op::mad},
    {"fma", Op::fma},     {"div", Op::div},       {"rem", Op::rem},     {"min", Op::min},     {"max", Op::max},
    {"neg", Op::neg},     {"abs", Op::abs},       {"and", Op::and_},    {"or", Op::or_},      {"xor", Op::xor_},
    {"not", Op::not_},    {"shl", Op::shl},       {"shr", Op::shr},     {"popc", Op::popc},   {"clz", Op::clz},
    {"brev", Op::brev},   {"bfe", Op::bfe},       {"setp", Op::setp},   {"selp", Op::selp},   {"cvt", Op::cvt},
    {"cvta", Op::cvta},   {"ex2", Op::ex2},       {"lg2", Op::lg2},     {"rcp", Op::rcp},     {"sqrt", Op::sqrt},
    {"rsqrt", Op::rsqrt}, {"sin", Op::sin},       {"cos", Op::cos},     {"tanh", Op::tanh},   {"ld", Op::ld},
    {"st", Op::st},       {"atom", Op::atom},     {"red", Op::red},     {"bra", Op::bra},     {"ret", Op::ret},
    {"exit", Op::exit},   {"bar", Op::bar},       {"barrier", Op::bar}, {"shfl", Op::shfl},   {"vote", Op::vote},
    {"mma", Op::mma},     {"ldmatrix", Op::ldmatrix}, {"cp", Op::cp_async}, {"membar", Op::nop}, {"fence", Op::nop},
    {"copysign", Op::copysign}, {"prmt", Op::prmt}, {"activemask", Op::activemask}, {"redux", Op::redux},
    {"lop3", Op::lop3}, {"dp4a", Op::dp4a}, {"bfi", Op::bfi}, {"bfind", Op::bfind}, {"shf", Op::shf}};

const std::map<std::string, Rnd, std::less<>> kRnd = {{"rn", Rnd::rn},   {"rz", Rnd::rz},   {"rm", Rnd::rm},
                                                       {"rp", Rnd::rp},   {"rni", Rnd::rni}, {"rzi", Rnd::rzi},
                                                       {"rmi", Rnd::rmi}, {"rpi", Rnd::rpi}, {"rna", Rnd::rna}};
const std::map<std::string, Cmp, std::less<>> kCmp = {
    {"eq", Cmp::eq},   {"ne", Cmp::ne},   {"lt", Cmp::lt},   {"le", Cmp::le},   {"gt", Cmp::gt},   {"ge", Cmp::ge},
    {"lo", Cmp::lo},   {"ls", Cmp::ls},   {"hi", Cmp::hi},   {"hs", Cmp::hs},   {"equ", Cmp::equ}, {"neu", Cmp::neu},
    {"ltu", Cmp::ltu}, {"leu", Cmp::leu}, {"gtu", Cmp::gtu}, {"geu", Cmp::geu}, {"num", Cmp::num}, {"nan", Cmp::nan}};
const std::map<std::string, AtomOp, std::less<>> kAtom = {
    {"add", AtomOp::add}, {"min", AtomOp::min}, {"max", AtomOp::max}, {"exch", AtomOp::exch}, {"cas", AtomOp::cas},
    {"and", AtomOp::and_}, {"or", AtomOp::or_}, {"xor", AtomOp::xor_}, {"inc", AtomOp::inc}, {"dec", AtomOp::dec}};
const std::map<std::string, SpecialReg, std::less<>> kSpecial = {
    {"%tid.x", SpecialReg::tid_x},       {"%tid.y", SpecialReg::tid_y},       {"%tid.z", SpecialReg::tid_z},
    {"%ntid.x", SpecialReg::ntid_x},     {"%ntid.y", SpecialReg::ntid_y},     {"%ntid.z", SpecialReg::ntid_z},
    {"%ctaid.x", SpecialReg::ctaid_x},   {"%ctaid.y", SpecialReg::ctaid_y},   {"%ctaid.z", SpecialReg::ctaid_z},
    {"%nctaid.x", SpecialReg::nctaid_x}, {"%nctaid.y", SpecialReg::nctaid_y}, {"%nctaid.z", SpecialReg::nctaid_z},
    {"%laneid", SpecialReg::laneid},     {"%warpid", SpecialReg::warpid},     {"%nwarpid", SpecialReg::nwarpid},
    {"%lanemask_eq", SpecialReg::lanemask_eq}, {"%lanemask_lt", SpecialReg::lanemask_lt},
    {"%lanemask_le", SpecialReg::lanemask_le}, {"%lanemask_gt", SpecialReg::lanemask_gt},
    {"%lanemask_ge", SpecialReg::lanemask_ge}, {"%smid", SpecialReg::smid}, {"%nsmid", SpecialReg::nsmid},
    {"%gridid", SpecialReg::gridid}, {"%dynamic_smem_size", SpecialReg::dynamic_smem_size},
    {"%total_smem_size", SpecialReg::total_smem_size}, {"%clock", SpecialReg::clock}, {"%clock64", SpecialReg::clock64}};

// Modifiers that change nothing the emulator models (caching, memory order, scope, hints).
bool ignored_modifier(std::string_view m) {
  static const char* const kIgnored[] = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed",
                                         "acquire", "release", "acq_rel", "sc", "gpu", "sys", "cta", "weak",
                                         "L1::evict_last", "L1::evict_first", "L1::evict_normal", "L1::no_allocate",
                                         "L2::64B", "L2::128B", "L2::256B", "L2::evict_last", "L2::evict_first",
                                         "L2::evict_normal", "sync", "noftz", "L1::evict_unchanged"};
  for (const char* s : kIgnored)
    if (m == s) return true;
  return false;
}

std::uint64_t encode_literal(const std::string& lit, Type t, int line) {
  const bool neg = !lit.empty() && lit[0] == '-';
  std::string body = neg ? lit.substr(1) : lit;
  double fv = 0;
  bool is_fp = false;
  if (body.size() == 10 && (body[1] == 'f' || body[1] == 'F') && body[0] == '0') {
    const std::uint32_t bits = static_cast<std::uint32_t>(std::strtoul(body.c_str() + 2, nullptr, 16));
    float f;
    std::memcpy(&f, &bits, 4);
    fv = f;
    is_fp = true;
  } else if (body.size() == 18 && (body[1] == 'd' || body[1] == 'D') && body[0] == '0') {
    const std::uint64_t bits = std::strtoull(body.c_str() + 2, nullptr, 16);
    std::memcpy(&fv, &bits, 8);
    is_fp = true;
  } else if (body.find_first_of(".eE") != std::string::npos && body.rfind("0x", 0) != 0 && body.rfind("0X", 0) != 0) {
    char* end = nullptr;
    fv = std::strtod(body.c_str(), &end);
    if (*end) invalid(line, "malformed number '" + lit + "'");
    is_fp = true;
  }
  if (is_fp || t == Type::f32 || t == Type::f64) {
    if (!is_fp) {
      char* end = nullptr;
      fv = static_cast<double>(std::strtoll(body.c_str(), &end, 0));
    }
    if (neg) fv = -fv;
    if (t == Type::f64) {
      std::uint64_t bits;
      std::memcpy(&bits, &fv, 8);
      return bits;
    }
    if (t == Type::f32 || !is_float(t)) {
      const float f = static_cast<float>(fv);
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    unsupported(line, "float literal for a half-precision operand");
  }
  while (!body.empty() && (body.back() == 'U' || body.back() == 'u')) body.pop_back();
  char* end = nullptr;
  errno = 0;
  const std::uint64_t v = std::strtoull(body.c_str(), &end, 0);
  if (*end || body.empty()) invalid(line, "malformed number '" + lit + "'");
  return neg ? 0 - v : v;  // two's complement, and defined for -9223372036854775808
}

class KernelDecoder {
 public:
  KernelDecoder(const ParsedKernel& pk, const Module& m) : pk_(pk), module_(m) {}

  Kernel decode() {
    k_.name = pk_.name;
    std::memcpy(k_.reqntid, pk_.reqntid, sizeof k_.reqntid);
    for (const auto& p : pk_.params) {
      Param q;
      q.name = p.name;
      const auto t = kTypes.find(p.type.substr(1));
      if (t == kTypes.end()) invalid(p.line, "unknown parameter type '" + p.type + "'");
      if (p.elements > 4096) invalid(p.line, "parameter '" + p.name + "' is larger than 4 KB");
      q.size = static_cast<std::uint32_t>(type_bytes(t->second) * p.elements);
      q.align = p.align ? p.align : static_cast<std::uint32_t>(type_bytes(t->second));
      k_.param_bytes = (k_.param_bytes + q.align - 1) / q.align * q.align;
      q.offset = k_.param_bytes;
      k_.param_bytes += q.size;
      k_.params.push_back(q);
    }
    for (const auto& r : pk_.regs) {
      const auto t = kTypes.find(r.type.substr(1));
      if (t == kTypes.end()) invalid(r.line, "unknown register type '" + r.type + "'");
      // a decoded register is 32 lanes x 8 bytes per warp: bound what a module can ask for
      if (r.count > 65536 || k_.reg_names.size() + static_cast<std::size_t>(std::max(r.count, 1)) > 65536)
        invalid(r.line, "too many registers (more than 65536 in the kernel)");
      if (r.count < 0) add_reg(r.name, r.line);
      for (int i = 0; i < r.count; ++i) add_reg(r.name + std::to_string(i), r.line);
    }
    // summed in 64 bits and bounded: four 1 GiB arrays wrapped a 32-bit sum onto the first
    constexpr std::uint64_t kMaxWindow = 1u << 30;
    std::uint64_t shared_end = 0, local_end = 0;
    std::uint32_t dyn_align = 16;
    for (const auto& v : pk_.vars) {
      const auto t = kTypes.find(v.type.substr(1));
      if (t == kTypes.end()) invalid(v.line, "unknown type '" + v.type + "' of '" + v.name + "'");
      Symbol s;
      s.name = v.name;
      s.align = v.align ? v.align : static_cast<std::uint32_t>(type_bytes(t->second));
      s.size = type_bytes(t->second) * v.elements;
      if (v.elements > (1u << 30) || s.size > (1u << 30)) invalid(v.line, "'" + v.name + "' is larger than 1 GiB");
      if (v.space == ".shared" && v.is_extern) {
        s.space = Space::shared;
        s.size = 0;
        dyn_align = std::max(dyn_align, s.align);
        dynamic_.push_back(s.name);
        k_.shared.push_back(s);
        continue;
      }
      if (v.space == ".shared") {
        s.space = Space::shared;
        shared_end = (shared_end + s.align - 1) / s.align * s.align;
        s.offset = shared_end;
        shared_end += s.size;
        if (shared_end > kMaxWindow) invalid(v.line, "the kernel's .shared variables are larger than 1 GiB in all");
        k_.shared.push_back(s);
      } else if (v.space == ".local") {
        s.space = Space::local;
        local_end = (local_end + s.align - 1) / s.align * s.align;
        s.offset = local_end;
        local_end += s.size;
        if (local_end > kMaxWindow) invalid(v.line, "the kernel's .local variables are larger than 1 GiB in all");
        k_.local.push_back(s);
      } else {
        unsupported(v.line, "'" + v.space + "' variables inside a kernel are not supported");
      }
    }
    k_.shared_bytes = static_cast<std::uint32_t>(shared_end);
    k_.local_bytes = static_cast<std::uint32_t>(local_end);
    k_.dynamic_offset = static_cast<std::uint32_t>((shared_end + dyn_align - 1) / dyn_align * dyn_align);
    for (auto& s : k_.shared)
      if (s.size == 0) s.offset = k_.dynamic_offset;
    for (const auto& [name, index] : pk_.labels)
      if (!labels_.emplace(name, index).second) invalid(0, "duplicate label '" + name + "'");
    for (const auto& st : pk_.statements) k_.code.push_back(instruction(st));
    // a kernel that runs off its end exits
    Instr end;
    end.op = Op::exit;
    end.line = pk_.statements.empty() ? pk_.line : pk_.statements.back().line;
    k_.code.push_back(end);
    k_.reg_count = static_cast<std::int32_t>(k_.reg_names.size());
    return std::move(k_);
  }

 private:
  int add_reg(const std::string& name, int line) {
    if (!regs_.emplace(name, static_cast<int>(k_.reg_names.size())).second) invalid(line, "register '" + name + "' declared twice");
    k_.reg_names.push_back(name);
    return static_cast<int>(k_.reg_names.size()) - 1;
  }
  int const_reg(std::uint64_t v) {
    const auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    const int r = static_cast<int>(k_.reg_names.size());
    k_.reg_names.push_back("const " + std::to_string(v));
    k_.consts.push_back({r, SpecialReg::none, v});
    consts_.emplace(v, r);
    return r;
  }
  int special_reg(const std::string& name, SpecialReg s) {
    const auto it = specials_.find(name);
    if (it != specials_.end()) return it->second;
    const int r = static_cast<int>(k_.reg_names.size());
    k_.reg_names.push_back(name);
    k_.consts.push_back({r, s, 0});
    specials_.emplace(name, r);
    return r;
  }
  std::uint64_t const_value(int r, int line, const char* what) const {
    for (const auto& c : k_.consts)
      if (c.reg == r && c.special == SpecialReg::none) return c.value;
    invalid(line, std::string(what) + " must be an immediate");
  }
  // A symbol's address: shared and local offsets within their windows, module variables' host address.
  bool symbol_address(const std::string& name, std::uint64_t& addr, Space& space) {
    for (const auto& s : k_.shared)
      if (s.name == name) return addr = s.offset, space = Space::shared, true;
    for (const auto& s : k_.local)
      if (s.name == name) return addr = s.offset, space = Space::local, true;
    for (const auto& p : k_.params)
      if (p.name == name) return addr = p.offset, space = Space::param, true;
    for (const auto& s : module_.globals)
      if (s.name == name)
        return addr = reinterpret_cast<std::uint64_t>(module_.global_init.data()) + s.offset, space = s.space, true;
    return false;
  }
  int reg(const std::string& name, int line) {
    if (name == "_") return sink_ >= 0 ? sink_ : (sink_ = add_reg("_", line));
    if (const auto it = regs_.find(name); it != regs_.end()) return it->second;
    if (const auto s = kSpecial.find(name); s != kSpecial.end()) return special_reg(name, s->second);
    if (name == "WARP_SZ") return const_reg(32);
    std::uint64_t addr;
    Space space;
    if (symbol_address(name, addr, space)) return const_reg(addr);
    if (name.rfind("%envreg", 0) == 0) return const_reg(0);
    invalid(line, "undeclared register or symbol '" + name + "'");
  }

  Operand operand(const ParsedOperand& p, Type t, int line) {
    Operand o;
    o.negate = p.negate;
    switch (p.kind) {
      case ParsedOperand::Kind::name:
        if (const auto l = labels_.find(p.names[0]); l != labels_.end() && regs_.find(p.names[0]) == regs_.end()) {
          o.kind = OperandKind::label;
          o.imm = l->second;
          return o;
        }
        o.kind = OperandKind::reg;
        o.count = 1;
        o.reg[0] = reg(p.names[0], line);
        return o;
      case ParsedOperand::Kind::literal:
        o.kind = OperandKind::reg;
        o.count = 1;
        o.reg[0] = const_reg(encode_literal(p.literal, t, line));
        return o;
      case ParsedOperand::Kind::pair:
      case ParsedOperand::Kind::vec:
        if (p.names.size() > 4) invalid(line, "vector of more than 4 registers");
        o.kind = p.kind == ParsedOperand::Kind::pair ? OperandKind::reg : OperandKind::vec;
        o.count = static_cast<std::uint8_t>(p.names.size());
        for (std::size_t i = 0; i < p.names.size(); ++i) o.reg[i] = reg(p.names[i], line);
        return o;
      case ParsedOperand::Kind::addr: {
        o.kind = OperandKind::addr;
        o.imm = p.offset;
        const std::string& base = p.names[0];
        if (base.empty()) return o;
        std::uint64_t addr;
        Space space;
        if (regs_.find(base) == regs_.end() && symbol_address(base, addr, space)) {
          o.imm = static_cast<std::int64_t>(static_cast<std::uint64_t>(o.imm) + addr);  // wraps, as at run time
          addr_space_ = space;
          return o;
        }
        o.reg[0] = reg(base, line);
        return o;
      }
    }
    return o;
  }

  Instr instruction(const ParsedStatement& st);

  const ParsedKernel& pk_;
  const Module& module_;
  Kernel k_;
  std::unordered_map<std::string, int> regs_, labels_, specials_;
  std::unordered_map<std::uint64_t, int> consts_;
  std::vector<std::string> dynamic_;
  int sink_ = -1;
  Space addr_space_ = Space::generic;  // the space of the last symbolic address operand
};

#include "backends/cuda_ptx/emulator/decode_instr.inc"

}  // namespace

Module load_ptx(std::string_view text) {
  ParsedModule pm = parse_ptx(text);
  Module m;
  m.version_major = pm.version_major;
  m.version_minor = pm.version_minor;
  m.target = pm.target;
  m.address_size = pm.address_size;
  std::uint64_t end = 0;
  for (const auto& v : pm.globals) {
    const auto t = kTypes.find(v.type.substr(1));
    if (t == kTypes.end()) invalid(v.line, "unknown type '" + v.type + "'");
    Symbol s;
    s.name = v.name;
    s.space = v.space == ".const" ? Space::const_ : Space::global;
    s.align = v.align ? v.align : static_cast<std::uint32_t>(type_bytes(t->second));
    s.size = type_bytes(t->second) * (v.unsized ? v.init.size() : v.elements);
    end = (end + s.align - 1) / s.align * s.align;
    s.offset = end;
    end += s.size;
    // the module's storage is allocated (and zeroed) at load: bounded as a kernel's variables are
    if (end > (1u << 30)) invalid(v.line, "module variables larger than 1 GiB in all");
    m.globals.push_back(s);
  }
  m.global_init.assign(end + 16, 0);
  for (std::size_t i = 0; i < pm.globals.size(); ++i) {
    const auto& v = pm.globals[i];
    const Type t = kTypes.find(v.type.substr(1))->second;
    const int bytes = type_bytes(t);
    if (v.init.size() * bytes > m.globals[i].size) invalid(v.line, "too many initialisers for '" + v.name + "'");
    for (std::size_t j = 0; j < v.init.size(); ++j) {
      const std::uint64_t bits = encode_literal(v.init[j], t, v.line);
      std::memcpy(m.global_init.data() + m.globals[i].offset + j * bytes, &bits, bytes);
    }
  }
  // Each kernel is bounded to 65536 registers; the module is bounded too, or a few KB of
  // `.entry kN() { .reg .b32 %r<65536>; }` would decode into gigabytes of register names.
  constexpr std::size_t kMaxModuleRegisters = std::size_t{1} << 20;
  std::size_t module_registers = 0;
  for (const auto& pk : pm.kernels)
    for (const auto& r : pk.regs) {
      module_registers += static_cast<std::size_t>(std::max(r.count, 1));
      if (module_registers > kMaxModuleRegisters)
        invalid(r.line, "too many registers (more than " + std::to_string(kMaxModuleRegisters) + " in the module)");
    }
  for (const auto& pk : pm.kernels) {
    if (m.find(pk.name)) invalid(pk.line, "kernel '" + pk.name + "' defined twice");
    m.kernels.push_back(KernelDecoder(pk, m).decode());
  }
  return m;
}

}  // namespace trine::cuda::emu
