"""Reductions: sum, mean, max, min, prod (function and method spellings)."""
from __future__ import annotations

import numpy as np

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


def _reduction(kind, funcs, vjp) -> Prim:
    return Prim(kind, _reduce_op(kind), vjp, statics=("axis",), keywords=("axis", "keepdims"),
                funcs=_funcs(*funcs), methods=(kind,), forward=_forward(kind))


def _maxmin(i, g, args, out, p):
    return f"maxmin_bar({g}, {args[0]}, {out}{kw(p, 'axis', 'keepdims')})"


PRIMS = [
    _reduction("sum", ("sum",), lambda i, g, args, out, p: f"sum_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})"),
    _reduction("mean", ("mean",), lambda i, g, args, out, p: f"mean_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})"),
    _reduction("max", ("max", "amax"), _maxmin),
    _reduction("min", ("min", "amin"), _maxmin),
    _reduction("prod", ("prod",), lambda i, g, args, out, p: f"prod_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})"),
]
