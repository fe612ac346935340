// Model files: tensors and metadata read from and written to GGUF and safetensors files.
//
//   trine::io::ModelFile f = trine::io::load_safetensors("model.safetensors", trine::Device::parse("cuda:0"));
//   trine::Tensor wq = f.tensor("model.layers.0.self_attn.q_proj.weight");   // bf16, on cuda:0
//   trine::io::ModelFile g = trine::io::load_gguf("model.gguf");           // on the cpu
//   std::int64_t layers = g.value("llama.block_count").as_int();
//
// The file is memory-mapped and each tensor is copied once, from the mapping into its device's
// memory. f32, f16, bf16 and i32 tensors load, and GGUF's q8_0, q4_0, q4_k, q5_k and q6_k ones as
// their blocks (a tensor of that dtype, which matmul and gemv take), or dequantized when asked
// (load_gguf's quantized_as); other element types (q4_1, iq*, i8, f64, ...)
// raise Error(unsupported) naming the tensor and its type. A malformed file (truncated,
// an offset or size outside the data, overlapping tensors, a bad count, length, alignment or
// dimension) raises Error(invalid_argument) naming the file and what is wrong; nothing is ever
// read outside the mapping, whatever the file says. A GGUF tensor's dims are stored innermost
// first (ggml's ne[0] is the row length); trine's shape lists them outermost first, so a GGUF
// weight [4096 columns, 11008 rows] is trine's [11008, 4096].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trine/device.hpp"
#include "trine/tensor.hpp"

namespace trine::io {

// GGUF's metadata value types, with their numbers in the file.
enum class ValueType : std::uint32_t { u8 = 0, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
const char* value_type_name(ValueType t) noexcept;

// One metadata value. A safetensors file's __metadata__ holds strings only.
struct Value {
  ValueType type = ValueType::string;
  std::int64_t integer = 0;         // u8..i64 except u64, and bool (0 or 1)
  std::uint64_t unsigned_int = 0;   // u64
  double number = 0.0;              // f32, f64
  std::string text;                 // string
  ValueType item_type = ValueType::u8;  // array: its items' type
  std::vector<Value> items;         // array

  static Value of(std::string s);
  static Value of(const char* s) { return of(std::string(s)); }
  static Value of_int(ValueType type, std::int64_t v);  // u8, i8, u16, i16, u32, i32 or i64 (range checked)
  static Value of_u64(std::uint64_t v);
  static Value of_float(ValueType type, double v);  // f32 (rounded to float) or f64
  static Value of_bool(bool v);
  static Value of_array(ValueType item_type, std::vector<Value> items);  // items all of item_type

  // Read as: any integer type that fits int64 / any number / ... Otherwise Error(invalid_argument).
  std::int64_t as_int() const;
  double as_double() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const std::vector<Value>& as_array() const;
};

// What a load gives: the metadata and the tensors, both in the file's order.
struct ModelFile {
  std::string path;
  std::string format;  // "gguf" or "safetensors"
  std::vector<std::pair<std::string, Value>> metadata;
  std::vector<std::pair<std::string, Tensor>> tensors;

  bool has_tensor(const std::string& name) const;
  // The tensor of that name; Error(invalid_argument) naming the file when there is none.
  const Tensor& tensor(const std::string& name) const;
  bool has_value(const std::string& key) const;
  const Value& value(const std::string& key) const;  // Error(invalid_argument) when absent
};

// device: where the tensors are placed (default: the cpu, unpinned, as Tensor::from makes them).
ModelFile load_safetensors(const std::string& path, std::optional<Device> device = std::nullopt);
// GGUF's q8_0, q4_0, q4_k, q5_k and q6_k tensors load as tensors of that dtype (their blocks,
// unchanged), or with quantized_as dequantized into it (f32, f16 or bf16; see trine/quant.hpp);
// other quantized types are unsupported either way.
ModelFile load_gguf(const std::string& path, std::optional<Device> device = std::nullopt,
                    std::optional<DType> quantized_as = std::nullopt);

// Writes the tensors (any device, any view: each is read back contiguous) with their names, unique
// and non-empty. safetensors' metadata is strings; GGUF's is typed, and its tensor data is aligned
// to 32 bytes (general.alignment, when given, must be a u32 power of two). f32, f16, bf16 and i32
// tensors, and in GGUF the quantized ones as their blocks; a rank-0 tensor is saved as [1] in GGUF,
// which has no rank 0.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {});
void save_gguf(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
               const std::vector<std::pair<std::string, Value>>& metadata = {});

}  // namespace trine::io
