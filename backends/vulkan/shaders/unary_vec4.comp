// The activations and scale of unary.comp on whole vec4s (input offset a multiple of 4): each
// invocation does ELEMS vec4s, a workgroup's stride apart. lavapipe's cost is per invocation, so
// several vec4s each is what gets element-wise ops near its copy speed; the host sends the last
// n % 4 elements to unary.comp.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 4;
layout(constant_id = 2) const uint ACT = OP_copy;  // activate()'s code

layout(set = 0, binding = 0) readonly buffer X { vec4 x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { vec4 y[]; };
layout(push_constant) uniform Push {
  uint n4;     // vec4s to write
  uint x_off4; // in vec4s
  uint y_off4;
  float alpha;
  float beta;
} p;

void main() {
  uint base = linear_group() * gl_WorkGroupSize.x * ELEMS + gl_LocalInvocationID.x;
  for (uint k = 0u; k < ELEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < p.n4) {
      vec4 v = x[p.x_off4 + i];
      y[p.y_off4 + i] = vec4(activate(ACT, v.x, p.alpha, p.beta), activate(ACT, v.y, p.alpha, p.beta),
                             activate(ACT, v.z, p.alpha, p.beta), activate(ACT, v.w, p.alpha, p.beta));
    }
  }
}
