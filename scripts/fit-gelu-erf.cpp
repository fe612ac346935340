// The polynomial G of the cpu's gelu (backends/cpu_simd/kernels/unary.cpp, gelu_erf): F(a) =
// a erfc(a / sqrt 2) / 2 = s e^(G(s) - a^2 / 2), s = a / (K + a), K = 2 sqrt 2 in f32, so G(s) =
// ln((K + a) erfc(a / sqrt 2) / 2) + a^2 / 2 with a = K s / (1 - s). G is interpolated at Chebyshev
// nodes over the s that a <= 13.2 reaches (past gelu's cap of 13.15), in long double, and the
// interpolant's monomial coefficients rounded to f32; then the f32 Horner evaluation (with FMA, as
// the kernel's) is compared with G over 400001 values of a, in u = 2^-24 absolute, which is G's
// share of gelu's relative error. Build: g++ -O2 -std=c++20 scripts/fit-gelu-erf.cpp; run with the
// degree to print (the kernel takes 11).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

using LD = long double;
constexpr float k_f32 = 2.82842712f;

LD g_exact(LD s) {
  const LD a = static_cast<LD>(k_f32) * s / (1 - s);
  return std::log((static_cast<LD>(k_f32) + a) * std::erfc(a / std::sqrt(2.0L)) / 2) + a * a / 2;
}

int main(int argc, char** argv) {
  const int print = argc > 1 ? std::atoi(argv[1]) : 11;
  const LD s_max = 13.2L / (13.2L + k_f32), pi = 3.14159265358979323846264338327950288L;
  for (int n = 8; n <= 14; ++n) {
    // Chebyshev coefficients c_k of the interpolant in u = 2 s / s_max - 1
    std::vector<LD> f(n + 1), c(n + 1, 0);
    for (int j = 0; j <= n; ++j) f[j] = g_exact(s_max / 2 * (std::cos(pi * (j + 0.5L) / (n + 1)) + 1));
    for (int k = 0; k <= n; ++k) {
      for (int j = 0; j <= n; ++j) c[k] += f[j] * std::cos(pi * k * (j + 0.5L) / (n + 1));
      c[k] *= LD{2} / (n + 1);
    }
    c[0] /= 2;
    // T_k as polynomials in s by T_{k+1} = 2 u T_k - T_{k-1}, summed into monomial coefficients
    std::vector<LD> mono(n + 1, 0), t_prev(n + 1, 0), t_cur(n + 1, 0), t_next(n + 1, 0);
    t_prev[0] = 1;
    t_cur[0] = -1;
    t_cur[1] = 2 / s_max;
    for (int i = 0; i <= n; ++i) mono[i] += c[0] * t_prev[i] + c[1] * t_cur[i];
    for (int k = 2; k <= n; ++k) {
      for (int i = 0; i <= n; ++i) t_next[i] = -2 * t_cur[i] - t_prev[i] + (i > 0 ? 4 / s_max * t_cur[i - 1] : 0);
      for (int i = 0; i <= n; ++i) mono[i] += c[k] * t_next[i];
      t_prev = t_cur;
      t_cur = t_next;
    }
    std::vector<float> cf(mono.begin(), mono.end());
    double worst = 0;
    float at = 0;
    for (int i = 0; i <= 400000; ++i) {
      const float a = 13.15f * static_cast<float>(i) / 400000, s = a / (k_f32 + a);
      float p = cf[n];
      for (int j = n - 1; j >= 0; --j) p = std::fma(p, s, cf[j]);
      const double err = static_cast<double>(std::fabs(p - g_exact(s))) * 16777216.0;
      if (err > worst) worst = err, at = a;
    }
    std::printf("degree %d: f32 evaluation within %.3f u of G (worst at a = %.3f)\n", n, worst, static_cast<double>(at));
    if (n == print) {
      std::printf("  highest power first:");
      for (int j = n; j >= 0; --j) std::printf(" %.9gf", static_cast<double>(cf[j]));
      std::printf("\n");
    }
  }
}
