#!/usr/bin/env python3
"""The polynomial Q of the cuda_ptx gelu's erfc (backends/cuda_ptx/kernels/activation.cpp, gelu_erf),
fitted here in plain Python (no dependencies).

For w = |x| / sqrt(2) >= 1 / sqrt(2): erfc(w) = t Q(s) e^(-w^2), t = 1 / (1 + w/2), s = (t - c) / h
mapping t's range for w in [1/sqrt(2), 14.2] (x up to 20, past which erfc is 0 in f32) onto [-1, 1].
Q(t) = erfc(w) e^(w^2) / t is smooth and far from 0 there, so Chebyshev interpolation at 10 nodes
fits it within 0.04u (u = 2^-24), and its f32 Horner sum (terms shrinking by 3x or more) rounds
within about 1.4u. Prints c, 1/h, -c/h and the coefficients as f32 hex literals, and both errors.

An argument sets the lower end of w instead: 0.5 gives the vulkan gelu's Q
(backends/vulkan/shaders/common.glsl, gelu_erf, whose erf series covers w below 0.5), printed in
decimal too, since GLSL has no hex float literals.
"""
import math
import struct
import sys

DEGREE = 9
W0, W1 = (float(sys.argv[1]) if len(sys.argv) > 1 else 1 / math.sqrt(2)), 14.2
T1, T0 = 1 / (1 + W0 / 2), 1 / (1 + W1 / 2)
C, H = (T0 + T1) / 2, (T1 - T0) / 2


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def q_exact(t):
    w = 2 * (1 / t - 1)
    return math.erfc(w) * math.exp(w * w) / t


n = DEGREE + 1
nodes = [math.cos(math.pi * (k + 0.5) / n) for k in range(n)]
values = [q_exact(C + H * s) for s in nodes]
cheb = [2 / n * sum(v * math.cos(math.pi * j * (k + 0.5) / n) for k, v in enumerate(values)) for j in range(n)]
cheb[0] /= 2
# Chebyshev to monomial coefficients in s: T_{j+1} = 2 s T_j - T_{j-1}
T = [[1.0], [0.0, 1.0]]
for j in range(2, n):
    a = [0.0] + [2 * v for v in T[j - 1]]
    T.append([x - y for x, y in zip(a, T[j - 2] + [0.0] * (len(a) - len(T[j - 2])))])
mono = [sum(cheb[j] * T[j][i] for j in range(i, n) if i < len(T[j])) for i in range(n)]
coef = [f32(v) for v in mono]
inv_h, shift = f32(1 / H), f32(-C / H)

fit = ev = 0.0
for i in range(40001):
    t = T0 + (T1 - T0) * i / 40000
    exact = q_exact(t)
    p = 0.0
    for a in reversed(mono):
        p = p * ((t - C) / H) + a
    fit = max(fit, abs(p / exact - 1))
    s = f32(f32(t) * inv_h + shift)
    q = coef[-1]
    for a in reversed(coef[:-1]):
        q = f32(q * s + a)
    ev = max(ev, abs(q / exact - 1))
print("fit: %.3fu, f32 evaluation (s rounded, f32 coefficients, FMA Horner): %.2fu" % (fit / 2**-24, ev / 2**-24))
print("1/h = %s, -c/h = %s" % (float.hex(inv_h), float.hex(shift)))
print("Q:", ", ".join(float.hex(v) + "f" for v in coef))
if len(sys.argv) > 1:
    print("decimal: 1/h = %.9e, -c/h = %.9e" % (inv_h, shift))
    print("Q:", ", ".join("%.9e" % v for v in coef))
