"""Primitives that move elements without arithmetic, past reshape and transpose: roll,
flip, fliplr, flipud, rot90, moveaxis, swapaxes, rollaxis, broadcast_to, atleast_1d/2d/3d.

Each is linear and its adjoint is the inverse move (roll back, flip again, rotate by -k,
move the axis back) or, for broadcast_to, the sum over the broadcast axes; the tangent
is the same move applied to the operand's tangent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .ops import PrimOp
from .prim import Prim, kw
from .strict import strict

HELPER_NAMES = frozenset({"rollaxis_bar", "rollaxis_jvp", "cast_like",
                          "shape_items"})    # (`n, d = x.shape`: passes/arraystmts.py)


@dataclass(frozen=True)
class Move(PrimOp):
    """One move of elements; its fields are the static parameters numpy names them by."""
    kind: str
    shift: Any = None
    axis: Any = None
    k: Any = None
    axes: Any = None
    source: Any = None
    destination: Any = None
    axis1: Any = None
    axis2: Any = None
    start: Any = None
    shape: Any = None
    STATIC = ("shift", "axis", "k", "axes", "source", "destination", "axis1", "axis2", "start", "shape")


def _move(kind, statics=(), required=()):
    return strict(lambda **p: Move(kind, **p), statics, required)


def _roll(i, g, args, out, p):
    return f"np.roll({g}, np.negative({p['shift']}){kw(p, 'axis')})"


def _rot90(i, g, args, out, p):
    return f"np.rot90({g}, -({p.get('k', '1')}){kw(p, 'axes')})"


def _entry(name, statics, vjp, jvp, required=(), methods=(), result="view"):
    return Prim(name, _move(name, statics, required), vjp, statics=statics, funcs=(getattr(np, name),),
                methods=methods, result=result, jvp=jvp)


PRIMS = [
    _entry("roll", ("shift", "axis"), _roll,
           lambda i, t, args, out, p: f"np.roll({t}, {p['shift']}{kw(p, 'axis')})", ("shift",), result="fresh"),
    _entry("flip", ("axis",), lambda i, g, args, out, p: f"np.flip({g}{kw(p, 'axis')})",
           lambda i, t, args, out, p: f"np.flip({t}{kw(p, 'axis')})"),
    _entry("fliplr", (), lambda i, g, args, out, p: f"np.fliplr({g})", lambda i, t, args, out, p: f"np.fliplr({t})"),
    _entry("flipud", (), lambda i, g, args, out, p: f"np.flipud({g})", lambda i, t, args, out, p: f"np.flipud({t})"),
    _entry("rot90", ("k", "axes"), _rot90,
           lambda i, t, args, out, p: f"np.rot90({t}, {p.get('k', '1')}{kw(p, 'axes')})"),
    _entry("moveaxis", ("source", "destination"),
           lambda i, g, args, out, p: f"np.moveaxis({g}, {p['destination']}, {p['source']})",
           lambda i, t, args, out, p: f"np.moveaxis({t}, {p['source']}, {p['destination']})",
           ("source", "destination")),
    _entry("swapaxes", ("axis1", "axis2"),
           lambda i, g, args, out, p: f"np.swapaxes({g}, {p['axis1']}, {p['axis2']})",
           lambda i, t, args, out, p: f"np.swapaxes({t}, {p['axis1']}, {p['axis2']})",
           ("axis1", "axis2"), methods=("swapaxes",)),
    _entry("rollaxis", ("axis", "start"),
           lambda i, g, args, out, p: f"rollaxis_bar({g}, {args[0]}, {p['axis']}{kw(p, 'start')})",
           lambda i, t, args, out, p: f"rollaxis_jvp({t}, {p['axis']}{kw(p, 'start')})", ("axis",)),
    # the adjoint sums the broadcast axes (a read-only view of the operand, forward)
    _entry("broadcast_to", ("shape",), lambda i, g, args, out, p: f"unbroadcast({g}, {args[0]})",
           lambda i, t, args, out, p: f"np.broadcast_to({t}, {p['shape']})", ("shape",)),
    # one array (several give a list: refused as more arguments than known)
    Prim("atleast", _move("atleast"), lambda i, g, args, out, p: f"np.reshape({g}, np.shape({args[0]}))",
         funcs=(np.atleast_1d, np.atleast_2d, np.atleast_3d), result="view",
         jvp=lambda i, t, args, out, p: f"np.reshape({t}, np.shape({out}))"),
]
