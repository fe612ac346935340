// Workgroup-wide sum and max through shared memory (the includer defines WG, the workgroup size,
// a power of two). Every invocation of the workgroup must call them, in the same order.
// Compiled with TRINE_SUBGROUP (the includer then enables GL_KHR_shader_subgroup_arithmetic and
// _vote; the build makes a <name>_subgroup variant): each subgroup reduces with subgroup
// operations and the subgroups' partials meet in shared memory, two barriers in all.

shared float red_[WG];

#ifdef TRINE_SUBGROUP

float wg_sum(float v) {
  float s = subgroupAdd(v);
  if (subgroupElect()) red_[gl_SubgroupID] = s;
  barrier();
  float r = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) r += red_[i];
  barrier();  // red_ is reused by the next call
  return r;
}

// subgroupMax leaves NaN undefined; the op table's max propagates it.
float wg_max(float v) {
  float m = subgroupAny(isnan(v)) ? uintBitsToFloat(0x7FC00000u) : subgroupMax(v);
  if (subgroupElect()) red_[gl_SubgroupID] = m;
  barrier();
  float r = -1.0 / 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) r = nan_max(r, red_[i]);
  barrier();
  return r;
}

#else

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

#endif
