"""Shared by fit-gelu.py and fit-tanh.py: f32 arithmetic as the cpu kernels do it, the fits of
pow2_bounded's P and pow2_eighths' Q (backends/cpu_simd/kernels/simd_common.hpp), models of both, and
the worst error of a model on a conformance measure.

Set USE_FMA = False to model SSE4.2, where xsimd::fma is a rounded multiply and a rounded add.
"""
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32
USE_FMA = True
MAGIC = f32(12582912.0)  # 1.5 * 2^23: adding it rounds to an integer, kept in the sum's low bits


def cheb_fit(xs, ys, deg, lo, hi, weights=None):
    """Least squares on [lo, hi] in the Chebyshev basis, returned as monomial coefficients (low first)."""
    u = (2 * xs - (lo + hi)) / (hi - lo)
    c = np.polynomial.chebyshev.chebfit(u, ys, deg, w=weights)
    p = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))
    return [float(f32(v)) for v in p(np.polynomial.Polynomial([-(lo + hi) / (hi - lo), 2 / (hi - lo)])).coef]


def fma(a, b, c):
    if USE_FMA:
        return f32(np.float64(a) * np.float64(b) + np.float64(c))
    return f32(f32(np.float64(a) * np.float64(b)) + np.float64(c))


def horner(coefs, x):
    """coefs low first, evaluated from the highest with fma, as the kernels do."""
    p = f32(coefs[-1])
    for c in reversed(coefs[:-1]):
        p = fma(p, x, f32(c))
    return p


def bits(x):
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def from_bits(i):
    i &= 0xffffffff
    return f32(struct.unpack("<f", struct.pack("<i", i - (1 << 32) if i >= 1 << 31 else i))[0])


# 2^r = 1 + r P(r) on |r| <= 1/2 (pow2_bounded), 2^(r/8) = 1 + r Q(r) (pow2_eighths), weighted by |r|.
_r_nodes = 0.5 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
P_BOUNDED = cheb_fit(_r_nodes, np.array([float((mp.mpf(2) ** mp.mpf(r) - 1) / mp.mpf(r)) for r in _r_nodes]), 5,
                     -0.5, 0.5, weights=np.abs(_r_nodes))
Q_EIGHTHS = cheb_fit(_r_nodes, np.array([float((mp.mpf(2) ** (mp.mpf(r) / 8) - 1) / mp.mpf(r)) for r in _r_nodes]),
                     2, -0.5, 0.5, weights=np.abs(_r_nodes))
EIGHTHS = [f32(2.0 ** (j / 8)) for j in range(8)]
EIGHTHS_TABLE = [(bits(EIGHTHS[j]) - (j << 20)) & 0xffffffff for j in range(8)]  # as the kernel stores them


def pow2_bounded(w):
    """2^w for w in [-125, 126]."""
    t = f32(w + MAGIC)
    r = f32(w - f32(t - MAGIC))
    return from_bits(bits(fma(horner(P_BOUNDED, r), r, f32(1))) + ((bits(t) - bits(MAGIC)) << 23))


def pow2_eighths_parts(v):
    """(q, pw) with q pw = 2^(v/8), v in [-1000, 1008]: q = 1 + r Q(r), pw = 2^(k/8)."""
    t = f32(v + MAGIC)
    r = f32(v - f32(t - MAGIC))
    j = bits(t) & 7
    return fma(horner(Q_EIGHTHS, r), r, f32(1)), from_bits(bits(EIGHTHS[j]) - (j << 20) + (bits(t) << 20))


def pow2_eighths(v):
    q, pw = pow2_eighths_parts(v)
    return f32(q * pw)


def worst_error(model, xs, refs, unit):
    """Largest |model(x) - fl32(y)| / scale over the xs, in units of `unit`, with its x; refs are
    (y, scale) pairs. Differences below 2^-100 and zero scales are not measured, as in the tests."""
    worst, at = 0.0, 0.0
    for x, (y, scale) in zip(xs, refs):
        out = float(model(x))
        if scale == 0 or abs(out - y) < 2.0**-100:
            continue
        err = abs(out - float(f32(y))) / scale / unit
        if err > worst:
            worst, at = err, float(x)
    return worst, at
