// Workgroup-wide sum, max and argmax through shared memory (the includer defines WG, the workgroup
// size, a power of two). Every invocation of the workgroup must call them, in the same order.
// Compiled with TRINE_SUBGROUP (the includer then enables GL_KHR_shader_subgroup_arithmetic and
// _vote; the build makes a <name>_subgroup variant): each subgroup reduces with subgroup
// operations and the subgroups' partials meet in shared memory, two barriers in all.

shared float red_[WG];
shared uint redi_[WG];  // wg_argmax's indices

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

// The workgroup's best (v, i) under arg_better, into v and i. Within a subgroup: the largest value
// (NaN if any), then the lowest index holding it; the subgroups' winners meet in shared memory.
void wg_argmax(inout float v, inout uint i) {
  bool nan = subgroupAny(isnan(v));
  float m = nan ? k_nan() : subgroupMax(v);  // subgroupMax leaves NaN undefined
  uint at = subgroupMin((nan ? isnan(v) : v == m) ? i : 0xFFFFFFFFu);
  if (subgroupElect()) {
    red_[gl_SubgroupID] = m;
    redi_[gl_SubgroupID] = at;
  }
  barrier();
  v = -1.0 / 0.0;
  i = 0xFFFFFFFFu;
  for (uint s = 0u; s < gl_NumSubgroups; ++s) {
    if (arg_better(red_[s], redi_[s], v, i)) {
      v = red_[s];
      i = redi_[s];
    }
  }
  barrier();
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

// The workgroup's best (v, i) under arg_better, into v and i.
void wg_argmax(inout float v, inout uint i) {
  uint t = gl_LocalInvocationID.x;
  red_[t] = v;
  redi_[t] = i;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s && arg_better(red_[t + s], redi_[t + s], red_[t], redi_[t])) {
      red_[t] = red_[t + s];
      redi_[t] = redi_[t + s];
    }
    barrier();
  }
  v = red_[0];
  i = redi_[0];
  barrier();
}

#endif
