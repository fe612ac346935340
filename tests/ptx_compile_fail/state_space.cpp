// Compile-fail cases for the PTX emitter's types: built once per CASE by tests/ptx.cmake; CASE 0 must
// compile (so a failure of the others is the type system's doing, not a broken include path).
#include "backends/cuda_ptx/ptx/instructions.hpp"

using namespace trine::cuda::ptx;

void build(Kernel& k) {
  Ptr<Global, F32> g = param_ptr<F32>(k, "x");
  Ptr<Shared, F32> s = shared_array<F32>(k, "tile", 32);
  Reg<F32> f = ld(k, g);
  Reg<U32> u = special(k, Special::tid_x);
#if CASE == 0
  st(k, s, V<F32>(add(k, f, V<F32>(ld(k, g)))));
  (void)u;
#elif CASE == 1
  // A shared address used as a global one.
  Ptr<Global, F32> wrong = s;
  (void)wrong;
  (void)f;
  (void)u;
#elif CASE == 2
  // An f32 register added to a u32 one.
  add(k, f, u);
  (void)s;
#elif CASE == 3
  // A half-precision pointer read into an f32 register.
  Ptr<Global, F16> h = param_ptr<F16>(k, "h");
  Reg<F32> wrong = ld(k, h);
  (void)wrong;
  (void)s;
  (void)u;
#elif CASE == 4
  // Storing to a kernel parameter (the param space is read-only).
  st(k, k.declare_param<F32>("p"), V<F32>(f));
  (void)s;
  (void)u;
#elif CASE == 5
  // Shared pointers index with 32-bit offsets only; a global element index of the wrong space.
  element(k, s, mov<U64>(k, 1u));
  (void)f;
  (void)u;
#endif
}
