// Runs a validated op call with its family's kernel (kernels/<family>.cpp), and the helpers that
// glue turns a call into kernel arguments with: data pointers, the [outer, n, inner] views, and the
// one clearly named step that makes strided inputs contiguous where a kernel wants it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <new>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdexcept>
#include <string>
#include <string_view>

#include "backends/assert.hpp"
#include "backends/cpu_simd/execute.hpp"
#include "tensor/make.hpp"
#include "backends/cpu_simd/thread_pool.hpp"
#include "trine/error.hpp"

namespace trine::cpu {

std::uint8_t* base_ptr(const Tensor& t) {
  return static_cast<std::uint8_t*>(t.storage()->backend().host_pointer(t.storage()->handle())) +
         static_cast<i64>(dtype_bytes(t.dtype(), t.offset()));
}

// Work is split over flat element ranges, so a single long row uses every thread too. A plain
// transpose (the last dim strided, the one before it contiguous) goes through blocks transposed in
// registers by the kernel.
void strided_convert(const KernelTable& k, const Tensor& src, std::uint8_t* dst, DType dst_dtype) {
  const i64 n = src.numel();
  if (n == 0) return;
  const int rank = src.rank();
  const Shape shape = src.shape();
  const Strides strides = src.strides();
  const i64 inner = rank ? shape[rank - 1] : 1;
  const i64 inner_stride = rank ? strides[rank - 1] : 1;
  const i64 ses = static_cast<i64>(dtype_size(src.dtype()));
  const i64 des = static_cast<i64>(dtype_size(dst_dtype));
  const std::uint8_t* sbase = base_ptr(src);
  const DType from = src.dtype();
  // Element offset of the first element of row r (rows = all dims but the last).
  auto row_offset = [&](i64 r, int last_dim) {
    i64 off = 0;
    for (int d = last_dim; d >= 0; --d) {
      off += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return off;
  };

  if (rank >= 2 && inner_stride != 1 && strides[rank - 2] == 1 && inner >= 8 && shape[rank - 2] >= 8) {
    // 64 destination rows by 256 columns: both sides of a block fit in L2, and its 256 source rows
    // (one page each when rows are long) in the TLB.
    constexpr i64 tile = 64, cb_len = 256;
    const i64 rows = shape[rank - 2];
    const i64 mats = n / (rows * inner);
    const bool stream = n * des >= stream_transpose_bytes();
    const i64 row_tiles = (rows + tile - 1) / tile;
    parallel_for(mats * row_tiles, 1, [&](i64 t0, i64 t1) {
      for (i64 t = t0; t < t1; ++t) {
        const i64 m = t / row_tiles;
        const i64 r0 = (t % row_tiles) * tile;
        const i64 moff = row_offset(m, rank - 3);
        for (i64 c0 = 0; c0 < inner; c0 += cb_len) {
          k.transpose(from, dst_dtype, sbase + (moff + r0 + c0 * inner_stride) * ses, inner_stride,
                      dst + ((m * rows + r0) * inner + c0) * des, inner, std::min(tile, rows - r0),
                      std::min(cb_len, inner - c0), stream);
        }
      }
    });
    return;
  }

  parallel_for(n, 1 << 15, [&](i64 e0, i64 e1) {
    i64 e = e0;
    while (e < e1) {
      const i64 r = e / inner;
      const i64 c = e % inner;
      const i64 count = std::min(inner - c, e1 - e);
      k.convert(from, dst_dtype, sbase + (row_offset(r, rank - 2) + c * inner_stride) * ses, inner_stride,
                dst + e * des, count);
      e += count;
    }
  });
}

const float* contiguous_f32(const KernelTable& k, const Tensor& t, Tensor& keep) {
  if (!t.defined()) return nullptr;
  // 16-bit tensors reach kernels through run_staged or their own widening (matmul's GemmArgs,
  // binary's rows); a contiguous f16 input here would be read as f32.
  TRINE_ASSERT(t.dtype() == DType::f32,
               std::string("[cpu] a kernel was handed a ") + dtype_name(t.dtype()) + " input where it reads f32");
  if (t.is_contiguous()) return reinterpret_cast<const float*>(base_ptr(t));
  keep = detail::empty_tensor(t.shape(), DType::f32, t.device(), false);
  strided_convert(k, t, base_ptr(keep), DType::f32);
  return reinterpret_cast<const float*>(base_ptr(keep));
}

const float* widened_f32(const KernelTable& k, const Tensor& t, Tensor& keep) {
  if (!t.defined() || t.dtype() == DType::f32) return contiguous_f32(k, t, keep);
  keep = detail::empty_tensor(t.shape(), DType::f32, t.device(), false);
  strided_convert(k, t, base_ptr(keep), DType::f32);
  return reinterpret_cast<const float*>(base_ptr(keep));
}

// Results up to this many elements (a decode step's row, 256 KiB of f32) round from a heap buffer on
// the calling thread; larger ones from a pooled tensor, over the threads.
constexpr i64 f32_result_small = i64{1} << 16;

F32Result::F32Result(const KernelTable& k, const detail::OpCall& call) : k_(k), call_(call) {
  const i64 n = call.output.numel();
  if (call.output.dtype() == DType::f32) {
    data_ = out_f32(call);
  } else if (n <= f32_result_small) {
    small_.resize(static_cast<std::size_t>(n));
    data_ = small_.data();
  } else {
    temp_ = detail::empty_tensor(call.output.shape(), DType::f32, call.output.device(), false);
    data_ = reinterpret_cast<float*>(base_ptr(temp_));
  }
}

void F32Result::round() const {
  if (temp_.defined())
    strided_convert(k_, temp_, base_ptr(call_.output), call_.output.dtype());
  else if (!small_.empty())
    k_.convert(DType::f32, call_.output.dtype(), small_.data(), 1, base_ptr(call_.output), call_.output.numel());
}

const std::uint8_t* contiguous_bytes(const KernelTable& k, const Tensor& t, Tensor& keep) {
  if (t.is_contiguous()) return base_ptr(t);
  keep = detail::empty_tensor(t.shape(), t.dtype(), t.device(), false);
  strided_convert(k, t, base_ptr(keep), t.dtype());
  return base_ptr(keep);
}

float* out_f32(const detail::OpCall& call) { return reinterpret_cast<float*>(base_ptr(call.output)); }

namespace {

// dst[0, bytes) = src[0, bytes), the 16-byte aligned middle with non-temporal stores (the caller
// fences): a staged 16-bit result too large to stay in cache goes to memory without each line
// being read first, as the f32 kernels' streamed outputs do (store_run), which halves what a normal
// store's read-for-ownership adds to a 16-bit output.
void stream_bytes(std::uint8_t* dst, const std::uint8_t* src, i64 bytes) {
#if defined(__SSE2__)
  const i64 head = std::min<i64>(bytes, static_cast<i64>((16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16));
  std::memcpy(dst, src, static_cast<std::size_t>(head));
  i64 i = head;
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  std::memcpy(dst + i, src + i, static_cast<std::size_t>(bytes - i));
#else
  std::memcpy(dst, src, static_cast<std::size_t>(bytes));
#endif
}

}  // namespace

// Pieces ahead that run_staged_raw prefetches its 16-bit inputs.
constexpr i64 staged_ahead = 2;

void run_staged_raw(const KernelTable& k, const detail::OpCall& call, i64 units, std::initializer_list<i64> in_units,
                    i64 out_unit, i64 grain_elems, StagedKernel kernel, void* ctx) {
  constexpr std::size_t max_inputs = 4;
  const std::size_t n_in = in_units.size();
  TRINE_ASSERT(n_in <= max_inputs && n_in >= call.inputs.size(),
               std::string("[") + op_info(call.op).name + "] staged kernel given the wrong number of input units");
  const i64* unit = in_units.begin();
  Tensor keep[max_inputs];
  const std::uint8_t* in[max_inputs] = {};
  DType dt[max_inputs] = {};
  const DType out_dtype = call.output.dtype();
  bool wide = dtype_is_16bit(out_dtype);
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (!t.defined()) continue;
    in[i] = contiguous_bytes(k, t, keep[i]);
    dt[i] = t.dtype();
    wide = wide || dtype_is_16bit(dt[i]);
  }
  std::uint8_t* out = base_ptr(call.output);
  const float* p[max_inputs] = {};
  if (!wide) {
    for (std::size_t i = 0; i < n_in; ++i) p[i] = reinterpret_cast<const float*>(in[i]);
    kernel(ctx, p, reinterpret_cast<float*>(out), units);
    return;
  }
  // Inputs read whole: widened once.
  std::vector<float> whole[max_inputs];
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    if (in[i] && unit[i] == 0 && dtype_is_16bit(dt[i])) {
      const i64 n = call.inputs[i].numel();
      whole[i].resize(static_cast<std::size_t>(n));
      k.convert(dt[i], DType::f32, in[i], 1, whole[i].data(), n);
    }
  }
  i64 unit_elems = std::max<i64>(1, out_unit);
  for (std::size_t i = 0; i < n_in; ++i) unit_elems = std::max(unit_elems, unit[i]);
  const i64 piece = std::max<i64>(1, staged_piece_elems / unit_elems);
  const i64 grain = std::max(piece, std::max<i64>(1, grain_elems / unit_elems));
  const bool out16 = dtype_is_16bit(out_dtype);
  const i64 out_size = static_cast<i64>(dtype_size(out_dtype));
  const bool stream = out16 && call.output.numel() * out_size >= stream_store_bytes();
  parallel_for(units, grain, [&](i64 b, i64 e) {
    std::vector<float> buf[max_inputs], obuf;
    std::vector<std::uint16_t> half;
    const float* q[max_inputs] = {};
    for (i64 u = b; u < e; u += piece) {
      const i64 count = std::min(piece, e - u);
      // The 16-bit input lines of the piece after next, asked into L2 now: between pieces the
      // widening, the kernel and the rounding leave the input stream idle, and the hardware
      // prefetcher falls behind (sum of f16 [4096, 4096], one thread, Zen 4: 2.7 -> 1.5-1.9 ms).
      if (u + staged_ahead * piece < e) {
        const i64 next = std::min(piece, e - u - staged_ahead * piece);
        for (std::size_t i = 0; i < n_in; ++i) {
          if (!in[i] || unit[i] == 0 || !dtype_is_16bit(dt[i])) continue;
          const std::uint8_t* p0 = in[i] + (u + staged_ahead * piece) * unit[i] * 2;
          for (i64 off = 0; off < next * unit[i] * 2; off += 64) __builtin_prefetch(p0 + off, 0, 2);
        }
      }
      for (std::size_t i = 0; i < n_in; ++i) {
        if (!in[i]) {
          q[i] = nullptr;
        } else if (unit[i] == 0) {
          q[i] = dtype_is_16bit(dt[i]) ? whole[i].data() : reinterpret_cast<const float*>(in[i]);
        } else if (dtype_is_16bit(dt[i])) {
          const i64 n = count * unit[i];
          buf[i].resize(static_cast<std::size_t>(n));
          k.convert(dt[i], DType::f32, in[i] + u * unit[i] * 2, 1, buf[i].data(), n);
          q[i] = buf[i].data();
        } else {
          q[i] = reinterpret_cast<const float*>(in[i]) + u * unit[i];
        }
      }
      std::uint8_t* o = out + u * out_unit * out_size;
      if (out16) obuf.resize(static_cast<std::size_t>(count * out_unit));
      kernel(ctx, q, out16 ? obuf.data() : reinterpret_cast<float*>(o), count);
      if (out16 && stream) {
        half.resize(static_cast<std::size_t>(count * out_unit));
        k.convert(DType::f32, out_dtype, obuf.data(), 1, half.data(), count * out_unit);
        stream_bytes(o, reinterpret_cast<const std::uint8_t*>(half.data()), count * out_unit * 2);
      } else if (out16) {
        k.convert(DType::f32, out_dtype, obuf.data(), 1, o, count * out_unit);
      }
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence();
#endif
  });
}

void split_axis(const Shape& shape, int axis, i64& outer, i64& n, i64& inner) {
  if (axis < 0) axis += shape.rank();
  outer = 1;
  inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape[i];
}

namespace {

// Error text for an allocation that failed inside op `op`: "[op] ..." whatever the allocating
// helper called itself ("[empty]" for a temporary tensor, "[gemm]" for packing scratch).
std::string out_of_memory_message(OpKind op, std::string_view what) {
  if (!what.empty() && what.front() == '[') {
    if (const auto close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return std::string("[") + op_info(op).name + "] out of memory in the cpu kernel's temporaries: " + std::string(what);
}

// "[op] text". Built with += : GCC 12 warns falsely on operator+ chains here (GCC bug 105329).
std::string in_op(OpKind op, const char* text) {
  std::string s = "[";
  s += op_info(op).name;
  s += "] ";
  s += text;
  return s;
}

}  // namespace

void execute(const KernelTable& k, const detail::OpCall& call) {
  const std::string_view name = op_info(call.op).name;
  TRINE_ASSERT(detail::output_writable(call) && call.output.device().kind == DeviceKind::cpu,
               in_op(call.op, "the cpu backend was handed an output it cannot write in place"));
  TRINE_ASSERT(static_cast<int>(call.inputs.size()) >= op_info(call.op).min_inputs,
               in_op(call.op, "the cpu backend was handed fewer inputs than the op takes"));
  // Kernels and their helpers allocate with std containers and detail::empty_tensor; whatever fails, the
  // caller hears an out_of_memory naming this op.
  try {
    const OpKernel* kernel = k.ops.find(call.op);
    TRINE_ASSERT(kernel != nullptr, in_op(call.op, "the cpu backend was handed an op it refuses"));
    (*kernel)(k, call);
  } catch (const std::bad_alloc& e) {
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, e.what()));
  } catch (const std::length_error& e) {  // a std::vector asked for more than max_size()
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, e.what()));
  } catch (const Error& e) {
    const std::string_view what = e.what();
    if (e.code() != ErrorCode::out_of_memory || (what.size() > name.size() + 1 && what.front() == '[' &&
                                                 what.substr(1, name.size()) == name && what[name.size() + 1] == ']'))
      throw;
    throw Error(ErrorCode::out_of_memory, out_of_memory_message(call.op, what));
  }
}

}  // namespace trine::cpu
