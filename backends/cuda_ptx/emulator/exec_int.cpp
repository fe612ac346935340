// Integer, bit and predicate instructions (and mov/selp/cvta, which are type-agnostic copies):
// templates over the C++ type matching the PTX type, with the lane loop inside each case.
#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>

#include "backends/cuda_ptx/emulator/cta.hpp"

namespace trine::cuda::emu {
namespace {

template <class T>
inline std::uint64_t put(T v) {
  return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
}
template <class T>
using Wide = std::conditional_t<sizeof(T) == 1, std::conditional_t<std::is_signed_v<T>, std::int16_t, std::uint16_t>,
             std::conditional_t<sizeof(T) == 2, std::conditional_t<std::is_signed_v<T>, std::int32_t, std::uint32_t>,
             std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>>;

template <class T>
inline T mul_hi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using I = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<I>(a) * static_cast<I>(b)) >> 64);
  } else {
    using I = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    return static_cast<T>((static_cast<I>(a) * static_cast<I>(b)) >> (8 * sizeof(T)));
  }
}
template <class T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

template <class T>
inline bool compare(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::eq: case Cmp::equ: return a == b;
    case Cmp::ne: case Cmp::neu: return a != b;
    case Cmp::lt: case Cmp::lo: case Cmp::ltu: return a < b;
    case Cmp::le: case Cmp::ls: case Cmp::leu: return a <= b;
    case Cmp::gt: case Cmp::hi: case Cmp::gtu: return a > b;
    case Cmp::ge: case Cmp::hs: case Cmp::geu: return a >= b;
    case Cmp::num: return true;
    case Cmp::nan: return false;
  }
  return false;
}

template <class T>
void run_typed(Warp& w, const Instr& in, std::uint32_t m) {
  using U = std::make_unsigned_t<T>;
  constexpr int bits = 8 * sizeof(T);
  std::uint64_t* R = w.r;
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  const std::uint64_t* b = in.n_ops > 2 ? R + in.ops[2].reg[0] * 32 : a;
  const std::uint64_t* c = in.n_ops > 3 ? R + in.ops[3].reg[0] * 32 : a;
  auto A = [&](int l) { return static_cast<T>(a[l]); };
  auto B = [&](int l) { return static_cast<T>(b[l]); };
  switch (in.op) {
    case Op::add:
      if ((in.flags & kSat) && std::is_signed_v<T>) {
        for_lanes(m, [&](int l) {
          const std::int64_t s = static_cast<std::int64_t>(A(l)) + static_cast<std::int64_t>(B(l));
          d[l] = put(static_cast<T>(std::clamp<std::int64_t>(s, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
        });
      } else {
        for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(static_cast<U>(A(l)) + static_cast<U>(B(l)))); });
      }
      return;
    case Op::sub:
      if ((in.flags & kSat) && std::is_signed_v<T>) {
        for_lanes(m, [&](int l) {
          const std::int64_t s = static_cast<std::int64_t>(A(l)) - static_cast<std::int64_t>(B(l));
          d[l] = put(static_cast<T>(std::clamp<std::int64_t>(s, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
        });
      } else {
        for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(static_cast<U>(A(l)) - static_cast<U>(B(l)))); });
      }
      return;
    case Op::mul: case Op::mad: {
      const bool mad = in.op == Op::mad;
      if (in.mode == Mode::mul_wide) {
        if constexpr (sizeof(T) < 8) {
          using W = Wide<T>;
          for_lanes(m, [&](int l) {
            W p = wrap_mul(static_cast<W>(A(l)), static_cast<W>(B(l)));
            if (mad) p = static_cast<W>(static_cast<std::make_unsigned_t<W>>(p) + static_cast<std::make_unsigned_t<W>>(static_cast<W>(c[l])));
            d[l] = put(p);
          });
        }
        return;
      }
      for_lanes(m, [&](int l) {
        T p = in.mode == Mode::mul_hi ? mul_hi(A(l), B(l)) : wrap_mul(A(l), B(l));
        if (mad) p = static_cast<T>(static_cast<U>(p) + static_cast<U>(static_cast<T>(c[l])));
        d[l] = put(p);
      });
      return;
    }
    case Op::div:
      for_lanes(m, [&](int l) {
        const T x = A(l), y = B(l);
        T q;
        if (y == 0) q = std::is_signed_v<T> ? T(-1) : std::numeric_limits<T>::max();  // defined, never a host trap
        else if (std::is_signed_v<T> && x == std::numeric_limits<T>::min() && y == T(-1)) q = x;
        else q = static_cast<T>(x / y);
        d[l] = put(q);
      });
      return;
    case Op::rem:
      for_lanes(m, [&](int l) {
        const T x = A(l), y = B(l);
        d[l] = put(y == 0 ? x : (std::is_signed_v<T> && y == T(-1)) ? T(0) : static_cast<T>(x % y));
      });
      return;
    case Op::min: for_lanes(m, [&](int l) { d[l] = put(std::min(A(l), B(l))); }); return;
    case Op::max: for_lanes(m, [&](int l) { d[l] = put(std::max(A(l), B(l))); }); return;
    case Op::neg: for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(U(0) - static_cast<U>(A(l)))); }); return;
    case Op::abs:
      for_lanes(m, [&](int l) { d[l] = put(A(l) < 0 ? static_cast<T>(U(0) - static_cast<U>(A(l))) : A(l)); });
      return;
    case Op::and_: for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(A(l) & B(l))); }); return;
    case Op::or_: for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(A(l) | B(l))); }); return;
    case Op::xor_: for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(A(l) ^ B(l))); }); return;
    case Op::not_: for_lanes(m, [&](int l) { d[l] = put(static_cast<T>(~A(l))); }); return;
    case Op::shl:
      for_lanes(m, [&](int l) {
        const auto s = static_cast<std::uint32_t>(b[l]);
        d[l] = put(s >= bits ? T(0) : static_cast<T>(static_cast<U>(A(l)) << s));
      });
      return;
    case Op::shr:
      for_lanes(m, [&](int l) {
        const auto s = std::min<std::uint32_t>(static_cast<std::uint32_t>(b[l]), bits - 1 + !std::is_signed_v<T>);
        d[l] = put(s >= bits ? T(0) : static_cast<T>(A(l) >> s));
      });
      return;
    case Op::popc: for_lanes(m, [&](int l) { d[l] = static_cast<std::uint32_t>(std::popcount(static_cast<U>(A(l)))); }); return;
    case Op::clz: for_lanes(m, [&](int l) { d[l] = static_cast<std::uint32_t>(std::countl_zero(static_cast<U>(A(l)))); }); return;
    case Op::brev:
      for_lanes(m, [&](int l) {
        U x = static_cast<U>(A(l)), r = 0;
        for (int i = 0; i < bits; ++i) r |= static_cast<U>(((x >> i) & 1) << (bits - 1 - i));
        d[l] = put(r);
      });
      return;
    case Op::bfe:
      for_lanes(m, [&](int l) {
        const std::uint32_t pos = b[l] & 0xff, len = c[l] & 0xff;
        const U x = static_cast<U>(A(l));
        U r = 0;
        for (std::uint32_t i = 0; i < len && pos + i < bits; ++i) r |= static_cast<U>(((x >> (pos + i)) & 1) << i);
        if (std::is_signed_v<T> && len > 0) {
          const bool sign = pos + len - 1 < bits ? (x >> (pos + len - 1)) & 1 : (x >> (bits - 1)) & 1;
          if (sign && len < bits) r |= static_cast<U>(~U(0) << len);
        }
        d[l] = put(r);
      });
      return;
    case Op::setp: {
      const Operand& dst = in.ops[0];
      if (dst.count == 1 && in.bool_op == BoolOp::none) {  // the common form: one switch, then the lanes
        switch (in.cmp) {
          case Cmp::lt: case Cmp::lo: for_lanes(m, [&](int l) { d[l] = A(l) < B(l); }); return;
          case Cmp::le: case Cmp::ls: for_lanes(m, [&](int l) { d[l] = A(l) <= B(l); }); return;
          case Cmp::gt: case Cmp::hi: for_lanes(m, [&](int l) { d[l] = A(l) > B(l); }); return;
          case Cmp::ge: case Cmp::hs: for_lanes(m, [&](int l) { d[l] = A(l) >= B(l); }); return;
          case Cmp::eq: for_lanes(m, [&](int l) { d[l] = A(l) == B(l); }); return;
          case Cmp::ne: for_lanes(m, [&](int l) { d[l] = A(l) != B(l); }); return;
          default: break;
        }
      }
      std::uint64_t* q = dst.count > 1 ? R + dst.reg[1] * 32 : nullptr;
      const bool cneg = in.n_ops > 3 && in.ops[3].negate;
      for_lanes(m, [&](int l) {
        bool r = compare(in.cmp, A(l), B(l)), nr = !r;
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
    default: return;
  }
}

// Copies between registers and vectors of registers (pack / unpack by element width).
void run_mov(Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  const Operand& d = in.ops[0];
  const Operand& s = in.ops[1];
  const int bytes = type_bytes(in.type);
  const std::uint64_t mask = bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  if (d.kind == OperandKind::reg && s.kind == OperandKind::reg) {
    std::uint64_t* dp = R + d.reg[0] * 32;
    const std::uint64_t* sp = R + s.reg[0] * 32;
    for_lanes(m, [&](int l) { dp[l] = sp[l] & mask; });
  } else if (d.kind == OperandKind::reg) {  // pack
    const int eb = 8 * bytes / s.count;
    const std::uint64_t em = eb >= 64 ? ~0ull : (1ull << eb) - 1;
    for_lanes(m, [&](int l) {
      std::uint64_t v = 0;
      for (int i = 0; i < s.count; ++i) v |= (R[s.reg[i] * 32 + l] & em) << (i * eb);
      R[d.reg[0] * 32 + l] = v;
    });
  } else {  // unpack
    const int eb = 8 * bytes / d.count;
    const std::uint64_t em = eb >= 64 ? ~0ull : (1ull << eb) - 1;
    for_lanes(m, [&](int l) {
      const std::uint64_t v = s.kind == OperandKind::reg ? R[s.reg[0] * 32 + l] : 0;
      for (int i = 0; i < d.count; ++i) R[d.reg[i] * 32 + l] = (v >> (i * eb)) & em;
    });
  }
}

// lop3 (any three-input function by its truth table), dp4a (four byte products plus c), bfi
// (bit-field insert) and bfind (most significant non-sign bit) on 32-bit registers.
void exec_bits(Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  std::uint64_t* d = R + in.ops[0].reg[0] * 32;
  const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
  switch (in.op) {
    case Op::lop3: {
      const std::uint64_t *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32, *lut = R + in.ops[4].reg[0] * 32;
      for_lanes(m, [&](int l) {
        std::uint32_t r = 0;
        for (int i = 0; i < 32; ++i) {
          const unsigned idx = ((a[l] >> i) & 1) << 2 | ((b[l] >> i) & 1) << 1 | ((c[l] >> i) & 1);
          r |= static_cast<std::uint32_t>((lut[l] >> idx) & 1) << i;
        }
        d[l] = r;
      });
      return;
    }
    case Op::dp4a: {
      const std::uint64_t *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32;
      const bool sa = in.type == Type::s32, sb = in.type2 == Type::s32;
      for_lanes(m, [&](int l) {
        std::int64_t s = static_cast<std::int32_t>(c[l]);
        for (int i = 0; i < 4; ++i) {
          const auto x = static_cast<std::uint8_t>(a[l] >> (8 * i)), y = static_cast<std::uint8_t>(b[l] >> (8 * i));
          s += (sa ? static_cast<std::int8_t>(x) : x) * static_cast<std::int64_t>(sb ? static_cast<std::int8_t>(y) : y);
        }
        d[l] = static_cast<std::uint32_t>(s);
      });
      return;
    }
    case Op::bfi: {  // bfi.b32 d, f, b, pos, len: b with len bits at pos replaced by f's low bits
      const std::uint64_t *b = R + in.ops[2].reg[0] * 32, *pos = R + in.ops[3].reg[0] * 32, *len = R + in.ops[4].reg[0] * 32;
      const int bits = type_bytes(in.type) * 8;
      for_lanes(m, [&](int l) {
        std::uint64_t r = b[l];
        const unsigned p = pos[l] & 0xff, n = len[l] & 0xff;
        for (unsigned i = 0; i < n && p + i < static_cast<unsigned>(bits); ++i)
          r = (r & ~(1ull << (p + i))) | (((a[l] >> i) & 1) << (p + i));
        d[l] = bits == 64 ? r : r & 0xffffffffull;
      });
      return;
    }
    case Op::shf: {  // funnel shift of the 64-bit b:a by c (wrapped mod 32 or clamped to 32)
      const std::uint64_t *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32;
      const bool wrap = in.flags & kWrap;
      for_lanes(m, [&](int l) {
        const std::uint64_t v = (b[l] & 0xffffffffull) << 32 | (a[l] & 0xffffffffull);
        const std::uint32_t n = wrap ? static_cast<std::uint32_t>(c[l] & 31) : std::min<std::uint32_t>(static_cast<std::uint32_t>(c[l]), 32);
        d[l] = in.mode == Mode::shf_l ? ((v << n) >> 32) & 0xffffffffull : (v >> n) & 0xffffffffull;
      });
      return;
    }
    case Op::bfind: {
      const int bits = type_bytes(in.type) * 8;
      const bool sign = is_signed(in.type);
      for_lanes(m, [&](int l) {
        std::uint64_t x = bits == 64 ? a[l] : a[l] & 0xffffffffull;
        if (sign && ((x >> (bits - 1)) & 1)) x = ~x & (bits == 64 ? ~0ull : 0xffffffffull);
        d[l] = x == 0 ? 0xffffffffull : static_cast<std::uint64_t>(63 - std::countl_zero(x));
      });
      return;
    }
    default: return;
  }
}

}  // namespace

void exec_int(Cta&, Warp& w, const Instr& in, std::uint32_t m) {
  std::uint64_t* R = w.r;
  switch (in.op) {
    case Op::mov: run_mov(w, in, m); return;
    case Op::selp: {
      std::uint64_t* d = R + in.ops[0].reg[0] * 32;
      const std::uint64_t *a = R + in.ops[1].reg[0] * 32, *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32;
      const bool neg = in.ops[3].negate;
      for_lanes(m, [&](int l) { d[l] = ((c[l] & 1) != neg) ? a[l] : b[l]; });
      return;
    }
    case Op::cvta: {
      std::uint64_t* d = R + in.ops[0].reg[0] * 32;
      const std::uint64_t* a = R + in.ops[1].reg[0] * 32;
      const std::uint64_t window = in.space == Space::shared ? kSharedWindow : in.space == Space::local ? kLocalWindow : 0;
      if (!window) for_lanes(m, [&](int l) { d[l] = a[l]; });
      else if (in.flags & kToGeneric) for_lanes(m, [&](int l) { d[l] = window | (a[l] & 0xffffffffull); });
      else for_lanes(m, [&](int l) { d[l] = a[l] & ~kWindowMask; });
      if (in.type == Type::u32 || in.type == Type::b32) for_lanes(m, [&](int l) { d[l] &= 0xffffffffull; });
      return;
    }
    case Op::prmt: {
      std::uint64_t* d = R + in.ops[0].reg[0] * 32;
      const std::uint64_t *a = R + in.ops[1].reg[0] * 32, *b = R + in.ops[2].reg[0] * 32, *c = R + in.ops[3].reg[0] * 32;
      for_lanes(m, [&](int l) {
        const std::uint64_t src = (a[l] & 0xffffffffull) | (b[l] & 0xffffffffull) << 32;
        std::uint32_t r = 0;
        for (int i = 0; i < 4; ++i) {
          const std::uint32_t sel = (c[l] >> (4 * i)) & 0xf;
          std::uint32_t byte = (src >> (8 * (sel & 7))) & 0xff;
          if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;  // sign replicate
          r |= byte << (8 * i);
        }
        d[l] = r;
      });
      return;
    }
    case Op::lop3: case Op::dp4a: case Op::bfi: case Op::bfind: case Op::shf: return exec_bits(w, in, m);
    default: break;
  }
  switch (in.type) {
    case Type::s8: run_typed<std::int8_t>(w, in, m); return;
    case Type::u8: case Type::b8: run_typed<std::uint8_t>(w, in, m); return;
    case Type::s16: run_typed<std::int16_t>(w, in, m); return;
    case Type::u16: case Type::b16: run_typed<std::uint16_t>(w, in, m); return;
    case Type::s32: run_typed<std::int32_t>(w, in, m); return;
    case Type::u32: case Type::b32: run_typed<std::uint32_t>(w, in, m); return;
    case Type::s64: run_typed<std::int64_t>(w, in, m); return;
    case Type::u64: case Type::b64: run_typed<std::uint64_t>(w, in, m); return;
    case Type::pred: {  // and/or/xor/not on predicates: one bit
      Instr bit = in;
      run_typed<std::uint8_t>(w, bit, m);
      std::uint64_t* d = R + in.ops[0].reg[0] * 32;
      for_lanes(m, [&](int l) { d[l] &= 1; });
      return;
    }
    default: return;
  }
}

}  // namespace trine::cuda::emu
