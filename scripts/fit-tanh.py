#!/usr/bin/env python3
"""The polynomial of the cpu's tanh (backends/cpu_simd/kernels/elementwise.cpp, tanh_fast), fitted here,
and a model of tanh's f32 arithmetic measured the way the conformance tests measure it.

Needs numpy and mpmath (pip install numpy mpmath). Prints the coefficients and the model's worst error
in f32 eps on tanh's measure (tests/reference/bridge.hpp: |out - fl32(ref)| over |y| + |x f'(x)|), for
AVX2 / AVX-512 (FMA, e^-2a through pow2_eighths) and SSE4.2 (no FMA, pow2_bounded).

tanh(x) = sign(x) t(a), a = |x|. Below a = 0.625, t = a + a z P(z), z = a^2, with P of degree 4 fitted
by least squares on Chebyshev nodes in z (P(0) = -1/3). From 0.625 up, t = (1 - e) / (1 + e) with
e = e^-2a <= 0.29, so 1 - e cancels nothing. pow2_eighths and pow2_bounded come from f32_model.py,
shared with fit-gelu.py.
"""
import mpmath as mp
import numpy as np

import f32_model as m
from f32_model import cheb_fit, f32, fma, horner

SPLIT = 0.625


def p_of_z(z):
    a = mp.sqrt(mp.mpf(z))
    return -mp.mpf(1) / 3 if a == 0 else (mp.tanh(a) - a) / a**3


zmax = SPLIT * SPLIT
nodes = zmax / 2 + zmax / 2 * np.cos(np.pi * (np.arange(600) + 0.5) / 600)
Pc = cheb_fit(nodes, np.array([float(p_of_z(z)) for z in nodes]), 4, 0.0, zmax)
print("tanh: P(z), highest power first:", ", ".join("%.9g" % v for v in reversed(Pc)))


def tanh_model(x, eighths):
    x = f32(x)
    a = f32(abs(x))
    if a < SPLIT:
        z = f32(a * a)
        t = fma(f32(a * z), horner(Pc, z), a)
    else:
        if eighths:
            e = m.pow2_eighths(max(f32(-1000), f32(a * f32(-16 * 1.44269504))))
        else:
            e = m.pow2_bounded(max(f32(-125), f32(a * f32(-2 * 1.44269504))))
        t = f32(f32(f32(1) - e) / f32(f32(1) + e))
    return t if x >= 0 else -t


def reference(x):
    x = mp.mpf(float(x))
    y = mp.tanh(x)
    return float(y), float(abs(y) + abs(x) * (1 - y * y))


rng = np.random.default_rng(1)
xs = np.concatenate([rng.uniform(-10, 10, 6000), rng.normal(0, 1, 4000), rng.uniform(-1e-3, 1e-3, 500),
                     np.linspace(-1.5, 1.5, 6001)]).astype(np.float32)
refs = [reference(x) for x in xs]
for m.USE_FMA, eighths, name in ((True, True, "AVX2 / AVX-512: FMA, pow2_eighths"),
                                  (False, False, "SSE4.2: no FMA, pow2_bounded")):
    worst, at = m.worst_error(lambda x: tanh_model(x, eighths), xs, refs, 2.0**-23)
    print("model of tanh in f32, %s: worst %.3f eps at x = %g (the conformance bound is 3)" % (name, worst, at))
