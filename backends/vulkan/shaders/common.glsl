// Shared by every shader: the workgroup index over a grid that may be split into 2-D (the host
// splits past maxComputeWorkGroupCount[0]), and the activations of trine::Activation.

// OP_<name>: trine::OpKind::<name>'s value, generated from ops.def into the build tree
// (vulkan.cmake), so these codes are the host's static_cast<uint32_t>(op).
#include "ops.glsl"

uint linear_group() { return gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y; }

// NaN wins: max propagates NaN, as the op table says.
float nan_max(float a, float b) { return (isnan(a) || a > b) ? a : b; }

// tanh from exp(-2|x|): never overflows (the naive (e^2x - 1)/(e^2x + 1) gives inf/inf past |x| ~ 44);
// a short series near 0, where 1 - t would cancel.
float stable_tanh(float x) {
  float ax = abs(x);
  if (ax < 0.125) {  // truncation below 2e-11 relative; past it 1 - t loses under two bits
    float x2 = x * x;
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
  }
  float t = exp(-2.0 * ax);
  float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}

// exp(x) - 1 without the cancellation near 0: a Taylor series to x^9 for |x| < 0.5 (truncation
// below 3e-10 relative); beyond, exp(x) - 1 loses at most a bit or two. Not Kahan's (u - 1) x / log u:
// that needs an exp and log more accurate than lavapipe's.
float expm1_stable(float x) {
  if (abs(x) < 0.5) {
    return x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 +
           x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (1.0 / 362880.0)))))))));
  }
  return exp(x) - 1.0;
}

// erfc(z) for z >= 0 with fractional error < 1.2e-7 (Numerical Recipes' erfcc): GLSL has no erf.
// Kept as erfc so gelu's negative tail, 1 + erf(z) = erfc(-z), has no cancellation.
float erfc_pos(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
               t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + poly);
}

// 1 + erf(z), accurate relative to its value on both sides.
float one_plus_erf(float z) {
  if (abs(z) < 0.5) {
    float z2 = z * z;  // Taylor to z^11: error < 2e-8 on [0, 0.5]
    return 1.0 + z * (1.1283791671 + z2 * (-0.3761263890 + z2 * (0.1128379167 + z2 * (-0.0268661706 +
                 z2 * (0.0052239776 + z2 * -0.0008548327)))));
  }
  return z < 0.0 ? erfc_pos(-z) : 2.0 - erfc_pos(z);
}

// An activation's op code (ops.def's TRINE_ACT rows), OP_scale (alpha * x + beta), or OP_copy for
// the identity (a copy is what the identity does).
float activate(uint code, float x, float alpha, float beta) {
  switch (code) {
    case OP_copy: return x;
    case OP_relu: return x < 0.0 ? 0.0 : x;  // NaN stays NaN
    case OP_leaky_relu: return x < 0.0 ? alpha * x : x;
    case OP_elu: return x < 0.0 ? alpha * expm1_stable(x) : x;
    case OP_sigmoid: return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case OP_tanh: return stable_tanh(x);
    case OP_silu:
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      return x >= 0.0 ? x / (1.0 + exp(-x)) : x * exp(x) / (1.0 + exp(x));
    case OP_gelu:
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      return 0.5 * x * one_plus_erf(x * 0.70710678118654752);
    case OP_gelu_tanh: {
      if (isinf(x)) return x > 0.0 ? x : 0.0;
      // 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation in the negative tail
      float u2 = 2.0 * 0.79788456080286536 * (x + 0.044715 * x * x * x);
      return u2 >= 0.0 ? x / (1.0 + exp(-u2)) : x * exp(u2) / (1.0 + exp(u2));
    }
    case OP_clip: return x < alpha ? alpha : (x > beta ? beta : x);  // NaN fails both: stays NaN
    case OP_scale: return alpha * x + beta;
  }
  return x;
}

// An f16's bits as the f32 bits of the same value, exactly (subnormals included), in integer
// arithmetic so no denormal flushing of the device changes it.
uint f16_to_f32_bits(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0u) {
    if (m == 0u) return s;
    return s | floatBitsToUint(float(m) * 5.9604644775390625e-8);  // m * 2^-24: exact, normal in f32
  }
  if (e == 31u) return s | 0x7F800000u | (m << 13);
  return s | ((e + 112u) << 23) | (m << 13);
}
