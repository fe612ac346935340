// Model files: load_gguf, load_safetensors, save_gguf and save_safetensors (include/trine/io.hpp).
// The headers' parsers are gguf.cpp and safetensors.cpp; this file moves the tensors' bytes between
// the files and the devices.
#include <cstring>
#include <optional>

#include "tensor/io_file.hpp"
#include "tensor/make.hpp"
#include "trine/io.hpp"
#include "trine/quant.hpp"

namespace trine::io {

namespace {

// Each tensor copied once, from the mapping into its device's memory.
ModelFile load(const char* op, const char* format, const std::string& path, std::optional<Device> device,
               detail::ParsedFile (*parse)(const std::string&, const unsigned char*, std::size_t),
               std::optional<DType> quantized_as = std::nullopt) {
  const detail::MappedFile file(op, path);
  detail::ParsedFile parsed = parse(path, file.data(), file.size());
  ModelFile out;
  out.path = path;
  out.format = format;
  out.metadata = std::move(parsed.metadata);
  out.tensors.reserve(parsed.tensors.size());
  if (quantized_as && !dtype_is_float(*quantized_as)) {
    throw Error(ErrorCode::dtype_mismatch, std::string("[") + op + "] " + path +
                                               ": quantized tensors dequantize to f32, f16 or bf16, not " +
                                               dtype_name(*quantized_as));
  }
  for (const detail::TensorEntry& t : parsed.tensors) {
    const Shape shape(std::span<const std::int64_t>(t.dims));
    if (t.format && !quantized_as) {  // the blocks as they are: matmul and gemv take them
      out.tensors.emplace_back(
          t.name, trine::detail::tensor_from_bytes(file.data() + t.offset, static_cast<std::size_t>(t.bytes), shape,
                                                   quant::dtype_of(*t.format), device, op));
      continue;
    }
    if (t.format) {
      out.tensors.emplace_back(t.name, quant::dequantize(std::span(file.data() + t.offset, static_cast<std::size_t>(t.bytes)),
                                                         *t.format, shape, *quantized_as, device));
      continue;
    }
    out.tensors.emplace_back(t.name, trine::detail::tensor_from_bytes(file.data() + t.offset,
                                                                      static_cast<std::size_t>(t.bytes),
                                                                      Shape(std::span<const std::int64_t>(t.dims)),
                                                                      t.dtype, device, op));
  }
  return out;
}

constexpr const char* kSave = "save_gguf";
constexpr const char* kSaveSt = "save_safetensors";

}  // namespace

ModelFile load_gguf(const std::string& path, std::optional<Device> device, std::optional<DType> quantized_as) {
  return load("load_gguf", "gguf", path, device, detail::parse_gguf, quantized_as);
}

ModelFile load_safetensors(const std::string& path, std::optional<Device> device) {
  return load("load_safetensors", "safetensors", path, device, detail::parse_safetensors);
}

namespace {

class GgufWriter {
 public:
  explicit GgufWriter(detail::FileWriter& w) : w_(w) {}
  template <class T>
  void put(T v) {
    w_.write(&v, sizeof v);
  }
  void string(const std::string& s) {
    put<std::uint64_t>(s.size());
    w_.write(s.data(), s.size());
  }
  void value(const Value& v) {
    switch (v.type) {
      case ValueType::u8: put(static_cast<std::uint8_t>(v.integer)); break;
      case ValueType::i8: put(static_cast<std::int8_t>(v.integer)); break;
      case ValueType::u16: put(static_cast<std::uint16_t>(v.integer)); break;
      case ValueType::i16: put(static_cast<std::int16_t>(v.integer)); break;
      case ValueType::u32: put(static_cast<std::uint32_t>(v.integer)); break;
      case ValueType::i32: put(static_cast<std::int32_t>(v.integer)); break;
      case ValueType::i64: put(v.integer); break;
      case ValueType::u64: put(v.unsigned_int); break;
      case ValueType::f32: put(static_cast<float>(v.number)); break;
      case ValueType::f64: put(v.number); break;
      case ValueType::boolean: put(static_cast<std::uint8_t>(v.integer != 0)); break;
      case ValueType::string: string(v.text); break;
      case ValueType::array:
        put(static_cast<std::uint32_t>(v.item_type));
        put<std::uint64_t>(v.items.size());
        for (const Value& item : v.items) value(item);
        break;
    }
  }

 private:
  detail::FileWriter& w_;
};

void check_value(const std::string& key, const Value& v, int depth) {
  if (v.type == ValueType::array) {
    if (depth >= detail::kGgufMaxArrayDepth)
      throw Error(ErrorCode::invalid_argument, std::string("[") + kSave + "] metadata '" + key + "' nests arrays too deep");
    for (const Value& item : v.items) {
      if (item.type != v.item_type) {
        throw Error(ErrorCode::invalid_argument, std::string("[") + kSave + "] metadata '" + key + "' holds a " +
                                                     value_type_name(item.type) + " in an array of " +
                                                     value_type_name(v.item_type));
      }
      check_value(key, item, depth + 1);
    }
  }
}

}  // namespace

void save_gguf(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
               const std::vector<std::pair<std::string, Value>>& metadata) {
  std::uint64_t alignment = detail::kGgufAlignment;
  for (std::size_t i = 0; i < metadata.size(); ++i) {
    const auto& [key, v] = metadata[i];
    for (std::size_t j = 0; j < i; ++j)
      if (metadata[j].first == key)
        throw Error(ErrorCode::invalid_argument, std::string("[") + kSave + "] metadata '" + key + "' given twice");
    check_value(key, v, 0);
    if (key == "general.alignment") {
      if (v.type != ValueType::u32 || v.integer == 0 || (v.integer & (v.integer - 1)) != 0)
        throw Error(ErrorCode::invalid_argument, std::string("[") + kSave + "] general.alignment must be a u32 power of two");
      alignment = static_cast<std::uint64_t>(v.integer);
    }
  }
  std::vector<std::uint64_t> offsets;
  std::uint64_t end = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    const std::string named = std::string("[") + kSave + "] tensor '" + name + "'";
    if (name.empty()) throw Error(ErrorCode::invalid_argument, std::string("[") + kSave + "] tensor " + std::to_string(i) + " has no name");
    for (std::size_t j = 0; j < i; ++j)
      if (tensors[j].first == name) throw Error(ErrorCode::invalid_argument, named + " given twice");
    if (!t.defined()) throw Error(ErrorCode::invalid_argument, named + " is undefined");
    offsets.push_back(end);
    end += (static_cast<std::uint64_t>(dtype_bytes(t.dtype(), t.numel())) + alignment - 1) / alignment * alignment;
  }

  detail::FileWriter file(kSave, path);
  GgufWriter w(file);
  file.write("GGUF", 4);
  w.put<std::uint32_t>(3);
  w.put<std::uint64_t>(tensors.size());
  w.put<std::uint64_t>(metadata.size());
  for (const auto& [key, v] : metadata) {
    w.string(key);
    w.put(static_cast<std::uint32_t>(v.type));
    w.value(v);
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    w.string(name);
    const auto dims = t.shape().dims();
    w.put<std::uint32_t>(dims.empty() ? 1 : static_cast<std::uint32_t>(dims.size()));
    if (dims.empty()) w.put<std::uint64_t>(1);
    for (std::size_t d = dims.size(); d-- > 0;) w.put<std::uint64_t>(static_cast<std::uint64_t>(dims[d]));
    w.put(detail::ggml_type_id(t.dtype()));
    w.put(offsets[i]);
  }
  file.zeros(static_cast<std::size_t>((alignment - file.written() % alignment) % alignment));
  const std::uint64_t data_start = file.written();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    file.zeros(static_cast<std::size_t>(data_start + offsets[i] - file.written()));
    const std::vector<unsigned char> bytes = trine::detail::tensor_bytes(tensors[i].second, kSave);
    file.write(bytes.data(), bytes.size());
  }
  file.zeros(static_cast<std::size_t>(data_start + end - file.written()));
  file.finish();
}

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (metadata[j].first == metadata[i].first)
          throw Error(ErrorCode::invalid_argument, std::string("[") + kSaveSt + "] metadata '" + metadata[i].first + "' given twice");
      header += (i ? "," : "") + json_string(metadata[i].first) + ":" + json_string(metadata[i].second);
    }
    header += "}";
  }
  std::uint64_t end = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    const std::string named = std::string("[") + kSaveSt + "] tensor '" + name + "'";
    if (name.empty() || name == "__metadata__")
      throw Error(ErrorCode::invalid_argument, std::string("[") + kSaveSt + "] tensor " + std::to_string(i) + " may not be named '" + name + "'");
    for (std::size_t j = 0; j < i; ++j)
      if (tensors[j].first == name) throw Error(ErrorCode::invalid_argument, named + " given twice");
    if (!t.defined()) throw Error(ErrorCode::invalid_argument, named + " is undefined");
    if (dtype_is_quantized(t.dtype())) {
      throw Error(ErrorCode::dtype_mismatch,
                  named + " is " + t.str() + ": safetensors has no block-quantized types (save it with save_gguf)");
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
    header += std::string(header.size() > 1 ? "," : "") + json_string(name) + ":{\"dtype\":\"" + detail::safetensors_dtype(t.dtype()) +
              "\",\"shape\":[";
    const auto dims = t.shape().dims();
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (d) header += ',';
      header += std::to_string(dims[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(end) + "," + std::to_string(end + bytes) + "]}";
    end += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writes it

  detail::FileWriter file(kSaveSt, path);
  const std::uint64_t n = header.size();
  file.write(&n, 8);
  file.write(header.data(), header.size());
  for (const auto& [name, t] : tensors) {
    const std::vector<unsigned char> bytes = trine::detail::tensor_bytes(t, kSaveSt);
    file.write(bytes.data(), bytes.size());
  }
  file.finish();
}

}  // namespace trine::io
