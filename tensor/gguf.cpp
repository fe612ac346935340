// GGUF files (version 2 and 3, little-endian): the header's parser (load_gguf and save_gguf are in
// model_files.cpp).
//
// The layout: "GGUF", version u32, tensor count u64, metadata count u64; the metadata (key string,
// type u32, value); the tensor infos (name string, n_dims u32, dims u64 each innermost first, ggml
// type u32, offset u64 into the data); padding to the alignment (general.alignment, default 32);
// the data, each tensor at its offset, a multiple of the alignment. A string is a u64 length and
// its bytes.
#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "tensor/io_file.hpp"
#include "trine/quant.hpp"

namespace trine::io {

namespace {

constexpr const char* kLoad = "load_gguf";

// ggml's element types by their number: the ones trine loads (as a dtype, or as blocks of a
// quantized format), and the names of the others.
struct GgmlType {
  std::uint32_t id;
  const char* name;
  std::optional<DType> dtype;
  std::optional<quant::Format> format = std::nullopt;
};

using quant::Format;
const GgmlType kGgmlTypes[] = {
    {0, "f32", DType::f32},          {1, "f16", DType::f16},         {2, "q4_0", {}, Format::q4_0},
    {3, "q4_1", {}},                 {6, "q5_0", {}},                {7, "q5_1", {}},
    {8, "q8_0", {}, Format::q8_0},   {9, "q8_1", {}},                {10, "q2_k", {}},
    {11, "q3_k", {}},                {12, "q4_k", {}, Format::q4_k}, {13, "q5_k", {}, Format::q5_k},
    {14, "q6_k", {}, Format::q6_k},  {15, "q8_k", {}},               {16, "iq2_xxs", {}},
    {17, "iq2_xs", {}},              {18, "iq3_xxs", {}},            {19, "iq1_s", {}},
    {20, "iq4_nl", {}},              {21, "iq3_s", {}},              {22, "iq2_s", {}},
    {23, "iq4_xs", {}},              {24, "i8", {}},                 {25, "i16", {}},
    {26, "i32", DType::i32},         {27, "i64", {}},                {28, "f64", {}},
    {29, "iq1_m", {}},               {30, "bf16", DType::bf16},
};

const GgmlType* ggml_type(std::uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// The smallest bytes a value of the type takes, to bound counts read from the file before anything
// is allocated for them.
std::uint64_t min_bytes(ValueType t) {
  switch (t) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::boolean: return 1;
    case ValueType::u16:
    case ValueType::i16: return 2;
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::f32: return 4;
    case ValueType::string:
    case ValueType::u64:
    case ValueType::i64:
    case ValueType::f64: return 8;
    case ValueType::array: return 12;
  }
  return 1;
}

ValueType value_type(detail::Cursor& c, const std::string& path, const std::string& what) {
  const auto t = c.read<std::uint32_t>(what.c_str());
  if (t > static_cast<std::uint32_t>(ValueType::f64))
    detail::malformed(kLoad, path, what + " has an unknown value type " + std::to_string(t));
  return static_cast<ValueType>(t);
}

std::string read_string(detail::Cursor& c, const std::string& what) {
  const auto n = c.read<std::uint64_t>(what.c_str());
  return c.read_string(n, what);
}

// Metadata values one file may hold (arrays' items included): a tokenizer's vocabulary and merges
// take some 400k; the cap bounds the memory a malicious header can ask for (~100 bytes a value).
constexpr std::uint64_t kMaxValues = std::uint64_t{1} << 22;

Value read_value(detail::Cursor& c, const std::string& path, ValueType t, const std::string& what, int depth,
                 std::uint64_t& values) {
  if (++values > kMaxValues)
    detail::malformed(kLoad, path, "holds more than " + std::to_string(kMaxValues) + " metadata values (at " + what + ")");
  switch (t) {
    case ValueType::u8: return Value::of_int(t, c.read<std::uint8_t>(what.c_str()));
    case ValueType::i8: return Value::of_int(t, c.read<std::int8_t>(what.c_str()));
    case ValueType::u16: return Value::of_int(t, c.read<std::uint16_t>(what.c_str()));
    case ValueType::i16: return Value::of_int(t, c.read<std::int16_t>(what.c_str()));
    case ValueType::u32: return Value::of_int(t, c.read<std::uint32_t>(what.c_str()));
    case ValueType::i32: return Value::of_int(t, c.read<std::int32_t>(what.c_str()));
    case ValueType::i64: return Value::of_int(t, c.read<std::int64_t>(what.c_str()));
    case ValueType::u64: return Value::of_u64(c.read<std::uint64_t>(what.c_str()));
    case ValueType::f32: return Value::of_float(t, c.read<float>(what.c_str()));
    case ValueType::f64: return Value::of_float(t, c.read<double>(what.c_str()));
    case ValueType::boolean: {
      const auto b = c.read<std::uint8_t>(what.c_str());
      if (b > 1) detail::malformed(kLoad, path, what + " is a bool of value " + std::to_string(b));
      return Value::of_bool(b != 0);
    }
    case ValueType::string: return Value::of(read_string(c, what));
    case ValueType::array: {
      if (depth >= detail::kGgufMaxArrayDepth)
        detail::malformed(kLoad, path, what + " nests arrays deeper than " + std::to_string(detail::kGgufMaxArrayDepth));
      const ValueType item = value_type(c, path, what + "'s items");
      const auto n = c.read<std::uint64_t>(what.c_str());
      if (n > c.left() / min_bytes(item)) {
        detail::malformed(kLoad, path,
                          what + " claims " + std::to_string(n) + " items, more than the " + std::to_string(c.left()) +
                              " bytes left hold");
      }
      std::vector<Value> items;
      items.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, path, item, what, depth + 1, values));
      return Value::of_array(item, std::move(items));
    }
  }
  detail::malformed(kLoad, path, what + " has an unknown value type");
}

}  // namespace

namespace detail {

ParsedFile parse_gguf(const std::string& path, const unsigned char* data, std::size_t size) {
  Cursor c(kLoad, path, data, size);
  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0)
    malformed(kLoad, path, "not a GGUF file (it does not start with \"GGUF\")");
  c.skip(4, "the magic");
  const auto version = c.read<std::uint32_t>("the version");
  if (version != 2 && version != 3) {
    // A big-endian file reads its version byte-swapped: 3 as 0x03000000.
    malformed(kLoad, path,
                      "GGUF version " + std::to_string(version) +
                          (version >= 0x01000000u ? " (a big-endian file?)" : "") + "; versions 2 and 3 load");
  }
  const auto tensor_count = c.read<std::uint64_t>("the tensor count");
  const auto kv_count = c.read<std::uint64_t>("the metadata count");
  // A key/value takes at least 12 bytes (an empty key and a u32 type), a tensor info at least 24.
  if (kv_count > c.left() / 12)
    malformed(kLoad, path, "claims " + std::to_string(kv_count) + " metadata entries, more than the file holds");
  if (tensor_count > c.left() / 24)
    malformed(kLoad, path, "claims " + std::to_string(tensor_count) + " tensors, more than the file holds");

  ParsedFile out;
  std::uint64_t alignment = kGgufAlignment, values = 0;
  std::unordered_set<std::string> keys, names;
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::string what = "metadata entry " + std::to_string(i);
    std::string key = read_string(c, what + "'s key");
    const std::string named = "metadata '" + key + "'";
    if (!keys.insert(key).second) malformed(kLoad, path, named + " appears twice");
    Value v = read_value(c, path, value_type(c, path, named), named, 0, values);
    if (key == "general.alignment") {
      if (v.type != ValueType::u32 || v.integer == 0 || (v.integer & (v.integer - 1)) != 0)
        malformed(kLoad, path, "general.alignment must be a u32 power of two");
      alignment = static_cast<std::uint64_t>(v.integer);
    }
    out.metadata.emplace_back(std::move(key), std::move(v));
  }

  std::vector<TensorEntry>& infos = out.tensors;
  infos.reserve(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    TensorEntry t;
    t.name = read_string(c, "tensor info " + std::to_string(i) + "'s name");
    const std::string named = "tensor '" + t.name + "'";
    if (!names.insert(t.name).second) malformed(kLoad, path, named + " appears twice");
    const auto n_dims = c.read<std::uint32_t>((named + "'s rank").c_str());
    if (n_dims < 1 || n_dims > static_cast<std::uint32_t>(Shape::max_rank))
      malformed(kLoad, path, named + " has " + std::to_string(n_dims) + " dims (1 to " + std::to_string(Shape::max_rank) + " load)");
    t.dims.assign(n_dims, 0);
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto n = c.read<std::uint64_t>((named + "'s dims").c_str());
      if (n > (std::uint64_t{1} << 62)) malformed(kLoad, path, named + " has a dimension of " + std::to_string(n));
      t.dims[n_dims - 1 - d] = static_cast<std::int64_t>(n);  // innermost first in the file
    }
    const auto type_id = c.read<std::uint32_t>((named + "'s type").c_str());
    const GgmlType* type = ggml_type(type_id);
    if (!type) malformed(kLoad, path, named + " has an unknown ggml type " + std::to_string(type_id));
    if (!type->dtype && !type->format) {
      throw Error(ErrorCode::unsupported, std::string("[") + kLoad + "] " + path + ": " + named + " is " + type->name +
                                              ", which trine cannot hold: f32, f16, bf16 and i32 tensors load, and "
                                              "q8_0, q4_0, q4_k, q5_k and q6_k ones as their blocks");
    }
    t.offset = c.read<std::uint64_t>((named + "'s offset").c_str());
    if (type->dtype) {
      t.dtype = *type->dtype;
      t.bytes = checked_count(kLoad, path, t.name, t.dims, dtype_size(t.dtype)) * dtype_size(t.dtype);
    } else {
      const quant::FormatInfo fi = quant::info(*type->format);
      if (t.dims.back() % fi.block_elems != 0) {
        malformed(kLoad, path, named + " is " + fi.name + " with rows of " + std::to_string(t.dims.back()) +
                                   " weights, not whole blocks of " + std::to_string(fi.block_elems));
      }
      t.format = type->format;
      t.dtype = DType::f32;
      t.bytes = checked_count(kLoad, path, t.name, t.dims, 1) / static_cast<std::uint64_t>(fi.block_elems) *
                static_cast<std::uint64_t>(fi.block_bytes);
    }
    if (t.offset % alignment != 0) {
      malformed(kLoad, path, named + "'s offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                         std::to_string(alignment));
    }
    infos.push_back(std::move(t));
  }

  // The data starts at the next multiple of the alignment; offsets become the file's.
  const std::uint64_t header_end = c.position();
  const std::uint64_t data_start = (header_end + alignment - 1) / alignment * alignment;
  const std::uint64_t data_size = data_start <= size ? size - data_start : 0;
  for (TensorEntry& t : infos) {
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      malformed(kLoad, path, "tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at data offset " +
                                         std::to_string(t.offset) + ") ends past the data's " + std::to_string(data_size) +
                                         " bytes");
    }
    t.offset += data_start;
  }
  check_no_overlap(kLoad, path, infos);
  return out;
}

std::uint32_t ggml_type_id(DType d) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.dtype == d || (t.format && dtype_is_quantized(d) && *t.format == quant::format_of(d))) return t.id;
  throw Error(ErrorCode::internal, "[save_gguf] no ggml type for a trine dtype");
}

}  // namespace detail

}  // namespace trine::io
