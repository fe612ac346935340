// The scalar reference oracle: every op of the table in plain double-precision C++, what backends are tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "trine/ops.hpp"

namespace trine::ref {

struct Array {                      // row-major, contiguous
  std::vector<std::int64_t> shape;  // empty = rank 0 (one element)
  std::vector<double> data;
  bool present = true;  // false for an absent optional input (conv2d bias, layernorm gamma/beta, rmsnorm gamma)
  // What an op's result carries for the error measure (tests/reference/bridge.hpp): per element,
  // the magnitude of the terms that produced it, the scale an f32 rounding error is relative to
  // (sum |a_i b_i| for a dot product, sum |x_i| for a sum, |f(x)| + |x f'(x)| for a function of x).
  // Empty means |data| (the op is one rounding or a select). Inputs leave it empty.
  std::vector<double> scale = {};
  // How results near f32's underflow are measured (bridge.hpp). false: absolute differences below
  // 2^-100 are not measured, since kernels may flush intermediates. true, for a function of one
  // exact input (exp, log, pow, rsqrt, the activations): a result whose reference is below the
  // normal range (2^-126) may be off by up to 2^-126 (flushed to 0), and a normal result is
  // measured however small it is: it may not be flushed.
  bool normal_results_kept = false;
  std::int64_t terms = 1;  // the length of the longest reduction behind one element (bounds grow with it)
  std::int64_t numel() const;
};
Array absent();

// Runs one op of the table. inputs in the op's order (see ops.def / docs/ops.md): matmul(a,b), gemv(a,x),
// dot(x,y), add..div(a,b), scale(x), bias_act(x,bias), relu..clip(x), softmax/log_softmax(x),
// layernorm(x, gamma?, beta?), rmsnorm(x, gamma?), conv2d(x, w, bias?), attention(q,k,v), rope(x),
// sum/mean/max/argmax(x), copy(x), cast(x), minimum/maximum(a, b), where(cond, a, b), exp..pow(x),
// gather(table, indices), concat(inputs...). Optional inputs may be absent() or simply missing from the vector.
// Params: the OpParams alternative the op table names for the op (NoParams where none); another
// alternative throws std::invalid_argument.
// For cast, the result holds the values after rounding to the target dtype (f16 / bf16: round to nearest
// even, overflow to +-inf, NaN stays NaN). The input is first rounded to f32, as trine's cast reads f32.
// Invalid input (shapes that do not fit) throws std::invalid_argument.
Array run(OpKind op, const std::vector<Array>& inputs, const OpParams& params);

// Numpy broadcast of two shapes (throws std::invalid_argument when they do not broadcast).
std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

// ---- one function per op (run() calls these) ----
Array matmul(const Array& a, const Array& b, const MatmulParams& params = {});
Array gemv(const Array& a, const Array& x, const GemvParams& params = {});
Array dot(const Array& x, const Array& y);

Array add(const Array& a, const Array& b);
Array sub(const Array& a, const Array& b);
Array mul(const Array& a, const Array& b);
Array div(const Array& a, const Array& b);
Array minimum(const Array& a, const Array& b);  // NaN when either is NaN
Array maximum(const Array& a, const Array& b);
Array where(const Array& cond, const Array& a, const Array& b);  // a where cond != 0 (NaN counts as true)
Array scale(const Array& x, const ScaleParams& params);

// One activation on one value: leaky_relu alpha = slope, elu alpha, clip [alpha, beta]; identity is x.
double activation(Activation act, double x, double alpha = 0.0, double beta = 0.0);
Array bias_act(const Array& x, const Array& bias, const BiasActParams& params);
Array relu(const Array& x);
Array leaky_relu(const Array& x, double slope);
Array elu(const Array& x, double alpha);
Array sigmoid(const Array& x);
Array tanh(const Array& x);
Array silu(const Array& x);
Array gelu(const Array& x);
Array gelu_tanh(const Array& x);
Array clip(const Array& x, double low, double high);
Array exp(const Array& x);
Array log(const Array& x);
Array sqrt(const Array& x);
Array rsqrt(const Array& x);
Array abs(const Array& x);
Array neg(const Array& x);
Array pow(const Array& x, double exponent);  // C's pow

Array softmax(const Array& x, int axis = -1);
Array log_softmax(const Array& x, int axis = -1);
// gamma / beta may be absent() (then 1 / 0).
Array layernorm(const Array& x, const Array& gamma, const Array& beta, double eps);
Array rmsnorm(const Array& x, const Array& gamma, double eps);

// bias may be absent().
Array conv2d(const Array& x, const Array& w, const Array& bias, const Conv2dParams& params = {});
Array attention(const Array& q, const Array& k, const Array& v, const AttentionParams& params = {});
Array rope(const Array& x, const RopeParams& params = {});

Array sum(const Array& x, int axis = -1, bool keepdims = false);
Array mean(const Array& x, int axis = -1, bool keepdims = false);
Array max(const Array& x, int axis = -1, bool keepdims = false);

Array argmax(const Array& x, int axis = -1, bool keepdims = false);  // ties: the first; NaN: the first NaN

Array copy(const Array& x);
// table [V, D], indices [N] (integers) -> [N, D]; an index outside [0, V) throws std::invalid_argument
Array gather(const Array& table, const Array& indices);
Array concat(const std::vector<Array>& inputs, int axis);
Array cast(const Array& x, DType dtype);
// One value rounded to the nearest value of `dtype` (ties to even, overflow to +-inf, NaN stays NaN).
double round_to_dtype(double v, DType dtype);

}  // namespace trine::ref
