// The PTX emitter's type system: targets, register type tags, typed virtual registers, immediates and
// state-space-typed pointers. Mixing register types or state spaces is a C++ compile error.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

namespace trine::cuda::ptx {

// ---- targets ----
enum class Target { sm_75, sm_80, sm_86, sm_89, sm_90, sm_120 };
inline constexpr std::array<Target, 6> all_targets = {Target::sm_75, Target::sm_80, Target::sm_86,
                                                      Target::sm_89, Target::sm_90, Target::sm_120};
std::string_view target_name(Target t) noexcept;  // "sm_80"
int target_sm(Target t) noexcept;                 // 80
// The lowest PTX ISA version (major*10 + minor) that knows the target: 6.3 for sm_75 ... 8.7 for sm_120.
int target_min_version(Target t) noexcept;
std::optional<Target> parse_target(std::string_view name) noexcept;

// ---- register type tags ----
// ptx: the type suffix instructions use; decl: how the register is declared (PTX keeps 16-bit floats
// and packed pairs in untyped registers); prefix: the register name stem, one counter per type.
#define TRINE_PTX_TYPE(Tag, ptx_, decl_, prefix_, bytes_, slot_, Imm) \
  struct Tag {                                                        \
    static constexpr std::string_view ptx = ptx_;                     \
    static constexpr std::string_view decl = decl_;                   \
    static constexpr std::string_view prefix = prefix_;               \
    static constexpr int bytes = bytes_;                              \
    static constexpr int slot = slot_;                                \
    using imm = Imm;                                                  \
  };
TRINE_PTX_TYPE(Pred, "pred", "pred", "p", 0, 0, bool)
TRINE_PTX_TYPE(B16, "b16", "b16", "rh", 2, 1, std::uint16_t)
TRINE_PTX_TYPE(B32, "b32", "b32", "r", 4, 2, std::uint32_t)
TRINE_PTX_TYPE(B64, "b64", "b64", "rd", 8, 3, std::uint64_t)
TRINE_PTX_TYPE(U8, "u8", "u8", "ub", 1, 4, std::uint8_t)
TRINE_PTX_TYPE(U16, "u16", "u16", "uh", 2, 5, std::uint16_t)
TRINE_PTX_TYPE(U32, "u32", "u32", "u", 4, 6, std::uint32_t)
TRINE_PTX_TYPE(U64, "u64", "u64", "ud", 8, 7, std::uint64_t)
TRINE_PTX_TYPE(S8, "s8", "s8", "sb", 1, 8, std::int8_t)
TRINE_PTX_TYPE(S16, "s16", "s16", "sh", 2, 9, std::int16_t)
TRINE_PTX_TYPE(S32, "s32", "s32", "s", 4, 10, std::int32_t)
TRINE_PTX_TYPE(S64, "s64", "s64", "sd", 8, 11, std::int64_t)
TRINE_PTX_TYPE(F16, "f16", "b16", "hf", 2, 12, std::uint16_t)
TRINE_PTX_TYPE(BF16, "bf16", "b16", "bf", 2, 13, std::uint16_t)
TRINE_PTX_TYPE(F32, "f32", "f32", "f", 4, 14, float)
TRINE_PTX_TYPE(F64, "f64", "f64", "fd", 8, 15, double)
TRINE_PTX_TYPE(F16x2, "f16x2", "b32", "hx", 4, 16, std::uint32_t)
TRINE_PTX_TYPE(BF16x2, "bf16x2", "b32", "bx", 4, 17, std::uint32_t)
#undef TRINE_PTX_TYPE
inline constexpr int type_slot_count = 18;

template <class T>
concept RegType = requires {
  T::ptx;
  T::slot;
};
template <class T>
concept FloatType = std::is_same_v<T, F32> || std::is_same_v<T, F64>;
template <class T>
concept UnsignedType = std::is_same_v<T, U16> || std::is_same_v<T, U32> || std::is_same_v<T, U64>;
template <class T>
concept SignedType = std::is_same_v<T, S16> || std::is_same_v<T, S32> || std::is_same_v<T, S64>;
template <class T>
concept IntType = UnsignedType<T> || SignedType<T>;
template <class T>
concept BitsType =
    std::is_same_v<T, B16> || std::is_same_v<T, B32> || std::is_same_v<T, B64> || std::is_same_v<T, Pred> || IntType<T>;
template <class T>
concept NumericType = FloatType<T> || IntType<T>;
// A type that may live in memory (ld/st): everything but predicates.
template <class T>
concept MemType = RegType<T> && !std::is_same_v<T, Pred>;

// ---- registers and operands ----
// A virtual register of type T; the id is its number within T's counter.
template <RegType T>
struct Reg {
  int id = -1;
  friend bool operator==(const Reg&, const Reg&) = default;
};

// An instruction source: a register of type T or an immediate of T's C++ type. No conversion exists
// from another type's register, so `add(k, f32_reg, u32_reg)` does not compile.
template <RegType T>
struct Val {
  std::variant<Reg<T>, typename T::imm> v;
  Val(Reg<T> r) : v(r) {}  // NOLINT: implicit by design
  template <class I>
  requires std::is_arithmetic_v<I> Val(I imm) : v(static_cast<typename T::imm>(imm)) {}  // NOLINT: implicit by design
};

// ---- state spaces and pointers ----
struct Symbol {  // a named address: a kernel parameter or a shared-memory array
  int index = -1;
};
struct Global {
  static constexpr std::string_view name = "global";
  using Address = Reg<U64>;
};
struct Shared {  // 32-bit shared-window addresses, as ld.shared, ldmatrix and cp.async take them
  static constexpr std::string_view name = "shared";
  using Address = Reg<U32>;
};
struct Param {
  static constexpr std::string_view name = "param";
  using Address = Symbol;
};
template <class S>
concept StateSpace = std::is_same_v<S, Global> || std::is_same_v<S, Shared> || std::is_same_v<S, Param>;

// A pointer into state space S to elements of type T, plus a constant byte offset. A Ptr<Shared, F32>
// cannot be passed where a Ptr<Global, F32> is expected, nor a Ptr<Global, F16> where F32 is.
template <StateSpace S, MemType T>
struct Ptr {
  typename S::Address base;
  std::int64_t offset = 0;  // bytes
  // The same base moved by a compile-time number of elements (no instruction).
  Ptr at(std::int64_t elements) const { return Ptr{base, offset + elements * T::bytes}; }
};

// The same address seen as elements of another type: the one explicit, named way to change a
// pointer's element type (the state space never changes).
template <MemType U, StateSpace S, MemType T>
Ptr<S, U> reinterpret(const Ptr<S, T>& p) {
  return Ptr<S, U>{p.base, p.offset};
}

struct Label {
  int id = -1;
};

}  // namespace trine::cuda::ptx
