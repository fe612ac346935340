// The reference oracle: conv2d, attention and rope, in double precision.
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace trine::ref {

using namespace detail;

Array conv2d(const Array& x, const Array& w, const Array& bias, const Conv2dParams& params) {
  const std::string op = "conv2d";
  check_array(x, op, "x");
  check_array(w, op, "w");
  check_rank(x, op, "x", 4, 4);
  check_rank(w, op, "w", 4, 4);
  check_non_empty(x, op, "x");
  check_non_empty(w, op, "w");
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  const std::int64_t filters = w.shape[0], group_channels = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const std::int64_t groups = params.groups;
  const Pair2 stride = params.stride, pad = params.padding, dil = params.dilation;
  if (groups < 1 || channels % groups != 0 || filters % groups != 0) {
    fail(op, "groups " + std::to_string(groups) + " does not divide C " + std::to_string(channels) + " and K " +
                 std::to_string(filters));
  }
  if (group_channels != channels / groups) {
    fail(op,
         "w " + dims_str(w.shape) + " does not fit x " + dims_str(x.shape) + " with groups " + std::to_string(groups));
  }
  if (stride.h < 1 || stride.w < 1 || dil.h < 1 || dil.w < 1 || pad.h < 0 || pad.w < 0) {
    fail(op, "stride and dilation must be >= 1 and padding >= 0");
  }
  check_optional_vector(bias, filters, op, "bias");
  // The extent the dilated kernel sweeps must fit the padded input, or there is no output pixel.
  const std::int64_t span_h = height + 2 * pad.h - dil.h * (kh - 1) - 1;
  const std::int64_t span_w = width + 2 * pad.w - dil.w * (kw - 1) - 1;
  if (span_h < 0 || span_w < 0) fail(op, "the dilated kernel is larger than the padded input");
  const std::int64_t out_h = span_h / stride.h + 1, out_w = span_w / stride.w + 1;

  Array y = zeros({batch, filters, out_h, out_w});
  y.scale.resize(y.data.size());
  y.terms = group_channels * kh * kw + (bias.present ? 1 : 0);
  const std::int64_t filters_per_group = filters / groups;
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t k = 0; k < filters; ++k) {
      const std::int64_t first_channel = (k / filters_per_group) * group_channels;
      for (std::int64_t p = 0; p < out_h; ++p) {
        for (std::int64_t q = 0; q < out_w; ++q) {
          double total = 0.0, magnitude = 0.0;
          for (std::int64_t c = 0; c < group_channels; ++c) {
            for (std::int64_t r = 0; r < kh; ++r) {
              const std::int64_t h = p * stride.h - pad.h + r * dil.h;
              if (h < 0 || h >= height) continue;  // zero padding
              for (std::int64_t s = 0; s < kw; ++s) {
                const std::int64_t col = q * stride.w - pad.w + s * dil.w;
                if (col < 0 || col >= width) continue;
                const double xv = x.data[((n * channels + first_channel + c) * height + h) * width + col];
                const double wv = w.data[((k * group_channels + c) * kh + r) * kw + s];
                total += xv * wv;
                magnitude += std::fabs(xv * wv);
              }
            }
          }
          if (bias.present) total += bias.data[k], magnitude += std::fabs(bias.data[k]);
          y.data[((n * filters + k) * out_h + p) * out_w + q] = total;
          y.scale[((n * filters + k) * out_h + p) * out_w + q] = magnitude;
        }
      }
    }
  }
  return y;
}

Array attention(const Array& q, const Array& k, const Array& v, const AttentionParams& params) {
  const std::string op = "attention";
  check_array(q, op, "q");
  check_array(k, op, "k");
  check_array(v, op, "v");
  check_rank(q, op, "q", 2);
  check_non_empty(q, op, "q");
  check_non_empty(k, op, "k");
  check_non_empty(v, op, "v");
  const std::size_t r = q.shape.size();
  if (k.shape.size() != r || v.shape.size() != r) fail(op, "q, k and v must have the same rank");
  const Dims lead(q.shape.begin(), q.shape.end() - 2);
  // Grouped-query attention: dim -3 (the heads) of k and v may divide q's; every other leading dim is equal.
  const std::int64_t hq = r >= 3 ? q.shape[r - 3] : 1, hkv = r >= 3 ? k.shape[r - 3] : 1;
  Dims kv_lead = lead;
  if (r >= 3) kv_lead[r - 3] = hkv;
  if (Dims(k.shape.begin(), k.shape.end() - 2) != kv_lead || Dims(v.shape.begin(), v.shape.end() - 2) != kv_lead ||
      hkv < 1 || hq % hkv != 0) {
    fail(op,
         "leading dims do not fit: q " + dims_str(q.shape) + ", k " + dims_str(k.shape) + ", v " + dims_str(v.shape));
  }
  const std::int64_t group = hq / hkv;
  const std::int64_t lq = q.shape[r - 2], d = q.shape[r - 1];
  const std::int64_t lk = k.shape[r - 2], dv = v.shape[r - 1];
  if (k.shape[r - 1] != d || v.shape[r - 2] != lk) {
    fail(op, "q " + dims_str(q.shape) + ", k " + dims_str(k.shape) + ", v " + dims_str(v.shape) + " do not fit");
  }
  if (params.causal && lq > lk) fail(op, "causal needs Lq <= Lk");
  if (params.window < 0 || (params.window > 0 && !params.causal)) fail(op, "window needs causal and >= 0");
  const double scale = params.scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(d)) : params.scale;

  Array out = zeros([&] {
    Dims s = lead;
    s.push_back(lq);
    s.push_back(dv);
    return s;
  }());
  out.scale.resize(out.data.size());
  out.terms = std::max(lk, d);
  std::vector<double> scores(static_cast<std::size_t>(lk)), score_scale(static_cast<std::size_t>(lk)), p_scale;
  for (std::int64_t b = 0; b < product(lead); ++b) {
    const double* qb = q.data.data() + b * lq * d;
    const std::int64_t kv = (b / hq) * hkv + (b % hq) / group;  // q head h reads kv head h / group
    const double* kb = k.data.data() + kv * lk * d;
    const double* vb = v.data.data() + kv * lk * dv;
    double* ob = out.data.data() + b * lq * dv;
    for (std::int64_t i = 0; i < lq; ++i) {
      // Causal alignment is to the end: the last query sees every key.
      // A window sees the last `window` keys up to the query's position.
      const std::int64_t pos = i + (lk - lq);
      auto visible = [&](std::int64_t j) {
        return !params.causal || (j <= pos && (params.window == 0 || j > pos - params.window));
      };
      for (std::int64_t j = 0; j < lk; ++j) {
        double s = 0.0, magnitude = 0.0;
        for (std::int64_t c = 0; c < d; ++c) {
          s += qb[i * d + c] * kb[j * d + c];
          magnitude += std::fabs(qb[i * d + c] * kb[j * d + c]);
        }
        scores[j] = visible(j) ? s * scale : -kInf;
        score_scale[j] = magnitude * std::fabs(scale);
      }
      const std::vector<double> p = softmax_row(scores, false, &p_scale);
      for (std::int64_t c = 0; c < dv; ++c) {
        double total = 0.0, magnitude = 0.0;
        // Masked keys are skipped rather than weighted by 0, so an inf or a NaN in their value rows does not leak in.
        for (std::int64_t j = 0; j < lk; ++j) {
          if (!visible(j)) continue;
          total += p[j] * vb[j * dv + c];
          // p_j is off by its own scale, plus the score's rounding (relative to sum |q k|) that exp turns relative.
          magnitude += (p_scale[j] + p[j] * score_scale[j]) * std::fabs(vb[j * dv + c]);
        }
        ob[i * dv + c] = total;
        out.scale[static_cast<std::size_t>(ob - out.data.data() + i * dv + c)] = magnitude;
      }
    }
  }
  return out;
}

Array rope(const Array& x, const RopeParams& params) {
  const std::string op = "rope";
  check_array(x, op, "x");
  check_rank(x, op, "x", 2);
  check_non_empty(x, op, "x");
  const std::int64_t len = x.shape[x.shape.size() - 2], d = x.shape.back();
  if (d % 2 != 0) fail(op, "D " + std::to_string(d) + " is odd");
  const double base = params.base;
  Array y = x;
  y.scale.resize(y.data.size());
  const bool halves = params.pairs == RopePairs::halves;
  for (std::int64_t row = 0; row < x.numel() / d; ++row) {
    const double position = static_cast<double>(params.position_offset + row % len);
    for (std::int64_t i = 0; i < d / 2; ++i) {
      // pair i: (x[2i], x[2i+1]) interleaved, (x[i], x[i + D/2]) in halves
      const std::int64_t a = row * d + (halves ? i : 2 * i), b = halves ? a + d / 2 : a + 1;
      const double angle = position * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      const double x0 = x.data[a], x1 = x.data[b];
      y.data[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      y.data[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
      // The angle is position * base^(-2i/D), computed in f32: an error relative to |angle|, which
      // moves the pair by |angle| times its derivative; plus the two products' roundings.
      const double c = std::fabs(std::cos(angle)), sn = std::fabs(std::sin(angle)), ax0 = std::fabs(x0),
                   ax1 = std::fabs(x1);
      y.scale[a] = ax0 * c + ax1 * sn + angle * (ax0 * sn + ax1 * c);
      y.scale[b] = ax0 * sn + ax1 * c + angle * (ax0 * c + ax1 * sn);
    }
  }
  return y;
}

}  // namespace trine::ref
