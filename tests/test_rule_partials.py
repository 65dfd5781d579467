"""Each rule's partials against central finite differences of its own function, at
random points and where the other argument is a signed zero or has either sign (a
random-program soak found copysign's slope taken as sign(x) * sign(y): zero where
y = 0.0, whose copysign(x, 0.0) is |x|); at the points where a derivative is 0 or
infinite but a naive rule gives NaN (x ** 0 at 0, 0 ** y); and at the points where
mathematics leaves a choice, the convention (JAX's, README "Numerical conventions") as
explicit values."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import s2sad
from s2sad import rules, smath, special

rng = np.random.default_rng(11)


def copysign_zero(x):
    return np.sum(s2sad.broadcast(lambda z: math.copysign(z, 0.0), x))


def copysign_minus_zero(x):
    return np.sum(s2sad.broadcast(lambda z: math.copysign(z, -0.0), x))


def copysign_both(x, y):
    return np.sum(s2sad.broadcast(math.copysign, x, y))


def test_copysign_slope_follows_the_sign_of_y(backend):
    x = np.array([0.5, -0.9, -1.8, 3.0])
    np.testing.assert_array_equal(s2sad.grad(copysign_zero, backend=backend)(x), np.sign(x))
    np.testing.assert_array_equal(s2sad.grad(copysign_minus_zero, backend=backend)(x), -np.sign(x))
    y = np.array([0.0, -0.0, 2.0, -2.0])
    gx, gy = s2sad.grad(copysign_both, argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_array_equal(gx, np.sign(x) * np.copysign(1.0, y))
    np.testing.assert_array_equal(gy, np.zeros(4))


def _copysign(z, y):
    return math.copysign(z, y)


def _atan2(z, y):
    return math.atan2(z, y)


def _hypot(z, y):
    return math.hypot(z, y)


def _fmod(z, y):
    return math.fmod(z, y)


def _maximum(z, y):
    return np.maximum(z, y)


def _minimum(z, y):
    return np.minimum(z, y)


TWO = {"copysign": _copysign, "atan2": _atan2, "hypot": _hypot, "fmod": _fmod,
       "maximum": _maximum, "minimum": _minimum}


def test_every_two_argument_math_rule_is_checked_here():
    assert set(TWO) == {name for name, r in rules.RULES.items() if r.arity == 2 and r.spelling == "math"}


@pytest.mark.parametrize("name", sorted(TWO))
def test_partials_where_the_other_argument_is_zero_or_signed(name, backend):
    """d/dx f(x, y) and d/dy f(x, y) for y in {0.0, -0.0, 2.5, -2.5} and x away from 0,
    against central differences of the function itself (smath, the python backend's
    arithmetic)."""
    f = TWO[name]
    ref = getattr(smath, name)

    def loss(v, y):
        return np.sum(s2sad.broadcast(f, v, y))
    xs = rng.uniform(0.3, 3.0, 6) * np.array([1.0, -1.0] * 3)
    h = 1e-6
    for y in (0.0, -0.0, 2.5, -2.5):
        if name == "fmod" and y == 0.0:
            continue
        gx, gy = s2sad.grad(loss, argnums=(0, 1), backend=backend)(xs, y)
        fdx = [(float(ref(x + h, y)) - float(ref(x - h, y))) / (2 * h) for x in xs]
        np.testing.assert_allclose(gx, fdx, rtol=1e-6, atol=1e-6, err_msg=f"d/dx {name}(x, {y!r})")
        if y != 0.0:     # f is not differentiable in y at 0 for copysign/atan2 (a jump or a kink)
            fdy = sum((float(ref(x, y + h)) - float(ref(x, y - h))) / (2 * h) for x in xs)
            assert gy == pytest.approx(fdy, rel=1e-6, abs=1e-6), f"d/dy {name}(x, {y!r})"


# ---------------------------------------------------------------- every rule
# One function per primitive of the table, and the interval its arguments are drawn
# from (inside the domain, away from kinks and jumps).

def _add(x, y): return x + y
def _sub(x, y): return x - y
def _mul(x, y): return x * y
def _div(x, y): return x / y
def _pow(x, y): return x ** y
def _floordiv(x, y): return x // y
def _mod(x, y): return x % y
def _neg(x): return -x
def _pos(x): return +x
def _lt(x, y): return 1.0 * (x < y)
def _le(x, y): return 1.0 * (x <= y)
def _gt(x, y): return 1.0 * (x > y)
def _ge(x, y): return 1.0 * (x >= y)
def _eq(x, y): return 1.0 * (x == y)
def _ne(x, y): return 1.0 * (x != y)
def _not(x): return 1.0 * (not x)
def _abs(x): return abs(x)
def _min(x, y): return min(x, y)
def _max(x, y): return max(x, y)
def _float(x): return float(x)
def _int(x): return int(x)
def _round(x): return round(x)
def _fabs(x): return math.fabs(x)
def _sign(x): return np.sign(x)
def _floor(x): return math.floor(x)
def _ceil(x): return math.ceil(x)
def _trunc(x): return math.trunc(x)
def _sqrt(x): return math.sqrt(x)
def _cbrt(x): return np.cbrt(x)
def _exp(x): return math.exp(x)
def _exp2(x): return np.exp2(x)
def _expm1(x): return math.expm1(x)
def _log(x): return math.log(x)
def _log2(x): return math.log2(x)
def _log10(x): return math.log10(x)
def _log1p(x): return math.log1p(x)
def _sin(x): return math.sin(x)
def _cos(x): return math.cos(x)
def _tan(x): return math.tan(x)
def _asin(x): return math.asin(x)
def _acos(x): return math.acos(x)
def _atan(x): return math.atan(x)
def _sinh(x): return math.sinh(x)
def _cosh(x): return math.cosh(x)
def _tanh(x): return math.tanh(x)
def _asinh(x): return math.asinh(x)
def _acosh(x): return math.acosh(x)
def _atanh(x): return math.atanh(x)
def _erf(x): return math.erf(x)
def _erfc(x): return math.erfc(x)
def _square(x): return np.square(x)
def _reciprocal(x): return np.reciprocal(x)
def _lgamma(x): return math.lgamma(x)
def _gamma(x): return math.gamma(x)
def _digamma(x): return special.digamma(x)
def _trigamma(x): return special.trigamma(x)
def _erfinv(x): return special.erfinv(x)
def _ndtr(x): return special.ndtr(x)
def _log_ndtr(x): return special.log_ndtr(x)
def _expit(x): return special.expit(x)
def _logit(x): return special.logit(x)
def _xlogy(x, y): return special.xlogy(x, y)
def _xlog1py(x, y): return special.xlog1py(x, y)
def _betaln(a, b): return special.betaln(a, b)


ANY, POS, UNIT, NONINT = (-3.0, 3.0), (0.2, 3.0), (-0.9, 0.9), (0.1, 0.4)
EVERY = {
    "add": (_add, ANY, ANY), "sub": (_sub, ANY, ANY), "mul": (_mul, ANY, ANY), "div": (_div, ANY, POS),
    "pow": (_pow, POS, ANY), "floordiv": (_floordiv, NONINT, (1.1, 1.3)), "mod": (_mod, (2.1, 2.9), (0.9, 1.0)),
    "neg": (_neg, ANY), "pos": (_pos, ANY), "lt": (_lt, ANY, ANY), "le": (_le, ANY, ANY),
    "gt": (_gt, ANY, ANY), "ge": (_ge, ANY, ANY), "eq": (_eq, ANY, ANY), "ne": (_ne, ANY, ANY),
    "not": (_not, ANY), "abs": (_abs, ANY), "min": (_min, ANY, ANY), "max": (_max, ANY, ANY),
    "float": (_float, ANY), "int": (_int, NONINT), "round": (_round, NONINT), "fabs": (_fabs, ANY),
    "sign": (_sign, ANY), "floor": (_floor, NONINT), "ceil": (_ceil, NONINT), "trunc": (_trunc, NONINT),
    "sqrt": (_sqrt, POS), "cbrt": (_cbrt, ANY), "exp": (_exp, ANY), "exp2": (_exp2, ANY),
    "expm1": (_expm1, ANY), "log": (_log, POS), "log2": (_log2, POS), "log10": (_log10, POS),
    "log1p": (_log1p, POS), "sin": (_sin, ANY), "cos": (_cos, ANY), "tan": (_tan, (-1.2, 1.2)),
    "asin": (_asin, UNIT), "acos": (_acos, UNIT), "atan": (_atan, ANY), "sinh": (_sinh, ANY),
    "cosh": (_cosh, ANY), "tanh": (_tanh, ANY), "asinh": (_asinh, ANY), "acosh": (_acosh, (1.2, 3.0)),
    "atanh": (_atanh, UNIT), "erf": (_erf, ANY), "erfc": (_erfc, ANY), "square": (_square, ANY),
    "reciprocal": (_reciprocal, POS),
    **{name: (f, ANY, ANY) for name, f in TWO.items()},
}


# the special functions (rules.SPECIAL_RULES; scipy's are these by identity): lgamma,
# digamma and trigamma also on negative non-integers; trigamma's row checks polygamma(2),
# its partial; log_ndtr far into the tail, where log(ndtr(x)) underflows
GAMMA_POS, GAMMA_NEG = (0.1, 20.0), (-3.9, -3.1)
SPECIAL_EVERY = {
    "lgamma": (_lgamma, GAMMA_POS), "lgamma on x < 0": (_lgamma, GAMMA_NEG),
    "gamma": (_gamma, (0.2, 6.0)), "gamma on x < 0": (_gamma, (-2.9, -2.1)),
    "digamma": (_digamma, GAMMA_POS), "digamma on x < 0": (_digamma, GAMMA_NEG),
    "trigamma": (_trigamma, GAMMA_POS), "trigamma on x < 0": (_trigamma, GAMMA_NEG),
    "erfinv": (_erfinv, (-0.99, 0.99)), "ndtr": (_ndtr, ANY),
    "log_ndtr": (_log_ndtr, (-8.0, 3.0)), "log_ndtr tail": (_log_ndtr, (-40.0, -21.0)),
    "expit": (_expit, (-6.0, 6.0)), "logit": (_logit, (0.01, 0.99)),
    "xlogy": (_xlogy, ANY, POS), "xlog1py": (_xlog1py, ANY, (-0.9, 3.0)),
    "betaln": (_betaln, (0.2, 30.0), (0.2, 30.0)),
}
EVERY.update(SPECIAL_EVERY)


# numpy's elementwise functions computed by s2sad.ewfuncs (rules.ELEMENTWISE_RULES), and
# math's spellings of two of them
def _deg2rad(x): return np.deg2rad(x)
def _radians(x): return math.radians(x)
def _rad2deg(x): return np.rad2deg(x)
def _degrees(x): return math.degrees(x)
def _sinc(x): return np.sinc(x)
def _fmax(x, y): return np.fmax(x, y)
def _fmin(x, y): return np.fmin(x, y)
def _real(x): return np.real(x)
def _imag(x): return np.imag(x)
def _conj(x): return np.conj(x)
def _angle(x): return np.angle(x)
def _heaviside(x, h): return np.heaviside(x, h)
def _logaddexp(x, y): return np.logaddexp(x, y)
def _logaddexp2(x, y): return np.logaddexp2(x, y)


ELEMENTWISE_EVERY = {
    "deg2rad": (_deg2rad, ANY), "deg2rad (math.radians)": (_radians, ANY), "rad2deg": (_rad2deg, ANY),
    "rad2deg (math.degrees)": (_degrees, ANY), "sinc": (_sinc, ANY), "fmax": (_fmax, ANY, ANY),
    "fmin": (_fmin, ANY, ANY), "real": (_real, ANY), "imag": (_imag, ANY), "conj": (_conj, ANY),
    "angle": (_angle, ANY), "heaviside": (_heaviside, ANY, ANY), "logaddexp": (_logaddexp, ANY, ANY),
    "logaddexp2": (_logaddexp2, ANY, ANY),
}
EVERY.update(ELEMENTWISE_EVERY)


def test_every_rule_is_checked_here():
    """Every row of the table has a check: the value-only libm rows are reached only from
    special.py's bodies, whose derivatives the SPECIAL rows check (test_special_functions
    checks that a user cannot call them)."""
    assert set(EVERY) - set(SPECIAL_EVERY) - set(ELEMENTWISE_EVERY) == set(rules.RULES) - rules.VALUE_ONLY
    assert {name.split(" ")[0] for name in ELEMENTWISE_EVERY} == {r.name for r in rules.ELEMENTWISE_RULES}
    assert {name.split(" on ")[0].split(" tail")[0] for name in SPECIAL_EVERY} == \
        {r.name for r in rules.SPECIAL_RULES} - rules.SPECIAL_VALUE_ONLY


def _central(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    with np.errstate(all="ignore"):
        return (float(f(*up)) - float(f(*down))) / (2 * h)


def _sum_of(f, arity):
    if arity == 1:
        return lambda v: np.sum(s2sad.broadcast(f, v))
    return lambda v, w: np.sum(s2sad.broadcast(f, v, w))


@pytest.mark.parametrize("name", sorted(EVERY))
def test_every_rule_against_central_differences(name, backend):
    """Every primitive's partials, in a scalar function (grad(f)(x, y)) and in a fused
    elementwise sum, against central differences of the plain Python function."""
    f, *domains = EVERY[name]
    arity = len(domains)
    own = np.random.default_rng(zlib.crc32(name.encode()))    # its own points, whatever ran before
    points = np.array([own.uniform(lo, hi, 5) for lo, hi in domains])   # (arity, 5)
    want = np.array([[_central(f, list(p), i) for p in points.T] for i in range(arity)])
    argnums = tuple(range(arity))
    scalar = np.array([s2sad.grad(f, argnums=argnums, backend=backend)(*p) for p in points.T]).T
    np.testing.assert_allclose(scalar, want, rtol=1e-6, atol=1e-6, err_msg=f"grad({name})")
    fused = s2sad.grad(_sum_of(f, arity), argnums=argnums, backend=backend)(*points)
    np.testing.assert_allclose(np.array(fused), want, rtol=1e-6, atol=1e-6, err_msg=f"sum of {name}")
    if name in SPECIAL_EVERY:   # (their central differences are of s2sad.special's source, run by Python)
        assert np.all(np.isfinite(want)) and np.all(np.abs(want) > 1e-6), f"{name}: a check that cannot fail"


# ---------------------------------------------------------------- special points
# Where a derivative exists but a naive rule meets 0 * inf or log(0): each against
# central differences (only the arguments listed, in whose direction f is smooth there).
SPECIAL = [
    ("x ** 0 at 0", _pow, (0.0, 0.0), (0,)),
    ("0 ** y, y > 1", _pow, (0.0, 2.0), (0, 1)),
    ("-0.0 ** 2", _pow, (-0.0, 2.0), (0, 1)),
    ("0 ** 3", _pow, (0.0, 3.0), (0, 1)),
    ("0 ** 1", _pow, (0.0, 1.0), (0, 1)),
    ("0 ** y, 0 < y < 1: d/dy", _pow, (0.0, 0.5), (1,)),
    ("0 ** y, non-integer y > 1: d/dy", _pow, (0.0, 2.5), (1,)),
    ("2 ** 0", _pow, (2.0, 0.0), (0, 1)),
    ("(-2) ** 2: d/dx", _pow, (-2.0, 2.0), (0,)),
    ("(-2) ** -2: d/dx", _pow, (-2.0, -2.0), (0,)),
    ("hypot(0, 2)", _hypot, (0.0, 2.0), (0, 1)),
    ("hypot(-2, 0): d/dx", _hypot, (-2.0, 0.0), (0,)),
    ("copysign(2, 0)", _copysign, (2.0, 0.0), (0,)),
    ("abs(-2)", _abs, (-2.0,), (0,)),
]


def _grads(f, args, backend):
    """f's partials at args: (from grad of f, from grad of its fused elementwise sum)."""
    argnums = tuple(range(len(args)))
    scalar = s2sad.grad(f, argnums=argnums, backend=backend)(*args)
    fused = s2sad.grad(_sum_of(f, len(args)), argnums=argnums, backend=backend)(*(np.array([a]) for a in args))
    return np.array(scalar, dtype=float).reshape(-1), np.array([float(g[0]) for g in fused])


@pytest.mark.parametrize("label, f, args, smooth", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_zero_and_limit_points_against_central_differences(label, f, args, smooth, backend):
    for got in _grads(f, args, backend):
        for i in smooth:
            assert got[i] == pytest.approx(_central(f, list(args), i), abs=1e-6), f"d/d{'xy'[i]} {label}"


# ---------------------------------------------------------------- conventions
# Where mathematics leaves a choice (a kink, a tie, a pole) or the derivative is infinite:
# the values s2sad gives, each compared with JAX (0.10.2, float64, jax.grad of the jnp
# function; builtin max/min on concrete values), README "Numerical conventions".
NAN, INF = math.nan, math.inf
CONVENTIONS = [
    # JAX 0.10.2 gives d/dx x**0 = 0.0 for an int exponent, nan for a float 0.0; s2sad
    # gives 0 for both (x ** 0 is the constant 1); d/dy 0 ** y at y = 0: JAX 0.0
    ("x ** 0 at 0", _pow, (0.0, 0.0), (0.0, 0.0)),
    ("NaN ** 0", _pow, (NAN, 0.0), (0.0, NAN)),                      # JAX int 0: 0.0
    ("x ** 0.5 at 0", _pow, (0.0, 0.5), (INF, 0.0)),                 # JAX inf, 0.0
    ("x ** 0.5 at -0.0", _pow, (-0.0, 0.5), (INF, 0.0)),             # JAX inf
    ("x ** 2.5 at 0", _pow, (0.0, 2.5), (0.0, 0.0)),                 # JAX 0.0, 0.0
    ("x ** -1 at 0", _pow, (0.0, -1.0), (-INF, NAN)),                # JAX -inf, nan (0 ** y = inf for y < 0)
    ("x ** -1 at -0.0", _pow, (-0.0, -1.0), (-INF, NAN)),            # JAX -inf
    ("x ** -2 at 0", _pow, (0.0, -2.0), (-INF, NAN)),                # JAX -inf
    ("abs at 0", _abs, (0.0,), (1.0,)),                              # JAX grad(jnp.abs)(0.) = 1.0
    ("abs at -0.0", _abs, (-0.0,), (1.0,)),                          # JAX 1.0
    ("abs at NaN", _abs, (NAN,), (NAN,)),                            # JAX -1.0; s2sad keeps NaN
    ("fabs at 0", _fabs, (0.0,), (1.0,)),                            # JAX 1.0
    ("sign at 0", _sign, (0.0,), (0.0,)),                            # JAX 0.0
    ("copysign(0, 1)", _copysign, (0.0, 1.0), (1.0, 0.0)),           # JAX 1.0, 0.0
    ("copysign(0, -1)", _copysign, (0.0, -1.0), (-1.0, 0.0)),        # JAX -1.0
    ("copysign(0, 0)", _copysign, (0.0, 0.0), (1.0, 0.0)),           # JAX 1.0, 0.0
    ("copysign(0, -0.0)", _copysign, (0.0, -0.0), (-1.0, 0.0)),      # JAX -1.0
    ("copysign(-0.0, 1)", _copysign, (-0.0, 1.0), (1.0, 0.0)),       # JAX 1.0
    # builtin max/min: the argument Python returns (the first on a tie) takes the slope;
    # JAX on concrete values: max(x, 1.) at 1 -> 1.0, max(1., x) -> 0.0, min alike
    ("max tie", _max, (1.0, 1.0), (1.0, 0.0)),
    ("min tie", _min, (1.0, 1.0), (1.0, 0.0)),
    ("max(NaN, 1)", _max, (NAN, 1.0), (1.0, 0.0)),                   # Python returns the NaN
    ("max(1, NaN)", _max, (1.0, NAN), (1.0, 0.0)),                   # Python returns the 1
    # np.maximum/np.minimum: JAX splits a tie 0.5/0.5, and gives 0 to both where the
    # result is NaN
    ("maximum tie", _maximum, (1.0, 1.0), (0.5, 0.5)),               # JAX 0.5, 0.5
    ("minimum tie", _minimum, (1.0, 1.0), (0.5, 0.5)),               # JAX 0.5, 0.5
    ("maximum(-0.0, 0)", _maximum, (-0.0, 0.0), (0.5, 0.5)),         # JAX 0.5
    ("maximum(NaN, 1)", _maximum, (NAN, 1.0), (0.0, 0.0)),           # JAX 0.0, 0.0
    ("maximum(1, NaN)", _maximum, (1.0, NAN), (0.0, 0.0)),           # JAX 0.0, 0.0
    ("minimum(NaN, 1)", _minimum, (NAN, 1.0), (0.0, 0.0)),           # JAX 0.0, 0.0
    ("hypot(0, 0)", _hypot, (0.0, 0.0), (0.5, 0.5)),                 # JAX 0.5, 0.5
    ("hypot(-0.0, 0)", _hypot, (-0.0, 0.0), (0.5, 0.5)),             # JAX 0.5
    ("sqrt at 0", _sqrt, (0.0,), (INF,)),                            # JAX inf
    ("cbrt at 0", _cbrt, (0.0,), (INF,)),                            # JAX inf
    ("x / 0", _div, (1.0, 0.0), (INF, -INF)),                        # JAX inf, -inf
    ("x % 0", _mod, (1.0, 0.0), (1.0, -INF)),                        # JAX 1.0, -inf
    ("x // 0", _floordiv, (1.0, 0.0), (0.0, 0.0)),                   # JAX 0.0
    ("reciprocal at 0", _reciprocal, (0.0,), (-INF,)),               # JAX -inf
    ("atan2(0, 0)", _atan2, (0.0, 0.0), (NAN, NAN)),                 # JAX nan, nan
    # np.fmax/np.fmin: JAX's where(x > y | isnan(y), x, y): the operand that is not NaN
    # takes the slope, the second on a tie
    ("fmax tie", _fmax, (1.0, 1.0), (0.0, 1.0)),                     # JAX 0.0, 1.0
    ("fmax(NaN, 1)", _fmax, (NAN, 1.0), (0.0, 1.0)),                 # JAX 0.0, 1.0
    ("fmax(1, NaN)", _fmax, (1.0, NAN), (1.0, 0.0)),                 # JAX 1.0, 0.0
    ("fmin tie", _fmin, (1.0, 1.0), (0.0, 1.0)),                     # JAX 0.0, 1.0
    ("fmin(NaN, 1)", _fmin, (NAN, 1.0), (0.0, 1.0)),                 # JAX 0.0, 1.0
    ("heaviside at 0", _heaviside, (0.0, 0.5), (0.0, 1.0)),          # JAX 0.0, 1.0
    ("sinc at 0", _sinc, (0.0,), (0.0,)),                            # JAX 0.0
    ("angle at -1", _angle, (-1.0,), (0.0,)),                        # JAX 0.0
    # logaddexp: exp(x - out); a tie splits 0.5/0.5 (also -inf, -inf, where JAX gives
    # nan); the operand that is +inf takes 1 (JAX 1.0 and exp(y), replacing inf by 0)
    ("logaddexp tie", _logaddexp, (1.0, 1.0), (0.5, 0.5)),           # JAX 0.5, 0.5
    ("logaddexp(-inf, -inf)", _logaddexp, (-INF, -INF), (0.5, 0.5)),  # JAX nan, nan
    ("logaddexp(-inf, 1)", _logaddexp, (-INF, 1.0), (0.0, 1.0)),     # JAX 0.0, 1.0
    ("logaddexp(inf, 1)", _logaddexp, (INF, 1.0), (1.0, 0.0)),
    ("logaddexp2 tie", _logaddexp2, (2.0, 2.0), (0.5, 0.5)),         # JAX 0.5, 0.5
]


@pytest.mark.parametrize("label, f, args, want", CONVENTIONS, ids=[c[0] for c in CONVENTIONS])
def test_conventions(label, f, args, want, backend):
    scalar, fused = _grads(f, args, backend)
    np.testing.assert_array_equal(scalar, want, err_msg=f"grad: {label}")
    np.testing.assert_array_equal(fused, want, err_msg=f"fused sum: {label}")
