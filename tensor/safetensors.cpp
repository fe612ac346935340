// safetensors files: the header's parser (load_safetensors and save_safetensors are in model_files.cpp).
//
// The layout: a u64 N, an N-byte JSON object (UTF-8), the data. Each key of the object but
// "__metadata__" names a tensor: {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
// the offsets in bytes from the data's start; "__metadata__" maps strings to strings.
#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "tensor/io_file.hpp"

namespace trine::io {

namespace {

constexpr const char* kLoad = "load_safetensors";
constexpr std::uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit
constexpr int kMaxDepth = 16;
// JSON values one header may hold: a 70B model's header has some 10k; the cap bounds the memory a
// malicious one can ask for (~100 bytes a value).
constexpr std::uint64_t kMaxValues = std::uint64_t{1} << 22;

// A parsed JSON value: what a safetensors header holds (objects, arrays, strings, integers; other
// numbers, booleans and null are read and kept as their kind only).
struct Json {
  enum class Kind { object, array, string, integer, other } kind = Kind::other;
  std::vector<std::string> keys;  // object: its members' names and values, in the file's order
  std::vector<Json> values;
  std::vector<Json> items;                            // array
  std::string text;                                   // string
  std::int64_t integer = 0;                           // integer (non-negative, below 2^62)
  bool negative_or_huge = false;                      // an integer outside that
};

class JsonParser {
 public:
  JsonParser(const std::string& path, const char* s, std::size_t n) : path_(path), s_(s), n_(n) {}

  Json document() {
    Json v = value(0);
    space();
    if (at_ != n_) fail("trailing bytes after the header's JSON object");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    detail::malformed(kLoad, path_, "header JSON at byte " + std::to_string(at_) + ": " + what);
  }
  void space() {
    while (at_ < n_ && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  char peek() {
    space();
    if (at_ >= n_) fail("ends early");
    return s_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool literal(const char* word) {
    const std::size_t len = std::strlen(word);
    if (n_ - at_ >= len && std::memcmp(s_ + at_, word, len) == 0) {
      at_ += len;
      return true;
    }
    return false;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nests deeper than " + std::to_string(kMaxDepth));
    if (++values_ > kMaxValues) fail("holds more than " + std::to_string(kMaxValues) + " values");
    const char c = peek();
    Json v;
    if (c == '{') {
      v.kind = Json::Kind::object;
      ++at_;
      if (peek() == '}') {
        ++at_;
        return v;
      }
      for (;;) {
        if (peek() != '"') fail("expected a member name");
        std::string key = string();
        expect(':');
        v.keys.push_back(std::move(key));
        v.values.push_back(value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::array;
      ++at_;
      if (peek() == ']') {
        ++at_;
        return v;
      }
      for (;;) {
        v.items.push_back(value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::string;
      v.text = string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (literal("true") || literal("false") || literal("null")) return v;
    fail("unexpected character");
  }

  Json number() {
    Json v;
    const std::size_t start = at_;
    bool negative = false, fraction = false;
    if (s_[at_] == '-') negative = true, ++at_;
    std::uint64_t n = 0;
    bool huge = false, digits = false;
    while (at_ < n_ && s_[at_] >= '0' && s_[at_] <= '9') {
      digits = true;
      const unsigned d = static_cast<unsigned>(s_[at_] - '0');
      if (n > ((std::uint64_t{1} << 62) - d) / 10) huge = true;
      if (!huge) n = n * 10 + d;
      ++at_;
    }
    if (!digits) fail("a number without digits");
    if (at_ < n_ && s_[at_] == '.') {
      fraction = true;
      ++at_;
      while (at_ < n_ && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    }
    if (at_ < n_ && (s_[at_] == 'e' || s_[at_] == 'E')) {
      fraction = true;
      ++at_;
      if (at_ < n_ && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      while (at_ < n_ && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    }
    if (fraction) {
      v.kind = Json::Kind::other;
      v.text.assign(s_ + start, at_ - start);
      return v;
    }
    v.kind = Json::Kind::integer;
    v.negative_or_huge = negative || huge;
    v.integer = static_cast<std::int64_t>(n);
    return v;
  }

  unsigned hex4() {
    if (n_ - at_ < 4) fail("a \\u escape ends early");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[at_++];
      u <<= 4;
      if (h >= '0' && h <= '9') u |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') u |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') u |= static_cast<unsigned>(h - 'A' + 10);
      else fail("a \\u escape with a non-hex digit");
    }
    return u;
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++at_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_ >= n_) fail("a string ends early");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= n_) fail("a string ends early");
      const char e = s_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate: its low one follows
            if (n_ - at_ < 2 || s_[at_] != '\\' || s_[at_ + 1] != 'u') fail("a lone surrogate in a \\u escape");
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("a lone surrogate in a \\u escape");
          }
          utf8(out, cp);
          break;
        }
        default: fail(std::string("an unknown escape \\") + e);
      }
    }
  }

  const std::string& path_;
  const char* s_;
  std::size_t n_;
  std::size_t at_ = 0;
  std::uint64_t values_ = 0;
};

// safetensors' dtype names: the four trine holds, and the others it refuses by name.
std::optional<DType> dtype_of(const std::string& name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  return std::nullopt;
}

bool known_dtype(const std::string& name) {
  static const char* const others[] = {"F64", "I64", "U64", "U32", "I16", "U16", "I8", "U8", "BOOL", "F8_E4M3",
                                       "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"};
  return std::any_of(std::begin(others), std::end(others), [&](const char* o) { return name == o; });
}

const Json* member(const Json& object, const char* name) {
  for (std::size_t i = 0; i < object.keys.size(); ++i)
    if (object.keys[i] == name) return &object.values[i];
  return nullptr;
}

}  // namespace

namespace detail {

ParsedFile parse_safetensors(const std::string& path, const unsigned char* data, std::size_t size) {
  Cursor c(kLoad, path, data, size);
  const auto header_size = c.read<std::uint64_t>("the header size");
  if (header_size > kMaxHeader)
    malformed(kLoad, path, "a header of " + std::to_string(header_size) + " bytes (at most 100 MB)");
  c.need(header_size, "the header");
  const Json header = JsonParser(path, reinterpret_cast<const char*>(c.here()), static_cast<std::size_t>(header_size)).document();
  if (header.kind != Json::Kind::object) malformed(kLoad, path, "the header is not a JSON object");
  const std::uint64_t data_start = 8 + header_size, data_size = size - data_start;

  ParsedFile out;
  std::unordered_set<std::string> names;
  for (std::size_t m = 0; m < header.keys.size(); ++m) {
    const std::string& name = header.keys[m];
    const Json& v = header.values[m];
    if (!names.insert(name).second) malformed(kLoad, path, "'" + name + "' appears twice in the header");
    if (name == "__metadata__") {
      if (v.kind != Json::Kind::object) malformed(kLoad, path, "__metadata__ is not an object");
      for (std::size_t i = 0; i < v.keys.size(); ++i) {
        const std::string& k = v.keys[i];
        const Json& s = v.values[i];
        if (s.kind != Json::Kind::string) malformed(kLoad, path, "__metadata__ '" + k + "' is not a string");
        out.metadata.emplace_back(k, Value::of(s.text));
      }
      continue;
    }
    const std::string named = "tensor '" + name + "'";
    if (v.kind != Json::Kind::object) malformed(kLoad, path, named + " is not an object");
    const Json* dtype = member(v, "dtype");
    const Json* shape = member(v, "shape");
    const Json* offsets = member(v, "data_offsets");
    if (!dtype || dtype->kind != Json::Kind::string) malformed(kLoad, path, named + " has no dtype string");
    if (!shape || shape->kind != Json::Kind::array) malformed(kLoad, path, named + " has no shape array");
    if (!offsets || offsets->kind != Json::Kind::array || offsets->items.size() != 2)
      malformed(kLoad, path, named + " has no data_offsets pair");
    const std::optional<DType> dt = dtype_of(dtype->text);
    if (!dt) {
      if (known_dtype(dtype->text)) {
        throw Error(ErrorCode::unsupported, std::string("[") + kLoad + "] " + path + ": " + named + " is " + dtype->text +
                                                ", which trine cannot hold: F32, F16, BF16 and I32 tensors load");
      }
      malformed(kLoad, path, named + " has an unknown dtype \"" + dtype->text + "\"");
    }
    TensorEntry e{name, *dt, std::nullopt, {}, 0, 0};
    std::uint64_t end = 0;
    if (shape->items.size() > static_cast<std::size_t>(Shape::max_rank))
      malformed(kLoad, path, named + " has " + std::to_string(shape->items.size()) + " dims (at most " +
                                         std::to_string(Shape::max_rank) + " load)");
    for (const Json& d : shape->items) {
      if (d.kind != Json::Kind::integer || d.negative_or_huge)
        malformed(kLoad, path, named + "'s shape holds something other than a dimension");
      e.dims.push_back(d.integer);
    }
    for (int k = 0; k < 2; ++k) {
      const Json& o = offsets->items[static_cast<std::size_t>(k)];
      if (o.kind != Json::Kind::integer || o.negative_or_huge)
        malformed(kLoad, path, named + "'s data_offsets hold something other than a byte offset");
      (k ? end : e.offset) = static_cast<std::uint64_t>(o.integer);
    }
    const std::uint64_t bytes = checked_count(kLoad, path, name, e.dims, dtype_size(e.dtype)) * dtype_size(e.dtype);
    if (end < e.offset || end - e.offset != bytes) {
      malformed(kLoad, path, named + " spans bytes [" + std::to_string(e.offset) + ", " + std::to_string(end) +
                                         ") but its shape and dtype take " + std::to_string(bytes));
    }
    if (end > data_size) {
      malformed(kLoad, path, named + " ends at data byte " + std::to_string(end) + ", past the data's " +
                                         std::to_string(data_size) + " bytes");
    }
    e.bytes = bytes;
    e.offset += data_start;
    out.tensors.push_back(std::move(e));
  }
  check_no_overlap(kLoad, path, out.tensors);
  return out;
}

const char* safetensors_dtype(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    default: break;  // safetensors has no block-quantized types: save_safetensors refuses them
  }
  return "?";
}

}  // namespace detail

}  // namespace trine::io
