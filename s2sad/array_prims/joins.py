"""Joins of several arrays: concatenate, stack (also np.array([a, b])), np.r_[...], np.c_[...]."""
from __future__ import annotations

import numpy as np

from .ops import Join
from .prim import Prim, kw, pieces


def _join_op(kind):
    return lambda axis=None, **_: Join(kind, axis)


def _zeros_but(i, t, args, out):
    """The operands as a tuple literal, args[i] replaced by its tangent and the others by
    zeros of their shape (in the output's dtype)."""
    parts = [t if k == i else f"np.zeros(np.shape({a}), np.asarray({out}).dtype)" for k, a in enumerate(args)]
    return pieces(parts)


def _join_jvp(spelling):
    def jvp(i, t, args, out, p):
        parts = _zeros_but(i, t, args, out)
        if spelling in ("r_", "c_"):
            return f"np.{spelling}[{parts[1:-1]}]"
        return f"np.{spelling}({parts}{kw(p, 'axis')})"
    return jvp


PRIMS = [
    Prim("concatenate", _join_op("concatenate"),
         lambda i, g, args, out, p: f"concatenate_bar({g}, {i}, {pieces(args)}{kw(p, 'axis')})",
         form="sequence", statics=("axis",), funcs=(np.concatenate,), jvp=_join_jvp("concatenate")),
    Prim("stack", _join_op("stack"), lambda i, g, args, out, p: f"np.take({g}, {i}, axis={p.get('axis', '0')})",
         form="sequence", statics=("axis",), funcs=(np.stack,), literal_funcs=(np.array, np.asarray),
         jvp=_join_jvp("stack")),
    Prim("r_", _join_op("r_"), lambda i, g, args, out, p: f"r_bar({g}, {i}, {pieces(args)})", form="syntax",
         jvp=_join_jvp("r_")),
    Prim("c_", _join_op("c_"), lambda i, g, args, out, p: f"c_bar({g}, {i}, {pieces(args)})", form="syntax",
         jvp=_join_jvp("c_")),
]
