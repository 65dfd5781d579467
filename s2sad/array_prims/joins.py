"""Joins of several arrays: concatenate, stack (also np.array([a, b])), np.r_[...], np.c_[...]."""
from __future__ import annotations

import numpy as np

from .ops import Join
from .prim import Prim, kw, pieces


def _join_op(kind):
    return lambda axis=None, **_: Join(kind, axis)


PRIMS = [
    Prim("concatenate", _join_op("concatenate"),
         lambda i, g, args, out, p: f"concatenate_bar({g}, {i}, {pieces(args)}{kw(p, 'axis')})",
         form="sequence", statics=("axis",), funcs=(np.concatenate,)),
    Prim("stack", _join_op("stack"), lambda i, g, args, out, p: f"np.take({g}, {i}, axis={p.get('axis', '0')})",
         form="sequence", statics=("axis",), funcs=(np.stack,), literal_funcs=(np.array, np.asarray)),
    Prim("r_", _join_op("r_"), lambda i, g, args, out, p: f"r_bar({g}, {i}, {pieces(args)})", form="syntax"),
    Prim("c_", _join_op("c_"), lambda i, g, args, out, p: f"c_bar({g}, {i}, {pieces(args)})", form="syntax"),
]
