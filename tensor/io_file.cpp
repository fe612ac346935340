// Model files: the mapping, the writer, metadata values and ModelFile's lookups (include/trine/io.hpp).
#include "tensor/io_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>

#include "trine/io.hpp"

namespace trine::io {

namespace detail {

void malformed(const char* op, const std::string& path, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, std::string("[") + op + "] " + path + ": " + what);
}

namespace {

[[noreturn]] void system_error(const char* op, const std::string& path, const char* doing) {
  const int e = errno;
  throw Error(ErrorCode::invalid_argument,
              std::string("[") + op + "] " + path + ": cannot " + doing + ": " + std::strerror(e));
}

}  // namespace

MappedFile::MappedFile(const char* op, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) system_error(op, path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    system_error(op, path, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    malformed(op, path, "not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ != 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      errno = e;
      system_error(op, path, "map");
    }
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

std::uint64_t checked_count(const char* op, const std::string& path, const std::string& tensor,
                            const std::vector<std::int64_t>& dims, std::size_t elem_size) {
  constexpr std::uint64_t limit = std::uint64_t{1} << 62;
  std::uint64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) malformed(op, path, "tensor '" + tensor + "' has a negative dimension " + std::to_string(d));
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > limit / elem_size / u) malformed(op, path, "tensor '" + tensor + "' has absurd dimensions");
    n *= u;
  }
  for (std::int64_t d : dims)
    if (d == 0) return 0;
  return n;
}

void check_no_overlap(const char* op, const std::string& path, const std::vector<TensorEntry>& tensors) {
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& t : tensors)
    if (t.bytes != 0) by_offset.push_back(&t);  // an empty tensor overlaps nothing
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->offset < b->offset; });
  const TensorEntry* reach = nullptr;  // of the tensors before, the one that ends last
  for (const TensorEntry* t : by_offset) {
    if (reach && reach->offset + reach->bytes > t->offset)
      malformed(op, path, "tensors '" + reach->name + "' and '" + t->name + "' overlap");
    if (!reach || t->offset + t->bytes > reach->offset + reach->bytes) reach = t;
  }
}

FileWriter::FileWriter(const char* op, const std::string& path) : op_(op), path_(path), partial_(path + ".partial") {
  file_ = std::fopen(partial_.c_str(), "wb");
  if (!file_) system_error(op_, partial_, "create");
}

FileWriter::~FileWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(partial_.c_str());
  }
}

void FileWriter::write(const void* bytes, std::size_t n) {
  if (n != 0 && std::fwrite(bytes, 1, n, file_) != n) system_error(op_, partial_, "write");
  written_ += n;
}

void FileWriter::zeros(std::size_t n) {
  static constexpr unsigned char pad[64] = {};
  while (n) {
    const std::size_t c = n < sizeof pad ? n : sizeof pad;
    write(pad, c);
    n -= c;
  }
}

void FileWriter::finish() {
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    const int e = errno;
    std::fclose(f);
    std::remove(partial_.c_str());
    errno = e;
    system_error(op_, partial_, "write");
  }
  if (std::fclose(f) != 0) {
    std::remove(partial_.c_str());
    system_error(op_, partial_, "close");
  }
  if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    std::remove(partial_.c_str());
    errno = e;
    system_error(op_, path_, "replace");
  }
}

}  // namespace detail

// ---- values ----

const char* value_type_name(ValueType t) noexcept {
  switch (t) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "unknown";
}

namespace {

[[noreturn]] void value_error(const std::string& what) { throw Error(ErrorCode::invalid_argument, "[io::Value] " + what); }

bool is_signed_or_small(ValueType t) {
  switch (t) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::u16:
    case ValueType::i16:
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::i64: return true;
    default: return false;
  }
}

}  // namespace

Value Value::of(std::string s) {
  Value v;
  v.type = ValueType::string;
  v.text = std::move(s);
  return v;
}

Value Value::of_int(ValueType type, std::int64_t x) {
  std::int64_t lo = 0, hi = 0;
  switch (type) {
    case ValueType::u8: lo = 0, hi = 255; break;
    case ValueType::i8: lo = -128, hi = 127; break;
    case ValueType::u16: lo = 0, hi = 65535; break;
    case ValueType::i16: lo = -32768, hi = 32767; break;
    case ValueType::u32: lo = 0, hi = 4294967295LL; break;
    case ValueType::i32: lo = -2147483648LL, hi = 2147483647LL; break;
    case ValueType::i64:
      lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
      break;
    default: value_error(std::string("of_int takes an integer type other than u64, not ") + value_type_name(type));
  }
  if (x < lo || x > hi) value_error(std::to_string(x) + " does not fit " + value_type_name(type));
  Value v;
  v.type = type;
  v.integer = x;
  return v;
}

Value Value::of_u64(std::uint64_t x) {
  Value v;
  v.type = ValueType::u64;
  v.unsigned_int = x;
  return v;
}

Value Value::of_float(ValueType type, double x) {
  if (type != ValueType::f32 && type != ValueType::f64) value_error(std::string("of_float takes f32 or f64, not ") + value_type_name(type));
  Value v;
  v.type = type;
  v.number = type == ValueType::f32 ? static_cast<double>(static_cast<float>(x)) : x;
  return v;
}

Value Value::of_bool(bool x) {
  Value v;
  v.type = ValueType::boolean;
  v.integer = x ? 1 : 0;
  return v;
}

Value Value::of_array(ValueType item_type, std::vector<Value> items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].type != item_type) {
      value_error("array item " + std::to_string(i) + " is " + value_type_name(items[i].type) + ", not " +
                  value_type_name(item_type));
    }
  }
  Value v;
  v.type = ValueType::array;
  v.item_type = item_type;
  v.items = std::move(items);
  return v;
}

std::int64_t Value::as_int() const {
  if (is_signed_or_small(type)) return integer;
  if (type == ValueType::u64) {
    if (unsigned_int > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      value_error("u64 " + std::to_string(unsigned_int) + " does not fit an int64");
    return static_cast<std::int64_t>(unsigned_int);
  }
  value_error(std::string("a ") + value_type_name(type) + " is not an integer");
}

double Value::as_double() const {
  if (type == ValueType::f32 || type == ValueType::f64) return number;
  if (type == ValueType::u64) return static_cast<double>(unsigned_int);
  if (is_signed_or_small(type)) return static_cast<double>(integer);
  value_error(std::string("a ") + value_type_name(type) + " is not a number");
}

bool Value::as_bool() const {
  if (type != ValueType::boolean) value_error(std::string("a ") + value_type_name(type) + " is not a bool");
  return integer != 0;
}

const std::string& Value::as_string() const {
  if (type != ValueType::string) value_error(std::string("a ") + value_type_name(type) + " is not a string");
  return text;
}

const std::vector<Value>& Value::as_array() const {
  if (type != ValueType::array) value_error(std::string("a ") + value_type_name(type) + " is not an array");
  return items;
}

// ---- ModelFile ----

bool ModelFile::has_tensor(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return true;
  return false;
}

const Tensor& ModelFile::tensor(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw Error(ErrorCode::invalid_argument, "[io] " + path + " has no tensor '" + name + "' (it has " +
                                               std::to_string(tensors.size()) + ")");
}

bool ModelFile::has_value(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return true;
  return false;
}

const Value& ModelFile::value(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  throw Error(ErrorCode::invalid_argument, "[io] " + path + " has no metadata key '" + key + "'");
}

}  // namespace trine::io
