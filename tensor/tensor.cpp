// Tensor: creation, host<->device movement and views. Ops on tensors live in dispatch/.
#include "trine/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "backends/backend.hpp"
#include "trine/error.hpp"
#include "trine/ops.hpp"

namespace trine {
namespace {

std::string describe(const Shape& s, DType t, Device d) {
  return std::string(dtype_name(t)) + s.str() + " on " + d.str();
}

// Bytes for `shape` of `dtype`; negative dims are invalid_shape, overflow is out_of_memory.
std::size_t checked_bytes(const char* op, const Shape& shape, DType dtype, Device device) {
  std::size_t n = 1;
  for (auto d : shape.dims()) {
    if (d < 0) throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] negative dimension in " + shape.str());
  }
  for (auto d : shape.dims()) {
    auto ud = static_cast<std::size_t>(d);
    if (ud != 0 && n > std::numeric_limits<std::size_t>::max() / 16 / ud) {
      throw Error(ErrorCode::out_of_memory,
                  std::string("[") + op + "] " + describe(shape, dtype, device) + " does not fit in memory");
    }
    n *= ud;
  }
  return n * dtype_size(dtype);
}

// Host bytes of `count` floats converted to `dtype`.
std::vector<unsigned char> encode_host(std::span<const float> data, DType dtype) {
  std::vector<unsigned char> out(data.size() * dtype_size(dtype));
  switch (dtype) {
    case DType::f32:
      if (!data.empty()) std::memcpy(out.data(), data.data(), out.size());
      break;
    case DType::f16:
      for (std::size_t i = 0; i < data.size(); ++i) {
        std::uint16_t h = f32_to_f16(data[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    case DType::bf16:
      for (std::size_t i = 0; i < data.size(); ++i) {
        std::uint16_t h = f32_to_bf16(data[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
  }
  return out;
}

Tensor from_host_bytes(const Shape& shape, DType dtype, Device device, const void* bytes) {
  Tensor t = Tensor::empty(shape, dtype, device);
  std::size_t n = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  if (n) t.storage()->backend().copy_from_host(t.storage()->handle(), 0, bytes, n);
  return t;
}

// splitmix64: a counter-based generator, so element i depends only on (seed, i).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int normalize_axis(const char* op, int axis, int rank, const Shape& shape) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw Error(ErrorCode::invalid_argument,
                std::string("[") + op + "] axis " + std::to_string(axis) + " out of range for shape " + shape.str());
  }
  return a;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<detail::Storage> storage, const Shape& shape, const Strides& strides,
               std::int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(shape), strides_(strides), offset_(offset), dtype_(dtype) {}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  std::size_t bytes = checked_bytes("empty", shape, dtype, device);
  auto& be = detail::backend_for(device, "empty");
  void* handle = be.allocate(device.index, bytes);
  auto storage = std::make_shared<detail::Storage>(&be, device, handle, bytes);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor Tensor::from(std::span<const float> data, const Shape& shape, DType dtype, Device device) {
  checked_bytes("from", shape, dtype, device);
  if (static_cast<std::int64_t>(data.size()) != shape.numel()) {
    throw Error(ErrorCode::invalid_shape, "[from] " + std::to_string(data.size()) + " values for shape " + shape.str() +
                                              " (" + std::to_string(shape.numel()) + " elements) on " + device.str());
  }
  auto bytes = encode_host(data, dtype);
  return from_host_bytes(shape, dtype, device, bytes.data());
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0f, dtype, device); }

Tensor Tensor::full(const Shape& shape, float value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  std::size_t n = static_cast<std::size_t>(shape.numel());
  if (n == 0) return t;
  auto& be = t.storage_->backend();
  auto one = encode_host(std::span<const float>(&value, 1), dtype);
  if (void* p = be.host_pointer(t.storage_->handle())) {
    auto* dst = static_cast<unsigned char*>(p);
    if (value == 0.0f && !std::signbit(value)) {
      std::memset(dst, 0, n * one.size());
    } else {
      for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * one.size(), one.data(), one.size());
    }
  } else {
    std::vector<unsigned char> host(n * one.size());
    for (std::size_t i = 0; i < n; ++i) std::memcpy(host.data() + i * one.size(), one.data(), one.size());
    be.copy_from_host(t.storage_->handle(), 0, host.data(), host.size());
  }
  return t;
}

Tensor Tensor::arange(float start, float stop, float step, DType dtype, Device device) {
  if (!(step != 0.0f) || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    throw Error(ErrorCode::invalid_argument, "[arange] start, stop and step must be finite and step non-zero (got " +
                                                 std::to_string(start) + ", " + std::to_string(stop) + ", " +
                                                 std::to_string(step) + ") on " + device.str());
  }
  double count = std::ceil((static_cast<double>(stop) - start) / step);
  std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>(start + static_cast<double>(step) * i);
  return from(v, Shape{n}, dtype, device);
}

Tensor Tensor::random(const Shape& shape, std::uint64_t seed, float low, float high, DType dtype, Device device) {
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high)) {
    throw Error(ErrorCode::invalid_argument, "[random] needs finite low < high, got [" + std::to_string(low) + ", " +
                                                 std::to_string(high) + ") for " + describe(shape, dtype, device));
  }
  checked_bytes("random", shape, dtype, device);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::uint64_t key = mix(seed);
  for (std::size_t i = 0; i < v.size(); ++i) {
    double u = static_cast<double>(mix(key ^ mix(i)) >> 11) * 0x1.0p-53;  // [0, 1)
    float x = static_cast<float>(low + (static_cast<double>(high) - low) * u);
    v[i] = x < high ? x : low;  // rounding to float can reach high
  }
  return from(v, shape, dtype, device);
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

bool Tensor::is_contiguous() const noexcept {
  std::int64_t expect = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return describe(shape_, dtype_, device());
}

Tensor Tensor::to(Device target) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[to] undefined tensor");
  if (device() == target) return *this;
  Tensor src = contiguous();
  std::size_t bytes = static_cast<std::size_t>(numel()) * dtype_size(dtype_);
  std::vector<unsigned char> host(bytes);
  auto& sbe = src.storage_->backend();
  if (bytes)
    sbe.copy_to_host(src.storage_->handle(), static_cast<std::size_t>(src.offset_) * dtype_size(dtype_), host.data(),
                     bytes);
  return from_host_bytes(shape_, dtype_, target, host.data());
}

Tensor Tensor::astype(DType dtype) const { return trine::cast(*this, dtype); }

Tensor Tensor::contiguous() const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[contiguous] undefined tensor");
  if (is_contiguous()) return *this;
  return trine::copy(*this);
}

std::vector<float> Tensor::to_vector() const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[to_vector] undefined tensor");
  Tensor src = contiguous();
  std::size_t n = static_cast<std::size_t>(numel());
  std::size_t esz = dtype_size(dtype_);
  std::vector<unsigned char> host(n * esz);
  if (n)
    src.storage_->backend().copy_to_host(src.storage_->handle(), static_cast<std::size_t>(src.offset_) * esz,
                                         host.data(), host.size());
  std::vector<float> out(n);
  switch (dtype_) {
    case DType::f32:
      if (n) std::memcpy(out.data(), host.data(), host.size());
      break;
    case DType::f16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, host.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, host.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
  }
  return out;
}

float Tensor::item() const {
  if (numel() != 1) {
    throw Error(ErrorCode::invalid_shape, "[item] needs exactly one element, got " + str());
  }
  return to_vector()[0];
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[reshape] undefined tensor");
  Shape target = shape;
  int infer = -1;
  std::int64_t known = 1;
  for (int i = 0; i < target.rank(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0)
        throw Error(ErrorCode::invalid_shape, "[reshape] more than one -1 in " + shape.str() + " for " + str());
      infer = i;
    } else if (target[i] < 0) {
      throw Error(ErrorCode::invalid_shape, "[reshape] negative dimension in " + shape.str() + " for " + str());
    } else {
      known *= target[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0) {
      throw Error(ErrorCode::invalid_shape, "[reshape] cannot infer -1 in " + shape.str() + " for " + str());
    }
    target[infer] = numel() / known;
  }
  if (target.numel() != numel()) {
    throw Error(ErrorCode::invalid_shape, "[reshape] cannot reshape " + str() + " to " + shape.str() + " (" +
                                              std::to_string(numel()) + " vs " + std::to_string(target.numel()) +
                                              " elements)");
  }
  Tensor src = contiguous();
  return Tensor(src.storage_, target, contiguous_strides(target), src.offset_, dtype_);
}

Tensor Tensor::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[slice] undefined tensor");
  int a = normalize_axis("slice", axis, rank(), shape_);
  std::int64_t n = shape_[a];
  if (step <= 0)
    throw Error(ErrorCode::invalid_argument,
                "[slice] step must be positive, got " + std::to_string(step) + " for " + str());
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<std::int64_t>(start, 0, n);
  stop = std::clamp<std::int64_t>(stop, 0, n);
  std::int64_t len = stop > start ? (stop - start + step - 1) / step : 0;
  Shape s = shape_;
  Strides st = strides_;
  s[a] = len;
  st[a] = strides_[a] * step;
  return Tensor(storage_, s, st, offset_ + (len > 0 ? start * strides_[a] : 0), dtype_);
}

Tensor Tensor::transpose(int axis0, int axis1) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[transpose] undefined tensor");
  int a = normalize_axis("transpose", axis0, rank(), shape_);
  int b = normalize_axis("transpose", axis1, rank(), shape_);
  Shape s = shape_;
  Strides st = strides_;
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::permute(std::span<const int> order) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[permute] undefined tensor");
  if (static_cast<int>(order.size()) != rank()) {
    throw Error(ErrorCode::invalid_argument,
                "[permute] order has " + std::to_string(order.size()) + " axes for " + str());
  }
  Shape s = shape_;
  Strides st = strides_;
  bool seen[Shape::max_rank] = {};
  for (int i = 0; i < rank(); ++i) {
    int a = normalize_axis("permute", order[static_cast<std::size_t>(i)], rank(), shape_);
    if (seen[a])
      throw Error(ErrorCode::invalid_argument, "[permute] axis " + std::to_string(a) + " repeated for " + str());
    seen[a] = true;
    s[i] = shape_[a];
    st[i] = strides_[a];
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::broadcast_to(const Shape& target) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[broadcast_to] undefined tensor");
  if (target.rank() < rank()) {
    throw Error(ErrorCode::invalid_shape, "[broadcast_to] cannot broadcast " + str() + " to " + target.str());
  }
  Shape s = target;
  Strides st = target;
  int off = target.rank() - rank();
  for (int i = 0; i < target.rank(); ++i) {
    if (i < off) {
      st[i] = 0;
      continue;
    }
    std::int64_t d = shape_[i - off];
    if (d == target[i]) {
      st[i] = strides_[i - off];
    } else if (d == 1) {
      st[i] = 0;
    } else {
      throw Error(ErrorCode::invalid_shape, "[broadcast_to] cannot broadcast " + str() + " to " + target.str());
    }
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

}  // namespace trine
