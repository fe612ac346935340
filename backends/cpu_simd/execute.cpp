// Runs a validated op call with its family's kernel (kernels/<family>.cpp), and the helpers that
// glue turns a call into kernel arguments with: data pointers, the [outer, n, inner] views, and the
// one clearly named step that makes strided inputs contiguous where a kernel wants it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <new>
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
         t.offset() * static_cast<i64>(dtype_size(t.dtype()));
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
  // Only matmul takes f16/bf16 (it reads them through GemmArgs); a contiguous f16 input here would
  // be read as f32.
  TRINE_ASSERT(t.dtype() == DType::f32,
               std::string("[cpu] a kernel was handed a ") + dtype_name(t.dtype()) + " input where it reads f32");
  if (t.is_contiguous()) return reinterpret_cast<const float*>(base_ptr(t));
  keep = detail::empty_tensor(t.shape(), DType::f32, t.device(), false);
  strided_convert(k, t, base_ptr(keep), DType::f32);
  return reinterpret_cast<const float*>(base_ptr(keep));
}

const std::uint8_t* contiguous_bytes(const KernelTable& k, const Tensor& t, Tensor& keep) {
  if (t.is_contiguous()) return base_ptr(t);
  keep = detail::empty_tensor(t.shape(), t.dtype(), t.device(), false);
  strided_convert(k, t, base_ptr(keep), t.dtype());
  return base_ptr(keep);
}

float* out_f32(const detail::OpCall& call) { return reinterpret_cast<float*>(base_ptr(call.output)); }

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
  TRINE_ASSERT(call.output.defined() && call.output.is_contiguous() && call.output.device().kind == DeviceKind::cpu,
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
