// Ampere-class data movement and tensor-core instructions: cp.async (global -> shared without
// registers), ldmatrix (8x8 b16 tiles from shared into mma fragments) and mma.sync m16n8k16.
#pragma once

#include "backends/cuda_ptx/ptx/instructions.hpp"

namespace trine::cuda::ptx {

template <class P>
concept HalfPair = std::is_same_v<P, F16x2> || std::is_same_v<P, BF16x2>;
template <class E>
concept HalfElem = std::is_same_v<E, F16> || std::is_same_v<E, BF16>;
// The packed pair type of a 16-bit element type.
template <HalfElem E>
using PairOf = std::conditional_t<std::is_same_v<E, F16>, F16x2, BF16x2>;

namespace detail {
template <RegType T, std::size_t N>
std::string reg_list(const Kernel& k, const std::array<Reg<T>, N>& regs) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + k.text(regs[i]);
  return s + "}";
}
}  // namespace detail

// Two f32 rounded to nearest even into one packed pair: hi goes to the upper half (the higher address).
template <HalfPair P>
Reg<P> cvt_pack(Kernel& k, Reg<F32> hi, Reg<F32> lo) {
  k.require(70, 80, "cvt.rn.f16x2/bf16x2.f32");
  Reg<P> d = k.reg<P>();
  k.emit(std::is_same_v<P, F16x2> ? "cvt.rn.f16x2.f32" : "cvt.rn.bf16x2.f32", {k.text(d), k.text(hi), k.text(lo)});
  return d;
}

// Copies 16 bytes from global to shared asynchronously; bytes past src_bytes (0..16) are zero-filled
// and not read, which is how partial tiles are padded.
template <MemType T>
void cp_async_16(Kernel& k, const Ptr<Shared, T>& dst, const Ptr<Global, T>& src, Reg<U32> src_bytes) {
  k.require(70, 80, "cp.async");
  k.emit("cp.async.cg.shared.global", {k.address(dst), k.address(src), "16", k.text(src_bytes)});
}
inline void cp_async_commit(Kernel& k) {
  k.require(70, 80, "cp.async");
  k.emit("cp.async.commit_group", {});
}
// Waits until at most `pending` committed groups are still in flight.
inline void cp_async_wait(Kernel& k, int pending) {
  k.require(70, 80, "cp.async");
  k.emit("cp.async.wait_group", {std::to_string(pending)});
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i. With trans each matrix
// arrives transposed (how a row-major [k][n] tile becomes mma's "col" B fragment).
template <HalfElem E>
std::array<Reg<PairOf<E>>, 4> ldmatrix_x4(Kernel& k, const Ptr<Shared, E>& rows, bool trans) {
  k.require(65, 75, "ldmatrix");
  std::array<Reg<PairOf<E>>, 4> d;
  for (auto& r : d) r = k.reg<PairOf<E>>();
  k.emit(trans ? "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" : "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
         {detail::reg_list(k, d), k.address(rows)});
  return d;
}

// acc (16x8 f32 fragment) += a (16x16, row) * b (16x8, col), in place.
template <HalfElem E>
void mma_m16n8k16(Kernel& k, std::array<Reg<F32>, 4>& acc, const std::array<Reg<PairOf<E>>, 4>& a,
                  const std::array<Reg<PairOf<E>>, 2>& b) {
  k.require(70, 80, "mma.sync.m16n8k16");
  std::string op = std::is_same_v<E, F16> ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                          : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  k.emit(op, {detail::reg_list(k, acc), detail::reg_list(k, a), detail::reg_list(k, b), detail::reg_list(k, acc)});
}

// Two 16-bit values as one packed pair (lo in the low half, the lower address in memory).
template <HalfElem E>
Reg<PairOf<E>> pack_pair(Kernel& k, Reg<E> lo, Reg<E> hi) {
  Reg<PairOf<E>> d = k.reg<PairOf<E>>();
  k.emit("mov.b32", {k.text(d), "{" + k.text(lo) + ", " + k.text(hi) + "}"});
  return d;
}

// Turing's f16 shape: acc (16x8 f32) += a (16x8, row) * b (8x8, col), in place.
inline void mma_m16n8k8_f16(Kernel& k, std::array<Reg<F32>, 4>& acc, const std::array<Reg<F16x2>, 2>& a, Reg<F16x2> b) {
  k.require(65, 75, "mma.sync.m16n8k8");
  k.emit("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
         {detail::reg_list(k, acc), detail::reg_list(k, a), "{" + k.text(b) + "}", detail::reg_list(k, acc)});
}

}  // namespace trine::cuda::ptx
