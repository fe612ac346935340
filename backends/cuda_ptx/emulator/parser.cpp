// The PTX text parser: a tokenizer and a recursive-descent reader of module directives, .entry
// signatures, declarations and instruction statements. Everything it rejects names the line.
#include "backends/cuda_ptx/emulator/parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace trine::cuda::emu {
namespace {

struct Token {
  enum class Kind { word, number, punct, string, end };
  Kind kind = Kind::end;
  std::string text;
  int line = 0;
};

bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.'; }
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const int start = line;
      i += 2;
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) line += s[i++] == '\n';
      if (i + 1 >= s.size()) throw PtxError(CUDA_ERROR_INVALID_PTX, start, "unterminated /* comment");
      i += 2;
      continue;
    }
    Token t;
    t.line = line;
    if (c == '"') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') ++j;
      if (j >= s.size() || s[j] != '"') throw PtxError(CUDA_ERROR_INVALID_PTX, line, "unterminated string");
      t.kind = Token::Kind::string;
      t.text = std::string(s.substr(i + 1, j - i - 1));
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      // 0f/0d/0x literals and decimals with fraction or exponent (a sign after e/E only in decimals)
      const char second = i + 1 < s.size() ? s[i + 1] : ' ';
      const bool radix = second == 'x' || second == 'X' || second == 'f' || second == 'd';
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                              ((s[j] == '+' || s[j] == '-') && j > i && (s[j - 1] == 'e' || s[j - 1] == 'E') && !radix)))
        ++j;
      t.kind = Token::Kind::number;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (word_start(c)) {
      std::size_t j = i + 1;
      while (j < s.size() && word_char(s[j])) ++j;
      t.kind = Token::Kind::word;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (std::string_view(",;:[]{}()+-|!@<>=").find(c) != std::string_view::npos) {
      t.kind = Token::Kind::punct;
      t.text = std::string(1, c);
      ++i;
    } else {
      throw PtxError(CUDA_ERROR_INVALID_PTX, line, std::string("unexpected character '") + c + "'");
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.line = line;
  out.push_back(end);
  return out;
}

// Nested { } scopes a kernel body may hold: nvcc nests a few (inline-asm blocks inside loops).
constexpr int kMaxScopeDepth = 256;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  ParsedModule module() {
    ParsedModule m;
    while (!at_end()) {
      const Token& tok = peek();
      if (tok.text == ".version") {
        next();
        const Token& v = expect_number("version number");
        const auto dot = v.text.find('.');
        if (dot == std::string::npos) fail(v.line, "malformed .version '" + v.text + "'");
        m.version_major = std::atoi(v.text.c_str());
        m.version_minor = std::atoi(v.text.c_str() + dot + 1);
      } else if (tok.text == ".target") {
        next();
        m.target = expect_word("target name").text;
        while (accept(",")) next();
      } else if (tok.text == ".address_size") {
        next();
        m.address_size = std::atoi(expect_number("address size").text.c_str());
        if (m.address_size != 64 && m.address_size != 32) fail(tok.line, "unsupported .address_size");
        if (m.address_size != 64) throw PtxError(CUDA_ERROR_NOT_SUPPORTED, tok.line, ".address_size 32 is not supported");
      } else if (tok.text == ".visible" || tok.text == ".weak" || tok.text == ".extern" || tok.text == ".entry" ||
                 tok.text == ".func" || tok.text == ".global" || tok.text == ".const" || tok.text == ".shared") {
        top_level(m);
      } else if (tok.text == ".file" || tok.text == ".loc" || tok.text == ".section" || tok.text == ".pragma") {
        skip_directive();
      } else {
        fail(tok.line, "unexpected '" + tok.text + "' at module scope");
      }
    }
    if (m.version_major == 0) fail(1, "missing .version directive");
    if (m.target.empty()) fail(1, "missing .target directive");
    return m;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) { throw PtxError(CUDA_ERROR_INVALID_PTX, line, msg); }
  const Token& peek(int k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return t;
  }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  bool accept(const char* s) {
    if (peek().kind != Token::Kind::string && peek().text == s) return next(), true;
    return false;
  }
  void expect(const char* s) {
    if (!accept(s)) fail(peek().line, std::string("expected '") + s + "' but found '" + describe(peek()) + "'");
  }
  std::string describe(const Token& t) const { return t.kind == Token::Kind::end ? "end of text" : t.text; }
  const Token& expect_word(const char* what) {
    if (peek().kind != Token::Kind::word) fail(peek().line, std::string("expected ") + what + ", found '" + describe(peek()) + "'");
    return next();
  }
  const Token& expect_number(const char* what) {
    if (peek().kind != Token::Kind::number) fail(peek().line, std::string("expected ") + what + ", found '" + describe(peek()) + "'");
    return next();
  }
  std::uint64_t expect_uint(const char* what) {
    const Token& t = expect_number(what);
    char* end = nullptr;
    const auto v = std::strtoull(t.text.c_str(), &end, 0);
    if (*end) fail(t.line, std::string("malformed ") + what + " '" + t.text + "'");
    return v;
  }
  void skip_directive() {
    const int line = peek().line;
    next();
    while (!at_end() && peek().line == line && peek().text != ";") next();
    accept(";");
  }
  void skip_block() {
    int depth = 0;
    do {
      if (at_end()) fail(peek().line, "unterminated '{'");
      if (peek().text == "{") ++depth;
      if (peek().text == "}") --depth;
      next();
    } while (depth > 0);
  }

  // `.align N`, state space and type words in any order, then the name and optional `[N]`.
  VarDecl var_decl(bool allow_init) {
    VarDecl v;
    v.line = peek().line;
    while (peek().kind == Token::Kind::word && peek().text[0] == '.') {
      const std::string w = next().text;
      if (w == ".align") {
        const std::uint64_t a = expect_uint("alignment");
        if (a == 0 || (a & (a - 1)) || a > 65536) fail(v.line, "alignment " + std::to_string(a) + " is not a power of two up to 65536");
        v.align = static_cast<std::uint32_t>(a);
      }
      else if (w == ".extern") v.is_extern = true;
      else if (w == ".visible" || w == ".weak") continue;
      else if (w == ".shared" || w == ".local" || w == ".global" || w == ".const" || w == ".param") v.space = w;
      else if (w == ".ptr") continue;
      else v.type = w;
    }
    v.name = expect_word("a variable name").text;
    while (accept("[")) {
      if (accept("]")) { v.unsized = true; continue; }
      const std::uint64_t n = expect_uint("array size");
      // the product of the dimensions stays at most 2^32 (checked before multiplying: [2^32][2^32]
      // would wrap to 0 elements)
      if (n > (1ull << 32) || v.elements > (1ull << 32) / std::max<std::uint64_t>(n, 1))
        fail(v.line, "array '" + v.name + "' is too large");
      v.elements *= n;
      expect("]");
    }
    if (allow_init && accept("=")) {
      const bool braced = accept("{");
      do {
        std::string lit = accept("-") ? "-" : "";
        lit += next().text;
        v.init.push_back(lit);
      } while (braced && accept(","));
      if (braced) expect("}");
    }
    if (v.type.empty()) fail(v.line, "declaration of '" + v.name + "' has no type");
    return v;
  }

  void top_level(ParsedModule& m) {
    // look ahead for .entry/.func among the leading attribute words
    std::size_t k = pos_;
    while (t_[k].kind == Token::Kind::word && (t_[k].text == ".visible" || t_[k].text == ".weak" || t_[k].text == ".extern")) ++k;
    if (t_[k].text == ".entry") {
      pos_ = k + 1;
      m.kernels.push_back(kernel());
      return;
    }
    if (t_[k].text == ".func") {  // device functions: skipped; a `call` to one is rejected at decode
      while (!at_end() && peek().text != "{" && peek().text != ";") next();
      if (peek().text == "{") skip_block();
      else accept(";");
      return;
    }
    VarDecl v = var_decl(true);
    expect(";");
    if (v.space == ".shared") fail(v.line, "module-scope .shared variables are not supported; declare them in the kernel");
    m.globals.push_back(std::move(v));
  }

  ParsedKernel kernel() {
    ParsedKernel k;
    k.line = peek().line;
    k.name = expect_word("kernel name").text;
    if (accept("(")) {
      if (!accept(")")) {
        do {
          if (peek().text != ".param") fail(peek().line, "expected '.param' in the parameter list of " + k.name);
          ParamDecl p;
          p.line = peek().line;
          VarDecl v = var_decl(false);
          p.type = v.type;
          p.name = v.name;
          p.align = v.align;
          p.elements = v.elements;
          k.params.push_back(p);
        } while (accept(","));
        expect(")");
      }
    }
    while (peek().text != "{") {  // performance directives
      const Token& d = expect_word("a kernel directive or '{'");
      if (d.text == ".maxntid" || d.text == ".reqntid" || d.text == ".minnctapersm" || d.text == ".maxnreg" ||
          d.text == ".maxnctapersm" || d.text == ".noreturn") {
        int i = 0;
        if (peek().kind == Token::Kind::number) {
          do {
            const auto v = expect_uint("a directive value");
            if (d.text == ".reqntid" && i < 3) k.reqntid[i] = static_cast<std::uint32_t>(v);
            ++i;
          } while (accept(","));
        }
      } else {
        fail(d.line, "unexpected '" + d.text + "' before the body of " + k.name);
      }
    }
    expect("{");
    body(k, 1);
    return k;
  }

  void body(ParsedKernel& k, int depth) {
    while (true) {
      if (at_end()) fail(peek().line, "unterminated body of kernel " + k.name);
      if (accept("}")) return;
      if (accept("{")) {
        // a bound on the recursion: deeply nested text must be an error, not a stack overflow
        if (depth > kMaxScopeDepth) fail(peek().line, "scopes nested deeper than " + std::to_string(kMaxScopeDepth));
        // a nested scope's registers get names of their own (nvcc's inline-asm blocks reuse names)
        scopes_.push_back(Scope{"$s" + std::to_string(++scope_count_) + "_", {}});
        body(k, depth + 1);
        scopes_.pop_back();
        continue;
      }
      const Token& t = peek();
      if (t.text == ".reg") {
        next();
        std::string type = expect_word("a register type").text;
        if (type == ".v2" || type == ".v4") fail(t.line, "vector registers are not supported");
        do {
          RegDecl r;
          r.line = t.line;
          r.type = type;
          r.name = expect_word("a register name").text;
          if (accept("<")) {
            const std::uint64_t n = expect_uint("register count");
            if (n > 65536) fail(t.line, "register range " + r.name + "<" + std::to_string(n) + "> is too large");
            r.count = static_cast<int>(n);
            expect(">");
          }
          if (!scopes_.empty()) {
            scopes_.back().regs.emplace_back(r.name, r.count);
            r.name += scopes_.back().suffix;
          }
          k.regs.push_back(r);
        } while (accept(","));
        expect(";");
      } else if (t.text == ".shared" || t.text == ".local" || t.text == ".extern" || t.text == ".align") {
        VarDecl v = var_decl(false);
        expect(";");
        k.vars.push_back(std::move(v));
      } else if (t.text == ".loc" || t.text == ".pragma" || t.text == ".file") {
        skip_directive();
      } else if (t.kind == Token::Kind::word && peek(1).text == ":" && t.text[0] != '.') {
        k.labels.emplace_back(t.text, static_cast<int>(k.statements.size()));
        next();
        next();
      } else {
        k.statements.push_back(statement());
        if (!scopes_.empty()) rename_scoped(k.statements.back());
      }
    }
  }

  // The name a register has after scoping: the innermost scope declaring it wins.
  std::string scoped(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (const auto& [base, count] : s->regs) {
        if (count < 0 && name == base) return base + s->suffix;
        if (count >= 0 && name.size() > base.size() && name.size() - base.size() <= 6 && name.compare(0, base.size(), base) == 0 &&
            name.find_first_not_of("0123456789", base.size()) == std::string::npos &&
            std::stoul(name.substr(base.size())) < static_cast<unsigned long>(count))
          return base + s->suffix + name.substr(base.size());
      }
    return name;
  }
  void rename_scoped(ParsedStatement& st) const {
    if (!st.guard.empty()) st.guard = scoped(st.guard);
    for (auto& o : st.operands)
      for (auto& n : o.names)
        if (!n.empty()) n = scoped(n);
  }

  struct Scope {
    std::string suffix;
    std::vector<std::pair<std::string, int>> regs;
  };
  std::vector<Scope> scopes_;
  int scope_count_ = 0;

  ParsedOperand operand() {
    ParsedOperand o;
    o.negate = accept("!");
    if (accept("[")) {
      o.kind = ParsedOperand::Kind::addr;
      if (peek().kind == Token::Kind::word) o.names.push_back(next().text);
      else o.names.emplace_back();
      // addresses wrap modulo 2^64 (as the interpreter computes them): sum in unsigned arithmetic,
      // where `[%rd-9223372036854775808]` and offsets adding past 2^63 are defined
      std::uint64_t offset = 0;
      if (o.names[0].empty() && peek().kind == Token::Kind::number) offset = expect_uint("address");
      while (peek().text == "+" || peek().text == "-") {
        bool neg = next().text == "-";
        if (accept("-")) neg = !neg;
        const std::uint64_t v = expect_uint("an address offset");
        offset += neg ? 0 - v : v;
      }
      o.offset = static_cast<std::int64_t>(offset);
      expect("]");
      return o;
    }
    if (accept("{")) {
      o.kind = ParsedOperand::Kind::vec;
      do o.names.push_back(expect_word("a register in a vector").text);
      while (accept(","));
      expect("}");
      return o;
    }
    if (peek().kind == Token::Kind::number || peek().text == "-") {
      o.kind = ParsedOperand::Kind::literal;
      if (accept("-")) o.literal = "-";
      o.literal += expect_number("a number").text;
      return o;
    }
    o.names.push_back(expect_word("an operand").text);
    if (accept("|")) {
      o.kind = ParsedOperand::Kind::pair;
      o.names.push_back(expect_word("a second destination").text);
    }
    return o;
  }

  ParsedStatement statement() {
    ParsedStatement s;
    s.line = peek().line;
    if (accept("@")) {
      s.guard_negate = accept("!");
      s.guard = expect_word("a guard predicate").text;
    }
    const Token& op = expect_word("an instruction");
    if (op.text[0] == '.') fail(op.line, "unknown directive '" + op.text + "' in a kernel body");
    s.opcode = op.text;
    if (!accept(";")) {
      do s.operands.push_back(operand());
      while (accept(","));
      expect(";");
    }
    return s;
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
};

}  // namespace

ParsedModule parse_ptx(std::string_view text) { return Parser(tokenize(text)).module(); }

}  // namespace trine::cuda::emu
