// conv2d (NCHW, stride, padding, dilation, groups, bias) directly: one invocation per output
// element, summing over its group's channels and the kernel window. The correct first slice; the
// implicit-GEMM form with shared-memory tiles is the next step.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint N, C, H, W, K, P, Q, R, S;
  int sh, sw, ph, pw, dh, dw;
  uint groups, has_bias, x_off, w_off, b_off;
} p;

void main() {
  uint o = linear_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  uint total = p.N * p.K * p.P * p.Q;
  if (o >= total) return;
  uint q = o % p.Q, t = o / p.Q;
  uint pp = t % p.P;
  t /= p.P;
  uint k = t % p.K, n = t / p.K;
  uint cg = p.C / p.groups, kg = p.K / p.groups, g = k / kg;
  float acc = p.has_bias != 0u ? bias[p.b_off + k] : 0.0;
  for (uint c = 0u; c < cg; ++c) {
    uint xc = p.x_off + (n * p.C + g * cg + c) * p.H * p.W;
    uint wc = p.w_off + (k * cg + c) * p.R * p.S;
    for (uint r = 0u; r < p.R; ++r) {
      int ih = int(pp) * p.sh - p.ph + int(r) * p.dh;
      if (ih < 0 || ih >= int(p.H)) continue;
      for (uint s = 0u; s < p.S; ++s) {
        int iw = int(q) * p.sw - p.pw + int(s) * p.dw;
        if (iw < 0 || iw >= int(p.W)) continue;
        acc += x[xc + uint(ih) * p.W + uint(iw)] * w[wc + r * p.S + s];
      }
    }
  }
  y[o] = acc;
}
