#!/usr/bin/env python3
"""The polynomials of the cpu's gelu (backends/cpu_simd/kernels/elementwise.cpp), fitted here, and a
model of that kernel's f32 arithmetic measured the way the conformance tests measure it.

Needs numpy and mpmath (pip install numpy mpmath). Prints both coefficient lists and the model's
worst error in f32 eps on gelu's measure (tests/reference/bridge.hpp: |out - fl32(ref)| over
|y| + |x f'(x)|, differences below 2^-100 not measured).

erfc(z), z = |x| / sqrt 2 >= 0, is t exp(g(s) - z^2) with t = 2 / (2 + z), s = z / (2 + z) in [0, 1)
and g(s) = ln(erfc(z) / t) + z^2, smooth on [0, 1] with g(0) = 0: g(s) = s h(s), h a polynomial
fitted by least squares on Chebyshev nodes, weighted by how much error the measure allows there
(about 1 + x^2 = 1 + 2 z^2). The exp is e^r = 1 + r + r^2 q(r) on |r| <= ln 2 / 2.
"""
import math
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32


def g_of_s(s):
    s = mp.mpf(s)
    t = 1 - s
    if t == 0:
        return -mp.log(2 * mp.sqrt(mp.pi))
    z = 2 * s / t
    return mp.log(mp.erfc(z)) + z * z - mp.log(t)


def cheb_fit(xs, ys, deg, lo, hi, weights=None):
    """Least squares on [lo, hi] in the Chebyshev basis, returned as monomial coefficients (low first)."""
    u = (2 * xs - (lo + hi)) / (hi - lo)
    c = np.polynomial.chebyshev.chebfit(u, ys, deg, w=weights)
    p = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))
    return [float(f32(v)) for v in p(np.polynomial.Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])).coef]


N = 800
nodes = 0.5 + 0.5 * np.cos(np.pi * (np.arange(N) + 0.5) / N)
h = np.array([float(g_of_s(s) / s) for s in nodes])
z_nodes = 2 * nodes / (1 - nodes)
H = cheb_fit(nodes, h, 7, 0.0, 1.0, weights=nodes / (1 + 2 * z_nodes**2))  # g = s h(s): degree 8

half_ln2 = float(mp.log(2) / 2)
r_nodes = half_ln2 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
q_vals = np.array([float((mp.exp(mp.mpf(r)) - 1 - r) / (mp.mpf(r) ** 2)) for r in r_nodes])
Q = cheb_fit(r_nodes, q_vals, 4, -half_ln2, half_ln2)

print("erfc: h(s), highest power first:", ", ".join("%.9g" % v for v in reversed(H)))
print("exp:  q(r), highest power first:", ", ".join("%.9g" % v for v in reversed(Q)))


def fma(a, b, c):
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def bits(x):
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def from_bits(i):
    return f32(struct.unpack("<f", struct.pack("<i", i))[0])


def exp_bounded(a):
    magic = f32(12582912.0)
    t = fma(a, f32(1.44269504), magic)
    n = f32(t - magic)
    r = fma(-n, f32(0.693359375), a)
    r = fma(-n, f32(-2.12194440e-4), r)
    q = f32(Q[-1])
    for c in reversed(Q[:-1]):
        q = fma(q, r, f32(c))
    e = f32(fma(q, f32(r * r), r) + f32(1))
    return from_bits(bits(e) + ((bits(t) - bits(magic)) << 23))


def gelu_model(x):
    x = f32(x)
    a = f32(min(abs(x), f32(13)))
    z = f32(a * f32(0.70710678118654752))
    d = f32(f32(1) / f32(f32(2) + z))
    s = f32(z * d)
    ad = f32(a * d)
    p = f32(H[-1])
    for c in reversed(H[:-1]):
        p = fma(p, s, f32(c))
    zz = f32(z * z)
    arg = f32(fma(p, s, -zz) - fma(z, z, -zz))
    h = f32(ad * exp_bounded(arg))
    return f32(0) if x < -13 else f32(max(f32(0), x) - h)


def reference(x):
    x = mp.mpf(float(x))
    y = 0.5 * x * mp.erfc(-x / mp.sqrt(2))
    pdf = mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
    return float(y), float(abs(y) + abs(x) * (0.5 * mp.erfc(-x / mp.sqrt(2)) + abs(x) * pdf))


rng = np.random.default_rng(1)
xs = np.concatenate([rng.uniform(-14, 6, 6000), rng.normal(0, 1, 3000), rng.uniform(-1e-3, 1e-3, 500),
                     np.linspace(-13.6, 14, 3001)]).astype(np.float32)
worst, at = 0.0, 0.0
for x in xs:
    y, scale = reference(x)
    out = gelu_model(x)
    if abs(float(out) - y) < 2.0**-100:
        continue
    err = abs(float(out) - float(f32(y))) / scale / 2.0**-23
    if err > worst:
        worst, at = err, float(x)
print("model of the kernel in f32: worst %.3f eps at x = %g (the conformance bound is 3)" % (worst, at))
exp_worst = max(abs(float(exp_bounded(a)) - math.exp(float(a))) / math.exp(float(a))
                for a in np.linspace(-87, 0, 20001).astype(np.float32)) / 2.0**-24
print("exp_bounded on [-87, 0]: worst %.2f half-ulps" % exp_worst)
