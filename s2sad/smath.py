"""The `math` (and the numbers) that generated Python kernels run with.

The python backend executes kernels as plain Python, but kernels have IEEE float
semantics (kernel.py): `x / 0.0` is inf, `math.log(-1.0)` is NaN, a comparison is a
number. So values are `Real`s, a float whose arithmetic gives IEEE results instead of
raising, and the functions here (everything in `math`, plus `cbrt`, `exp2`, `sign`,
`square`, `reciprocal`, numpy's `maximum`/`minimum`) fall back to numpy's IEEE
answers where `math` raises. `codegen.python.compile_module` makes every number a
kernel meets a `Real` (constants, comparisons, `not`, loop counters), so no operation
falls back to Python's raising float or int arithmetic. The python backend then agrees
with compiled kernels, bit for bit, and stays readable.
"""
from __future__ import annotations

import builtins
import math as _m

import numpy as _np

pi = _m.pi
e = _m.e
inf = _m.inf
nan = _m.nan


class Real(float):
    """A float with IEEE arithmetic: no ZeroDivisionError, no OverflowError."""

    __slots__ = ()

    def __repr__(self) -> str:
        return float.__repr__(self)


def _ieee_binop(name: str, np_op):
    py_op = getattr(float, name)

    def op(a, b):
        if isinstance(b, bool):
            b = float(b)
        try:
            r = py_op(a, b)
        except (ZeroDivisionError, OverflowError, ValueError):
            with _np.errstate(all="ignore"):
                x, y = (_np.float64(b), _np.float64(a)) if name.startswith("__r") else (_np.float64(a), _np.float64(b))
                r = np_op(x, y)
        if r is NotImplemented:
            return r
        if isinstance(r, complex):  # (-8.0) ** (1/3) in Python; NaN in C
            return Real(_m.nan)
        return Real(r)

    op.__name__ = name
    return op


for _name, _np_op in [("__add__", _np.add), ("__radd__", _np.add), ("__sub__", _np.subtract),
                      ("__rsub__", _np.subtract), ("__mul__", _np.multiply), ("__rmul__", _np.multiply),
                      ("__truediv__", _np.divide), ("__rtruediv__", _np.divide),
                      ("__floordiv__", _np.floor_divide), ("__rfloordiv__", _np.floor_divide),
                      ("__mod__", _np.remainder), ("__rmod__", _np.remainder),
                      ("__pow__", _np.power), ("__rpow__", _np.power)]:
    setattr(Real, _name, _ieee_binop(_name, _np_op))
Real.__neg__ = lambda a: Real(-float(a))
Real.__pos__ = lambda a: a
Real.__abs__ = lambda a: Real(abs(float(a)))
del _name, _np_op


def _ieee(fn, np_fn):
    """`fn` from math, with numpy's IEEE result where math raises."""
    def wrapped(*args):
        try:
            return Real(fn(*args))
        except (ValueError, OverflowError, ZeroDivisionError):
            with _np.errstate(all="ignore"):
                return Real(np_fn(*(_np.float64(a) for a in args)))

    wrapped.__name__ = getattr(fn, "__name__", "f")
    return wrapped


def _np_only(np_fn):
    def wrapped(*args):
        with _np.errstate(all="ignore"):
            return Real(np_fn(*(_np.float64(a) for a in args)))
    wrapped.__name__ = np_fn.__name__
    return wrapped


def maximum(x, y):
    """numpy's maximum, spelled as the compiled backends spell it (so that the sign of a
    zero on a tie is the same everywhere, whatever numpy version): NaN if either is."""
    x, y = float(x), float(y)
    return Real(x if x > y or x != x else y)


def minimum(x, y):
    x, y = float(x), float(y)
    return Real(x if x < y or x != x else y)


def _sign(x):
    x = float(x)
    return Real(1.0 if x > 0 else -1.0 if x < 0 else x)  # keeps +-0 and NaN


_MATH_TO_NUMPY = {
    "sqrt": _np.sqrt, "exp": _np.exp, "expm1": _np.expm1, "log": _np.log, "log2": _np.log2,
    "log10": _np.log10, "log1p": _np.log1p, "sin": _np.sin, "cos": _np.cos, "tan": _np.tan,
    "asin": _np.arcsin, "acos": _np.arccos, "atan": _np.arctan, "atan2": _np.arctan2,
    "sinh": _np.sinh, "cosh": _np.cosh, "tanh": _np.tanh, "asinh": _np.arcsinh,
    "acosh": _np.arccosh, "atanh": _np.arctanh, "hypot": _np.hypot, "fmod": _np.fmod,
    "fabs": _np.fabs, "copysign": _np.copysign, "pow": _np.power,
}
for _name, _np_fn in _MATH_TO_NUMPY.items():
    globals()[_name] = _ieee(getattr(_m, _name), _np_fn)
erf = _ieee(_m.erf, lambda x: _np.float64(_m.erf(float(x))))
erfc = _ieee(_m.erfc, lambda x: _np.float64(_m.erfc(float(x))))


def libm_lgamma(x):
    """C's lgamma: +inf at the poles (0 and the negative integers), where math raises."""
    x = float(x)
    try:
        return Real(_m.lgamma(x))
    except (ValueError, OverflowError):
        return Real(_m.inf)


def libm_gamma(x):
    """C's tgamma: +-inf at +-0, NaN at negative integers and -inf, inf on overflow."""
    x = float(x)
    try:
        return Real(_m.gamma(x))
    except OverflowError:
        return Real(_m.inf)
    except ValueError:
        return Real(_m.copysign(_m.inf, x) if x == 0.0 else _m.nan)


# numpy keeps the sign of zero and maps +-inf to themselves, as compiled code does
floor = _np_only(_np.floor)
ceil = _np_only(_np.ceil)
trunc = _np_only(_np.trunc)
cbrt = _np_only(_np.cbrt)
exp2 = _np_only(_np.exp2)
square = _np_only(_np.square)
reciprocal = _np_only(lambda x: 1.0 / x)
sign = _sign
isnan, isinf, isfinite = _m.isnan, _m.isinf, _m.isfinite
del _name, _np_fn


# Builtins as compiled kernels define them on floats (see kernel.py).
BUILTINS = {
    "float": Real,
    "int": lambda x: Real(_np.trunc(_np.float64(x))),
    "round": lambda x: Real(_np.round(_np.float64(x))),
    # the counter is a number like any other (i / 0.0 is inf, i ** 400 overflows to inf)
    "range": lambda *a: builtins.map(Real, builtins.range(*(int(x) for x in a))),
}
