// Internal to ops/samples*.cpp: the small builders the sample tables are written with.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/samples.hpp"

namespace trine::samples::build {

using i64 = std::int64_t;
using L = Layout;

inline Input in(Shape shape, float low = -1.0f, float high = 1.0f, Layout layout = L::contiguous,
                DType dtype = DType::f32) {
  return Input{std::move(shape), dtype, low, high, layout, false, 0.0f};
}
// Quantized weights [rows, k] of dtype q (random blocks with small scales: samples_sized.cpp).
inline Input qin(Shape shape, DType q) { return Input{std::move(shape), q, -1.0f, 1.0f, L::contiguous, false, 0.0f}; }
// Integers in [low, high) (i32 indices, conditions).
inline Input ints(Shape shape, float low, float high, Layout layout = L::contiguous) {
  return in(std::move(shape), low, high, layout, DType::i32);
}
// f32 multiples of `step` in [low, high): values that tie.
inline Input steps(Shape shape, float low, float high, float step, Layout layout = L::contiguous) {
  Input x = in(std::move(shape), low, high, layout);
  x.step = step;
  return x;
}
inline Input view(Shape shape, Layout layout, float low = -1.0f, float high = 1.0f) {
  return in(std::move(shape), low, high, layout);
}
// A sample with no note (the sized and bench tables' calls).
inline Sample call(std::vector<Input> inputs, OpParams params) { return Sample{std::move(inputs), params, {}, false}; }

// Sizes of 1, primes, powers of two and their neighbours.
inline const std::vector<i64> k_sizes = {1, 2, 3, 7, 31, 32, 33, 64, 127, 256, 1000};

// The products' conformance cases (samples_products.cpp).
void matmul_cases(std::vector<Sample>& out);
void gemv_cases(std::vector<Sample>& out);
void dot_cases(std::vector<Sample>& out);

inline Input none() { return Input{{}, DType::f32, 0.0f, 0.0f, L::contiguous, true, 0.0f}; }

// The parameters an activation's samples use (leaky slope, elu alpha, clip's range).
inline ActParams act_params(OpKind op) {
  switch (op) {
    case OpKind::leaky_relu: return {0.01f, 0.0f};
    case OpKind::elu: return {1.0f, 0.0f};
    case OpKind::clip: return {-0.5f, 0.75f};
    default: return {};  // the others take none
  }
}

}  // namespace trine::samples::build
