// A PTX kernel under construction and the module that prints it: parameters, virtual registers with
// one counter per type (declared after the body is built), shared arrays, labels, predicate guards,
// and the lowest PTX version the instructions used need.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/cuda_ptx/ptx/types.hpp"

namespace trine::cuda::ptx {

class Kernel {
 public:
  Kernel(std::string name, Target target);

  Target target() const noexcept { return target_; }
  const std::string& name() const noexcept { return name_; }

  // A fresh register of type T.
  template <RegType T>
  Reg<T> reg() {
    return Reg<T>{counts_[T::slot]++};
  }
  // Declares a scalar parameter (in call order) and returns its symbol.
  template <MemType T>
  Ptr<Param, T> declare_param(std::string_view name) {
    return Ptr<Param, T>{Symbol{add_param(name, T::ptx)}, 0};
  }
  // Declares a shared array of count elements of T aligned to align bytes.
  template <MemType T>
  Symbol declare_shared(std::string_view name, std::int64_t count, int align) {
    return Symbol{add_shared(name, count * T::bytes, align)};
  }
  Label new_label() { return Label{labels_++}; }
  // Caps the CTA size (.maxntid), which lets ptxas budget registers for it; min_blocks (.minnctapersm)
  // says how many CTAs must fit on an SM, otherwise ptxas picks its own occupancy goal.
  void set_max_threads(int threads, int min_blocks = 0) { set_max_block({threads, 1, 1}, min_blocks); }
  // The same for a 2D/3D block: .maxntid names each dimension's extent.
  void set_max_block(std::array<int, 3> extents, int min_blocks = 0) {
    max_block_ = extents;
    min_blocks_ = min_blocks;
  }

  // Records that the kernel uses something that needs PTX ISA `version` (major*10+minor) and at least
  // sm `min_sm`; throws Error(unsupported) naming `what` when the target is older.
  void require(int version, int min_sm, std::string_view what);
  int version_needed() const noexcept { return version_; }
  std::int64_t shared_bytes() const noexcept { return shared_total_; }

  // ---- used by the instruction functions (instructions.hpp), not by kernel generators ----
  template <RegType T>
  std::string text(Reg<T> r) const {
    return reg_text(T::prefix, r.id);
  }
  template <RegType T>
  std::string text(const Val<T>& v) const {
    if (auto r = std::get_if<Reg<T>>(&v.v)) return text(*r);
    return imm_text(T::ptx, std::get<typename T::imm>(v.v));
  }
  template <StateSpace S, MemType T>
  std::string address(const Ptr<S, T>& p) const {
    if constexpr (std::is_same_v<S, Param>) {
      return address_text(params_.at(p.base.index).name, p.offset);
    } else {
      return address_text(text(p.base), p.offset);
    }
  }
  std::string symbol_name(Symbol s) const { return shared_.at(s.index).name; }
  std::string label_text(Label l) const;
  // Appends one instruction; the active guard (if any) predicates it.
  void emit(std::string_view opcode, std::initializer_list<std::string> operands);
  void emit_label(Label l);

  // RAII predicate guard: instructions emitted while it lives run only where p (or !p) holds.
  class Guard {
   public:
    Guard(Kernel& k, Reg<Pred> p, bool negate);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Kernel& k_;
  };

  // The kernel's .entry text, registers declared from the counters.
  std::string text() const;

 private:
  struct ParamDecl {
    std::string name;
    std::string_view type;
  };
  struct SharedDecl {
    std::string name;
    std::int64_t bytes;
    int align;
  };
  int add_param(std::string_view name, std::string_view type);
  int add_shared(std::string_view name, std::int64_t bytes, int align);
  static std::string reg_text(std::string_view prefix, int id);
  static std::string imm_text(std::string_view type, float v);
  static std::string imm_text(std::string_view type, double v);
  static std::string imm_text(std::string_view type, std::uint64_t v);
  static std::string imm_text(std::string_view type, std::int64_t v);
  template <class I>
  static std::string imm_text(std::string_view type, I v) {
    if constexpr (std::is_signed_v<I>) {
      return imm_text(type, static_cast<std::int64_t>(v));
    } else {
      return imm_text(type, static_cast<std::uint64_t>(v));
    }
  }
  static std::string address_text(const std::string& base, std::int64_t offset);

  std::string name_;
  Target target_;
  std::array<int, type_slot_count> counts_{};
  std::vector<ParamDecl> params_;
  std::vector<SharedDecl> shared_;
  std::int64_t shared_total_ = 0;
  std::vector<std::string> body_;
  int labels_ = 0;
  int version_ = 0;
  std::array<int, 3> max_block_{0, 0, 0};
  int min_blocks_ = 0;
  std::optional<std::string> guard_;
};

// A module: one target, its kernels. `.version` is the lowest that knows the target and every
// instruction the kernels use.
class Module {
 public:
  explicit Module(Target target) : target_(target) {}
  void add(const Kernel& k);
  int version() const noexcept;
  std::string text() const;

 private:
  Target target_;
  std::vector<std::string> kernels_;
  int version_ = 0;
};

}  // namespace trine::cuda::ptx
