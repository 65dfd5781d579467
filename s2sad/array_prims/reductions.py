"""Reductions: sum, mean, max, min, prod (function and method spellings); math.fsum and
math.prod of a 1-D array (their values are math's own, computed by the call as written;
their derivatives are sum's and prod's)."""
from __future__ import annotations

import math

import gast
import numpy as np

from .callops import Call, call_op
from .ops import Reduce
from .prim import Prim, kw


def _reduce_op(kind):
    return lambda axis=None, keepdims=None, **_: Reduce(kind, axis, keepdims)


def _forward(kind):
    def forward(args, p):
        # s2sad.reduce along an axis: numpy's bits, in a compiled loop where numpy's is slow
        if kind == "prod" or p.get("axis", "None") == "None":
            return None
        return f"reduce_{kind}({args[0]}{kw(p, 'axis', 'keepdims')})"
    return forward


def _funcs(*names):
    return tuple(getattr(np, n) for n in names if hasattr(np, n))


def _reduction(kind, funcs, vjp, jvp) -> Prim:
    # sum_bar and mean_bar read their operand's shape and dtype only
    return Prim(kind, _reduce_op(kind), vjp, statics=("axis",), keywords=("axis", "keepdims"),
                funcs=_funcs(*funcs), methods=(kind,), forward=_forward(kind), jvp=jvp,
                shape_reads=(0,) if kind in ("sum", "mean") else ())


def _linear_jvp(kind):
    # sum and mean are linear: the same reduction of the tangent
    return lambda i, t, args, out, p: f"np.{kind}({t}{kw(p, 'axis', 'keepdims')})"


def _weighted_jvp(bar):
    """A reduction's tangent as the sum of its tangent times its VJP of ones (the weight
    of each element: shared among ties for max/min, the other factors for prod)."""
    def jvp(i, t, args, out, p):
        ones = f"np.ones(np.shape({out}))"
        extra = f", {out}" if bar == "maxmin_bar" else ""
        return (f"np.sum({bar}({ones}, {args[0]}{extra}{kw(p, 'axis', 'keepdims')}) * {t}"
                f"{kw(p, 'axis', 'keepdims')})")
    return jvp


def _maxmin(i, g, args, out, p):
    return f"maxmin_bar({g}, {args[0]}, {out}{kw(p, 'axis', 'keepdims')})"


def _along_rows(**_):
    """math.prod's op: the product along axis 0 (its items, left to right)."""
    return Call("math_prod", (("axis", gast.Constant(value=0, kind=None)),))


PRIMS = [
    _reduction("sum", ("sum",), lambda i, g, args, out, p: f"sum_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})",
               _linear_jvp("sum")),
    _reduction("mean", ("mean",), lambda i, g, args, out, p: f"mean_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})",
               _linear_jvp("mean")),
    _reduction("max", ("max", "amax"), _maxmin, _weighted_jvp("maxmin_bar")),
    _reduction("min", ("min", "amin"), _maxmin, _weighted_jvp("maxmin_bar")),
    _reduction("prod", ("prod",), lambda i, g, args, out, p: f"prod_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})",
               _weighted_jvp("prod_bar")),
    # math.fsum(x), math.prod(x) of an array: its elements, one by one (no keyword: start=
    # of math.prod is refused where it is read)
    Prim("fsum", call_op("fsum"), lambda i, g, args, out, p: f"sum_bar({g}, {args[0]})", keywords=(),
         funcs=(math.fsum,), jvp=lambda i, t, args, out, p: f"np.sum({t})", shape_reads=(0,)),
    # (math.prod of an N-D array multiplies its rows: np.prod along axis 0, whose rules these are)
    Prim("math_prod", _along_rows, lambda i, g, args, out, p: f"prod_bar({g}, {args[0]}{kw(p, 'axis')})",
         keywords=(), funcs=(math.prod,), jvp=_weighted_jvp("prod_bar")),
]
