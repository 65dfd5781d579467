"""Integer bookkeeping at the array level: counters (`k = 0; while ...: k += 1`),
indices computed from loop variables (`j = 2 * i + 1`). They index arrays (`y[k] = v`),
so they must stay Python ints, as in the user's code, not become the floats of a
kernel: integer arithmetic on known ints is evaluated as written (no derivative, which
an int does not have).

Known ints: int constants, `range` loop variables, `len(...)`, shape metadata
(`a.shape[k]`, `a.ndim`, `a.size`: `shape_read`), results of `+ - * // %`
(and unary minus), `min` and `max` on known ints, and loop-carried names that start as an int and are only ever
assigned such arithmetic in the loop (`loop_ints`, a fixpoint over the loop's body,
checked again when the loop closes). Shape metadata is never an array value: an
expression such as `h.shape[0] + 1` is evaluated as written, wherever it appears (an
argument of np.zeros, a range, a slice bound), never fused into a float kernel.
"""
from __future__ import annotations

import gast
import numpy as np

_INT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)


def is_int_const(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def int_arith(e, is_int) -> bool:
    """Is `e` integer arithmetic (an operator at its top) over names `is_int(name)` says
    hold ints and int constants?"""
    if isinstance(e, gast.BinOp):
        return isinstance(e.op, _INT_OPS) and _int_leafy(e.left, is_int) and _int_leafy(e.right, is_int)
    if isinstance(e, gast.UnaryOp):
        return isinstance(e.op, (gast.USub, gast.UAdd)) and _int_leafy(e.operand, is_int)
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and not e.keywords and e.args:
        if e.func.id == "len" and len(e.args) == 1:        # of anything: an int
            return True
        return e.func.id in ("min", "max") and all(_int_leafy(a, is_int) for a in e.args)
    return False


def _int_leafy(e, is_int) -> bool:
    if isinstance(e, gast.Constant):
        return is_int_const(e.value)
    if isinstance(e, gast.Name):
        return is_int(e.id)
    return shape_read(e, is_int) or int_arith(e, is_int)


def shape_read(e, is_int) -> bool:
    """Is `e` an array's integer metadata: `a.shape[k]` (k an int), `a.ndim`, `a.size`?"""
    if isinstance(e, gast.Attribute):
        return e.attr in ("ndim", "size")
    return (isinstance(e, gast.Subscript) and isinstance(e.value, gast.Attribute) and e.value.attr == "shape"
            and _int_leafy(e.slice, is_int))


def int_expr(e, is_int) -> bool:
    """Integer arithmetic (`int_arith`) or a shape read alone: a Python int, never an
    array value."""
    return shape_read(e, is_int) or int_arith(e, is_int)


def _assignments(body):
    """(name, value or None) for each binding of a plain name in `body` (None: not a
    plain `name = value` / `name op= value`), not entering nested functions."""
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, (gast.FunctionDef, gast.Lambda)):
            continue
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            yield n.targets[0].id, n.value
            stack.append(n.value)
            continue
        if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            yield n.target.id, gast.BinOp(left=gast.Name(id=n.target.id, ctx=gast.Load(), annotation=None,
                                                          type_comment=None), op=n.op, right=n.value)
            stack.append(n.value)
            continue
        if isinstance(n, gast.For) and isinstance(n.target, gast.Name):
            is_range = isinstance(n.iter, gast.Call) and isinstance(n.iter.func, gast.Name) and n.iter.func.id == "range"
            yield n.target.id, gast.Constant(value=0, kind=None) if is_range else None
        elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            yield n.id, None
        stack.extend(gast.iter_child_nodes(n))


def loop_ints(body, candidates: set, outer_int) -> set:
    """Of `candidates` (names that hold an int before the loop), those every assignment
    in `body` keeps an int; `outer_int(name)` tells for the names the body does not bind."""
    binds: dict[str, list] = {}
    for nm, value in _assignments(body):
        binds.setdefault(nm, []).append(value)
    ints = {nm for nm in binds if nm in candidates or all(v is not None for v in binds[nm])}

    def is_int(nm):
        return nm in ints if nm in binds else outer_int(nm)
    while True:
        keep = {nm for nm in ints if all(v is not None and (_const_int(v) or int_arith(v, is_int) or
                                                             (isinstance(v, gast.Name) and is_int(v.id)))
                                         for v in binds[nm])}
        if keep == ints:
            return ints & candidates
        ints = keep


def _const_int(v) -> bool:
    return isinstance(v, gast.Constant) and is_int_const(v.value)
