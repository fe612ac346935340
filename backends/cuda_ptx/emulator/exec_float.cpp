// Floating-point instructions: f32 and f64 on a native fast path (round-to-nearest; f32 .ftz too),
// every other case (directed rounding, .sat, f16/bf16 and their x2 forms, f64's approximate
// functions) through an exact result plus error term rounded to the destination format.
#include <cmath>
#include <type_traits>

#include "backends/cuda_ptx/emulator/cta.hpp"
#include "backends/cuda_ptx/emulator/float_util.hpp"

namespace trine::cuda::emu {
namespace {

using LD = long double;
struct Exact {
  LD s, e;
};

Exact exact_op(Op op, LD a, LD b, LD c) {
  switch (op) {
    case Op::add: { const LD s = a + b; return {s, two_sum_err(a, b, s)}; }
    case Op::sub: { const LD s = a - b; return {s, two_sum_err(a, -b, s)}; }
    case Op::mul: { const LD s = a * b; return {s, std::fma(a, b, -s)}; }
    case Op::fma: case Op::mad: {
      const LD p = a * b, pe = std::fma(a, b, -p), s = p + c;
      return {s, two_sum_err(p, c, s) + pe};
    }
    case Op::div: { const LD s = a / b; return {s, std::isfinite(s) && b != 0 ? std::fma(-s, b, a) / b : 0}; }
    case Op::rcp: { const LD s = 1 / a; return {s, std::isfinite(s) && a != 0 ? std::fma(-s, a, 1.0L) / a : 0}; }
    case Op::sqrt: { const LD s = std::sqrt(a); return {s, std::isfinite(s) ? std::fma(-s, s, a) : 0}; }
    // The approximate functions: computed in long double and rounded, so well inside the ISA's
    // bounds; sin and cos with their absolute error added (approx_trig_error).
    case Op::rsqrt: return {1 / std::sqrt(a), 0};
    case Op::ex2: return {std::exp2(a), 0};
    case Op::lg2: return {std::log2(a), 0};
    case Op::sin: return {std::sin(a) + approx_trig_error(static_cast<double>(a)), 0};
    case Op::cos: return {std::cos(a) + approx_trig_error(static_cast<double>(a)), 0};
    case Op::tanh: return {std::tanh(a), 0};
    case Op::min: return {std::isnan(a) ? b : std::isnan(b) ? a : (a == 0 && b == 0 ? (std::signbit(a) ? a : b) : std::min(a, b)), 0};
    case Op::max: return {std::isnan(a) ? b : std::isnan(b) ? a : (a == 0 && b == 0 ? (std::signbit(a) ? b : a) : std::max(a, b)), 0};
    case Op::neg: return {-a, 0};
    case Op::abs: return {std::fabs(a), 0};
    case Op::copysign: return {std::copysign(b, a), 0};
    default: return {0, 0};
  }
}

bool compare_float(Cmp c, LD a, LD b) {
  const bool unordered = std::isnan(a) || std::isnan(b);
  switch (c) {
    case Cmp::eq: return !unordered && a == b;
    case Cmp::ne: return !unordered && a != b;
    case Cmp::lt: case Cmp::lo: return !unordered && a < b;
    case Cmp::le: case Cmp::ls: return !unordered && a <= b;
    case Cmp::gt: case Cmp::hi: return !unordered && a > b;
    case Cmp::ge: case Cmp::hs: return !unordered && a >= b;
    case Cmp::equ: return unordered || a == b;
    case Cmp::neu: return unordered || a != b;
    case Cmp::ltu: return unordered || a < b;
    case Cmp::leu: return unordered || a <= b;
    case Cmp::gtu: return unordered || a > b;
    case Cmp::geu: return unordered || a >= b;
    case Cmp::num: return !unordered;
    case Cmp::nan: return unordered;
  }
  return false;
}

// One element in format f: decode, compute exactly, round, encode.
enum class Fmt { f16, bf16, f32, f64 };
LD decode(Fmt f, std::uint64_t v, bool ftz) {
  LD x = 0;
  switch (f) {
    case Fmt::f16: x = f16_to_f32(static_cast<std::uint16_t>(v)); break;
    case Fmt::bf16: x = bf16_to_f32(static_cast<std::uint16_t>(v)); break;
    case Fmt::f32: x = as_f32(v); break;
    case Fmt::f64: x = as_f64(v); break;
  }
  if (ftz) {
    const LD tiny = f == Fmt::f16 ? std::ldexp(1.0L, -14) : f == Fmt::f64 ? std::ldexp(1.0L, -1022) : std::ldexp(1.0L, -126);
    if (std::fabs(x) < tiny) x = std::copysign(0.0L, x);
  }
  return x;
}
std::uint64_t encode(Fmt f, Exact r, Rnd rnd, bool ftz, bool sat) {
  if (sat) {
    if (std::isnan(r.s)) r = {0, 0};
    else if (r.s <= 0 && !(r.s == 0 && r.e > 0)) r = {0, 0};
    else if (r.s >= 1) r = {1, 0};
  }
  const Rnd m = rnd == Rnd::none ? Rnd::rn : rnd;
  switch (f) {
    case Fmt::f16: {
      LD v = round_to(r.s, r.e, kF16, m);
      if (ftz && std::fabs(v) < std::ldexp(1.0L, -14)) v = std::copysign(0.0L, v);
      return encode16(v, kF16);
    }
    case Fmt::bf16: return encode16(round_to(r.s, r.e, kBF16, m), kBF16);
    case Fmt::f32: {
      float v = static_cast<float>(round_to(r.s, r.e, kF32, m));
      if (std::isnan(v)) return 0x7fffffffu;
      return bits_f32(ftz ? ftz32(v) : v);
    }
    case Fmt::f64: return bits_f64(static_cast<double>(round_to(r.s, r.e, kF64, m)));
  }
  return 0;
}

void generic(Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  Fmt f = Fmt::f32;
  int halves = 1;
  switch (in.type) {
    case Type::f16: f = Fmt::f16; break;
    case Type::f16x2: f = Fmt::f16, halves = 2; break;
    case Type::bf16: f = Fmt::bf16; break;
    case Type::bf16x2: f = Fmt::bf16, halves = 2; break;
    case Type::f64: f = Fmt::f64; break;
    default: break;
  }
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  const std::uint64_t* b = in.n_ops > 2 ? R + in.ops[2].reg[0] * 32 : a;
  const std::uint64_t* c = in.n_ops > 3 ? R + in.ops[3].reg[0] * 32 : a;
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  if (in.op == Op::setp) {
    std::uint64_t* q = in.ops[0].count > 1 ? R + in.ops[0].reg[1] * 32 : nullptr;
    const bool cneg = in.n_ops > 3 && in.ops[3].negate;
    for_lanes(m, [&](int l) {
      bool r = compare_float(in.cmp, decode(f, a[l], ftz), decode(f, b[l], ftz)), nr = !r;
      if (in.bool_op != BoolOp::none) {
        const bool cv = (c[l] & 1) != cneg;
        if (in.bool_op == BoolOp::and_) r = r && cv, nr = nr && cv;
        if (in.bool_op == BoolOp::or_) r = r || cv, nr = nr || cv;
        if (in.bool_op == BoolOp::xor_) r = r != cv, nr = nr != cv;
      }
      d[l] = r;
      if (q) q[l] = nr;
    });
    return;
  }
  const int eb = halves == 2 ? 16 : 64;
  for_lanes(m, [&](int l) {
    std::uint64_t out = 0;
    for (int h = 0; h < halves; ++h) {
      const int sh = h * 16;
      auto part = [&](std::uint64_t v) { return halves == 2 ? (v >> sh) & 0xffff : v; };
      Exact r = exact_op(in.op, decode(f, part(a[l]), ftz), decode(f, part(b[l]), ftz), decode(f, part(c[l]), ftz));
      if ((in.flags & kRelu) && (r.s < 0 || std::isnan(r.s))) r = {std::isnan(r.s) ? r.s : 0.0L, 0};
      std::uint64_t v = encode(f, r, in.rnd, ftz, sat);
      if (halves == 2) v &= 0xffff;
      out |= v << (eb == 16 ? sh : 0);
    }
    d[l] = out;
  });
}

}  // namespace

namespace {

// The f32 and f64 round-to-nearest forms on the host's IEEE arithmetic (each basic operation
// correctly rounded there too), with .ftz flushing f32 inputs and outputs; returns false for what
// only the generic path handles. f64 through the generic path's long double arithmetic took
// four fifths of the emulated pow's time (x87 fmal and its rounding-mode switches).
template <typename T, bool Ftz>
bool fast_native(Warp& w, const Instr& in, std::uint32_t m) {
  static_assert(std::is_same_v<T, float> || (std::is_same_v<T, double> && !Ftz));
  constexpr bool f32 = std::is_same_v<T, float>;
  std::uint64_t* R = w.r;
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  const std::uint64_t* b = in.n_ops > 2 ? R + in.ops[2].reg[0] * 32 : a;
  const std::uint64_t* c = in.n_ops > 3 ? R + in.ops[3].reg[0] * 32 : a;
  auto x = [](std::uint64_t v) -> T {
    if constexpr (f32)
      return Ftz ? ftz32(as_f32(v)) : as_f32(v);
    else
      return as_f64(v);
  };
  auto bits = [](T f) -> std::uint64_t {
    if constexpr (f32)
      return bits_f32(f);
    else
      return bits_f64(f);
  };
  auto out = [&](T f) {
    if constexpr (f32)
      return bits(Ftz ? ftz32(f) : f);
    else
      return bits(f);
  };
  // the approximate functions (f32 only here): evaluated in double and rounded once, inside the
  // ISA's bounds
  auto unary = [&](auto f) {
    if constexpr (f32) for_lanes(m, [&](int l) { d[l] = out(static_cast<float>(f(static_cast<double>(x(a[l]))))); });
    return f32;
  };
  switch (in.op) {
    case Op::add: for_lanes(m, [&](int l) { d[l] = out(x(a[l]) + x(b[l])); }); return true;
    case Op::sub: for_lanes(m, [&](int l) { d[l] = out(x(a[l]) - x(b[l])); }); return true;
    case Op::mul: for_lanes(m, [&](int l) { d[l] = out(x(a[l]) * x(b[l])); }); return true;
    case Op::fma: case Op::mad: for_lanes(m, [&](int l) { d[l] = out(std::fma(x(a[l]), x(b[l]), x(c[l]))); }); return true;
    case Op::div:
      for_lanes(m, [&](int l) { d[l] = out(x(a[l]) / x(b[l])); });
      return true;  // f32 approx: exact is within 2 ulp
    case Op::neg: for_lanes(m, [&](int l) { d[l] = bits(-x(a[l])); }); return true;
    case Op::abs: for_lanes(m, [&](int l) { d[l] = bits(std::fabs(x(a[l]))); }); return true;
    case Op::min: case Op::max: {
      const bool is_min = in.op == Op::min;
      for_lanes(m, [&](int l) {
        const T p = x(a[l]), q = x(b[l]);
        T r;
        if (std::isnan(p))
          r = q;
        else if (std::isnan(q))
          r = p;
        else if (p == q)
          r = (std::signbit(p) == is_min) ? p : q;  // min(-0, +0) = -0, max(-0, +0) = +0
        else
          r = (p < q) == is_min ? p : q;
        d[l] = out(r);
      });
      return true;
    }
    case Op::sqrt: for_lanes(m, [&](int l) { d[l] = out(std::sqrt(x(a[l]))); }); return true;
    case Op::rcp: for_lanes(m, [&](int l) { d[l] = out(T(1) / x(a[l])); }); return true;
    case Op::rsqrt: return unary([](double v) { return 1.0 / std::sqrt(v); });
    case Op::ex2: return unary([](double v) { return std::exp2(v); });
    case Op::lg2: return unary([](double v) { return std::log2(v); });
    case Op::sin: return unary([](double v) { return std::sin(v) + approx_trig_error(v); });
    case Op::cos: return unary([](double v) { return std::cos(v) + approx_trig_error(v); });
    case Op::tanh: return unary([](double v) { return std::tanh(v); });
    case Op::setp: {
      if (in.ops[0].count != 1 || in.bool_op != BoolOp::none) return false;
      // C++ comparisons are the ordered ones (false on NaN); the unordered ones are their negations
      auto cmp = [&](auto f) { for_lanes(m, [&](int l) { d[l] = f(x(a[l]), x(b[l])); }); };
      switch (in.cmp) {
        case Cmp::eq: cmp([](T p, T q) { return p == q; }); return true;
        case Cmp::ne: cmp([](T p, T q) { return p < q || p > q; }); return true;
        case Cmp::lt:
        case Cmp::lo: cmp([](T p, T q) { return p < q; }); return true;
        case Cmp::le:
        case Cmp::ls: cmp([](T p, T q) { return p <= q; }); return true;
        case Cmp::gt:
        case Cmp::hi: cmp([](T p, T q) { return p > q; }); return true;
        case Cmp::ge:
        case Cmp::hs: cmp([](T p, T q) { return p >= q; }); return true;
        case Cmp::equ: cmp([](T p, T q) { return !(p < q || p > q); }); return true;
        case Cmp::neu: cmp([](T p, T q) { return p != q; }); return true;
        case Cmp::ltu: cmp([](T p, T q) { return !(p >= q); }); return true;
        case Cmp::leu: cmp([](T p, T q) { return !(p > q); }); return true;
        case Cmp::gtu: cmp([](T p, T q) { return !(p <= q); }); return true;
        case Cmp::geu: cmp([](T p, T q) { return !(p < q); }); return true;
        case Cmp::num: cmp([](T p, T q) { return p == p && q == q; }); return true;
        case Cmp::nan: cmp([](T p, T q) { return p != p || q != q; }); return true;
      }
      return false;
    }
    default: return false;
  }
}

}  // namespace

void exec_float(Cta&, Warp& w, const Instr& in, std::uint32_t m) {
  const bool fast = (in.rnd == Rnd::none || in.rnd == Rnd::rn) && !(in.flags & (kSat | kRelu));
  if (fast && in.type == Type::f32 &&
      ((in.flags & kFtz) ? fast_native<float, true>(w, in, m) : fast_native<float, false>(w, in, m)))
    return;
  if (fast && in.type == Type::f64 && !(in.flags & kFtz) && fast_native<double, false>(w, in, m)) return;
  generic(w, in, m);
}

}  // namespace trine::cuda::emu
