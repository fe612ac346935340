// Tensor: creation, reads to the host (as Readback entries) and views. Ops on tensors, to(),
// contiguous() and astype() included, live in dispatch/.
#include "trine/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <limits>
#include <numeric>
#include <string>

#include "backends/backend.hpp"
#include "tensor/make.hpp"
#include "tensor/memory_cache.hpp"
#include "tensor/submit.hpp"
#include "trine/error.hpp"
#include "trine/quant.hpp"

namespace trine {
namespace {

std::string describe(const Shape& s, DType t, Device d) {
  return std::string(dtype_name(t)) + s.str() + " on " + d.str();
}

// Bytes for `shape` of `dtype` on `device`, checked as `op` (the function the user called):
// an unavailable device is device_unavailable, negative dims are invalid_shape, overflow is
// out_of_memory.
std::size_t checked_bytes(const char* op, const Shape& shape, DType dtype, Device device) {
  detail::backend_for(device, op);
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
  if (dtype_is_quantized(dtype)) {  // whole blocks along the last dim
    const std::int64_t block = dtype_block_elems(dtype);
    if (shape.dims().empty() || shape.dims().back() % block != 0) {
      throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] " + describe(shape, dtype, device) + ": a " +
                                                dtype_name(dtype) + " tensor holds whole blocks of " +
                                                std::to_string(block) + " weights along its last dim");
    }
    return dtype_bytes(dtype, static_cast<std::int64_t>(n));
  }
  return n * dtype_size(dtype);
}

// Ops that make values (from floats, full, arange, random) have none of a quantized dtype to give.
void refuse_quantized(const char* op, const Shape& shape, DType dtype, Device device) {
  if (!dtype_is_quantized(dtype)) return;
  throw Error(ErrorCode::dtype_mismatch, std::string("[") + op + "] cannot make " + describe(shape, dtype, device) +
                                             " from values: quantize them (trine::quant::quantize) and wrap the "
                                             "blocks with Tensor::from_blocks");
}

// A view of a quantized tensor must keep each row's blocks whole and in order: the last dim
// contiguous and a multiple of the block, every other stride and the offset on block boundaries.
Tensor checked_view(Tensor v, const char* op, const Tensor& of) {
  if (!dtype_is_quantized(v.dtype())) return v;
  const std::int64_t block = dtype_block_elems(v.dtype());
  bool whole = v.rank() >= 1 && v.dim(-1) % block == 0 && v.offset() % block == 0 &&
               (v.strides()[static_cast<std::size_t>(v.rank() - 1)] == 1 || v.dim(-1) == 0);
  for (int i = 0; whole && i + 1 < v.rank(); ++i) whole = v.strides()[static_cast<std::size_t>(i)] % block == 0;
  if (!whole) {
    throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] the view " + v.shape().str() + " of " + of.str() +
                                              " would split its blocks of " + std::to_string(block) +
                                              " weights: a quantized tensor's views keep its last dim whole and "
                                              "contiguous");
  }
  return v;
}

// Runs `entries` on `storage`'s backend and waits: the synchronous transfers of this file.
void transfer(detail::Storage& storage, std::vector<detail::Entry>& entries, const char* what) {
  if (entries.empty()) return;
  detail::submit_entries(storage.backend(), std::move(entries), /*caller_waits=*/true, what)->wait();
}

// Fills the fresh tensor `t` with values gen(first, count, out) produces, converted to its dtype:
// straight into memory the host can address, else in chunks of uploads, so no full-size host
// temporary exists beside the tensor.
template <class Gen>
void fill_generated(const Tensor& t, const char* what, Gen&& gen) {
  const std::size_t n = static_cast<std::size_t>(t.numel());
  if (n == 0) return;
  const std::size_t esz = dtype_size(t.dtype());
  auto& storage = *t.storage();
  constexpr std::size_t chunk = 1 << 16;
  std::vector<float> values(std::min(n, chunk));
  if (auto* p = static_cast<unsigned char*>(storage.backend().host_pointer(storage.handle()))) {
    for (std::size_t i = 0; i < n; i += chunk) {
      const std::size_t c = std::min(chunk, n - i);
      gen(i, c, values.data());
      detail::encode_host(values.data(), c, t.dtype(), p + i * esz);
    }
    return;
  }
  std::vector<unsigned char> bytes(values.size() * esz);
  for (std::size_t i = 0; i < n; i += chunk) {
    const std::size_t c = std::min(chunk, n - i);
    gen(i, c, values.data());
    detail::encode_host(values.data(), c, t.dtype(), bytes.data());
    std::vector<detail::Entry> e{detail::Upload{t.storage(), i * esz, bytes.data(), c * esz, {}}};
    transfer(storage, e, what);
  }
}

// The largest value of `dtype` below `v` (v finite, representable in dtype).
float next_below(float v, DType dtype) {
  if (dtype == DType::f32) return std::nextafter(v, -std::numeric_limits<float>::infinity());
  if (dtype == DType::i32) return v - 1.0f;
  const bool f16 = dtype == DType::f16;
  std::uint16_t bits = f16 ? f32_to_f16(v) : f32_to_bf16(v);
  if ((bits & 0x7fffu) == 0) {
    bits = 0x8001u;  // below +-0: the smallest negative subnormal
  } else if (bits & 0x8000u) {
    ++bits;  // negative: away from zero
  } else {
    --bits;
  }
  return f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

float next_above(float v, DType dtype) { return -next_below(-v, dtype); }

// `v` rounded to the nearest value of `dtype`, as an f32.
float ref_round(float v, DType dtype) {
  switch (dtype) {
    case DType::f32: return v;
    case DType::f16: return f16_to_f32(f32_to_f16(v));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(v));
    case DType::i32: return std::floor(v);  // random's integers: [low, high) rounded down
    default: break;                         // quantized: random refuses them
  }
  return v;
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
               std::int64_t offset, DType dtype, bool pinned)
    : storage_(std::move(storage)), shape_(shape), strides_(strides), offset_(offset), dtype_(dtype), pinned_(pinned) {}

namespace detail {
Tensor empty_tensor(const Shape& shape, DType dtype, Device device, bool pinned) {
  std::size_t bytes = checked_bytes("empty", shape, dtype, device);
  auto& be = detail::backend_for(device, "empty");
  void* handle = detail::cached_allocate(be, device, bytes);
  auto storage = std::make_shared<detail::Storage>(&be, device, handle, bytes);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype, pinned);
}

void encode_host(const float* src, std::size_t count, DType dtype, unsigned char* dst) {
  switch (dtype) {
    case DType::f32:
      if (count) std::memcpy(dst, src, count * 4);
      return;
    case DType::f16:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t h = f32_to_f16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case DType::bf16:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case DType::i32:
      for (std::size_t i = 0; i < count; ++i) {
        std::int32_t v = f32_to_i32(src[i]);
        std::memcpy(dst + 4 * i, &v, 4);
      }
      return;
    default: break;  // quantized: made from blocks (Tensor::from_blocks), never from floats
  }
  throw Error(ErrorCode::invalid_argument, std::string("[from] cannot encode floats as ") + dtype_name(dtype) +
                                               ": quantize them (trine::quant::quantize) and use Tensor::from_blocks");
}


template <class T>
void decode_host(const unsigned char* src, DType dtype, std::size_t n, T* out) {
  auto put = [&](std::size_t i, float v) {
    if constexpr (std::is_same_v<T, float>) {
      out[i] = v;
    } else {
      out[i] = f32_to_i32(v);
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::f32: {
        float v;
        std::memcpy(&v, src + 4 * i, 4);
        put(i, v);
        break;
      }
      case DType::f16:
      case DType::bf16: {
        std::uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        put(i, dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h));
        break;
      }
      case DType::i32: {
        std::int32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        if constexpr (std::is_same_v<T, float>) {
          out[i] = static_cast<float>(v);
        } else {
          out[i] = v;
        }
        break;
      }
      default: return;  // quantized: to_vector dequantizes whole blocks instead
    }
  }
}

Tensor tensor_from_bytes(const unsigned char* bytes, std::size_t count, const Shape& shape, DType dtype,
                         std::optional<Device> device, const char* op) {
  const Device dev = device.value_or(Device::cpu());
  const std::size_t want = checked_bytes(op, shape, dtype, dev);
  if (count != want) {
    throw Error(ErrorCode::invalid_shape, std::string("[") + op + "] " + std::to_string(count) + " bytes for " +
                                              describe(shape, dtype, dev) + ", which holds " + std::to_string(want));
  }
  Tensor t = Tensor::empty(shape, dtype, device);
  if (count != 0) {  // one upload straight from the caller's memory, bytes unchanged
    std::vector<Entry> e{Upload{t.storage(), 0, bytes, count, {}}};
    transfer(*t.storage(), e, op);
  }
  return t;
}

Tensor tensor_generated(const Shape& shape, DType dtype, std::optional<Device> device, const char* op,
                        const std::function<void(std::size_t, std::size_t, float*)>& gen) {
  checked_bytes(op, shape, dtype, device.value_or(Device::cpu()));
  Tensor t = Tensor::empty(shape, dtype, device);
  fill_generated(t, op, gen);
  return t;
}

std::vector<unsigned char> tensor_bytes(const Tensor& t, const char* op) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, std::string("[") + op + "] undefined tensor");
  const Tensor src = t.contiguous();
  const std::size_t n = dtype_bytes(src.dtype(), src.numel());
  std::vector<unsigned char> out(n);
  if (n != 0) {
    std::vector<Entry> e{Readback{src.storage(), dtype_bytes(src.dtype(), src.offset()), out.data(), n, {}}};
    transfer(*src.storage(), e, op);
  }
  return out;
}

template void decode_host<float>(const unsigned char*, DType, std::size_t, float*);
template void decode_host<std::int32_t>(const unsigned char*, DType, std::size_t, std::int32_t*);

}  // namespace detail

Tensor Tensor::empty(const Shape& shape, DType dtype, std::optional<Device> device) {
  return detail::empty_tensor(shape, dtype, device.value_or(Device::cpu()), device.has_value());
}

Tensor Tensor::from(std::span<const float> data, const Shape& shape, DType dtype, std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  refuse_quantized("from", shape, dtype, dev);
  checked_bytes("from", shape, dtype, dev);
  if (static_cast<std::int64_t>(data.size()) != shape.numel()) {
    throw Error(ErrorCode::invalid_shape, "[from] " + std::to_string(data.size()) + " values for shape " + shape.str() +
                                              " (" + std::to_string(shape.numel()) + " elements) on " + dev.str());
  }
  Tensor t = empty(shape, dtype, device);
  if (data.empty()) return t;
  if (dtype == DType::f32) {  // one upload straight from the caller's memory
    std::vector<detail::Entry> e{detail::Upload{t.storage_, 0, data.data(), data.size() * 4, {}}};
    transfer(*t.storage_, e, "from");
    return t;
  }
  // Converted on the host in chunks, each one upload.
  const std::size_t esz = dtype_size(dtype), chunk = 1 << 16;
  std::vector<unsigned char> bytes(std::min(data.size(), chunk) * esz);
  for (std::size_t i = 0; i < data.size(); i += chunk) {
    const std::size_t c = std::min(chunk, data.size() - i);
    detail::encode_host(data.data() + i, c, dtype, bytes.data());
    std::vector<detail::Entry> e{detail::Upload{t.storage_, i * esz, bytes.data(), c * esz, {}}};
    transfer(*t.storage_, e, "from");
  }
  return t;
}

Tensor Tensor::from(std::span<const std::int32_t> data, const Shape& shape, std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  checked_bytes("from", shape, DType::i32, dev);
  if (static_cast<std::int64_t>(data.size()) != shape.numel()) {
    throw Error(ErrorCode::invalid_shape, "[from] " + std::to_string(data.size()) + " integers for " +
                                              describe(shape, DType::i32, dev) + ", which holds " +
                                              std::to_string(shape.numel()));
  }
  Tensor t = empty(shape, DType::i32, device);
  if (!data.empty()) {  // one upload straight from the caller's memory
    std::vector<detail::Entry> e{detail::Upload{t.storage_, 0, data.data(), data.size() * 4, {}}};
    transfer(*t.storage_, e, "from");
  }
  return t;
}

Tensor Tensor::from_bits(std::span<const std::uint16_t> bits, const Shape& shape, DType dtype,
                         std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  if (!dtype_is_16bit(dtype)) {
    throw Error(ErrorCode::dtype_mismatch, std::string("[from_bits] takes f16 or bf16 bit patterns, not ") +
                                               dtype_name(dtype) + " (for " + describe(shape, dtype, dev) + ")");
  }
  checked_bytes("from_bits", shape, dtype, dev);
  if (static_cast<std::int64_t>(bits.size()) != shape.numel()) {
    throw Error(ErrorCode::invalid_shape, "[from_bits] " + std::to_string(bits.size()) + " bit patterns for " +
                                              describe(shape, dtype, dev) + ", which holds " +
                                              std::to_string(shape.numel()));
  }
  Tensor t = empty(shape, dtype, device);
  if (!bits.empty()) {  // one upload straight from the caller's memory, bits unchanged
    std::vector<detail::Entry> e{detail::Upload{t.storage_, 0, bits.data(), bits.size() * 2, {}}};
    transfer(*t.storage_, e, "from_bits");
  }
  return t;
}

Tensor Tensor::from_blocks(std::span<const std::uint8_t> blocks, const Shape& shape, DType dtype,
                           std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  if (!dtype_is_quantized(dtype)) {
    throw Error(ErrorCode::dtype_mismatch, std::string("[from_blocks] takes the blocks of q8_0, q4_0, q4_k, q5_k or "
                                                       "q6_k weights, not ") +
                                               dtype_name(dtype) + " (for " + describe(shape, dtype, dev) + ")");
  }
  return detail::tensor_from_bytes(blocks.data(), blocks.size(), shape, dtype, device, "from_blocks");
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, std::optional<Device> device) {
  return full(shape, 0.0f, dtype, device);
}

Tensor Tensor::full(const Shape& shape, float value, DType dtype, std::optional<Device> device) {
  refuse_quantized("full", shape, dtype, device.value_or(Device::cpu()));
  checked_bytes("full", shape, dtype, device.value_or(Device::cpu()));
  Tensor t = empty(shape, dtype, device);
  fill_generated(t, "full", [&](std::size_t, std::size_t count, float* out) { std::fill_n(out, count, value); });
  return t;
}

Tensor Tensor::arange(float start, float stop, float step, DType dtype, std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  detail::backend_for(dev, "arange");
  refuse_quantized("arange", Shape{}, dtype, dev);
  if (!(step != 0.0f) || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    throw Error(ErrorCode::invalid_argument, "[arange] start, stop and step must be finite and step non-zero (got " +
                                                 std::to_string(start) + ", " + std::to_string(stop) + ", " +
                                                 std::to_string(step) + ") on " + dev.str());
  }
  const double count = std::ceil((static_cast<double>(stop) - start) / step);
  // 2^56 elements is past any machine's memory; checking here keeps the conversion below defined.
  if (count > 0x1p56) {
    throw Error(ErrorCode::out_of_memory, "[arange] " + std::to_string(count) + " elements of " + dtype_name(dtype) +
                                              " on " + dev.str() + " do not fit in memory");
  }
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  Tensor t = empty(Shape{n}, dtype, device);
  fill_generated(t, "arange", [&](std::size_t first, std::size_t c, float* out) {
    for (std::size_t i = 0; i < c; ++i)
      out[i] = static_cast<float>(start + static_cast<double>(step) * static_cast<double>(first + i));
  });
  return t;
}

Tensor Tensor::random(const Shape& shape, std::uint64_t seed, float low, float high, DType dtype, std::optional<Device> device) {
  const Device dev = device.value_or(Device::cpu());
  refuse_quantized("random", shape, dtype, dev);
  checked_bytes("random", shape, dtype, dev);
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high)) {
    throw Error(ErrorCode::invalid_argument, "[random] needs finite low < high, got [" + std::to_string(low) + ", " +
                                                 std::to_string(high) + ") for " + describe(shape, dtype, dev));
  }
  // The range as the dtype holds it: lo the smallest value >= low, hi the largest < high, so a draw
  // rounded to the dtype never leaves [low, high) (rounding to f16 or bf16 can reach high).
  const float lo_rounded = ref_round(low, dtype);
  const float lo = lo_rounded < low ? next_above(lo_rounded, dtype) : lo_rounded;
  const float hi_rounded = ref_round(high, dtype);
  const float hi = hi_rounded >= high ? next_below(hi_rounded, dtype) : hi_rounded;
  if (!(lo <= hi)) {
    throw Error(ErrorCode::invalid_argument, "[random] [" + std::to_string(low) + ", " + std::to_string(high) +
                                                 ") holds no " + dtype_name(dtype) + " value, for " +
                                                 describe(shape, dtype, dev));
  }
  Tensor t = empty(shape, dtype, device);
  const std::uint64_t key = mix(seed);
  fill_generated(t, "random", [&](std::size_t first, std::size_t c, float* out) {
    for (std::size_t i = 0; i < c; ++i) {
      const double u = static_cast<double>(mix(key ^ mix(first + i)) >> 11) * 0x1.0p-53;  // [0, 1)
      float x = ref_round(static_cast<float>(low + (static_cast<double>(high) - low) * u), dtype);
      out[i] = std::clamp(x, lo, hi);
    }
  });
  return t;
}

Tensor Tensor::random(const Shape& shape, std::uint64_t seed, const RandomOptions& o) {
  return random(shape, seed, o.low, o.high, o.dtype, o.device);
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

template <class T>
std::vector<T> Tensor::to_vector() const {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::int32_t>, "to_vector<float> or <std::int32_t>");
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[to_vector] undefined tensor");
  Tensor src = contiguous();
  const std::size_t n = static_cast<std::size_t>(numel());
  std::vector<T> out(n);
  if (n == 0) return out;
  if (dtype_is_quantized(dtype_)) {  // the blocks, dequantized on the host
    if constexpr (std::is_same_v<T, std::int32_t>) {
      throw Error(ErrorCode::dtype_mismatch, "[to_vector] " + str() + " holds quantized weights: read them as floats");
    } else {
      std::vector<std::uint8_t> bytes(dtype_bytes(dtype_, numel()));
      std::vector<detail::Entry> e{
          detail::Readback{src.storage_, dtype_bytes(dtype_, src.offset_), bytes.data(), bytes.size(), {}}};
      transfer(*src.storage_, e, "to_vector");
      quant::dequantize(bytes, quant::format_of(dtype_), out);
      return out;
    }
  }
  const std::size_t esz = dtype_size(dtype_);
  const std::size_t at = static_cast<std::size_t>(src.offset_) * esz;
  const bool same = (dtype_ == DType::f32 && std::is_same_v<T, float>) ||
                    (dtype_ == DType::i32 && std::is_same_v<T, std::int32_t>);
  if (same) {  // straight into the result
    std::vector<detail::Entry> e{detail::Readback{src.storage_, at, out.data(), n * 4, {}}};
    transfer(*src.storage_, e, "to_vector");
    return out;
  }
  std::vector<unsigned char> bytes(n * esz);
  std::vector<detail::Entry> e{detail::Readback{src.storage_, at, bytes.data(), n * esz, {}}};
  transfer(*src.storage_, e, "to_vector");
  detail::decode_host(bytes.data(), dtype_, n, out.data());
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;

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
  return checked_view(Tensor(src.storage_, target, contiguous_strides(target), src.offset_, dtype_, pinned_), "reshape",
                      *this);
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
  return checked_view(Tensor(storage_, s, st, offset_ + (len > 0 ? start * strides_[a] : 0), dtype_, pinned_), "slice",
                      *this);
}

Tensor Tensor::transpose(int axis0, int axis1) const {
  if (!defined()) throw Error(ErrorCode::invalid_argument, "[transpose] undefined tensor");
  int a = normalize_axis("transpose", axis0, rank(), shape_);
  int b = normalize_axis("transpose", axis1, rank(), shape_);
  Shape s = shape_;
  Strides st = strides_;
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return checked_view(Tensor(storage_, s, st, offset_, dtype_, pinned_), "transpose", *this);
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
  return checked_view(Tensor(storage_, s, st, offset_, dtype_, pinned_), "permute", *this);
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
  return checked_view(Tensor(storage_, s, st, offset_, dtype_, pinned_), "broadcast_to", *this);
}

}  // namespace trine
