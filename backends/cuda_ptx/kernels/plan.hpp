// From an op call to kernel launches: what each family file (kernels/<family>.cpp) registers for
// its ops, the table they fill, and the pieces their plans share (arguments, collapsed strides).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda_ptx/cuda_launch.hpp"
#include "backends/cuda_ptx/kernels/generator.hpp"
#include "backends/op_registry.hpp"

namespace trine::cuda {

using i64 = std::int64_t;
// (Named here: in the family files, `detail` is the PTX emitter's.)
using OpCall = trine::detail::OpCall;

// Kernel arguments: each in its own 8-byte slot, in the kernel's parameter order.
class Args {
 public:
  template <class T>
  void add(T v) {
    static_assert(sizeof(T) <= 8);
    std::array<unsigned char, 8> slot{};
    std::memcpy(slot.data(), &v, sizeof(T));
    slots_.push_back(slot);
  }
  void add_ptr(const Tensor& t) { add<CUdeviceptr>(device_ptr(t)); }
  void add_ptr_or_null(const OpCall& c, std::size_t i) {
    add<CUdeviceptr>(i < c.inputs.size() && c.inputs[i].defined() ? device_ptr(c.inputs[i]) : 0);
  }
  std::vector<void*> pointers() {
    std::vector<void*> p;
    for (auto& s : slots_) p.push_back(s.data());
    return p;
  }
  static CUdeviceptr device_ptr(const Tensor& t) {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(t.storage()->handle())) +
           static_cast<CUdeviceptr>(dtype_bytes(t.dtype(), t.offset()));  // whole blocks of a quantized t
  }

 private:
  std::vector<std::array<unsigned char, 8>> slots_;
};

// One kernel launch: a configuration of a generator (its family's plan picked it by its data), the
// generator's geometry input, the arguments.
struct Plan {
  const kernels::Generator* generator = nullptr;
  std::size_t config = 0;  // an index into generator->configs
  std::vector<i64> sizes;
  Args args;
};

// A call's launches, in order; a call with nothing to compute has none.
struct Steps {
  std::vector<Plan> launches;
  bool zero_output = false;  // an empty sum: the output is zeros
  // gather: the launches check the indices on the device (cuda_launch.hpp, IndexCheck).
  std::optional<IndexCheck> index_check;

  Plan& add(const kernels::Generator& generator, std::size_t config, std::vector<i64> sizes) {
    launches.push_back(Plan{&generator, config, std::move(sizes), {}});
    return launches.back();
  }
};

// Device state a plan may need: dot's partial sums, rope's tables, gather's index check. Null when
// only asking whether a kernel exists (supports()).
struct Resources {
  const DriverApi* api = nullptr;
  CUstream stream = nullptr;
  DeviceKernels* kernels = nullptr;
};

// An op's kernel on cuda_ptx, as its family file registers it.
struct OpKernel {
  // The launches for a call, or nullopt when no generated kernel serves it (then supports() is
  // false). `gathered`: plan as if every strided input had been made contiguous (what supports()
  // asks before the backend inserts the gathers).
  std::optional<Steps> (*plan)(const OpCall& call, int sm, const Resources& res, bool gathered);
  // For an op with known limits: why `plan` refuses a call past them, in words, or nullopt for a
  // call within them (the generic reasons then apply). Null for an op without such limits.
  std::optional<std::string> (*limits)(const OpCall& call) = nullptr;
  // Its launches check an input on the device (gather's indices) and may fail the call when the
  // work completes (Steps::index_check): the backend reads the check back after them.
  bool checks_on_device = false;
  // Its kernels read (and write) f16 and bf16 tensors. The op table lets most ops take them (issue
  // 32), but a kernel written for f32 would read their bytes as f32: without this, a call with a
  // 16-bit tensor runs as its f32 form between casts (backends/widen.hpp, cuda_backend.cpp's encode).
  bool takes_16bit = false;
};

// What the family files fill: every op's kernel or refusal, and the generators their plans launch
// (each family registers the ones it defines).
struct CudaOps {
  detail::OpRegistry<OpKernel> ops;
  std::vector<const kernels::Generator*> generators;
};

namespace kernels {

// Each family's file (kernels/<family>.cpp, one per TRINE_FAMILY of ops.def) registers its ops and
// its generators: a family without its file fails the link here.
#define TRINE_FAMILY(name) void register_##name(CudaOps& r);
#include "trine/ops.def"

// The table, built once from the family files. Throws Error(internal) naming every op with neither
// a kernel nor a refusal and the file to add it to (the backend's start-up calls it first).
const CudaOps& table();

// kernels/reduce.cpp: a launch of reduce's kernel for `op` (sum, mean or max) over rows (`row`,
// inner == 1) or columns of x stored as `e`, arguments still to add; dot sums its partial sums
// with it.
Plan reduce_plan(OpKind op, bool row, std::vector<i64> sizes, Elem e = Elem::f32);

// kernels/matmul_quant.cpp: matmul and gemv with a quantized weight (matmul's input 1, gemv's input
// 0), whose plans hand such calls to it; matmul registers the generator.
const Generator& matmul_quant_generator();
const Generator& matmul_quant_tiles_generator();
std::optional<Steps> plan_quantized(const OpCall& c, bool gathered);

}  // namespace kernels

// The kernel reads its inputs contiguous: they are, or the backend gathers them first (`gathered`).
bool contiguous_inputs(const OpCall& c, bool gathered = false);
// A view's dims and element strides ({size, stride}, outermost first) with size-1 dims dropped
// and mergeable neighbours merged: what the gather kernel addresses, 6 at a time.
std::vector<std::array<i64, 2>> collapsed_dims(const Tensor& t);
// Output dims and every input's element strides (2 or 3 inputs, each broadcast to the output; the
// rest left 0), size-1 dims dropped and mergeable neighbours merged, outermost first: what the
// binary kernel addresses, 4 at a time.
struct BroadcastDim {
  i64 size;
  std::array<i64, 3> stride;
};
std::vector<BroadcastDim> broadcast_dims(const OpCall& c);
// [outer, n, inner] around `axis`.
void split(const Shape& s, int axis, i64& outer, i64& n, i64& inner);
// How a tensor of dtype t is stored, as configurations say it.
kernels::Elem elem_of(DType t) noexcept;

}  // namespace trine::cuda
