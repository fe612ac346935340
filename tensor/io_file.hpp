// Internal to the model-file readers and writers (gguf.cpp, safetensors.cpp): a read-only mapping
// of a whole file, a cursor that never reads past its end, and the errors that name the file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "trine/dtype.hpp"
#include "trine/error.hpp"
#include "trine/io.hpp"
#include "trine/quant.hpp"

namespace trine::io::detail {

static_assert(std::endian::native == std::endian::little, "the model files are little-endian, as this host must be");

// A malformed file: Error(invalid_argument) "[op] path: what".
[[noreturn]] void malformed(const char* op, const std::string& path, const std::string& what);

// The whole file, mapped read-only (an empty file maps nothing: size 0).
class MappedFile {
 public:
  MappedFile(const char* op, const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// Reads little-endian values from [begin, end) of a mapping; running past the end is malformed,
// with `what` saying what was being read.
class Cursor {
 public:
  Cursor(const char* op, const std::string& path, const unsigned char* data, std::size_t size)
      : op_(op), path_(path), data_(data), size_(size) {}
  std::size_t position() const noexcept { return at_; }
  std::size_t left() const noexcept { return size_ - at_; }
  const unsigned char* here() const noexcept { return data_ + at_; }

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string read_string(std::uint64_t length, const std::string& what) {
    need(length, what);
    std::string s(reinterpret_cast<const char*>(data_ + at_), static_cast<std::size_t>(length));
    at_ += static_cast<std::size_t>(length);
    return s;
  }
  void skip(std::uint64_t n, const std::string& what) {
    need(n, what);
    at_ += static_cast<std::size_t>(n);
  }
  void need(std::uint64_t n, const std::string& what) const {
    if (n > left()) {
      malformed(op_, path_,
                what + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(at_) + ", past the end of the " +
                    std::to_string(size_) + "-byte file");
    }
  }

 private:
  const char* op_;
  const std::string& path_;
  const unsigned char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

// The elements of `dims` multiplied, or malformed when a dim is negative or the count or its bytes
// (elem_size each) pass 2^62.
std::uint64_t checked_count(const char* op, const std::string& path, const std::string& tensor,
                            const std::vector<std::int64_t>& dims, std::size_t elem_size);

// Writes a file through `path + ".partial"`, renamed to path by finish(): a save that fails (an
// error, a full disk) leaves whatever was at path before. Errors name the path and the system's reason.
class FileWriter {
 public:
  FileWriter(const char* op, const std::string& path);
  ~FileWriter();  // removes the partial file unless finish() ran
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const void* bytes, std::size_t n);
  void zeros(std::size_t n);
  std::uint64_t written() const noexcept { return written_; }
  void finish();

 private:
  const char* op_;
  std::string path_, partial_;
  std::FILE* file_ = nullptr;
  std::uint64_t written_ = 0;
};

// What a model file's header says, checked against the file's size: every tensor's bytes lie inside
// the file and overlap no other's. The parsers read only [data, data + size) and allocate no more
// than the file's size justifies, whatever the header claims (tests/fuzz/model_file_fuzz.cpp).
struct TensorEntry {
  std::string name;
  DType dtype;                                      // f32 for a quantized tensor
  std::optional<quant::Format> format = std::nullopt;  // GGUF: the tensor's blocks' format
  std::vector<std::int64_t> dims;  // trine's order, outermost first
  std::uint64_t offset, bytes;     // from the file's first byte
};
struct ParsedFile {
  std::vector<std::pair<std::string, Value>> metadata;
  std::vector<TensorEntry> tensors;  // in the file's order
};
ParsedFile parse_gguf(const std::string& path, const unsigned char* data, std::size_t size);
ParsedFile parse_safetensors(const std::string& path, const unsigned char* data, std::size_t size);

// Malformed when two of the tensors' byte ranges overlap (empty ones overlap nothing).
void check_no_overlap(const char* op, const std::string& path, const std::vector<TensorEntry>& tensors);

// GGUF's default data alignment (general.alignment overrides it), and how deep trine nests arrays
// of arrays in GGUF metadata, reading or writing.
inline constexpr std::uint64_t kGgufAlignment = 32;
inline constexpr int kGgufMaxArrayDepth = 8;

// The formats' names of trine's dtypes, for the writers.
std::uint32_t ggml_type_id(DType d);
const char* safetensors_dtype(DType d);

}  // namespace trine::io::detail
