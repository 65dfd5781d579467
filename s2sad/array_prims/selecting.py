"""Primitives that select elements: tril, triu, diag (a vector to a matrix and back),
diagonal, take, take_along_axis, and nan_to_num (the finite elements kept).

Each output element is an operand element or zero, so the adjoint puts the output's
adjoint back where it came from (zeros elsewhere; indices taken twice accumulate), and
the tangent is the same selection of the operand's tangent. Index arrays are static
parameters (integers: not differentiated).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from .ops import PrimOp
from .prim import Prim, StaticRefusal, kw
from .strict import is_number_literal, literal_string, strict

HELPER_NAMES = frozenset({"tri_bar", "diag_bar", "diagonal_bar", "take_bar", "take_along_axis_bar"})


@dataclass(frozen=True)
class Pick(PrimOp):
    kind: str
    k: Any = None
    offset: Any = None
    axis1: Any = None
    axis2: Any = None
    indices: Any = None
    axis: Any = None
    mode: Any = None
    nan: Any = None
    posinf: Any = None
    neginf: Any = None
    STATIC = ("k", "offset", "axis1", "axis2", "indices", "axis", "mode", "nan", "posinf", "neginf")


def _pick(kind, statics, required=()):
    return strict(lambda **p: Pick(kind, **p), statics, required)


def _take_op(indices=None, axis=None, mode=None):
    literal_string(mode, ("raise", "wrap", "clip"), "mode")
    return Pick("take", indices=indices, axis=axis, mode=mode)


def _nan_to_num_op(copy=None, nan=None, posinf=None, neginf=None):
    """Replacements written as literal numbers (a value of the program would lose its
    derivative); copy=False, which would write into the operand, refused."""
    if copy is not None and not (isinstance(copy, gast.Constant) and copy.value is True):
        raise StaticRefusal("is called with copy= other than True (it would overwrite its operand)",
                            "Leave copy= out.")
    for v in (nan, posinf, neginf):
        if v is not None and not is_number_literal(v) and not (isinstance(v, gast.Constant) and v.value is None):
            raise StaticRefusal("is called with a replacement that is not a literal number: its derivative "
                                "would be lost", "Write nan=, posinf=, neginf= as literal numbers.")
    return Pick("nan_to_num", nan=nan, posinf=posinf, neginf=neginf)


def _tri(kind):
    lower = kind == "tril"
    return Prim(kind, _pick(kind, ("k",)),
                lambda i, g, args, out, p: f"tri_bar({g}, {args[0]}{kw(p, 'k')}, lower={lower})",
                statics=("k",), funcs=(getattr(np, kind),),
                jvp=lambda i, t, args, out, p: f"np.{kind}({t}{kw(p, 'k')})")


_DIAGONAL = ("offset", "axis1", "axis2")

PRIMS = [
    _tri("tril"),
    _tri("triu"),
    Prim("diag", _pick("diag", ("k",)), lambda i, g, args, out, p: f"diag_bar({g}, {args[0]}{kw(p, 'k')})",
         statics=("k",), funcs=(np.diag,), result="plain", jvp=lambda i, t, args, out, p: f"np.diag({t}{kw(p, 'k')})"),
    Prim("diagonal", _pick("diagonal", _DIAGONAL),
         lambda i, g, args, out, p: f"diagonal_bar({g}, {args[0]}{kw(p, *_DIAGONAL)})", statics=_DIAGONAL,
         funcs=(np.diagonal,), methods=("diagonal",), result="view",
         jvp=lambda i, t, args, out, p: f"np.array(np.diagonal({t}{kw(p, *_DIAGONAL)}))"),
    Prim("take", strict(_take_op, ("indices", "axis", "mode"), ("indices",)),
         lambda i, g, args, out, p: f"take_bar({g}, {args[0]}, {p['indices']}{kw(p, 'axis', 'mode')})",
         statics=("indices", "axis"), funcs=(np.take,), methods=("take",),
         jvp=lambda i, t, args, out, p: f"np.take({t}, {p['indices']}{kw(p, 'axis', 'mode')})"),
    # the slope is 1 where x is finite (kept), 0 where it is replaced by a constant
    Prim("nan_to_num", strict(_nan_to_num_op, ("copy", "nan", "posinf", "neginf")),
         lambda i, g, args, out, p: f"np.where(np.isfinite({args[0]}), {g}, 0.0)", funcs=(np.nan_to_num,),
         jvp=lambda i, t, args, out, p: f"np.where(np.isfinite({args[0]}), {t}, 0.0)"),
    # axis=-1 when left out (numpy >= 2.3)
    Prim("take_along_axis", _pick("take_along_axis", ("indices", "axis"), ("indices",)),
         lambda i, g, args, out, p: f"take_along_axis_bar({g}, {args[0]}, {p['indices']}, {p.get('axis', '-1')})",
         statics=("indices", "axis"), funcs=(np.take_along_axis,),
         jvp=lambda i, t, args, out, p: f"np.take_along_axis({t}, {p['indices']}, {p.get('axis', '-1')})"),
]
