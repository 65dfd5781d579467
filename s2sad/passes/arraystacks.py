"""Lists grown at run time (passes/arraylists.py's other half): a local list appended
to inside a loop whose number of iterations is known only at run time (or inside an
`if`) is kept as one array, its items stacked along a new first axis (`stacked`).

    hs = []                      hs = np.zeros(0)          (the empty list)
    for t in range(T):           for t in range(T):
        hs.append(h)                 hs_2 = list_append(hs, h)   (ListAppend: a new array)
    np.stack(hs), np.array(hs)   a copy of hs;  np.concatenate(hs): its first two axes joined
    sum(hs), len(hs), hs[i],     the array's (numpy converts a list of arrays to this array)
    for h in hs, zip(hs, ...)

Invariants: only uses where a list and its stacked array agree are taken. numpy
functions convert a list to that array first, so they agree; Python's operators do not
(`hs + gs` joins lists, `hs * 2` repeats one): an operator or a builtin (max, min,
sorted) applied to a stacked list itself is a located refusal. Items of different shapes
are refused where they are appended, at run time (the list would hold them; an array
cannot).
"""
from __future__ import annotations

import functools

import gast
import numpy as np

from .. import array_prims
from ..errors import UnsupportedOperationError
from .arrayir import ListAppend, operand_expr
from .arrayscope import Scope


# ------------------------------------------------------------------ what generated code calls

def list_append(stack, item, where=None):
    """`stack` with `item` after its last item (a new array)."""
    item = np.asarray(item)
    if stack.shape[0] == 0 and stack.ndim == 1:      # the empty list
        return item[None].copy()
    if stack.shape[1:] != item.shape:
        raise UnsupportedOperationError(
            f"an item of shape {item.shape} is appended to a list of items of shape {stack.shape[1:]}: s2sad keeps "
            f"a list grown in a loop as one array, whose items have one shape", where,
            hint="Append arrays of one shape, or build the list with a loop over a tuple or range(<constant>).")
    return np.concatenate([stack, item[None]])


def list_append_base_bar(g):
    return np.array(g[:-1])


def list_append_item_bar(g):
    return float(g[-1]) if np.ndim(g) == 1 else np.array(g[-1])


# ------------------------------------------------------------------ building

_BUILTINS = ("max", "min", "sorted", "any", "all")


class Stacks:
    """The builder's lists kept as arrays; `stmts` is the Statements part."""

    def __init__(self, builder, stmts):
        self.b = builder
        self.s = stmts
        self.stacked: set[str] = set()      # SSA names of lists kept as arrays

    def convert(self, names, scope: Scope, node) -> None:
        """The static lists among `names` (appended to in a loop or branch being
        lowered) -> arrays: the empty array, then each item appended."""
        for nm in sorted(names):
            items = self.b.lookup_local(nm, scope)
            if not isinstance(items, list):
                continue
            self.s.lists.check_unshared(nm, items, node, scope)
            zeros = gast.Call(func=gast.Attribute(value=operand_expr("np"), attr="zeros", ctx=gast.Load()),
                              args=[gast.Constant(value=0, kind=None)], keywords=[])
            t = self.b.py_stmt(zeros, [], set(), node, scope, nm, "nograd", fresh=True)
            for item in items:
                t = self.append(t, item, nm, node, scope)
            self.stacked.add(t)
            self.s.bind(scope, nm, t)

    def append(self, stack: str, item, nm: str, node, scope: Scope) -> str:
        if isinstance(item, list):
            raise self.b.err(scope.ctx, node, f"a tuple is appended to '{nm}', a list grown in a loop",
                             "Append arrays or numbers.", UnsupportedOperationError)
        b = self.b
        fn = b.bind_value(functools.partial(list_append, where=b.loc(scope.ctx, node)), "list_append")
        op = ListAppend(fn, b.bind_value(list_append_base_bar, "list_append_base_bar"),
                        b.bind_value(list_append_item_bar, "list_append_item_bar"))
        fwd = gast.Call(func=operand_expr(fn), args=[operand_expr(stack), operand_expr(item)], keywords=[])
        t = b.emit(op, [stack, item], node, scope, nm, forward=fwd)
        b.fresh.add(t)
        self.stacked.add(t)
        return t

    def is_stacked(self, e, scope: Scope) -> bool:
        if not isinstance(e, gast.Name):
            return False
        v = self.b.lookup_local(e.id, scope)
        return isinstance(v, str) and v in self.stacked

    def check_use(self, e, scope: Scope) -> None:
        """Refuse an operator or a builtin applied to a stacked list itself (where a list
        and its array differ)."""
        if not self.stacked:
            return
        for n in gast.walk(e):
            direct = []
            if isinstance(n, gast.BinOp):
                direct = [n.left, n.right]
            elif isinstance(n, gast.UnaryOp):
                direct = [n.operand]
            elif isinstance(n, gast.Compare):
                direct = [n.left] + list(n.comparators)
            elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in _BUILTINS:
                direct = list(n.args)
            for d in direct:
                if self.is_stacked(d, scope):
                    raise self.b.err(scope.ctx, n, f"'{d.id}' is a list grown in a loop, which s2sad keeps as one "
                                     "array; Python's operators and builtins treat a list otherwise (+ joins, * "
                                     "repeats)", f"Convert it first: np.stack({d.id}) (or use {d.id}.append).",
                                     UnsupportedOperationError)

    def join(self, prim, value, e: gast.Call, scope: Scope, want):
        """np.stack(hs), np.array(hs), np.concatenate(hs) of a stacked list; None if the
        first argument is not one."""
        seq = e.args[0] if e.args else None
        if seq is None or not self.is_stacked(seq, scope):
            return None
        x = self.b.lookup_local(seq.id, scope)
        axis = [k.value for k in e.keywords if k.arg == "axis"] + list(e.args[1:2])
        zero = not axis or (isinstance(axis[0], gast.Constant) and axis[0].value == 0)
        other = [k.arg for k in e.keywords if k.arg != "axis"] + (["more"] if len(e.args) > 2 else [])
        name = getattr(value, "__name__", "")
        if not zero or other or name not in ("stack", "array", "asarray", "concatenate"):
            raise self.b.err(scope.ctx, e, f"np.{name} of '{seq.id}', a list grown in a loop (kept as one array), "
                             "is taken only along axis 0", f"Write np.moveaxis(np.stack({seq.id}), 0, axis).",
                             UnsupportedOperationError)
        np_ = operand_expr("np")
        if name == "concatenate":   # the items joined along their first axis
            shape = gast.Call(func=gast.Attribute(value=np_, attr="shape", ctx=gast.Load()), args=[operand_expr(x)],
                              keywords=[])
            rest = gast.Subscript(value=shape, slice=gast.Slice(lower=gast.Constant(value=2, kind=None), upper=None,
                                                                 step=None), ctx=gast.Load())
            new = gast.BinOp(left=gast.Tuple(elts=[gast.Constant(value=-1, kind=None)], ctx=gast.Load()),
                             op=gast.Add(), right=rest)
            fwd = gast.Call(func=gast.Attribute(value=np_, attr="reshape", ctx=gast.Load()), args=[operand_expr(x), new],
                            keywords=[])
            return self.b.prims.emit_prim(array_prims.PRIMS["reshape"], "reshape", [x], {}, e, scope, want, fwd, set())
        fwd = gast.Call(func=gast.Attribute(value=np_, attr="array", ctx=gast.Load()), args=[operand_expr(x)],
                        keywords=[])
        return self.b.prims.emit_prim(array_prims.PRIMS["copy"], "copy", [x], {}, e, scope, want, fwd, set())
