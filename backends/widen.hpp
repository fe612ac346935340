// f16 and bf16 through a GPU kernel that reads and writes f32 only (issue 32's first GPU slice):
// the call runs as its f32 form between casts. Each 16-bit input is cast into an f32 temporary,
// the kernel writes an f32 temporary where the output is 16-bit, and one cast rounds that into the
// output: the op computes in f32 and rounds its result once, as on the cpu, at the cost of a pass
// over each 16-bit tensor more. A kernel that reads 16-bit inputs but writes f32 only (matmul asked
// for a 16-bit result) gets its output widened alone. A backend asks its kernel for the call first (its own 16-bit
// kernels are faster) and widens only what that refuses; both GPU backends use these.
#pragma once

#include <optional>
#include <vector>

#include "backends/backend.hpp"

namespace trine::detail {

// Which tensors of a 16-bit call go to f32 around its kernel: only the output (the kernel reads the
// 16-bit inputs but writes f32 only: a matmul asked for an f16 result), or every 16-bit tensor.
enum class WidenForm { output, all };

// `call` with its f16/bf16 output (form output), or every f16/bf16 input and output (form all),
// replaced by f32 tensors of the same shapes, contiguous: what the f32 kernel is asked about.
// Phantoms (no memory) when `backend` is given, for supports(); fresh temporaries on the call's
// device otherwise, for encode() (may throw Error(out_of_memory)). The other tensors are the call's
// own.
OpCall widened_call(const OpCall& call, Backend* phantom_of, WidenForm form = WidenForm::all);

// The casts around `wide` (from widened_call(call, nullptr, form)) that make it compute `call`: the
// casts into its temporaries before it, in input order, and the cast of its output into call's
// after it (none when the output is already f32 or i32).
struct Widened {
  std::vector<OpCall> before;
  OpCall call;
  std::vector<OpCall> after;
};
Widened widen(const OpCall& call, WidenForm form = WidenForm::all);

// The cast of `from` into `to` (same shape; `to` contiguous), as an entry.
OpCall cast_call(const Tensor& from, const Tensor& to);

// How a 16-bit `call` can run between casts on `backend`, or nullopt: the output alone widened
// when the kernel runs that (fewer passes), else every 16-bit tensor; `runs` is the backend's own
// test of a call (its kernel exists and takes the shapes), asked of the widened form and each cast.
template <class Runs>
std::optional<WidenForm> widen_form(const OpCall& call, const Backend& backend, Runs&& runs) {
  if (!has_16bit(call)) return std::nullopt;
  auto* phantoms = const_cast<Backend*>(&backend);  // phantoms only name it
  const bool out16 = dtype_is_16bit(call.output.dtype());
  if (out16) {
    const OpCall wide = widened_call(call, phantoms, WidenForm::output);
    if (runs(wide) && runs(cast_call(wide.output, call.output))) return WidenForm::output;
  }
  const OpCall wide = widened_call(call, phantoms, WidenForm::all);
  if (!runs(wide)) return std::nullopt;
  for (std::size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i].defined() && call.inputs[i].dtype() != wide.inputs[i].dtype() &&
        !runs(cast_call(call.inputs[i], wide.inputs[i])))
      return std::nullopt;
  if (call.output.dtype() != wide.output.dtype() && !runs(cast_call(wide.output, call.output))) return std::nullopt;
  return WidenForm::all;
}

}  // namespace trine::detail
