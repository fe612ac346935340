// The 16-bit store of the shaders whose f16 or bf16 results land where another invocation may
// write the other half of the same 32-bit word (a row reduction's neighbouring outputs, the first
// and last words of rows that do not start at a word): the includer declares
// `buffer Y { uint y[]; }` first. Writes that own both halves of a word store it whole instead.

// Element `at` of y set to the 16-bit bits h by two atomics on its word (clear its half, then set
// it), so the other half, which another invocation or nobody writes, is kept whatever order they
// run in (copy.comp's scatter does the same).
void store_half(uint at, uint h) {
  uint shift = (at & 1u) * 16u;
  atomicAnd(y[at >> 1], ~(0xFFFFu << shift));
  atomicOr(y[at >> 1], h << shift);
}
