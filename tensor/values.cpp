// Tensors from values written out (initializer lists, spans without a shape), one element read
// back (at), and the values printed (to_string, operator<<): the parts of Tensor a user meets
// first, built on from() and to_vector().
#include <algorithm>
#include <charconv>
#include <ostream>
#include <string>
#include <vector>

#include "trine/error.hpp"
#include "trine/ops.hpp"
#include "trine/tensor.hpp"

namespace trine {
namespace {

// The rows of a nested list flattened, all of one length (else invalid_shape naming the row).
template <class T>
std::vector<T> flatten(std::initializer_list<std::initializer_list<T>> rows, Shape& shape) {
  const auto cols = rows.size() == 0 ? std::size_t{0} : rows.begin()->size();
  std::vector<T> flat;
  flat.reserve(rows.size() * cols);
  std::size_t r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols) {
      throw Error(ErrorCode::invalid_shape, "[from] row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                                                " values where row 0 has " + std::to_string(cols) +
                                                " (a 2-D tensor's rows have one length)");
    }
    flat.insert(flat.end(), row.begin(), row.end());
    ++r;
  }
  shape = Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)};
  return flat;
}

std::vector<float> narrow(std::initializer_list<double> values) {
  std::vector<float> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(static_cast<float>(v));
  return out;
}

std::string index_text(std::span<const std::int64_t> index) {
  std::string s = "(";
  for (std::size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + ")";
}

// One element as printed: f32 the shortest decimal that reads back as the same float; f16 and
// bf16 their exact value (every one has a finite decimal expansion; 120 significant digits hold
// the longest, bf16's smallest subnormals); i32 the integer; quantized weights as f32.
std::string element_text(float v, DType dtype) {
  char buf[160];
  std::to_chars_result r{};
  if (dtype == DType::f32 || dtype_is_quantized(dtype)) {  // dequantized weights are f32 values
    r = std::to_chars(buf, buf + sizeof buf, v);
  } else if (dtype == DType::i32) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v), std::chars_format::general, 120);
  }
  return std::string(buf, r.ptr);
}

constexpr std::int64_t k_edge = 3;  // entries shown at each end of a summarized dim

struct Printer {
  const Shape& shape;
  std::vector<std::int64_t> strides;  // row-major element strides of the values read back
  const std::vector<std::string>& text;
  bool summarize;
  std::size_t width;

  void write(std::string& out, int dim, std::int64_t base) const {
    const std::int64_t n = shape[dim];
    const bool cut = summarize && n > 2 * k_edge;
    const int rank = shape.rank();
    out += '[';
    bool first = true;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == k_edge) {
        separate(out, dim, first);
        out += "...";
        i = n - k_edge - 1;
        continue;
      }
      separate(out, dim, first);
      if (dim == rank - 1) {
        const std::string& t = text[static_cast<std::size_t>(base + i)];
        out.append(width - std::min(width, t.size()), ' ');
        out += t;
      } else {
        write(out, dim + 1, base + i * strides[static_cast<std::size_t>(dim)]);
      }
    }
    out += ']';
  }
  // Between entries: ", " in the innermost dim, else a newline (two past the last two dims) and
  // the indent of the brackets open so far.
  void separate(std::string& out, int dim, bool& first) const {
    if (first) {
      first = false;
      return;
    }
    if (dim == shape.rank() - 1) {
      out += ", ";
      return;
    }
    out += ',';
    out.append(static_cast<std::size_t>(std::max(1, shape.rank() - 1 - dim)), '\n');
    out.append(static_cast<std::size_t>(dim + 1), ' ');
  }
};

}  // namespace

Tensor Tensor::from(std::span<const float> data, DType dtype, std::optional<Device> device) {
  return from(data, Shape{static_cast<std::int64_t>(data.size())}, dtype, device);
}
Tensor Tensor::from(std::span<const std::int32_t> data, std::optional<Device> device) {
  return from(data, Shape{static_cast<std::int64_t>(data.size())}, device);
}
Tensor Tensor::from(std::initializer_list<float> values, DType dtype, std::optional<Device> device) {
  return from(std::span<const float>(values.begin(), values.size()), dtype, device);
}
Tensor Tensor::from(std::initializer_list<double> values, DType dtype, std::optional<Device> device) {
  return from(std::span<const float>(narrow(values)), dtype, device);
}
Tensor Tensor::from(std::initializer_list<std::initializer_list<float>> rows, DType dtype,
                    std::optional<Device> device) {
  Shape shape;
  const std::vector<float> flat = flatten(rows, shape);
  return from(flat, shape, dtype, device);
}
Tensor Tensor::from(std::initializer_list<std::initializer_list<double>> rows, DType dtype,
                    std::optional<Device> device) {
  Shape shape;
  const std::vector<double> flat = flatten(rows, shape);
  std::vector<float> f(flat.begin(), flat.end());
  return from(f, shape, dtype, device);
}
Tensor Tensor::from(std::initializer_list<std::int32_t> values, std::optional<Device> device) {
  return from(std::span<const std::int32_t>(values.begin(), values.size()), device);
}
Tensor Tensor::from(std::initializer_list<std::initializer_list<std::int32_t>> rows, std::optional<Device> device) {
  Shape shape;
  const std::vector<std::int32_t> flat = flatten(rows, shape);
  return from(flat, shape, device);
}

float Tensor::at(std::initializer_list<std::int64_t> index) const {
  return at(std::span<const std::int64_t>(index.begin(), index.size()));
}

float Tensor::at(std::span<const std::int64_t> index) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[at] undefined tensor");
  if (static_cast<int>(index.size()) != rank()) {
    throw Error(ErrorCode::invalid_argument, "[at] index " + index_text(index) + " has " +
                                                 std::to_string(index.size()) + " entries for " + str() + " (rank " +
                                                 std::to_string(rank()) + ")");
  }
  std::int64_t offset = offset_;
  for (int d = 0; d < rank(); ++d) {
    std::int64_t i = index[static_cast<std::size_t>(d)];
    if (i < 0) i += shape_[d];
    if (i < 0 || i >= shape_[d]) {
      throw Error(ErrorCode::invalid_argument, "[at] index " + index_text(index) + " is outside " + str() +
                                                   " (dim " + std::to_string(d) + " has " +
                                                   std::to_string(shape_[d]) + ")");
    }
    offset += i * strides_[d];
  }
  if (dtype_is_quantized(dtype_)) {  // the block that holds it, dequantized
    const std::int64_t block = dtype_block_elems(dtype_);
    const Tensor whole(storage_, Shape{block}, Strides{1}, offset - offset % block, dtype_, pinned_);
    return whole.to_vector()[static_cast<std::size_t>(offset % block)];
  }
  const Tensor one(storage_, Shape{}, Strides{}, offset, dtype_, pinned_);
  if (dtype_ == DType::i32) return static_cast<float>(one.to_vector<std::int32_t>()[0]);
  return one.to_vector()[0];
}

std::string Tensor::to_string(std::int64_t max_elements) const {
  if (!defined()) return "undefined";
  std::vector<float> values;
  if (dtype_ == DType::i32) {
    for (std::int32_t v : to_vector<std::int32_t>()) values.push_back(static_cast<float>(v));
  } else {
    values = to_vector();
  }
  std::vector<std::string> text(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) text[i] = element_text(values[i], dtype_);
  std::string out = str() + "\n";
  if (rank() == 0) return out + text[0];
  if (numel() == 0) return out + "[]";
  std::vector<std::int64_t> strides(static_cast<std::size_t>(rank()), 1);
  for (int d = rank() - 2; d >= 0; --d)
    strides[static_cast<std::size_t>(d)] = strides[static_cast<std::size_t>(d) + 1] * shape_[d + 1];
  std::size_t width = 0;
  for (const auto& t : text) width = std::max(width, t.size());
  Printer{shape_, strides, text, numel() > max_elements, width}.write(out, 0, 0);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

Tensor Tensor::matmul(const Tensor& other) const { return trine::matmul(*this, other); }

}  // namespace trine
