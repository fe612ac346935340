// Shared generator pieces: indexing, warp reductions, dtype conversions.
#include "backends/cuda_ptx/kernels/common.hpp"

#include <algorithm>

#include "trine/error.hpp"

namespace trine::cuda::kernels {

Reg<U64> to_u64(Kernel& k, Reg<U32> a) { return cvt<U64>(k, a); }

Reg<U64> global_thread_u64(Kernel& k) {
  Reg<U32> ctaid = special(k, Special::ctaid_x);
  Reg<U32> ntid = special(k, Special::ntid_x);
  Reg<U32> tid = special(k, Special::tid_x);
  Reg<U64> base = mul_wide(k, ctaid, V<U32>(ntid));
  return add(k, base, V<U64>(to_u64(k, tid)));
}

Reg<U64> grid_threads_u64(Kernel& k) {
  Reg<U32> nctaid = special(k, Special::nctaid_x);
  Reg<U32> ntid = special(k, Special::ntid_x);
  return mul_wide(k, nctaid, V<U32>(ntid));
}

Reg<F32> max_nan(Kernel& k, Reg<F32> a, Reg<F32> b) {
  Reg<Pred> either_nan = setp(k, Cmp::nan, a, V<F32>(b));
  Reg<F32> m = max(k, a, V<F32>(b));
  Reg<F32> nan = add(k, a, V<F32>(b));  // NaN whenever either is
  return selp<F32>(k, nan, m, either_nan);
}

Reg<F32> min_nan(Kernel& k, Reg<F32> a, Reg<F32> b) {
  Reg<Pred> either_nan = setp(k, Cmp::nan, a, V<F32>(b));
  Reg<F32> m = min(k, a, V<F32>(b));
  Reg<F32> nan = add(k, a, V<F32>(b));  // NaN whenever either is
  return selp<F32>(k, nan, m, either_nan);
}

Reg<F32> warp_sum(Kernel& k, Reg<F32> v) {
  for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
    v = add(k, v, V<F32>(shfl(k, Shfl::bfly, v, offset)));
  }
  return v;
}

Reg<F32> warp_max_nan(Kernel& k, Reg<F32> v) {
  for (std::uint32_t offset = 16; offset >= 1; offset /= 2) v = max_nan(k, v, shfl(k, Shfl::bfly, v, offset));
  return v;
}

Reg<F32> f16_to_f32(Kernel& k, Reg<F16> h) { return cvt<F32>(k, h); }

Reg<F32> bf16_to_f32(Kernel& k, Reg<BF16> h) {
  // bf16 is the top half of an f32: widen by shifting (cvt.f32.bf16 needs sm_90).
  Reg<U32> wide = cvt<U32>(k, bitcast<U16>(k, h));
  return bitcast<F32>(k, shl(k, wide, 16u));
}

Reg<F16> f32_to_f16(Kernel& k, Reg<F32> v) { return cvt<F16>(k, v, Round::rn); }

Reg<BF16> f32_to_bf16(Kernel& k, Reg<F32> v) {
  if (target_sm(k.target()) >= 80) return cvt<BF16>(k, v, Round::rn);
  // Round to nearest even on the bits: add 0x7fff plus the lowest kept bit, keep the top half.
  // Overflow carries into the exponent and gives inf, as it should; NaN is made quiet instead.
  Reg<U32> bits = bitcast<U32>(k, v);
  Reg<U32> lsb = and_(k, shr(k, bits, 16u), V<U32>(1u));
  Reg<U32> rounded = add(k, add(k, bits, V<U32>(0x7fffu)), V<U32>(lsb));
  Reg<U32> top = shr(k, rounded, 16u);
  Reg<U32> quiet = or_(k, shr(k, bits, 16u), V<U32>(0x40u));
  Reg<Pred> is_nan = setp(k, Cmp::nan, v, V<F32>(v));
  Reg<U32> result = selp<U32>(k, quiet, top, is_nan);
  return bitcast<BF16>(k, cvt<U16>(k, result));
}

Reg<F32> load_f32(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index) {
  switch (e) {
    case Elem::f32: return ld(k, element(k, Ptr<Global, F32>{base, 0}, index));
    case Elem::f16: return f16_to_f32(k, ld(k, element(k, Ptr<Global, F16>{base, 0}, index)));
    case Elem::bf16: return bf16_to_f32(k, ld(k, element(k, Ptr<Global, BF16>{base, 0}, index)));
    case Elem::i32: return cvt<F32>(k, ld(k, element(k, Ptr<Global, S32>{base, 0}, index)), Round::rn);
  }
  throw Error(ErrorCode::internal, "[ptx] unknown element type");
}

void store_f32(Kernel& k, Elem e, Reg<U64> base, Reg<U64> index, Reg<F32> v) {
  switch (e) {
    case Elem::f32: st(k, element(k, Ptr<Global, F32>{base, 0}, index), V<F32>(v)); return;
    case Elem::f16: st(k, element(k, Ptr<Global, F16>{base, 0}, index), V<F16>(f32_to_f16(k, v))); return;
    case Elem::bf16: st(k, element(k, Ptr<Global, BF16>{base, 0}, index), V<BF16>(f32_to_bf16(k, v))); return;
    // toward zero, saturating at the i32 range, NaN to 0: what cvt.rzi.s32.f32 does
    case Elem::i32: st(k, element(k, Ptr<Global, S32>{base, 0}, index), V<S32>(cvt<S32>(k, v, Round::rzi))); return;
  }
}

std::string module_text(const Kernel& k) {
  Module m(k.target());
  m.add(k);
  return m.text();
}

void unknown_config(std::string_view family, std::size_t config, std::size_t count) {
  throw Error(ErrorCode::invalid_argument, "[ptx] kernel family '" + std::string(family) + "' has no configuration " +
                                               std::to_string(config) + " (it ships " + std::to_string(count) + ")");
}

std::uint32_t blocks_for(std::int64_t work, std::int64_t per_block, std::int64_t cap) {
  std::int64_t b = (std::max<std::int64_t>(work, 1) + per_block - 1) / per_block;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(b, 1, cap));
}

std::int64_t size_at(std::span<const std::int64_t> sizes, std::size_t i) noexcept {
  return i < sizes.size() ? sizes[i] : 1;
}

std::string kernel_name(std::string_view family, std::string_view config) {
  return "trine_" + std::string(family) + "_" + std::string(config);
}

}  // namespace trine::cuda::kernels
