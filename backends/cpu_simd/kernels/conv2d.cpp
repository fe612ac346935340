// cpu_simd conv2d (NCHW): per (image, group) a GEMM W_g [Kg, Cg*R*S] x im2col(x) [Cg*R*S, P*Q],
// with the im2col matrix never materialised: its NR-column panels are packed straight from x.
#include "backends/cpu_simd/isa.hpp"

#include "backends/cpu_simd/execute.hpp"
#include "backends/cpu_simd/gemm/driver.hpp"
#include "backends/cpu_simd/kernels/lanes.hpp"

namespace trine::cpu::TRINE_ISA_NS {
namespace {

// Packs rows [k0, k0+kc) x output pixels [j0, j0+n) of one (image, group)'s im2col matrix into
// B panels. Row k is (channel c, kernel row r, kernel col s); column j is output pixel (p, q).
struct Im2colPacker {
  const float* x = nullptr;      // the group's first input channel of this image
  const float* x_end = nullptr;  // end of the whole input: reads up to here are safe
  i64 H = 0, W = 0, R = 0, S = 0, Q = 0;
  i64 stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;

  static i64 round_up_w(i64 n) { return (n + vec_width - 1) / vec_width * vec_width; }

  // The runs below write whole vectors: dst may be written up to `room` floats, past n, because
  // the next run of the same panel row (or the packer's final zero fill) overwrites that part.
  // Sources are read in whole vectors only while that stays inside the input.
  static void zero_fast(float* dst, i64 n, i64 room) {
    if (round_up_w(n) <= room) {
      for (i64 u = 0; u < n; u += vec_width) batch_f32(0.0f).store_unaligned(dst + u);
      return;
    }
    zero_run(dst, n);
  }
  void copy_fast(float* dst, const float* src, i64 n, i64 room) const {
    const i64 nv = round_up_w(n);
    if (nv <= room && src + nv <= x_end) {
      for (i64 u = 0; u < n; u += vec_width) batch_f32::load_unaligned(src + u).store_unaligned(dst + u);
      return;
    }
    copy_run(dst, src, n);
  }
  // dst[u] = src[2u] for u < n.
  void even_fast(float* dst, const float* src, i64 n, i64 room) const {
    const i64 nv = round_up_w(n);
    i64 u = 0;
    if (nv <= room && src + 2 * nv <= x_end) {
      for (; u < n; u += vec_width) store_even(src + 2 * u, dst + u);
      return;
    }
    for (; u + vec_width <= n && src + 2 * (u + vec_width) <= x_end; u += vec_width) store_even(src + 2 * u, dst + u);
    for (; u < n; ++u) dst[u] = src[2 * u];
  }

  // out[0, n) = im2col row (c, r, s) at pixels j0.. (p0, q0 being pixel j0); out has `room`
  // writable floats.
  void fill_row(const float* plane, i64 r, i64 s, i64 p0, i64 q0, i64 n, float* __restrict out, i64 room) const {
    i64 p = p0, q = q0, t = 0;
    while (t < n) {
      const i64 seg = std::min(n - t, Q - q);  // pixels left in output row p
      const i64 h = p * stride_h - pad_h + r * dil_h;
      if (h < 0 || h >= H) {
        zero_fast(out + t, seg, room - t);
      } else {
        const float* __restrict row = plane + h * W;
        const i64 w0 = q * stride_w - pad_w + s * dil_w;  // input column of pixel q
        // Pixels [lo, hi) of the run read inside the row; the others are padding.
        const i64 lo = std::clamp<i64>((-w0 + stride_w - 1) / stride_w * (w0 < 0), 0, seg);
        const i64 hi = std::clamp<i64>(w0 <= W - 1 ? (W - 1 - w0) / stride_w + 1 : 0, lo, seg);
        zero_fast(out + t, lo, room - t);
        if (stride_w == 1) {
          copy_fast(out + t + lo, row + w0 + lo, hi - lo, room - t - lo);
        } else if (stride_w == 2) {
          even_fast(out + t + lo, row + w0 + 2 * lo, hi - lo, room - t - lo);
        } else {
          for (i64 u = lo; u < hi; ++u) out[t + u] = row[w0 + u * stride_w];
        }
        zero_fast(out + t + hi, seg - hi, room - t - hi);
      }
      t += seg;
      q = 0;
      ++p;
    }
  }

  static void copy_run(float* __restrict dst, const float* __restrict src, i64 n) {
    i64 u = 0;
    for (; u + vec_width <= n; u += vec_width) batch_f32::load_unaligned(src + u).store_unaligned(dst + u);
    for (; u < n; ++u) dst[u] = src[u];
  }
  static void zero_run(float* __restrict dst, i64 n) {
    i64 u = 0;
    for (; u + vec_width <= n; u += vec_width) batch_f32(0.0f).store_unaligned(dst + u);
    for (; u < n; ++u) dst[u] = 0.0f;
  }

  void operator()(i64 k0, i64 kc, i64 j0, i64 n, float* dst) const {
    constexpr i64 nr = GemmConfig::nr;
    const i64 rs = R * S;
    for (i64 jp = 0; jp < n; jp += nr) {
      const i64 nn = std::min(nr, n - jp);
      const i64 p0 = (j0 + jp) / Q, q0 = (j0 + jp) % Q;
      float* panel = dst + jp * kc;
      i64 c = k0 / rs, r = (k0 % rs) / S, s = k0 % S;
      for (i64 k = 0; k < kc; ++k) {
        float* out = panel + k * nr;
        fill_row(x + c * H * W, r, s, p0, q0, nn, out, nr);
        zero_run(out + nn, nr - nn);
        if (++s == S) {
          s = 0;
          if (++r == R) r = 0, ++c;
        }
      }
    }
  }
};

void add_bias(float* y, const float* bias, i64 rows, i64 cols) {
  for (i64 k = 0; k < rows; ++k) {
    float* row = y + k * cols;
    const batch_f32 b(bias[k]);
    i64 j = 0;
    for (; j + vec_width <= cols; j += vec_width) (batch_f32::load_unaligned(row + j) + b).store_unaligned(row + j);
    for (; j < cols; ++j) row[j] += bias[k];
  }
}

enum class Conv2dPath { depthwise, winograd_f2, winograd_f4, direct, direct_channels, implicit_gemm };

// The one place the path is chosen: by conv2d_kernel, and reported by conv2d_path_name.
Conv2dPath choose_path(const Conv2dArgs& a) {
  // Read first, so that a bad TRINE_CPU_WINOGRAD is an error on every conv2d.
  const int tile = conv2d_winograd_tile(a);
  if (conv2d_is_depthwise(a)) return Conv2dPath::depthwise;
  if (tile == 2) return Conv2dPath::winograd_f2;
  if (tile == 4) return Conv2dPath::winograd_f4;
  if (conv2d_direct_channels_fits(a)) return Conv2dPath::direct_channels;
  if (conv2d_direct_fits(a)) return Conv2dPath::direct;
  return Conv2dPath::implicit_gemm;
}

const char* conv2d_path_name(const Conv2dArgs& a) {
  switch (choose_path(a)) {
    case Conv2dPath::depthwise: return "depthwise";
    case Conv2dPath::winograd_f2: return "winograd_f2";
    case Conv2dPath::winograd_f4: return "winograd_f4";
    case Conv2dPath::direct: return "direct";
    case Conv2dPath::direct_channels: return "direct_channels";
    case Conv2dPath::implicit_gemm: return "implicit_gemm";
  }
  return "implicit_gemm";
}

void conv2d_kernel(const Conv2dArgs& a) {
  switch (choose_path(a)) {
    case Conv2dPath::depthwise: conv2d_depthwise(a); return;
    case Conv2dPath::winograd_f2: conv2d_winograd(a, 2); return;
    case Conv2dPath::winograd_f4: conv2d_winograd(a, 4); return;
    case Conv2dPath::direct: conv2d_direct(a); return;
    case Conv2dPath::direct_channels: conv2d_direct_channels(a); return;
    case Conv2dPath::implicit_gemm: break;
  }
  const i64 G = a.groups, Cg = a.C / G, Kg = a.K / G;
  const i64 crs = Cg * a.R * a.S, pq = a.P * a.Q, hw = a.H * a.W;
  const bool pointwise = a.R == 1 && a.S == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0 &&
                         a.P == a.H && a.Q == a.W;

  // One (image, group) product; its output block [Kg, P*Q] is contiguous in y.
  auto run_one = [&](i64 task, int max_threads) {
    const i64 n = task / G, g = task % G;
    const float* xg = a.x + (n * a.C + g * Cg) * hw;
    float* yg = a.y + (n * a.K + g * Kg) * pq;
    const StridedMatrix wm{a.w, DType::f32, g * Kg * crs, crs, 1};
    auto pack_a = [&wm](auto rows, i64 i0, i64 m, i64 k0, i64 kc, float* dst) {
      pack_a_typed<DType::f32, decltype(rows)::value>(wm, i0, m, k0, kc, dst);
    };
    if (pointwise) {  // the im2col matrix is the input itself: [Cg, H*W] row-major
      const StridedMatrix xm{xg, DType::f32, 0, hw, 1};
      auto pack_b = [&xm](i64 k0, i64 kc, i64 j0, i64 nn, float* dst) {
        pack_b_typed<DType::f32>(xm, k0, kc, j0, nn, dst);
      };
      gemm_run(Kg, pq, crs, pack_a, pack_b, yg, pq, max_threads);
    } else {
      const Im2colPacker pack_b{xg,         a.x + a.N * a.C * hw, a.H,     a.W,     a.R,     a.S,    a.Q,
                                a.stride_h, a.stride_w,           a.pad_h, a.pad_w, a.dil_h, a.dil_w};
      gemm_run(Kg, pq, crs, pack_a, pack_b, yg, pq, max_threads);
    }
    if (a.bias) add_bias(yg, a.bias + g * Kg, Kg, pq);
  };

  const i64 tasks = a.N * G, threads = thread_count();
  const i64 work = Kg * pq * crs;
  const bool over_tasks = threads > 1 && tasks >= threads &&
                          (tasks % threads == 0 || tasks >= 4 * threads || work < gemm_min_work_per_thread);
  if (over_tasks) {
    parallel_for(tasks, 1, [&](i64 t0, i64 t1) {
      for (i64 t = t0; t < t1; ++t) run_one(t, 1);
    });
  } else {
    for (i64 t = 0; t < tasks; ++t) run_one(t, static_cast<int>(threads));
  }
}

void run_conv2d(const KernelTable& k, const trine::detail::OpCall& call) {
  const auto& in = call.inputs;
  const auto& p = std::get<Conv2dParams>(call.params);
  Conv2dArgs c;
  const Shape& xs = in[0].shape();
  const Shape& ws = in[1].shape();
  const Shape& os = call.output.shape();
  c.N = xs[0], c.C = xs[1], c.H = xs[2], c.W = xs[3];
  c.K = ws[0], c.R = ws[2], c.S = ws[3];
  c.P = os[2], c.Q = os[3];
  c.stride_h = p.stride.h, c.stride_w = p.stride.w;
  c.pad_h = p.padding.h, c.pad_w = p.padding.w;
  c.dil_h = p.dilation.h, c.dil_w = p.dilation.w;
  c.groups = p.groups;
  Tensor keep0, keep1, keep2;
  // 16-bit tensors: widened whole before and the result rounded once after (F32Result), passes of
  // O(N C H W) against the O(N K P Q C R S) work.
  c.x = widened_f32(k, in[0], keep0);
  c.w = widened_f32(k, in[1], keep1);
  c.bias = in.size() > 2 ? widened_f32(k, in[2], keep2) : nullptr;
  const F32Result y(k, call);
  c.y = y.data();
  conv2d_kernel(c);
  y.round();
}

}  // namespace

void register_conv2d(KernelTable& t) {
  t.ops.add(OpKind::conv2d, run_conv2d);
  t.conv2d_path = conv2d_path_name;
}

}  // namespace trine::cpu::TRINE_ISA_NS
