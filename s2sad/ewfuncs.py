"""numpy's elementwise functions that are not math primitives, written as kernel source:
deg2rad (radians), rad2deg (degrees), sinc, fmax, fmin, real, imag, conj, angle (of real
input), heaviside, logaddexp, logaddexp2.

As special.py's functions, each body uses only the core language (math.* primitives,
conditional expressions), so every backend (python, llvm, CUDA C) compiles it as it
compiles a user's function: no backend lowers them one by one. Their derivatives are
rows of `rules.ELEMENTWISE_RULES`, found by identity from numpy's (and math's) callables;
a kernel never differentiates these bodies.

Values follow numpy's definitions (tests/test_elementwise_funcs.py compares them):
fmax/fmin return the operand that is not NaN (the first on a tie, as numpy's loops do);
sinc is numpy's sin(pi x) / (pi x) with x = 0 read as 1e-20; logaddexp and logaddexp2
are numpy's max + log1p(exp(-|x - y|)) with x == y giving x + log 2 (so equal infinities
stay finite in their slopes). This module imports nothing of s2sad.
"""
from __future__ import annotations

import math

PI = 3.141592653589793
DEG = 0.017453292519943295       # pi / 180, the double numpy multiplies by
RAD = 57.29577951308232          # 180 / pi
LN2 = 0.6931471805599453


def deg2rad(x):
    return x * DEG


def rad2deg(x):
    return x * RAD


def sinc(x):
    y = PI * (x if x != 0.0 else 1.0e-20)
    return math.sin(y) / y


def fmax(x, y):
    return x if (x >= y or y != y) else y


def fmin(x, y):
    return x if (x <= y or y != y) else y


def real(x):
    return x


def imag(x):
    return 0.0


def conj(x):
    return x


def angle(x):
    # arctan2(imag, real) with imag +0.0: pi for a negative number and for -0.0
    return math.atan2(0.0, x)


def heaviside(x, h0):
    return 0.0 if x < 0.0 else (1.0 if x > 0.0 else (h0 if x == 0.0 else x))


def logaddexp(x, y):
    big = x if x > y else y
    return x + LN2 if x == y else big + math.log1p(math.exp(-abs(x - y)))


def logaddexp2(x, y):
    big = x if x > y else y
    return x + 1.0 if x == y else big + math.log1p(math.exp2(-abs(x - y))) / LN2
