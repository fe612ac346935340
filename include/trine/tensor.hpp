// Tensor: a view (shape, strides, offset, dtype) over shared Storage that lives on one device.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trine/device.hpp"
#include "trine/dtype.hpp"
#include "trine/shape.hpp"

namespace trine {

class Tensor;
// Tensor::random's trailing options, by name: Tensor::random({2, 3}, 7, {.dtype = DType::f16}).
struct RandomOptions {
  float low = -1.0f;
  float high = 1.0f;
  DType dtype = DType::f32;
  std::optional<Device> device = std::nullopt;
};

namespace detail {
class Storage;
}

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // ---- creation (the data is copied; the result is contiguous) ----
  // Without a device the tensor lives on the host and is not pinned: the dispatcher places the ops
  // on it (trine/dispatch.hpp). With a device it lives there and is pinned: ops on it run there.
  // `data` holds shape.numel() floats; they are converted to `dtype` (round to nearest even).
  static Tensor from(std::span<const float> data, const Shape& shape, DType dtype = DType::f32,
                     std::optional<Device> device = std::nullopt);
  // An i32 tensor holding `data` (shape.numel() integers) exactly: indices for gather and the like.
  static Tensor from(std::span<const std::int32_t> data, const Shape& shape,
                     std::optional<Device> device = std::nullopt);
  // The same, shaped [data.size()]: Tensor::from(std::vector<float>{...}), a std::vector<int>.
  static Tensor from(std::span<const float> data, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
  static Tensor from(std::span<const std::int32_t> data, std::optional<Device> device = std::nullopt);
  // From values written out: Tensor::from({1.5f, 2.0f}), Tensor::from({{1, 2}, {3, 4}}) (rows of one
  // length, else Error(invalid_shape)). Floating values give f32 (or `dtype`), integers give i32.
  // Rows of one value, {{1.f}, {2.f}}, are ambiguous in C++ (each {1.f} may be a float): write
  // Tensor::from({1.f, 2.f}).reshape({2, 1}).
  static Tensor from(std::initializer_list<float> values, DType dtype = DType::f32,
                     std::optional<Device> device = std::nullopt);
  static Tensor from(std::initializer_list<double> values, DType dtype = DType::f32,
                     std::optional<Device> device = std::nullopt);
  static Tensor from(std::initializer_list<std::initializer_list<float>> rows, DType dtype = DType::f32,
                     std::optional<Device> device = std::nullopt);
  static Tensor from(std::initializer_list<std::initializer_list<double>> rows, DType dtype = DType::f32,
                     std::optional<Device> device = std::nullopt);
  static Tensor from(std::initializer_list<std::int32_t> values, std::optional<Device> device = std::nullopt);
  static Tensor from(std::initializer_list<std::initializer_list<std::int32_t>> rows,
                     std::optional<Device> device = std::nullopt);
  // f16 or bf16 elements given as their bit patterns (what a model file stores), copied unchanged.
  static Tensor from_bits(std::span<const std::uint16_t> bits, const Shape& shape, DType dtype,
                          std::optional<Device> device = std::nullopt);
  // Quantized weights (dtype q8_0, q4_0, q4_k, q5_k or q6_k) as GGUF stores them: `blocks` holds
  // the rows of `shape` one after another, each row's last-dim weights as whole blocks
  // (trine/quant.hpp has the layouts), copied unchanged. A [rows, k] weight is what matmul and gemv
  // take; to_vector() dequantizes, and views keep each row's blocks whole.
  static Tensor from_blocks(std::span<const std::uint8_t> blocks, const Shape& shape, DType dtype,
                            std::optional<Device> device = std::nullopt);
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
  static Tensor full(const Shape& shape, float value, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
  // [start, start+step, ...) up to (not including) stop; rank 1.
  static Tensor arange(float start, float stop, float step = 1.0f, DType dtype = DType::f32,
                       std::optional<Device> device = std::nullopt);
  // Uniform in [low, high) from a counter-based generator: the same seed gives the same values
  // on every machine and device.
  static Tensor random(const Shape& shape, std::uint64_t seed, float low = -1.0f, float high = 1.0f,
                       DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
  static Tensor random(const Shape& shape, std::uint64_t seed, const RandomOptions& options);

  // ---- properties ----
  bool defined() const noexcept { return storage_ != nullptr; }
  const Shape& shape() const noexcept { return shape_; }
  const Strides& strides() const noexcept { return strides_; }
  std::int64_t offset() const noexcept { return offset_; }  // in elements
  DType dtype() const noexcept { return dtype_; }
  Device device() const;
  int rank() const noexcept { return shape_.rank(); }
  std::int64_t dim(int i) const { return shape_.dim(i); }
  std::int64_t numel() const noexcept { return shape_.numel(); }
  bool is_contiguous() const noexcept;
  bool shares_storage(const Tensor& other) const noexcept { return storage_ && storage_ == other.storage_; }
  std::string str() const;  // "f32[2, 3] on cpu"
  // Whether ops on this tensor must run on its device (made with an explicit device, by to(), in a
  // Batch(device), or computed by a pinned op); views keep it.
  bool pinned() const noexcept { return pinned_; }

  // ---- moving data ----
  // A copy on another device, pinned there (self, pinned, if already there). Returns at once; reads
  // of the result wait for the copy (its errors are raised there).
  Tensor to(Device device) const;
  Tensor astype(DType dtype) const;      // the cast op
  Tensor contiguous() const;             // self if contiguous, else the copy op
  // Row-major on the host, converted to T (float or std::int32_t) as cast converts: an i32 tensor's
  // values come back exactly as to_vector<std::int32_t>(), and as floats up to 2^24.
  template <class T = float>
  std::vector<T> to_vector() const;
  float item() const;                    // numel() must be 1
  // One element, read to the host (a readback per call: for inspecting, not for loops). Indices
  // count from the end when negative; one per dim. i32 elements come back as their float value.
  float at(std::initializer_list<std::int64_t> index) const;
  float at(std::span<const std::int64_t> index) const;
  // The values, numpy-style: "f32[2, 3] on cpu\n[[1, 2.5, 3],\n [4, 5, 6]]". Past max_elements, each
  // dim shows its first and last 3 entries around "...". f32 values print as the shortest decimal
  // that reads back as the same float; f16 and bf16 values as their exact decimal; i32 as integers.
  // Reads the tensor to the host.
  std::string to_string(std::int64_t max_elements = 1000) const;
  // this @ other: trine::matmul(*this, other) (trine has no matmul operator: `%` or `*` would read
  // as something else; a * b is element-wise, as in numpy).
  Tensor matmul(const Tensor& other) const;

  // ---- views (share storage, no copy) ----
  // reshape is a view when the tensor is contiguous, otherwise it copies first (like numpy).
  // One dim may be -1 (inferred).
  Tensor reshape(const Shape& shape) const;
  // Elements [start, stop) with step > 0 along `axis`; negative start/stop count from the end.
  Tensor slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const;
  Tensor transpose(int axis0 = -2, int axis1 = -1) const;
  Tensor permute(std::span<const int> order) const;
  Tensor permute(std::initializer_list<int> order) const {
    return permute(std::span<const int>(order.begin(), order.size()));
  }
  // Size-1 dims become `shape`'s dims with stride 0 (numpy broadcasting, read-only use).
  Tensor broadcast_to(const Shape& shape) const;

  // ---- writing in place ----
  // Writes `src` into this tensor's elements, which for a view are elements of the tensor it views:
  // cache.slice(1, pos, pos + 1).copy_(k) appends a row to a preallocated KV cache, with no copy of
  // the rest. trine::copy_into(*this, src) (ops.hpp): cast, broadcast, ordered like any op, in
  // batches and async too. Returns this tensor (a handle by value, so that the result of a write
  // into a temporary view, cache.slice(...).copy_(k), can be kept).
  Tensor copy_(const Tensor& src) const;

  // ---- internal: backends and the dispatcher ----
  Tensor(std::shared_ptr<detail::Storage> storage, const Shape& shape, const Strides& strides, std::int64_t offset,
         DType dtype, bool pinned = false);
  const std::shared_ptr<detail::Storage>& storage() const noexcept { return storage_; }

 private:
  std::shared_ptr<detail::Storage> storage_;
  Shape shape_;
  Strides strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::f32;
  bool pinned_ = false;
};

// to_string() with its default threshold.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace trine
