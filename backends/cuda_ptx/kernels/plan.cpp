// The op table assembled from the family files (one per TRINE_FAMILY of ops.def), the generator
// list derived from it, and the helpers the families' plans share.
#include "backends/cuda_ptx/kernels/plan.hpp"

#include <algorithm>

namespace trine::cuda {

namespace kernels {

const CudaOps& table() {
  static const CudaOps t = [] {
    CudaOps r;
    // clang-format off
#define TRINE_FAMILY(name) register_##name(r);
#include "trine/ops.def"
    // clang-format on
    r.ops.require_complete("cuda", "backends/cuda_ptx");  // a family file that forgot an op fails here
    return r;
  }();
  return t;
}

const std::vector<const Generator*>& generators() { return table().generators; }

const Generator* find_generator(std::string_view name) {
  for (const Generator* g : generators())
    if (g->name == name) return g;
  return nullptr;
}

}  // namespace kernels

bool contiguous_inputs(const OpCall& c, bool gathered) {
  if (gathered) return true;
  for (const auto& t : c.inputs)
    if (t.defined() && !t.is_contiguous()) return false;
  return true;
}

std::vector<std::array<i64, 2>> collapsed_dims(const Tensor& t) {
  std::vector<std::array<i64, 2>> dims;  // size, stride
  for (int i = 0; i < t.rank(); ++i)
    if (t.shape()[i] != 1) dims.push_back({t.shape()[i], t.strides()[i]});
  for (std::size_t i = dims.size(); i-- > 1;) {
    if (dims[i - 1][1] == dims[i][1] * dims[i][0]) {
      dims[i - 1] = {dims[i - 1][0] * dims[i][0], dims[i][1]};
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return dims;
}

std::vector<BroadcastDim> broadcast_dims(const OpCall& c) {
  const Shape& os = c.output.shape();
  const std::size_t inputs = std::min<std::size_t>(c.inputs.size(), 3);
  std::array<Tensor, 3> views;
  for (std::size_t k = 0; k < inputs; ++k) views[k] = c.inputs[k].broadcast_to(os);
  std::vector<BroadcastDim> dims;
  for (int i = 0; i < os.rank(); ++i) {
    if (os[i] == 1) continue;
    BroadcastDim dim{os[i], {0, 0, 0}};
    for (std::size_t k = 0; k < inputs; ++k) dim.stride[k] = views[k].strides()[i];
    dims.push_back(dim);
  }
  for (std::size_t i = dims.size(); i-- > 1;) {
    BroadcastDim& outer = dims[i - 1];
    const BroadcastDim& inner = dims[i];
    bool merge = true;
    for (std::size_t k = 0; k < inputs; ++k) merge = merge && outer.stride[k] == inner.stride[k] * inner.size;
    if (merge) {
      outer = {outer.size * inner.size, inner.stride};
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return dims;
}

void split(const Shape& s, int axis, i64& outer, i64& n, i64& inner) {
  if (axis < 0) axis += s.rank();
  outer = inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  n = s[axis];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
}

kernels::Elem elem_of(DType t) noexcept {
  switch (t) {
    case DType::f32: return kernels::Elem::f32;
    case DType::f16: return kernels::Elem::f16;
    case DType::bf16: return kernels::Elem::bf16;
    case DType::i32: return kernels::Elem::i32;
    default: break;  // quantized weights: supports() refuses them before a plan is made
  }
  return kernels::Elem::f32;
}

}  // namespace trine::cuda
