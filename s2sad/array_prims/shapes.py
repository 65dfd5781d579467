"""Primitives that move elements without arithmetic: transpose, reshape, copy, repeat,
tile, indexing, and the user's defvjp functions."""
from __future__ import annotations

import gast
import numpy as np

from .ops import Copy, Index, Repeat, Reshape, Tile, Transpose, User
from .prim import Prim, StaticRefusal, kw

_AXES = ("a1", "a2", "a3", "a4")   # x.reshape(2, 3), x.transpose(1, 0): the values one by one


def _transpose_op(axes=None, **p):
    """np.transpose(x, axes) or x.transpose(a1, a2, ...) (one tuple, or the axes one by one)."""
    if axes is None:
        given = [p[k] for k in _AXES if k in p]
        axes = None if not given else given[0] if len(given) == 1 else gast.Tuple(elts=given, ctx=gast.Load())
    return Transpose(axes)


def _transpose(i, g, args, out, p):
    axes = p.get("axes", "None")
    return f"np.transpose({g})" if axes == "None" else f"np.transpose({g}, np.argsort({axes}))"


def _reshape_op(order=None, **p):
    """reshape, ravel, flatten...: the element order read, by keyword or as the one string
    passed by position (np.ravel(x, "F")); "C" and "F" only ("A" and "K" follow the
    operand's memory layout, which the adjoint does not see)."""
    if order is None:
        order = next((v for v in p.values() if isinstance(v, gast.Constant) and isinstance(v.value, str)), None)
    if order is None:
        return Reshape()
    if not (isinstance(order, gast.Constant) and order.value in ("C", "F")):
        raise StaticRefusal("is called with an order other than 'C' or 'F' (a literal string), which s2sad "
                            "does not differentiate", "Pass order='C' (the default) or order='F' as a literal.")
    return Reshape(order if order.value == "F" else None)


def _reshape_vjp(i, g, args, out, p):
    return f"np.reshape({g}, np.shape({args[0]}){kw(p, 'order')})"


def _reshape_jvp(i, t, args, out, p):
    return f"np.reshape({t}, np.shape({out}){kw(p, 'order')})"


def _transpose_jvp(i, t, args, out, p):
    axes = p.get("axes", "None")
    return f"np.transpose({t})" if axes == "None" else f"np.transpose({t}, {axes})"


def _funcs(*names):
    return tuple(getattr(np, n) for n in names if hasattr(np, n))


PRIMS = [
    Prim("transpose", _transpose_op, _transpose, statics=("axes",), method_statics=_AXES, funcs=(np.transpose,),
         methods=("transpose",), result="view", jvp=_transpose_jvp),
    # the adjoint takes the operand's shape back (in the order the elements were read)
    Prim("reshape", _reshape_op, _reshape_vjp, statics=_AXES[:3], method_statics=_AXES,
         funcs=_funcs("reshape", "ravel", "squeeze", "expand_dims"),
         methods=("reshape", "ravel", "flatten", "squeeze"), result="view", results={"flatten": "fresh"},
         jvp=_reshape_jvp),
    # the adjoint cast back to the operand's float type (x.astype(np.float32) of float64 x)
    Prim("copy", lambda **_: Copy(), lambda i, g, args, out, p: f"cast_like({g}, {args[0]})", form="copy",
         funcs=(np.copy, np.array, np.asarray), methods=("copy", "conj", "conjugate"),
         results={"asarray": "view", "real": "view"},
         jvp=lambda i, t, args, out, p: f"cast_like({t}, {out})"),
    Prim("repeat", lambda repeats=None, axis=None, **_: Repeat(repeats, axis),
         lambda i, g, args, out, p: f"repeat_bar({g}, {args[0]}, {p['repeats']}{kw(p, 'axis')})",
         statics=("repeats", "axis"), funcs=(np.repeat,), methods=("repeat",),
         jvp=lambda i, t, args, out, p: f"np.repeat({t}, {p['repeats']}{kw(p, 'axis')})"),
    Prim("tile", lambda reps=None, **_: Tile(reps), lambda i, g, args, out, p: f"tile_bar({g}, {args[0]}, {p['reps']})",
         statics=("reps",), funcs=(np.tile,), jvp=lambda i, t, args, out, p: f"np.tile({t}, {p['reps']})"),
    Prim("index", lambda index=None, **_: Index(index),
         lambda i, g, args, out, p: f"index_bar({g}, {args[0]}, {p['index']})", form="syntax", result="view",
         jvp=lambda i, t, args, out, p: f"np.array(np.asarray({t})[{p['index']}])"),
    # no jvp: s2sad.defvjp gives a VJP only, so forward mode through it is refused
    Prim("user", lambda vjp=None, **_: User(vjp),
         lambda i, g, args, out, p: f"{p['vjp']}[{i}]({g}, {out}, {', '.join(args)})", form="syntax"),
]
