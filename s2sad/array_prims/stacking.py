"""Joins that promote their pieces first: np.hstack, vstack (row_stack), dstack,
column_stack (each a literal list of arrays), and np.append(arr, values, axis).

A piece's adjoint is its slice of the output's adjoint along the joining axis, taken
back to the piece's own shape (a vector hstacked as itself, vstacked as a row,
column_stacked as a column, dstacked as (1, n, 1)); shape_helpers.join_bar knows the
promotions. The ops are joins.py's `Join(kind, axis)`.
"""
from __future__ import annotations

import numpy as np

from .ops import Join
from .prim import Prim, kw, pieces
from .strict import strict

HELPER_NAMES = frozenset({"join_bar", "join_jvp", "append_bar", "append_jvp", "with_piece"})


def _promoting(kind, func):
    return Prim(kind, strict(lambda **_: Join(kind), ()),
                lambda i, g, args, out, p: f"join_bar({kind!r}, {g}, {i}, {pieces(args)})", form="sequence",
                funcs=(func,), jvp=lambda i, t, args, out, p: f"join_jvp({kind!r}, {t}, {i}, {pieces(args)})")


def _append_vjp(i, g, args, out, p):
    return f"append_bar({g}, {i}, {args[0]}, {args[1]}{kw(p, 'axis')})"


def _append_jvp(i, t, args, out, p):
    return f"append_jvp({t}, {i}, {args[0]}, {args[1]}{kw(p, 'axis')})"


PRIMS = [
    _promoting("hstack", np.hstack),
    _promoting("vstack", np.vstack),
    _promoting("dstack", np.dstack),
    _promoting("column_stack", np.column_stack),
    *([_promoting("row_stack", np.row_stack)] if getattr(np, "row_stack", np.vstack) is not np.vstack else []),
    Prim("append", strict(lambda axis=None: Join("append", axis), ("axis",)), _append_vjp, form="binary",
         statics=("axis",), funcs=(np.append,), jvp=_append_jvp),
]
