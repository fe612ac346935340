#!/usr/bin/env python3
"""The polynomial of the cpu's tanh (backends/cpu_simd/kernels/elementwise.cpp, tanh_fast), fitted here,
and a model of tanh's f32 arithmetic measured the way the conformance tests measure it.

Needs numpy and mpmath (pip install numpy mpmath). Prints the coefficients and the model's worst error
in f32 eps on tanh's measure (tests/reference/bridge.hpp: |out - fl32(ref)| over |y| + |x f'(x)|), for
AVX2 / AVX-512 (FMA, e^-2a through pow2_eighths) and SSE4.2 (no FMA, pow2_bounded).

tanh(x) = sign(x) t(a), a = |x|. Below a = 0.625, t = a + a z P(z), z = a^2, with P of degree 4 fitted
by least squares on Chebyshev nodes in z (P(0) = -1/3). From 0.625 up, t = (1 - e) / (1 + e) with
e = e^-2a <= 0.29, so 1 - e cancels nothing. The polynomials of pow2_eighths and pow2_bounded are
fit-gelu.py's, copied here as the kernels hold them.
"""
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32
SPLIT = 0.625


def cheb_fit(xs, ys, deg, lo, hi):
    """Least squares on [lo, hi] in the Chebyshev basis, returned as monomial coefficients (low first)."""
    u = (2 * xs - (lo + hi)) / (hi - lo)
    c = np.polynomial.chebyshev.chebfit(u, ys, deg)
    p = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))
    return [float(f32(v)) for v in p(np.polynomial.Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])).coef]


def p_of_z(z):
    a = mp.sqrt(mp.mpf(z))
    return -mp.mpf(1) / 3 if a == 0 else (mp.tanh(a) - a) / a**3


zmax = SPLIT * SPLIT
nodes = zmax / 2 + zmax / 2 * np.cos(np.pi * (np.arange(600) + 0.5) / 600)
Pc = cheb_fit(nodes, np.array([float(p_of_z(z)) for z in nodes]), 4, 0.0, zmax)
print("tanh: P(z), highest power first:", ", ".join("%.9g" % v for v in reversed(Pc)))

USE_FMA = True


def fma(a, b, c):
    if USE_FMA:
        return f32(np.float64(a) * np.float64(b) + np.float64(c))
    return f32(f32(np.float64(a) * np.float64(b)) + np.float64(c))


def bits(x):
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def from_bits(i):
    i &= 0xffffffff
    return f32(struct.unpack("<f", struct.pack("<i", i - (1 << 32) if i >= 1 << 31 else i))[0])


MAGIC = f32(12582912.0)
P_BOUNDED = [0.000154673646, 0.00134004327, 0.00961803552, 0.0555032715, 0.240226507, 0.693147182]  # highest first
Q_EIGHTHS = [0.000108419175, 0.00375402835, 0.0866433978]  # highest first
EIGHTHS = [f32(2.0 ** (j / 8)) for j in range(8)]


def pow2_bounded(w):  # NaN-safe form: n through a conversion
    t = f32(w + MAGIC)
    n = f32(t - MAGIC)
    r = f32(w - n)
    q = f32(P_BOUNDED[0])
    for c in P_BOUNDED[1:]:
        q = fma(q, r, f32(c))
    return from_bits(bits(fma(q, r, f32(1))) + (int(n) << 23))


def pow2_eighths(v):
    t = f32(v + MAGIC)
    r = f32(v - f32(t - MAGIC))
    q = f32(Q_EIGHTHS[0])
    for c in Q_EIGHTHS[1:]:
        q = fma(q, r, f32(c))
    j = bits(t) & 7
    return f32(fma(q, r, f32(1)) * from_bits(bits(EIGHTHS[j]) - (j << 20) + (bits(t) << 20)))


def tanh_model(x, eighths):
    x = f32(x)
    a = f32(abs(x))
    if a < SPLIT:
        z = f32(a * a)
        p = f32(Pc[-1])
        for c in reversed(Pc[:-1]):
            p = fma(p, z, f32(c))
        t = fma(f32(a * z), p, a)
    else:
        if eighths:
            e = pow2_eighths(max(f32(-1000), f32(a * f32(-16 * 1.44269504))))
        else:
            e = pow2_bounded(max(f32(-125), f32(a * f32(-2 * 1.44269504))))
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
for USE_FMA, eighths, name in ((True, True, "AVX2 / AVX-512: FMA, pow2_eighths"),
                                (False, False, "SSE4.2: no FMA, pow2_bounded")):
    worst, at = 0.0, 0.0
    for x, (y, scale) in zip(xs, refs):
        if scale == 0:
            continue
        err = abs(float(tanh_model(x, eighths)) - float(f32(y))) / scale / 2.0**-23
        if err > worst:
            worst, at = err, float(x)
    print("model of tanh in f32, %s: worst %.3f eps at x = %g (the conformance bound is 3)" % (name, worst, at))
