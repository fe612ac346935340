// Element-wise activations and scale on contiguous f32: each invocation does ELEMS elements, a
// workgroup's stride apart so neighbouring invocations touch neighbouring floats (lavapipe's cost
// is per invocation, so each one does several).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 16;
// The activation is a specialization constant: each pipeline holds one activation's code only
// (a switch on a push constant made llvmpipe evaluate every case for every element).
layout(constant_id = 2) const uint ACT = OP_copy;  // activate()'s code

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n;
  uint x_off;
  uint y_off;
  float alpha;
  float beta;
} p;

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < p.n) y[p.y_off + i] = activate(ACT, x[p.x_off + i], p.alpha, p.beta);
  }
}
