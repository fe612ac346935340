// The spellings of the emitter's enums in PTX text.
#include "backends/cuda_ptx/ptx/instructions.hpp"

namespace trine::cuda::ptx {

std::string_view cmp_name(Cmp c) noexcept {
  switch (c) {
    case Cmp::eq: return "eq";
    case Cmp::ne: return "ne";
    case Cmp::lt: return "lt";
    case Cmp::le: return "le";
    case Cmp::gt: return "gt";
    case Cmp::ge: return "ge";
    case Cmp::equ: return "equ";
    case Cmp::neu: return "neu";
    case Cmp::ltu: return "ltu";
    case Cmp::leu: return "leu";
    case Cmp::gtu: return "gtu";
    case Cmp::geu: return "geu";
    case Cmp::num: return "num";
    case Cmp::nan: return "nan";
  }
  return "?";
}

std::string_view round_name(Round r) noexcept {
  switch (r) {
    case Round::none: return "";
    case Round::rn: return "rn";
    case Round::rz: return "rz";
    case Round::rni: return "rni";
    case Round::rzi: return "rzi";
    case Round::rmi: return "rmi";
  }
  return "";
}

std::string_view approx_name(Approx f) noexcept {
  switch (f) {
    case Approx::ex2: return "ex2";
    case Approx::lg2: return "lg2";
    case Approx::sin: return "sin";
    case Approx::cos: return "cos";
    case Approx::rsqrt: return "rsqrt";
  }
  return "?";
}

std::string_view special_name(Special s) noexcept {
  switch (s) {
    case Special::tid_x: return "%tid.x";
    case Special::tid_y: return "%tid.y";
    case Special::tid_z: return "%tid.z";
    case Special::ntid_x: return "%ntid.x";
    case Special::ntid_y: return "%ntid.y";
    case Special::ntid_z: return "%ntid.z";
    case Special::ctaid_x: return "%ctaid.x";
    case Special::ctaid_y: return "%ctaid.y";
    case Special::ctaid_z: return "%ctaid.z";
    case Special::nctaid_x: return "%nctaid.x";
    case Special::nctaid_y: return "%nctaid.y";
    case Special::nctaid_z: return "%nctaid.z";
    case Special::laneid: return "%laneid";
  }
  return "?";
}

std::string_view reduction_name(Reduction r) noexcept {
  switch (r) {
    case Reduction::add: return "add";
    case Reduction::min: return "min";
    case Reduction::max: return "max";
  }
  return "?";
}

std::string_view shfl_name(Shfl m) noexcept {
  switch (m) {
    case Shfl::up: return "up";
    case Shfl::down: return "down";
    case Shfl::bfly: return "bfly";
    case Shfl::idx: return "idx";
  }
  return "?";
}

}  // namespace trine::cuda::ptx
