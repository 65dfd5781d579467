"""Special functions written as scalar kernels: their values, compiled like user code.

Each function here is kernel source (math.* primitives, conditional expressions, loops of
constant trip count): every backend compiles it as it compiles a user's function, so the
python, llvm and CUDA backends run the same operations (straight-line code and selects,
which LLVM's loop vectoriser can widen once the constant loops are unrolled). Their
derivatives are rows of `rules.SPECIAL_RULES`; a kernel never differentiates these bodies.

Where libm has the function (lgamma, tgamma) the body calls the value-only primitives
`libm_lgamma`/`libm_gamma` (rows of `rules.RULES` reached only from here).

Accuracy against scipy (measured; tests/test_special_functions.py asserts 1e-13 for
float64, 1e-11 in ndtr's far tails, 1e-5 for float32): digamma, trigamma and polygamma(2)
to 4e-14 of max(|f|, 1) (absolute near digamma's root at 1.4616, relative near the
poles, where the reflection's pi / tan(pi x) dominates); erfinv to 5e-16 on [-1, 1];
log_ndtr to 6e-14 for every x (a continued fraction below -5, where ndtr underflows
further down), ndtr to 1e-12 (the rounding of x / sqrt(2), magnified in the tails);
betaln to 2e-15 against mpmath also where lgamma(a) + lgamma(b) - lgamma(a + b) cancels
(Stirling's series from 10 on; its partials, digamma differences, still cancel there).
Plain helpers here (_stirling_tail) are compiled as user functions (frontend.classify).
Poles follow scipy: digamma(0) is -inf (from the right, as scipy gives), digamma at a
negative integer NaN; trigamma at a non-positive integer +inf; lgamma there +inf.

The bodies also run as plain Python (no NaN in a discarded branch, no division by zero)
between the poles.

This module imports nothing of s2sad and nothing optional: scipy's functions are found by
identity in rules.py (loaded_scipy_special), and only if the process has imported
scipy.special, as code that names it has.
"""
from __future__ import annotations

import math

PI = 3.141592653589793
SHIFT = 10.0      # recurrences lift the argument to [SHIFT, ...) before the asymptotic series


def libm_lgamma(x):
    """log|Gamma(x)| from the math library (a value-only primitive)."""
    return math.lgamma(x)


def libm_gamma(x):
    """Gamma(x) from the math library (a value-only primitive)."""
    return math.gamma(x)


def lgamma(x):
    return libm_lgamma(x)


def gamma(x):
    return libm_gamma(x)


def digamma(x):
    # x < 0.5: psi(x) = psi(1 - x) - pi / tan(pi x); tan has period 1, so the argument is
    # reduced by the nearest integer first (exactly, however large x is)
    reflect = x < 0.5
    y = 1.0 - x if reflect else x
    frac = x - math.floor(x + 0.5)   # in [-1/2, 1/2]: sin and tan of pi frac stay accurate near poles
    cot = PI / math.tan(PI * frac) if reflect and frac != 0.0 else 0.0
    acc = 0.0
    for k in range(10):   # psi(y) = psi(y + 1) - 1 / y until y >= 10 (y >= 0.5 here)
        low = y < SHIFT
        acc = acc - (1.0 / y if low else 0.0)
        y = y + 1.0 if low else y
    z = 1.0 / (y * y)
    series = z * (0.08333333333333333 - z * (0.008333333333333333 - z * (0.003968253968253968 - z * (
        0.004166666666666667 - z * (0.007575757575757576 - z * (0.021092796092796094 - z * 0.08333333333333333))))))
    value = math.log(y) - 0.5 / y - series + acc - cot
    pole = reflect and frac == 0.0
    return (-math.inf if x == 0.0 else math.nan) if pole else value


def trigamma(x):
    # x < 0.5: psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
    reflect = x < 0.5
    y = 1.0 - x if reflect else x
    frac = x - math.floor(x + 0.5)
    s = math.sin(PI * frac)
    refl = PI * PI / (s * s) if reflect and frac != 0.0 else 0.0
    acc = 0.0
    for k in range(10):   # psi1(y) = psi1(y + 1) + 1 / y^2
        low = y < SHIFT
        acc = acc + (1.0 / (y * y) if low else 0.0)
        y = y + 1.0 if low else y
    r = 1.0 / y
    z = r * r
    series = r + 0.5 * z + r * z * (0.16666666666666666 - z * (0.03333333333333333 - z * (
        0.023809523809523808 - z * (0.03333333333333333 - z * (0.07575757575757576 - z * (
            0.2531135531135531 - z * 1.1666666666666667))))))
    value = series + acc
    pole = reflect and frac == 0.0
    return math.inf if pole else (refl - value if reflect else value)


def tetragamma(x):
    """polygamma(2, x): trigamma's derivative (its own derivative is refused)."""
    # x < 0.5: psi2(x) = psi2(1 - x) - 2 pi^3 cos(pi x) / sin^3(pi x)
    reflect = x < 0.5
    y = 1.0 - x if reflect else x
    frac = x - math.floor(x + 0.5)
    s = math.sin(PI * frac)
    refl = 2.0 * PI * PI * PI * math.cos(PI * frac) / (s * s * s) if reflect and frac != 0.0 else 0.0
    acc = 0.0
    for k in range(10):   # psi2(y) = psi2(y + 1) - 2 / y^3
        low = y < SHIFT
        acc = acc - (2.0 / (y * y * y) if low else 0.0)
        y = y + 1.0 if low else y
    r = 1.0 / y
    z = r * r
    series = -z - r * z - z * z * (0.5 - z * (0.16666666666666666 - z * (0.16666666666666666 - z * (
        0.3 - z * (0.8333333333333334 - z * (3.2904761904761903 - z * 17.5))))))
    value = series + acc
    pole = reflect and frac == 0.0
    return math.nan if pole else (value - refl if reflect else value)


def erfinv(x):
    a = math.fabs(x)
    # a first guess to single precision (M. Giles, "Approximating the erfinv function")
    w = -math.log((1.0 - a) * (1.0 + a))
    u = w - 2.5
    p = 2.81022636e-08
    p = 3.43273939e-07 + p * u
    p = -3.5233877e-06 + p * u
    p = -4.39150654e-06 + p * u
    p = 0.00021858087 + p * u
    p = -0.00125372503 + p * u
    p = -0.00417768164 + p * u
    p = 0.246640727 + p * u
    p = 1.50140941 + p * u
    v = math.sqrt(w) - 3.0
    q = -0.000200214257
    q = 0.000100950558 + q * v
    q = 0.00134934322 + q * v
    q = -0.00367342844 + q * v
    q = 0.00573950773 + q * v
    q = -0.0076224613 + q * v
    q = 0.00943887047 + q * v
    q = 1.00167406 + q * v
    q = 2.83297682 + q * v
    y = (p if w < 5.0 else q) * a
    # refined on erf(y) = a by Halley below 0.5; above, by Newton on log erfc(y) = log(1 - a)
    # (1 - a exact there), which is nearly quadratic in y in the tail, where erf's form stalls
    for k in range(4):
        e = math.erfc(y)
        d = 1.1283791670955126 * math.exp(-y * y)
        f = math.erf(y) - a
        y = y + (math.log(e) - math.log1p(-a)) * e / d if a > 0.5 else y - f / (d + y * f)
    y = math.inf if a == 1.0 else (math.nan if a > 1.0 else y)
    return math.copysign(y, x)


def ndtr(x):
    return 0.5 * math.erfc(-0.7071067811865476 * x)


def log_ndtr(x):
    t = 0.7071067811865476 * (-5.0 if x < -5.0 else x)   # (NaN stays NaN)
    # x > 0: log(1 - erfc(x/sqrt2)/2) by log1p; down to -5 the log of ndtr itself
    near = math.log1p(-0.5 * math.erfc(t)) if x > 0.0 else math.log(0.5 * math.erfc(-t))
    # x < -5: ndtr(x) = phi(x) / c with Laplace's continued fraction c = z + 1/(z + 2/(z + ...)),
    # z = -x: no underflow however far the tail (erfc underflows below -37, in float below -13)
    z = 5.0 if x >= -5.0 else -x
    c = z
    for k in range(20):
        c = z + (20.0 - k) / c
    far = -0.5 * z * z - 0.9189385332046728 - math.log(c)
    return far if x < -5.0 else near


def expit(x):
    return 1.0 / (1.0 + math.exp(-x))


def logit(x):
    # near 1/2, where logit is near 0: log1p of (2x - 1) / (1 - x), 2x - 1 exact
    mid = x > 0.25 and x < 0.75
    return math.log1p((2.0 * x - 1.0) / (1.0 - x)) if mid else math.log(x / (1.0 - x))


def xlogy(x, y):
    # 0 where x is 0, unless y is NaN (scipy's convention)
    return (0.0 if y == y else y) if x == 0.0 else x * math.log(y)


def xlog1py(x, y):
    return (0.0 if y == y else y) if x == 0.0 else x * math.log1p(y)


def _stirling_tail(x):
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2) for x >= 10, to 3e-17."""
    r = 1.0 / x
    z = r * r
    return r * (0.08333333333333333 - z * (0.002777777777777778 - z * (0.0007936507936507937 - z * (
        0.0005952380952380953 - z * (0.0008417508417508417 - z * (0.0019175269175269176 - z * 0.00641025641025641))))))


def betaln(a, b):
    s = min(a, b)
    big = max(a, b)
    n = s + big
    direct = lgamma(s) + lgamma(big) - lgamma(n)
    # big >= 10: Stirling's series for lgamma(big) - lgamma(n), its logs as log(s / n) and
    # log1p(-s / n), so that nothing cancels (lgamma(1e15) is 3e16, the result -17)
    bg = big if big >= 10.0 else 10.0
    ss = s if s > 0.0 else 1.0
    nn = ss + bg
    tail = (bg - 0.5) * math.log1p(-ss / nn) + _stirling_tail(bg) - _stirling_tail(nn)
    one_big = lgamma(ss) + tail - ss * math.log(nn) + ss
    sl = ss if ss >= 10.0 else 10.0
    both_big = 0.9189385332046728 - 0.5 * math.log(nn) + (sl - 0.5) * math.log(sl / nn) + tail + _stirling_tail(sl)
    value = (both_big if s >= 10.0 else one_big) if big >= 10.0 and s > 0.0 else direct
    return value if a == a and b == b else a + b   # NaN in, NaN out (min/max would drop it)


def two_sum_error(a, b):
    """The rounding error of a + b, exactly (Knuth's TwoSum): math.fsum's compensation
    (passes/normcalls). Its derivative is exactly 0, as its dual computes it."""
    s = a + b
    bb = s - a
    return (a - (s - bb)) + (b - bb)
