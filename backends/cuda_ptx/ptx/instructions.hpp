// The PTX instructions as typed free functions over a Kernel: each takes registers and pointers of the
// types the instruction accepts and returns a fresh register, so a type or state-space mismatch is a
// compile error at the call site and no generator writes PTX text.
#pragma once

#include <array>
#include <string>

#include "backends/cuda_ptx/ptx/kernel.hpp"

namespace trine::cuda::ptx {

template <class T>
using V = std::type_identity_t<Val<T>>;  // a source operand whose type is fixed by an earlier argument

namespace detail {
inline std::string op(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) {
    if (p.empty()) continue;
    if (!s.empty()) s += '.';
    s += p;
  }
  return s;
}
// How ld/st name a type: 16-bit floats and packed pairs move as raw bits.
template <RegType T>
constexpr std::string_view mem_suffix() {
  if constexpr (std::is_same_v<T, F16> || std::is_same_v<T, BF16>)
    return "b16";
  else if constexpr (std::is_same_v<T, F16x2> || std::is_same_v<T, BF16x2>)
    return "b32";
  else
    return T::ptx;
}
// Logic ops name only the width (and.b32), or .pred.
template <RegType T>
constexpr std::string_view bits_suffix() {
  if constexpr (std::is_same_v<T, Pred>)
    return "pred";
  else if constexpr (T::bytes == 2)
    return "b16";
  else if constexpr (T::bytes == 4)
    return "b32";
  else
    return "b64";
}
template <class T>
constexpr std::string_view arith_suffix() {  // mul/mad on integers need .lo; floats round to nearest
  if constexpr (FloatType<T>)
    return "rn";
  else
    return "lo";
}
}  // namespace detail

// ---- moves ----
template <RegType T>
Reg<T> mov(Kernel& k, const Val<T>& a) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"mov", detail::mem_suffix<T>()}), {k.text(d), k.text(a)});
  return d;
}
// Writes an existing register: how a loop-carried value is updated.
template <RegType T>
void assign(Kernel& k, Reg<T> dst, V<T> a) {
  k.emit(detail::op({"mov", detail::mem_suffix<T>()}), {k.text(dst), k.text(a)});
}
// Reinterprets the bits of a register as another type of the same size.
template <RegType To, RegType From>
requires(To::bytes == From::bytes && To::bytes > 0) Reg<To> bitcast(Kernel& k, Reg<From> a) {
  Reg<To> d = k.reg<To>();
  std::string t = "b" + std::to_string(To::bytes * 8);
  k.emit(detail::op({"mov", t}), {k.text(d), k.text(a)});
  return d;
}

// ---- arithmetic ----
template <NumericType T>
Reg<T> add(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"add", FloatType<T> ? "rn" : "", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <NumericType T>
Reg<T> sub(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"sub", FloatType<T> ? "rn" : "", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <NumericType T>
Reg<T> mul(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"mul", detail::arith_suffix<T>(), T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
// a * b + c: fma.rn for floats, mad.lo for integers.
template <NumericType T>
Reg<T> fma(Kernel& k, Reg<T> a, V<T> b, V<T> c) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({FloatType<T> ? "fma" : "mad", detail::arith_suffix<T>(), T::ptx}),
         {k.text(d), k.text(a), k.text(b), k.text(c)});
  return d;
}
// dst = a * b + dst: accumulates in place (a loop-carried accumulator without a copy).
template <FloatType T>
void fma_to(Kernel& k, Reg<T> dst, Reg<T> a, V<T> b) {
  k.emit(detail::op({"fma", "rn", T::ptx}), {k.text(dst), k.text(a), k.text(b), k.text(dst)});
}
// The full product of two 32-bit integers as 64 bits (mul.wide).
template <class T>
requires(std::is_same_v<T, U32> || std::is_same_v<T, S32>) auto mul_wide(Kernel& k, Reg<T> a, V<T> b) {
  using W = std::conditional_t<std::is_same_v<T, U32>, U64, S64>;
  Reg<W> d = k.reg<W>();
  k.emit(detail::op({"mul", "wide", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <NumericType T>
Reg<T> div(Kernel& k, Reg<T> a, V<T> b) {  // IEEE division for floats (div.rn)
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"div", FloatType<T> ? "rn" : "", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <IntType T>
Reg<T> rem(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"rem", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
// min/max: for floats, PTX returns the non-NaN operand; use max_nan where NaN must propagate.
template <NumericType T>
Reg<T> min(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"min", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <NumericType T>
Reg<T> max(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"max", T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <NumericType T>
requires(FloatType<T> || SignedType<T>) Reg<T> neg(Kernel& k, Reg<T> a) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"neg", T::ptx}), {k.text(d), k.text(a)});
  return d;
}
template <NumericType T>
requires(FloatType<T> || SignedType<T>) Reg<T> abs(Kernel& k, Reg<T> a) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"abs", T::ptx}), {k.text(d), k.text(a)});
  return d;
}

// ---- bits and shifts ----
template <BitsType T>
Reg<T> and_(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"and", detail::bits_suffix<T>()}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <BitsType T>
Reg<T> or_(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"or", detail::bits_suffix<T>()}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <BitsType T>
Reg<T> xor_(Kernel& k, Reg<T> a, V<T> b) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"xor", detail::bits_suffix<T>()}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <BitsType T>
requires(!std::is_same_v<T, Pred>) Reg<T> shl(Kernel& k, Reg<T> a, V<U32> bits) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"shl", detail::bits_suffix<T>()}), {k.text(d), k.text(a), k.text(bits)});
  return d;
}
template <BitsType T>
requires(!std::is_same_v<T, Pred>) Reg<T> shr(Kernel& k, Reg<T> a,
                                              V<U32> bits) {  // logical for unsigned/bits, arithmetic for signed
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"shr", T::ptx}), {k.text(d), k.text(a), k.text(bits)});
  return d;
}

// ---- comparisons and selection ----
enum class Cmp { eq, ne, lt, le, gt, ge, equ, neu, ltu, leu, gtu, geu, num, nan };
std::string_view cmp_name(Cmp c) noexcept;

template <NumericType T>
Reg<Pred> setp(Kernel& k, Cmp c, Reg<T> a, V<T> b) {
  Reg<Pred> d = k.reg<Pred>();
  k.emit(detail::op({"setp", cmp_name(c), T::ptx}), {k.text(d), k.text(a), k.text(b)});
  return d;
}
template <RegType T>
requires(!std::is_same_v<T, Pred>) Reg<T> selp(Kernel& k, V<T> if_true, V<T> if_false, Reg<Pred> p) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"selp", detail::mem_suffix<T>()}), {k.text(d), k.text(if_true), k.text(if_false), k.text(p)});
  return d;
}
inline Reg<Pred> not_(Kernel& k, Reg<Pred> a) {
  Reg<Pred> d = k.reg<Pred>();
  k.emit("not.pred", {k.text(d), k.text(a)});
  return d;
}

// ---- conversions ----
enum class Round { none, rn, rz, rni, rzi, rmi };
std::string_view round_name(Round r) noexcept;

template <RegType To, RegType From>
requires(!std::is_same_v<To, Pred> && !std::is_same_v<From, Pred>) Reg<To> cvt(Kernel& k, Reg<From> a,
                                                                               Round r = Round::none) {
  if constexpr (std::is_same_v<To, BF16>) k.require(70, 80, "cvt to bf16");
  if constexpr (std::is_same_v<From, BF16>) k.require(78, 90, "cvt from bf16");
  Reg<To> d = k.reg<To>();
  k.emit(detail::op({"cvt", round_name(r), To::ptx, From::ptx}), {k.text(d), k.text(a)});
  return d;
}

// ---- special functions (f32) ----
enum class Approx { ex2, lg2, sin, cos, rsqrt };
std::string_view approx_name(Approx f) noexcept;
inline Reg<F32> approx(Kernel& k, Approx f, Reg<F32> a) {
  Reg<F32> d = k.reg<F32>();
  k.emit(detail::op({approx_name(f), "approx", "f32"}), {k.text(d), k.text(a)});
  return d;
}
inline Reg<F32> sqrt_rn(Kernel& k, Reg<F32> a) {
  Reg<F32> d = k.reg<F32>();
  k.emit("sqrt.rn.f32", {k.text(d), k.text(a)});
  return d;
}
inline Reg<F32> rcp_rn(Kernel& k, Reg<F32> a) {
  Reg<F32> d = k.reg<F32>();
  k.emit("rcp.rn.f32", {k.text(d), k.text(a)});
  return d;
}

// ---- memory ----
template <StateSpace S, MemType T>
Reg<T> ld(Kernel& k, const Ptr<S, T>& p) {
  Reg<T> d = k.reg<T>();
  k.emit(detail::op({"ld", S::name, detail::mem_suffix<T>()}), {k.text(d), k.address(p)});
  return d;
}
// Loads into an existing register: under a guard, the register keeps its value where the guard is
// false (a bounds-checked load with a default).
template <StateSpace S, MemType T>
void ld_to(Kernel& k, Reg<T> dst, const Ptr<S, T>& p) {
  k.emit(detail::op({"ld", S::name, detail::mem_suffix<T>()}), {k.text(dst), k.address(p)});
}
template <StateSpace S, MemType T>
requires(!std::is_same_v<S, Param>) void st(Kernel& k, const Ptr<S, T>& p, V<T> v) {
  k.emit(detail::op({"st", S::name, detail::mem_suffix<T>()}), {k.address(p), k.text(v)});
}
// Vector loads and stores of 2 or 4 elements; the address must be aligned to N * sizeof(T).
template <int N, StateSpace S, MemType T>
requires((N == 2 || N == 4) && !std::is_same_v<S, Param>) std::array<Reg<T>, N> ld_v(Kernel& k, const Ptr<S, T>& p) {
  std::array<Reg<T>, N> d;
  std::string list = "{";
  for (int i = 0; i < N; ++i) {
    d[i] = k.reg<T>();
    list += (i ? ", " : "") + k.text(d[i]);
  }
  k.emit(detail::op({"ld", S::name, N == 2 ? "v2" : "v4", detail::mem_suffix<T>()}), {list + "}", k.address(p)});
  return d;
}
template <int N, StateSpace S, MemType T>
requires((N == 2 || N == 4) && !std::is_same_v<S, Param>) void st_v(Kernel& k, const Ptr<S, T>& p,
                                                                    const std::array<Reg<T>, N>& v) {
  std::string list = "{";
  for (int i = 0; i < N; ++i) list += (i ? ", " : "") + k.text(v[i]);
  k.emit(detail::op({"st", S::name, N == 2 ? "v2" : "v4", detail::mem_suffix<T>()}), {k.address(p), list + "}"});
}

// Atomic reduction into memory, no result returned (red): *p = op(*p, v).
enum class Reduction { add, min, max };
std::string_view reduction_name(Reduction r) noexcept;
template <StateSpace S, IntType T>
requires(!std::is_same_v<S, Param> && T::bytes >= 4) void red(Kernel& k, Reduction r, const Ptr<S, T>& p, V<T> v) {
  k.emit(detail::op({"red", S::name, reduction_name(r), T::ptx}), {k.address(p), k.text(v)});
}

// ---- pointers ----
// A kernel parameter: declared in call order, loaded at this point of the body.
template <MemType T>
Reg<T> param(Kernel& k, std::string_view name) {
  return ld(k, k.declare_param<T>(name));
}
// A global pointer parameter (a CUdeviceptr), converted to the global window.
// A generic address (what cuMemAlloc returns) as a pointer into the global window.
template <MemType T>
Ptr<Global, T> global_ptr(Kernel& k, Reg<U64> generic) {
  Reg<U64> g = k.reg<U64>();
  k.emit("cvta.to.global.u64", {k.text(g), k.text(generic)});
  return Ptr<Global, T>{g, 0};
}
template <MemType T>
Ptr<Global, T> param_ptr(Kernel& k, std::string_view name) {
  return global_ptr<T>(k, param<U64>(k, name));
}
// A shared array of count elements of T, and the pointer to its start.
template <MemType T>
Ptr<Shared, T> shared_array(Kernel& k, std::string_view name, std::int64_t count, int align = 16) {
  Symbol s = k.declare_shared<T>(name, count, align);
  Reg<U32> a = k.reg<U32>();
  k.emit("mov.u32", {k.text(a), k.symbol_name(s)});
  return Ptr<Shared, T>{a, 0};
}
// p + i elements, i computed at run time.
template <MemType T>
Ptr<Global, T> element(Kernel& k, const Ptr<Global, T>& p, Reg<U64> i) {
  Reg<U64> a = fma(k, i, V<U64>(std::uint64_t(T::bytes)), V<U64>(p.base));
  return Ptr<Global, T>{a, p.offset};
}
template <MemType T>
Ptr<Global, T> element(Kernel& k, const Ptr<Global, T>& p, Reg<U32> i) {
  Reg<U64> bytes = mul_wide(k, i, V<U32>(std::uint32_t(T::bytes)));
  return Ptr<Global, T>{add(k, p.base, V<U64>(bytes)), p.offset};
}
template <MemType T>
Ptr<Shared, T> element(Kernel& k, const Ptr<Shared, T>& p, Reg<U32> i) {
  Reg<U32> a = fma(k, i, V<U32>(std::uint32_t(T::bytes)), V<U32>(p.base));
  return Ptr<Shared, T>{a, p.offset};
}

// ---- special registers ----
enum class Special {
  tid_x,
  tid_y,
  tid_z,
  ntid_x,
  ntid_y,
  ntid_z,
  ctaid_x,
  ctaid_y,
  ctaid_z,
  nctaid_x,
  nctaid_y,
  nctaid_z,
  laneid
};
std::string_view special_name(Special s) noexcept;
inline Reg<U32> special(Kernel& k, Special s) {
  Reg<U32> d = k.reg<U32>();
  k.emit("mov.u32", {k.text(d), std::string(special_name(s))});
  return d;
}

// ---- control flow and synchronization ----
inline void place(Kernel& k, Label l) { k.emit_label(l); }
inline void bra(Kernel& k, Label l) { k.emit("bra.uni", {k.label_text(l)}); }
// A branch taken where p holds (or does not, with negate); lanes may diverge.
inline void bra_if(Kernel& k, Reg<Pred> p, Label l, bool negate = false) {
  Kernel::Guard g(k, p, negate);
  k.emit("bra", {k.label_text(l)});
}
inline void bar_sync(Kernel& k) { k.emit("bar.sync", {"0"}); }
// Orders shared-memory accesses among the lanes of one warp (all 32 take part).
inline void bar_warp_sync(Kernel& k) {
  k.require(60, 0, "bar.warp.sync");
  k.emit("bar.warp.sync", {"-1"});
}

enum class Shfl { up, down, bfly, idx };
std::string_view shfl_name(Shfl m) noexcept;
// shfl.sync over the full warp; b: lane or lane offset; c: the clamp/segment operand.
template <RegType T>
requires(T::bytes == 4) Reg<T> shfl(Kernel& k, Shfl mode, Reg<T> a, V<U32> b) {
  k.require(60, 0, "shfl.sync");
  Reg<T> d = k.reg<T>();
  std::string c = mode == Shfl::up ? "0" : "31";
  k.emit(detail::op({"shfl", "sync", shfl_name(mode), "b32"}), {k.text(d), k.text(a), k.text(b), c, "-1"});
  return d;
}

// A counted loop tested at the bottom: body(i) for i = begin, begin + step, ... while i < end.
// Registers written in the body with assign() carry their values from one iteration to the next.
template <class T, class Body>
requires(std::is_same_v<T, U32> || std::is_same_v<T, U64> ||
         std::is_same_v<T, S32>) void for_range(Kernel& k, V<T> begin, V<T> end, V<T> step, Body&& body) {
  Reg<T> i = mov<T>(k, begin);
  Label top = k.new_label(), test = k.new_label();
  bra(k, test);
  place(k, top);
  body(i);
  assign(k, i, V<T>(add(k, i, step)));
  place(k, test);
  Reg<Pred> more = setp(k, Cmp::lt, i, end);
  bra_if(k, more, top);
}

}  // namespace trine::cuda::ptx
