"""Contractions beyond matmul/dot/outer: einsum (every subscript form numpy takes),
tensordot, inner, kron, cross, vdot.

Their adjoints are product_rules' helpers (each an einsum onto the operand's labels);
their tangents are the same product with one operand replaced by its tangent.
"""
from __future__ import annotations

import numpy as np

from .callops import call_op
from .prim import Prim, kw

# the helpers these texts call (product_rules.HELPERS: array_rules.HELPERS takes them in)
HELPER_NAMES = frozenset({"einsum_bar", "einsum_jvp", "tensordot_bar", "tensordot_jvp", "inner_bar", "vdot_bar",
                          "kron_bar", "cross_bar", "cross_jvp", "dot_nd_bar"})


def _with(i, t, args):
    """The operand texts with operand i's replaced by `t`."""
    return ", ".join(t if k == i else a for k, a in enumerate(args))


def _einsum_vjp(i, g, args, out, p):
    return f"einsum_bar({i}, {g}, {p['subscripts']}, {', '.join(args)})"


def _einsum_jvp(i, t, args, out, p):
    return f"einsum_jvp({i}, {t}, {p['subscripts']}, {', '.join(args)})"


def _binary(name):
    """A bilinear numpy function of two arrays: its VJP helper `<name>_bar`, its JVP the
    function itself with one operand's tangent."""
    return dict(op=call_op(name), vjp=lambda i, g, args, out, p: f"{name}_bar({i}, {g}, {args[0]}, {args[1]})",
                jvp=lambda i, t, args, out, p: f"np.{name}({_with(i, t, args)})",
                form="binary", funcs=(getattr(np, name),))


_CROSS = ("axisa", "axisb", "axisc", "axis")

PRIMS = [
    Prim("einsum", call_op("einsum"), _einsum_vjp, form="einsum", funcs=(np.einsum,), result="plain",
         jvp=_einsum_jvp),
    Prim("tensordot", call_op("tensordot"),
         lambda i, g, args, out, p: f"tensordot_bar({i}, {g}, {args[0]}, {args[1]}{kw(p, 'axes')})",
         form="signature", statics=("a", "b", "axes"), operands=("a", "b"), funcs=(np.tensordot,),
         jvp=lambda i, t, args, out, p: f"tensordot_jvp({i}, {t}, {args[0]}, {args[1]}{kw(p, 'axes')})"),
    Prim("inner", **_binary("inner")),
    Prim("kron", **_binary("kron")),
    Prim("vdot", **_binary("vdot")),
    Prim("cross", call_op("cross"),
         lambda i, g, args, out, p: f"cross_bar({i}, {g}, {args[0]}, {args[1]}{kw(p, *_CROSS)})",
         form="signature", statics=("a", "b") + _CROSS, operands=("a", "b"), funcs=(np.cross,),
         jvp=lambda i, t, args, out, p: f"cross_jvp({i}, {t}, {args[0]}, {args[1]}{kw(p, *_CROSS)})"),
]
