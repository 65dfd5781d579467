"""The `math` that generated Python kernels run with.

Everything in the standard `math` module, plus `cbrt`, `exp2` (also on Python 3.10),
`sign` and `square`/`reciprocal`, with IEEE results (NaN, inf) where the standard
module raises, so that the python backend agrees with compiled kernels. Results are
numpy float64 scalars, so that arithmetic on them also follows IEEE (x / 0 is inf).
"""
from __future__ import annotations

import math as _m

import numpy as _np

_f64 = _np.float64

pi = _m.pi
e = _m.e
inf = _m.inf
nan = _m.nan


def _ieee(fn):
    def wrapped(*args):
        try:
            return _f64(fn(*args))
        except ValueError:
            return _f64(_m.nan)
        except OverflowError:
            return _f64(_m.inf)
        except ZeroDivisionError:
            return _f64(_m.nan)

    wrapped.__name__ = fn.__name__
    return wrapped


def _log(x):
    if x == 0.0:
        return -_m.inf
    return _m.log(x) if x > 0 else _m.nan


def _log_base(f):
    def g(x):
        if x == 0.0:
            return -_m.inf
        return f(x) if x > 0 else _m.nan
    return g


def _exp(x):
    try:
        return _m.exp(x)
    except OverflowError:
        return _m.inf


def cbrt(x):
    if x != x or x in (_m.inf, -_m.inf) or x == 0.0:
        return x
    return _m.copysign(abs(x) ** (1.0 / 3.0), x) if not hasattr(_m, "cbrt") else _m.cbrt(x)


def sign(x):
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x * 0.0 if x == x else x  # keeps NaN, maps +-0 to +-0


def exp2(x):
    try:
        return 2.0 ** x
    except OverflowError:
        return _m.inf


def square(x):
    return x * x


def reciprocal(x):
    return 1.0 / x if x != 0 else _m.copysign(_m.inf, x)


def pow(x, y):  # noqa: A001 - mirrors math.pow
    try:
        r = x ** y
    except ZeroDivisionError:
        return _m.inf
    except OverflowError:
        return _m.inf
    return _m.nan if isinstance(r, complex) else r


exp = _ieee(_exp)
log = _ieee(_log)
log2 = _ieee(_log_base(_m.log2))
log10 = _ieee(_log_base(_m.log10))
cbrt = _ieee(cbrt)
sign = _ieee(sign)
exp2 = _ieee(exp2)
square = _ieee(square)
reciprocal = _ieee(reciprocal)
pow = _ieee(pow)  # noqa: A001
log1p = _ieee(_m.log1p)
sqrt = _ieee(_m.sqrt)
expm1 = _ieee(_m.expm1)
for _name in ("fabs", "copysign", "floor", "ceil", "trunc", "sin", "cos", "tan", "asin",
              "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
              "erf", "erfc", "hypot", "fmod", "isnan", "isinf", "isfinite"):
    globals()[_name] = _ieee(getattr(_m, _name))
del _name
