"""The fixed example functions whose generated artifacts golden/ pins."""
import math

import numpy as np

import s2sad


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


def three(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s


def abs_loss(x):
    return np.sum(np.abs(x))


def cbrt_loss(x):
    return np.sum(np.cbrt(x))


def ident_tanh_loss(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def softplus_loss(x):
    return np.sum(s2sad.broadcast(softplus, x))


def newton_loss(a):
    return sum(map(newton_sqrt, a))


def three_loss(x, y, w):
    return np.sum(s2sad.broadcast(three, x, y, w))


# name -> (loss, argnums)
CASES = {
    "abs": (abs_loss, 0),
    "cbrt": (cbrt_loss, 0),
    "ident_tanh": (ident_tanh_loss, 0),
    "softplus": (softplus_loss, 0),
    "newton": (newton_loss, 0),
    "three": (three_loss, (0, 1, 2)),
}
