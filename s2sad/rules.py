"""The table of primitives and their partial derivatives: one rule per primitive.

A rule gives, for each input of a primitive, the partial derivative of its output as
a Python expression in the primitive's inputs and, where cheaper, its output `out`
(tanh: `1.0 - out * out`). `None` means the partial is identically zero (floor,
comparisons). Forward mode forms `out_dot = sum_i partial_i * in_i_dot`; reverse mode
forms `in_i_bar += partial_i * out_bar`. Nothing else in s2sad knows a derivative.

Every primitive call in a kernel is written `math.<name>(...)` (or as the operator
for `+ - * / ** // %`, and `abs`/`min`/`max`/`int`/`float` as builtins). Generated
Python runs with `math` bound to `s2sad.smath`, which adds `cbrt`, `sign`, numpy's
`maximum`/`minimum`, and gives IEEE results (NaN, inf) where the standard module raises.

Where mathematics leaves the derivative a choice (a kink, a tie, 0 ** 0), a rule takes
JAX's (README, "Numerical conventions"); a select in a rule says why in a comment.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Callable

import gast
import numpy as np

from . import ewfuncs, special
from .parsing import gast_parse


@dataclass(frozen=True)
class Rule:
    """Primitive `name(*params)`; `partials[i]` is d out / d params[i] as source, or None."""

    name: str
    params: tuple[str, ...]
    partials: tuple[str | None, ...]
    # how a call is spelled in kernels: "math" (math.name(...)), "builtin" (name(...)),
    # or "op" (a Python operator; see OPERATORS)
    spelling: str = "math"
    _trees: tuple = field(default=(), compare=False, repr=False)
    # d out / d params[i] written in `out` and the OTHER params alone, where the partial
    # is (almost everywhere) a function of the output: what a dense layer's adjoint reads
    # instead of a stored partial (gemm_epilogue's out-partials). A partial written in
    # `out` alone is its own; `from_out` adds the others (maximum: not at a tie, where
    # the output cannot tell 0.5 from 0: the runtime checks, and stores the partial)
    from_out: tuple[str | None, ...] = ()

    @property
    def arity(self) -> int:
        return len(self.params)

    def output_partial(self, i: int) -> str | None:
        """The i-th partial written in `out` and the other params (never params[i]), or
        None where the table gives none."""
        if self.from_out and self.from_out[i] is not None:
            return self.from_out[i]
        src = self.partials[i]
        if src is None or self.spelling != "math" or not _reads_out_only(src):
            return None
        return src

    def partial_tree(self, i: int) -> gast.expr | None:
        """The i-th partial as a fresh gast expression (None when zero)."""
        src = self.partials[i]
        if src is None:
            return None
        return gast_parse(src, mode="eval").body


def _r(name: str, params: str, *partials: str | None, spelling: str = "math", from_out: tuple = ()) -> Rule:
    return Rule(name, tuple(params.split()), tuple(partials), spelling, from_out=from_out)


def _reads_out_only(src: str) -> bool:
    """Does the partial `src` read no name but `out` (and `math.<f>` calls)?"""
    tree = gast_parse(src, mode="eval")
    funcs = {id(n.func.value) for n in gast.walk(tree) if isinstance(n, gast.Call)
             and isinstance(n.func, gast.Attribute)}
    return all(n.id == "out" or id(n) in funcs for n in gast.walk(tree) if isinstance(n, gast.Name))


LN2 = "0.6931471805599453"
LN10 = "2.302585092994046"

_RULES = [
    # operators
    _r("add", "x y", "1.0", "1.0", spelling="op"),
    _r("sub", "x y", "1.0", "-1.0", spelling="op"),
    _r("mul", "x y", "y", "x", spelling="op"),
    # written with the reciprocal twice so that a kernel divides once (LLVM merges equal
    # divisions; a division costs as much as ten multiplications)
    _r("div", "x y", "1.0 / y", "-out * (1.0 / y)", spelling="op"),
    # the selects swap an argument, not a result (no branch around pow or log, which
    # LLVM would not speculate): d/dx x**0 is 0 even at x = 0 (pow(x, 0.0) is 1, not
    # 0 * inf); d/dy at x = 0 takes log(1) = 0 there, as JAX does
    _r("pow", "x y", "y * x ** (y - 1.0 if y != 0.0 else 0.0)", "out * math.log(x if x != 0.0 else 1.0)",
       spelling="op"),
    _r("floordiv", "x y", None, None, spelling="op"),
    _r("mod", "x y", "1.0", "-math.floor(x / y)", spelling="op"),
    _r("neg", "x", "-1.0", spelling="op"),
    _r("pos", "x", "1.0", spelling="op"),
    # comparisons and logic: piecewise constant
    *[_r(c, "x y", None, None, spelling="op") for c in ("lt", "le", "gt", "ge", "eq", "ne")],
    _r("not", "x", None, spelling="op"),
    # builtins
    # abs'(+-0) = 1, as JAX has it (a subgradient; not sign's 0); NaN stays NaN
    _r("abs", "x", "1.0 if x >= 0.0 else math.sign(x)", spelling="builtin"),
    # the argument Python returns takes the whole slope (max(a, b) is a on a tie)
    _r("min", "x y", "0.0 if y < x else 1.0", "1.0 if y < x else 0.0", spelling="builtin"),
    _r("max", "x y", "0.0 if y > x else 1.0", "1.0 if y > x else 0.0", spelling="builtin"),
    _r("float", "x", "1.0", spelling="builtin"),
    _r("int", "x", None, spelling="builtin"),
    _r("round", "x", None, spelling="builtin"),
    # math module and its numpy twins
    _r("fabs", "x", "1.0 if x >= 0.0 else math.sign(x)"),
    _r("sign", "x", None),
    # numpy's maximum/minimum: NaN if either is NaN (slope 0 to both, as JAX); a tie
    # splits the slope 0.5/0.5, as JAX does (np.clip is built from these)
    _r("maximum", "x y", "0.5 if x == y else (1.0 if x > y else 0.0)", "0.5 if x == y else (1.0 if y > x else 0.0)",
       from_out=("1.0 if out > y else 0.0", "1.0 if out > x else 0.0")),
    _r("minimum", "x y", "0.5 if x == y else (1.0 if x < y else 0.0)", "0.5 if x == y else (1.0 if y < x else 0.0)",
       from_out=("1.0 if out < y else 0.0", "1.0 if out < x else 0.0")),
    # copysign(x, y) is +-|x| by the sign bit of y (not math.sign(y): copysign(x, 0.0)
    # is |x|), so its slope is abs's, signed
    _r("copysign", "x y", "(1.0 if x >= 0.0 else math.sign(x)) * math.copysign(1.0, y)", None),
    _r("floor", "x", None),
    _r("ceil", "x", None),
    _r("trunc", "x", None),
    _r("sqrt", "x", "0.5 / out"),
    _r("cbrt", "x", "1.0 / (3.0 * out * out)"),
    _r("exp", "x", "out"),
    _r("exp2", "x", f"out * {LN2}"),
    _r("expm1", "x", "out + 1.0"),
    _r("log", "x", "1.0 / x"),
    _r("log2", "x", f"1.0 / (x * {LN2})"),
    _r("log10", "x", f"1.0 / (x * {LN10})"),
    _r("log1p", "x", "1.0 / (1.0 + x)"),
    _r("sin", "x", "math.cos(x)"),
    _r("cos", "x", "-math.sin(x)"),
    _r("tan", "x", "1.0 + out * out"),
    _r("asin", "x", "1.0 / math.sqrt(1.0 - x * x)"),
    _r("acos", "x", "-1.0 / math.sqrt(1.0 - x * x)"),
    _r("atan", "x", "1.0 / (1.0 + x * x)"),
    _r("atan2", "y x", "x * (1.0 / (x * x + y * y))", "-y * (1.0 / (x * x + y * y))"),
    _r("sinh", "x", "math.cosh(x)"),
    _r("cosh", "x", "math.sinh(x)"),
    _r("tanh", "x", "1.0 - out * out"),
    _r("asinh", "x", "1.0 / math.sqrt(x * x + 1.0)"),
    _r("acosh", "x", "1.0 / math.sqrt(x * x - 1.0)"),
    _r("atanh", "x", "1.0 / (1.0 - x * x)"),
    _r("erf", "x", "1.1283791670955126 * math.exp(-x * x)"),
    _r("erfc", "x", "-1.1283791670955126 * math.exp(-x * x)"),
    # at (0, 0), a cone's tip, 0.5 to each, as JAX gives (0 / 0 otherwise); x / out, not
    # x * (1 / out), which is inf where out is subnormal (hypot(1e-310, 0))
    _r("hypot", "x y", "x / out if out != 0.0 else 0.5", "y / out if out != 0.0 else 0.5"),
    _r("fmod", "x y", "1.0", "-math.trunc(x / y)"),
    _r("square", "x", "2.0 * x"),
    _r("reciprocal", "x", "-out * out"),
    # value-only: the math library's lgamma and tgamma, called only by special.py's bodies,
    # whose derivatives are SPECIAL_RULES' (normalize refuses them anywhere else)
    _r("libm_lgamma", "x", None),
    _r("libm_gamma", "x", None),
]
VALUE_ONLY = frozenset({"libm_lgamma", "libm_gamma"})

RULES: dict[str, Rule] = {r.name: r for r in _RULES}

# gast operator class -> primitive name
BINOPS = {
    gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "div",
    gast.Pow: "pow", gast.FloorDiv: "floordiv", gast.Mod: "mod",
}
UNARYOPS = {gast.USub: "neg", gast.UAdd: "pos", gast.Not: "not"}
CMPOPS = {gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge", gast.Eq: "eq", gast.NotEq: "ne"}

# Python callables a user may call inside a scalar function -> primitive name.
# numpy's ufuncs are listed by name and resolved in frontend (numpy is imported there).
_MATH_NAMES = [
    "fabs", "copysign", "floor", "ceil", "trunc", "sqrt", "exp", "expm1", "log", "log2",
    "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "hypot", "fmod",
]
NUMPY_UFUNC_NAMES = {
    "abs": "abs", "absolute": "abs", "fabs": "fabs", "sign": "sign", "copysign": "copysign",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "round", "sqrt": "sqrt",
    "cbrt": "cbrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos",
    "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "hypot": "hypot", "fmod": "fmod", "square": "square",
    "reciprocal": "reciprocal", "maximum": "maximum", "minimum": "minimum", "power": "pow",
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
    "true_divide": "div", "negative": "neg", "floor_divide": "floordiv", "mod": "mod",
    "remainder": "mod", "greater": "gt", "greater_equal": "ge", "less": "lt",
    "less_equal": "le", "equal": "eq", "not_equal": "ne",
    # np.round / np.around without decimals are rint (halves to even), slope 0
    "round": "round", "around": "round",
}
BUILTIN_NAMES = {abs: "abs", min: "min", max: "max", float: "float", int: "int", round: "round"}
# scipy.special's ufuncs that are primitives above, found by identity (scipy is optional)
SCIPY_PRIMITIVES = {"erf": "erf", "erfc": "erfc", "expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt", "exp2": "exp2"}


def _base_callables() -> dict[Callable, str]:
    """python_callables' math, builtins and numpy rows, by the objects those modules held
    when s2sad was imported (read once: a user's later `np.tanh = np.sin` must not make
    np.sin the primitive tanh; it was read per call before session 13, so a patched
    module attribute named a primitive by its spelling)."""
    table: dict[Callable, str] = dict(BUILTIN_NAMES)
    for name in _MATH_NAMES:
        table[getattr(math, name)] = name
    if hasattr(math, "cbrt"):
        table[math.cbrt] = "cbrt"
    if hasattr(math, "exp2"):
        table[math.exp2] = "exp2"
    table[math.pow] = "pow"
    table[special.libm_lgamma] = "libm_lgamma"
    table[special.libm_gamma] = "libm_gamma"
    for np_name, prim in NUMPY_UFUNC_NAMES.items():
        fn = getattr(np, np_name, None)
        if fn is not None:
            table.setdefault(fn, prim)
    return table


_callables_state: tuple = (False, {})     # (scipy.special or None, the table), rebound whole


def python_callables() -> dict[Callable, str]:
    """Map each Python callable with a rule to its primitive name (math, builtins, numpy,
    as imported; scipy.special's by identity once the process has imported it)."""
    global _callables_state
    sc = loaded_scipy_special()
    held, table = _callables_state
    if held is sc:
        return table
    table = dict(_BASE_CALLABLES)
    for sc_name, prim in SCIPY_PRIMITIVES.items():
        fn = getattr(sc, sc_name, None) if sc is not None else None
        if fn is not None:
            table.setdefault(fn, prim)
    _callables_state = (sc, table)
    return table


def scalar_spellings() -> dict[str, tuple[str, ...]]:
    """The callables with a rule in this module's tables, by where a user finds them
    (math, numpy, builtins, scipy.special; by name, scipy never imported): what
    s2sad.coverage lists in the README."""
    math_names = set(_MATH_NAMES) | {n for n in ("cbrt", "exp2") if hasattr(math, n)} | {"pow"}
    math_names |= {f.__name__ for f in _MATH_SPECIAL} | set(MATH_ELEMENTWISE)
    numpy_names = {n for n in set(NUMPY_UFUNC_NAMES) | set(NUMPY_ELEMENTWISE) if hasattr(np, n)}
    scipy_names = set(SCIPY_PRIMITIVES) | set(SCIPY_SPECIAL_NAMES) | set(SCIPY_ORDERED)
    return {"math": tuple(sorted(math_names)), "numpy": tuple(sorted(numpy_names)),
            "builtins": tuple(sorted(f.__name__ for f in BUILTIN_NAMES)), "scipy.special": tuple(sorted(scipy_names))}


@dataclass(frozen=True)
class UserRule:
    """A rule registered with s2sad.defrule: `impl` computes the value (its source is
    compiled like any scalar function), `partials[i]` is d out / d params[i] as source in
    the params and `out` (None: zero)."""

    fn: Callable
    impl: Callable
    params: tuple[str, ...]
    partials: tuple[str | None, ...]


# callable -> its user rule; consulted before the callable's own source, so a rule wins
USER_RULES: dict[Callable, UserRule] = {}


# The special functions: kernels compile their values from special.py's source (every
# backend alike); these rows are their partials, in the parameters and `out`, calling
# special.py's functions by name (digamma's derivative is trigamma, whose is polygamma(2);
# that one's own derivative is refused: normalize never lets a user call it).
SPECIAL_RULES = [
    _r("lgamma", "x", "digamma(x)"),
    _r("gamma", "x", "out * digamma(x)"),
    _r("digamma", "x", "trigamma(x)"),
    _r("trigamma", "x", "tetragamma(x)"),
    # polygamma(2, x), value-only: called only in trigamma's partial (normalize refuses it elsewhere)
    _r("tetragamma", "x", None),
    # at +-1 erfinv is +-inf and its slope inf (exp(inf) / 2 * sqrt(pi))
    _r("erfinv", "x", "0.886226925452758 * math.exp(out * out)"),
    _r("ndtr", "x", "0.3989422804014327 * math.exp(-0.5 * x * x)"),
    # pdf / cdf as exp(log pdf - log cdf): finite where both underflow (x = -40)
    _r("log_ndtr", "x", "0.3989422804014327 * math.exp(-0.5 * x * x - out)"),
    _r("expit", "x", "out * (1.0 - out)"),
    _r("logit", "x", "1.0 / (x * (1.0 - x))"),
    # xlogy(0, y) is 0 for every y, so its y-slope there is 0 (JAX's choice)
    _r("xlogy", "x y", "math.log(y)", "0.0 if x == 0.0 else x / y"),
    _r("xlog1py", "x y", "math.log1p(y)", "0.0 if x == 0.0 else x / (1.0 + y)"),
    _r("betaln", "a b", "digamma(a) - digamma(a + b)", "digamma(b) - digamma(a + b)"),
]
SPECIAL_VALUE_ONLY = frozenset({"tetragamma"})
# callables by identity -> the special function that computes them (math's; scipy's below)
_MATH_SPECIAL = {math.lgamma: "lgamma", math.gamma: "gamma"}
# scipy.special name -> special function (psi is digamma's other name)
SCIPY_SPECIAL_NAMES = {
    "gammaln": "lgamma", "gamma": "gamma", "digamma": "digamma", "psi": "digamma", "erfinv": "erfinv",
    "ndtr": "ndtr", "log_ndtr": "log_ndtr", "expit": "expit", "logit": "logit", "xlogy": "xlogy",
    "xlog1py": "xlog1py", "betaln": "betaln",
}
# functions whose first argument picks the special function: it must be a constant
SCIPY_ORDERED = {"polygamma": {0: "digamma", 1: "trigamma"}}


def loaded_scipy_special():
    """scipy.special if the process has imported it (a user's code that names it has),
    else None: s2sad never imports scipy itself."""
    return sys.modules.get("scipy.special")


# numpy's elementwise functions that are no math primitive: kernels compile their values
# from ewfuncs.py's source (every backend alike), these rows are their partials
ELEMENTWISE_RULES = [
    _r("deg2rad", "x", repr(ewfuncs.DEG)),
    _r("rad2deg", "x", repr(ewfuncs.RAD)),
    # (cos(pi x) - sinc(x)) / x, 0 at x = 0 (sinc is even there)
    _r("sinc", "x", f"0.0 if x == 0.0 else (math.cos({ewfuncs.PI!r} * x) - out) / x"),
    # the operand that is not NaN takes the slope; on a tie the second, as JAX's
    # where(x > y | isnan(y), x, y) gives
    _r("fmax", "x y", "1.0 if (x > y or y != y) else 0.0", "0.0 if (x > y or y != y) else 1.0"),
    _r("fmin", "x y", "1.0 if (x < y or y != y) else 0.0", "0.0 if (x < y or y != y) else 1.0"),
    _r("real", "x", "1.0"),
    _r("imag", "x", None),
    _r("conj", "x", "1.0"),
    _r("angle", "x", None),
    # the step's own slope is 0 (JAX's); h0 is the value at x = 0, where it takes the slope
    _r("heaviside", "x h0", None, "1.0 if x == 0.0 else 0.0"),
    # exp(x - out), the softmax weight; 0.5 each where x == y (also two equal infinities,
    # whose exp(x - out) is NaN), 1 to the operand that is out itself (x = +inf)
    _r("logaddexp", "x y", "0.5 if x == y else (1.0 if x == out else math.exp(x - out))",
       "0.5 if x == y else (1.0 if y == out else math.exp(y - out))"),
    _r("logaddexp2", "x y", "0.5 if x == y else (1.0 if x == out else math.exp2(x - out))",
       "0.5 if x == y else (1.0 if y == out else math.exp2(y - out))"),
]
# numpy's (and math's) callables, by name -> the function of ewfuncs.py computing them
NUMPY_ELEMENTWISE = {
    "deg2rad": "deg2rad", "radians": "deg2rad", "rad2deg": "rad2deg", "degrees": "rad2deg", "sinc": "sinc",
    "fmax": "fmax", "fmin": "fmin", "real": "real", "imag": "imag", "conj": "conj", "conjugate": "conj",
    "angle": "angle", "heaviside": "heaviside", "logaddexp": "logaddexp", "logaddexp2": "logaddexp2",
}
MATH_ELEMENTWISE = {"radians": "deg2rad", "degrees": "rad2deg"}


def _user_rules(module, rows) -> dict[str, UserRule]:
    by_name = {r.name: r for r in rows}
    return {n: UserRule(getattr(module, n), getattr(module, n), r.params, r.partials) for n, r in by_name.items()}


SPECIAL_USER_RULES: dict[str, UserRule] = _user_rules(special, SPECIAL_RULES)
ELEMENTWISE_USER_RULES: dict[str, UserRule] = _user_rules(ewfuncs, ELEMENTWISE_RULES)


def _elementwise_table() -> dict:
    """numpy's and math's callables -> the UserRule of the ewfuncs function computing them."""
    table = {rule.fn: rule for rule in ELEMENTWISE_USER_RULES.values()}
    table.update((getattr(np, n), ELEMENTWISE_USER_RULES[f]) for n, f in NUMPY_ELEMENTWISE.items() if hasattr(np, n))
    table.update((getattr(math, n), ELEMENTWISE_USER_RULES[f]) for n, f in MATH_ELEMENTWISE.items())
    return table


ELEMENTWISE_TABLE: dict = _elementwise_table()
_BASE_CALLABLES: dict = _base_callables()
# (scipy.special or None, its table), one tuple rebound whole, so threads that classify
# while another rebuilds it read one pair or the other
_special_state: tuple = (False, {})


def _special_table() -> dict:
    """callable -> UserRule of the special function it is; built again once scipy.special
    is imported."""
    global _special_state
    sc = loaded_scipy_special()
    held, table = _special_state
    if held is sc:
        return table
    table = {rule.fn: rule for rule in SPECIAL_USER_RULES.values()}
    table.update(ELEMENTWISE_TABLE)
    table.update((fn, SPECIAL_USER_RULES[n]) for fn, n in _MATH_SPECIAL.items())
    for sc_name, n in SCIPY_SPECIAL_NAMES.items():
        fn = getattr(sc, sc_name, None) if sc is not None else None
        if fn is not None:
            table[fn] = SPECIAL_USER_RULES[n]
    _special_state = (sc, table)
    return table


def ordered_family(value) -> tuple[str, dict[int, str]] | None:
    """(name, {order: special function}) if `value` is scipy.special.polygamma, else None."""
    sc = loaded_scipy_special()
    if sc is None:
        return None
    for sc_name, orders in SCIPY_ORDERED.items():
        if getattr(sc, sc_name, None) is value:
            return sc_name, orders
    return None


def user_rule(value) -> UserRule | None:
    """The rule registered with s2sad.defrule for `value`, else the special function's."""
    try:
        return USER_RULES.get(value) or _special_table().get(value)
    except TypeError:  # unhashable
        return None
