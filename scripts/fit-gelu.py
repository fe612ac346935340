#!/usr/bin/env python3
"""The polynomials of the cpu's gelu (backends/cpu_simd/kernels/elementwise.cpp), of pow2_bounded and
pow2_eighths (kernels/simd_common.hpp: gelu's 2^w and softmax's exp), fitted here, and a model of gelu's f32
arithmetic measured the way the conformance tests measure it.

Needs numpy and mpmath (pip install numpy mpmath). Prints the coefficient lists and the model's
worst error in f32 eps on gelu's measure (tests/reference/bridge.hpp: |out - fl32(ref)| over
|y| + |x f'(x)|, differences below 2^-100 not measured), with FMA (AVX2, AVX-512) and without
(SSE4.2, where xsimd::fma is a rounded multiply and a rounded add).

gelu(x) = max(x, 0) - F(a), a = min(|x|, 13), F(a) = a erfc(a / sqrt 2) / 2 = s 2^(G(s) - C a^2) with
s = a / (K + a), K = 2 sqrt 2 (in f32), C = log2(e) / 2 (in f32). G(s) = log2((K + a) erfc(a / sqrt 2)
/ 2) + C a^2 is smooth, G(0) = 1/2; it is fitted by least squares on Chebyshev nodes over the s that
a <= 13 reaches, weighted by how much error the measure allows there (about 1 + a^2). pow2_bounded's
2^r on |r| <= 1/2 is 1 + r P(r). With AVX2 and AVX-512, gelu computes v = 8w and 2^w = 2^(k/8) 2^(r/8),
k = round(v), |r| <= 1/2: the eight 2^(j/8) from a table (printed as the kernel stores them: bits less
j << 20), 2^(r/8) = 1 + r Q(r); SSE4.2 (no lane permute, no FMA) keeps pow2_bounded. Both are modeled.

Since issue 31 the kernels take these fits rescaled to base e (G times ln 2; Q and P with r in units of
ln2/8 and ln2), and reduce e^(G - a^2/2) by Cody-Waite with a^2 carried exactly (simd_common.hpp's
exp_parts, unary.cpp's gelu_erf), so the exponent is no longer rounded to f32 as the model below
still rounds it: its errors are those of the earlier form.
"""
import math

import mpmath as mp
import numpy as np

import f32_model as m
from f32_model import cheb_fit, f32, fma, horner


K = f32(2 * math.sqrt(2))
C = f32(math.log2(math.e) / 2)
A_CAP = f32(13)


def G_of_s(s):
    s = mp.mpf(s)
    a = mp.mpf(float(K)) * s / (1 - s)
    return mp.log((mp.mpf(float(K)) + a) * mp.erfc(a / mp.sqrt(2)) / 2, 2) + mp.mpf(float(C)) * a * a


N = 800
s_max = float(A_CAP / (K + A_CAP)) + 1e-3
nodes = s_max / 2 + s_max / 2 * np.cos(np.pi * (np.arange(N) + 0.5) / N)
a_nodes = float(K) * nodes / (1 - nodes)
Gc = cheb_fit(nodes, np.array([float(G_of_s(s)) for s in nodes]), 8, 0.0, s_max, weights=1 / (1 + a_nodes**2))

print("gelu: G(s), highest power first:", ", ".join("%.9g" % v for v in reversed(Gc)))
print("pow2_bounded: P(r), highest power first:", ", ".join("%.9g" % v for v in reversed(m.P_BOUNDED)))
print("pow2_eighths: Q(r), highest power first:", ", ".join("%.9g" % v for v in reversed(m.Q_EIGHTHS)))
print("pow2_eighths' table of 2^(j/8), bits less j << 20:", ", ".join("0x%08x" % v for v in m.EIGHTHS_TABLE))

def gelu_model(x, eighths):
    x = f32(x)
    sc = f32(8) if eighths else f32(1)  # exact: a power of two
    a = f32(min(abs(x), A_CAP))
    s = f32(a / f32(K + a))
    w = fma(-a, f32(a * f32(C * sc)), horner([f32(c * sc) for c in Gc], s))
    if x < -13:
        return f32(0)
    if eighths:
        q, pw = m.pow2_eighths_parts(w)
        return fma(-f32(s * q), pw, f32(max(f32(0), x)))
    return fma(-s, m.pow2_bounded(w), f32(max(f32(0), x)))


def reference(x):
    x = mp.mpf(float(x))
    y = 0.5 * x * mp.erfc(-x / mp.sqrt(2))
    pdf = mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
    return float(y), float(abs(y) + abs(x) * (0.5 * mp.erfc(-x / mp.sqrt(2)) + abs(x) * pdf))


rng = np.random.default_rng(1)
xs = np.concatenate([rng.uniform(-14, 6, 6000), rng.normal(0, 1, 3000), rng.uniform(-1e-3, 1e-3, 500),
                     np.linspace(-13.6, 14, 3001)]).astype(np.float32)
refs = [reference(x) for x in xs]
for m.USE_FMA, eighths, name in ((True, True, "AVX2 / AVX-512: FMA, table of eighths"),
                                  (False, False, "SSE4.2: no FMA, pow2_bounded"),
                                  (True, False, "FMA with pow2_bounded (not built)")):
    worst, at = m.worst_error(lambda x: gelu_model(x, eighths), xs, refs, 2.0**-23)
    print("model of gelu in f32, %s: worst %.3f eps at x = %g (the conformance bound is 3)" % (name, worst, at))
m.USE_FMA = True
pow2_worst = max(abs(float(m.pow2_bounded(w)) - 2.0 ** float(w)) / 2.0 ** float(w)
                 for w in np.linspace(-125, 126, 40001).astype(np.float32)) / 2.0**-24
print("pow2_bounded on [-125, 126]: worst %.2f half-ulps" % pow2_worst)
eighths_worst = max(abs(float(m.pow2_eighths(v)) - 2.0 ** (float(v) / 8)) / 2.0 ** (float(v) / 8)
                    for v in np.linspace(-1000, 1008, 40001).astype(np.float32)) / 2.0**-24
print("pow2_eighths (q pw, rounded) on [-1000, 1008]: worst %.2f half-ulps" % eighths_worst)
