// Workgroup-wide sum and max through shared memory (the includer defines WG, the workgroup size,
// a power of two). Every invocation of the workgroup must call them, in the same order.

shared float red_[WG];

float wg_sum(float v) {
  red_[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (gl_LocalInvocationID.x < s) red_[gl_LocalInvocationID.x] += red_[gl_LocalInvocationID.x + s];
    barrier();
  }
  float r = red_[0];
  barrier();  // red_ is reused by the next call
  return r;
}

float wg_max(float v) {
  red_[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (gl_LocalInvocationID.x < s)
      red_[gl_LocalInvocationID.x] = nan_max(red_[gl_LocalInvocationID.x], red_[gl_LocalInvocationID.x + s]);
    barrier();
  }
  float r = red_[0];
  barrier();
  return r;
}
