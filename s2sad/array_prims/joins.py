"""Joins of several arrays: concatenate, stack (also np.array([a, b])), np.r_[...], np.c_[...]."""
from __future__ import annotations

import numpy as np

from .ops import Join
from .prim import Prim, kw, pieces


def _join_op(kind):
    return lambda axis=None, **_: Join(kind, axis)


def _jvp(join, axis=True):
    """The tangent from piece i: the same join of zeros with piece i's tangent in its place
    (shape_helpers.with_piece)."""
    def jvp(i, t, args, out, p):
        parts = f"with_piece({t}, {i}, {pieces(args)})"
        if join in ("r_", "c_"):
            return f"np.{join}[tuple({parts})]"
        return f"np.{join}({parts}{kw(p, 'axis') if axis else ''})"
    return jvp


PRIMS = [
    Prim("concatenate", _join_op("concatenate"),
         lambda i, g, args, out, p: f"concatenate_bar({g}, {i}, {pieces(args)}{kw(p, 'axis')})",
         form="sequence", statics=("axis",), funcs=(np.concatenate,), jvp=_jvp("concatenate")),
    Prim("stack", _join_op("stack"), lambda i, g, args, out, p: f"np.take({g}, {i}, axis={p.get('axis', '0')})",
         form="sequence", statics=("axis",), funcs=(np.stack,), literal_funcs=(np.array, np.asarray),
         jvp=_jvp("stack")),
    Prim("r_", _join_op("r_"), lambda i, g, args, out, p: f"r_bar({g}, {i}, {pieces(args)})", form="syntax",
         jvp=_jvp("r_")),
    Prim("c_", _join_op("c_"), lambda i, g, args, out, p: f"c_bar({g}, {i}, {pieces(args)})", form="syntax",
         jvp=_jvp("c_")),
]
