// The fit behind gelu (erf form) on the cpu and cuda backends, which both compute it as
// gelu(x) = max(x, 0) - F(a), a = min(|x|, gelu_erf_cap), F(a) = a erfc(a / sqrt 2) / 2 =
// s e^(G(s) - a^2 / 2), s = a / (gelu_erf_k + a); the Vulkan shader (shaders/common.glsl) writes the
// same numbers, GLSL having no way to include this file.
#pragma once

namespace trine::detail {

// K = 2 sqrt 2 rounded to f32: the fit is of G for this K, so K is part of it.
inline constexpr float gelu_erf_k = 2.82842712f;

// Past it F(a) < 2^-126: x >= cap gives x, x <= -cap a result that may flush to 0.
inline constexpr float gelu_erf_cap = 13.15f;

// G(s) = ln((K + a) erfc(a / sqrt 2) / 2) + a^2 / 2 (G(0) = ln(2) / 2, G(1) = -ln(2 pi) / 2), smooth
// in s: its Chebyshev interpolant of degree 11 on the s that a <= 13.2 reaches, in monomials
// rounded to f32, highest power first (scripts/fit-gelu-erf.cpp prints them): 0.04u (u = 2^-24)
// from G, 1.8u absolute with an f32 Horner evaluation by FMA, which reaches F as a relative error.
inline constexpr float gelu_erf_g[12] = {0.0588186756f, -0.416879088f, 1.00175714f,  -1.05791807f,
                                         0.549255013f,  -0.30186215f,  0.114825808f, 0.184240326f,
                                         0.162237555f,  -0.303273559f, -1.25675762f, 0.346573561f};

}  // namespace trine::detail
