"""Scalar functions used by the tests: every construct of the scalar language."""
import math

import numpy as np

COEFFS = (0.5, -1.25, 2.0, 0.75)
SCALE = 3.0


def ident(z):
    return z


def ident_tanh(z):
    return ident(math.tanh(z))


def softplus(z):
    if z > 20.0:
        return z
    elif z < -20.0:
        return math.exp(z)
    else:
        return math.log1p(math.exp(z))


def newton_sqrt(a):
    x = 1.0
    for i in range(10):
        x = 0.5 * (x + a / x)
    return x


def guarded_sqrt(z):
    return math.sqrt(z) if z > 0 else 0.0


def three(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s


def horner(z):
    acc = 0.0
    for c in COEFFS:
        acc = acc * z + c
    return acc


def while_loop(z):
    n = 0
    acc = z
    while n < 4 and acc < 100.0:
        acc = acc * 1.5 + math.sin(acc)
        n += 1
    return acc


def early_return(z):
    for i in range(5):
        if z * i > 3.0:
            return z * i
    return -z


def ops(z):
    a = z // 0.5 + z % 0.75          # piecewise constant plus sawtooth
    b = -z + abs(z) - min(z, 0.3) + max(z, -0.2, 0.1)
    c = 1.0 if 0.0 < z < 1.0 else 2.0
    d = z if (z > 0.5 and not z > 1.5) or z < -1.0 else z * z
    p, q = z * 2.0, z ** 3
    p += q
    q *= SCALE
    e = np.tanh(z) + np.sin(z) * math.cos(z) + np.exp(-z * z) + math.atan2(z, 2.0)
    return a + b * c + d + p - q + e


def with_lambda(z):
    sq = lambda t: t * t  # noqa: E731

    def cube(t):
        return t * sq(t)

    return sq(z) + cube(z) * COEFFS[1] + COEFFS[int(z > 0)]


def user_rational(z):
    return math.tanh(z) * z / (1 + z * z)


def two_arg(x, y):
    return x * math.exp(-y * y) + y


def is_big(z):
    return z > 0.1
