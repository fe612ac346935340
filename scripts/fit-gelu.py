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
"""
import math
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32

K = f32(2 * math.sqrt(2))
C = f32(math.log2(math.e) / 2)
A_CAP = f32(13)


def G_of_s(s):
    s = mp.mpf(s)
    a = mp.mpf(float(K)) * s / (1 - s)
    return mp.log((mp.mpf(float(K)) + a) * mp.erfc(a / mp.sqrt(2)) / 2, 2) + mp.mpf(float(C)) * a * a


def cheb_fit(xs, ys, deg, lo, hi, weights=None):
    """Least squares on [lo, hi] in the Chebyshev basis, returned as monomial coefficients (low first)."""
    u = (2 * xs - (lo + hi)) / (hi - lo)
    c = np.polynomial.chebyshev.chebfit(u, ys, deg, w=weights)
    p = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))
    return [float(f32(v)) for v in p(np.polynomial.Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])).coef]


N = 800
s_max = float(A_CAP / (K + A_CAP)) + 1e-3
nodes = s_max / 2 + s_max / 2 * np.cos(np.pi * (np.arange(N) + 0.5) / N)
a_nodes = float(K) * nodes / (1 - nodes)
Gc = cheb_fit(nodes, np.array([float(G_of_s(s)) for s in nodes]), 8, 0.0, s_max, weights=1 / (1 + a_nodes**2))

r2_nodes = 0.5 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
p_vals = np.array([float((mp.mpf(2) ** mp.mpf(r) - 1) / mp.mpf(r)) for r in r2_nodes])
Pc = cheb_fit(r2_nodes, p_vals, 5, -0.5, 0.5, weights=np.abs(r2_nodes))

q_vals = np.array([float((mp.mpf(2) ** (mp.mpf(r) / 8) - 1) / mp.mpf(r)) for r in r2_nodes])
Qc = cheb_fit(r2_nodes, q_vals, 2, -0.5, 0.5, weights=np.abs(r2_nodes))
EIGHTHS = [f32(2.0 ** (j / 8)) for j in range(8)]

print("gelu: G(s), highest power first:", ", ".join("%.9g" % v for v in reversed(Gc)))
print("pow2_bounded: P(r), highest power first:", ", ".join("%.9g" % v for v in reversed(Pc)))
print("gelu's 2^(r/8): Q(r), highest power first:", ", ".join("%.9g" % v for v in reversed(Qc)))

USE_FMA = True


def fma(a, b, c):
    if USE_FMA:
        return f32(np.float64(a) * np.float64(b) + np.float64(c))
    return f32(f32(np.float64(a) * np.float64(b)) + np.float64(c))


def bits(x):
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def from_bits(i):
    return f32(struct.unpack("<f", struct.pack("<i", i))[0])


MAGIC = f32(12582912.0)


def pow2_bounded(w):
    t = f32(w + MAGIC)
    r = f32(w - f32(t - MAGIC))
    q = f32(Pc[-1])
    for c in reversed(Pc[:-1]):
        q = fma(q, r, f32(c))
    return from_bits(bits(fma(q, r, f32(1))) + ((bits(t) - bits(MAGIC)) << 23))


print("gelu's table of 2^(j/8), bits less j << 20:",
      ", ".join("0x%08x" % ((bits(EIGHTHS[j]) - (j << 20)) & 0xffffffff) for j in range(8)))


def from_bits_wrapped(i):
    i &= 0xffffffff
    return from_bits(i - (1 << 32) if i >= 1 << 31 else i)


def pow2_eighths(v):
    """(1 + r Q(r), 2^(k/8)) for v = 8w, as the AVX2 / AVX-512 gelu computes them."""
    t = f32(v + MAGIC)
    r = f32(v - f32(t - MAGIC))
    q = f32(Qc[-1])
    for c in reversed(Qc[:-1]):
        q = fma(q, r, f32(c))
    j = bits(t) & 7
    return fma(q, r, f32(1)), from_bits_wrapped(bits(EIGHTHS[j]) - (j << 20) + (bits(t) << 20))


def gelu_model(x, eighths):
    x = f32(x)
    sc = f32(8) if eighths else f32(1)  # exact: a power of two
    a = f32(min(abs(x), A_CAP))
    s = f32(a / f32(K + a))
    p = f32(Gc[-1] * sc)
    for c in reversed(Gc[:-1]):
        p = fma(p, s, f32(c * sc))
    w = fma(-a, f32(a * f32(C * sc)), p)
    if x < -13:
        return f32(0)
    if eighths:
        q, pw = pow2_eighths(w)
        return fma(-f32(s * q), pw, f32(max(f32(0), x)))
    return fma(-s, pow2_bounded(w), f32(max(f32(0), x)))


def reference(x):
    x = mp.mpf(float(x))
    y = 0.5 * x * mp.erfc(-x / mp.sqrt(2))
    pdf = mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
    return float(y), float(abs(y) + abs(x) * (0.5 * mp.erfc(-x / mp.sqrt(2)) + abs(x) * pdf))


rng = np.random.default_rng(1)
xs = np.concatenate([rng.uniform(-14, 6, 6000), rng.normal(0, 1, 3000), rng.uniform(-1e-3, 1e-3, 500),
                     np.linspace(-13.6, 14, 3001)]).astype(np.float32)
refs = [reference(x) for x in xs]
for USE_FMA, eighths, name in ((True, True, "AVX2 / AVX-512: FMA, table of eighths"),
                                (False, False, "SSE4.2: no FMA, pow2_bounded"),
                                (True, False, "FMA with pow2_bounded (not built)")):
    worst, at = 0.0, 0.0
    for x, (y, scale) in zip(xs, refs):
        out = gelu_model(x, eighths)
        if abs(float(out) - y) < 2.0**-100:
            continue
        err = abs(float(out) - float(f32(y))) / scale / 2.0**-23
        if err > worst:
            worst, at = err, float(x)
    print("model of gelu in f32, %s: worst %.3f eps at x = %g (the conformance bound is 3)" % (name, worst, at))
USE_FMA = True
pow2_worst = max(abs(float(pow2_bounded(w)) - 2.0 ** float(w)) / 2.0 ** float(w)
                 for w in np.linspace(-125, 126, 40001).astype(np.float32)) / 2.0**-24
print("pow2_bounded on [-125, 126]: worst %.2f half-ulps" % pow2_worst)
eighths_worst = 0.0
for v in np.linspace(-1000, 1008, 40001).astype(np.float32):
    q, pw = pow2_eighths(v)
    eighths_worst = max(eighths_worst, abs(float(f32(q * pw)) - 2.0 ** (float(v) / 8)) / 2.0 ** (float(v) / 8))
print("pow2_eighths (q pw, rounded) on [-1000, 1008]: worst %.2f half-ulps" % (eighths_worst / 2.0**-24))
