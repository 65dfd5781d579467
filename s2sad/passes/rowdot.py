"""The softmax cross-entropy's product in the log-softmax's pass: after passes/rowfusion
has made a row_log_softmax, the statements

    logp = row_log_softmax(z, axis=a, shift='max')
    t = y * logp                                  (or logp * y; y any array: one-hot labels)
    s = np.sum(t, axis=a)                         (keepdims as written; or np.sum(t), all of it)

become `s = row_dot_log_softmax(z, y, axis=a, keepdims=...)` (array_prims/rowfused.py):
one compiled pass per row forward (s2sad.rowsoftmax: max, exp, sum, log, the product
and its row sum, one value a row written) and one backward (g (y - softmax(z) sum(y))),
where the statements wrote and read the (n, k) log-probabilities and products. A sum
of all of it becomes the sum of the row values (`np.sum(row_dot_log_softmax(...))`).

Invariant: replaced only when logp and t are read by nothing else, all in one block;
the values are the same to rounding (rowsoftmax states the tolerance) and the
derivatives the same functions (y's too: g log_softmax(z)). S2SAD_ROW_FUSION=0 keeps
the statements (rowfusion makes no row_log_softmax then).
"""
from __future__ import annotations

import gast

from ..array_prims import Reduce
from ..array_prims.rowfused import RowFused
from ..kernel_text import unparse
from ..parsing import gast_parse
from .arrayir import ArrayProgram, ArrayStmt, Elementwise
from .rowfusion import axis_of, blocks, enabled, keep, readers_of, shape


def fuse_row_dots(prog: ArrayProgram) -> None:
    """Fold each log-softmax's product and row sum into one statement."""
    if not enabled():
        return
    readers = readers_of(prog)
    for body in blocks(prog.body):
        for st in [s for s in body if isinstance(s, ArrayStmt) and isinstance(s.op, RowFused)
                   and s.op.kind == "row_log_softmax"]:
            found = _chain(st, readers)
            if found is not None and all(any(s is t for s in body) for t in (found[0], found[2])):
                _replace(body, st, *found, prog.namer)


def _only_reader(name: str, readers: dict):
    rs = readers.get(name, [])
    return rs[0] if len(rs) == 1 and isinstance(rs[0], ArrayStmt) else None


def _chain(logp: ArrayStmt, readers: dict):
    """(the product, the other factor y, the sum) read from logp, or None."""
    prod = _only_reader(logp.target, readers)
    if prod is None or not isinstance(prod.op, Elementwise) or shape(prod) not in ("A0 * A1", "A1 * A0") \
            or prod.args.count(logp.target) != 1:
        return None
    y = prod.args[1 - prod.args.index(logp.target)]
    total = _only_reader(prod.target, readers)
    if not isinstance(y, str) or total is None or not isinstance(total.op, Reduce) or total.op.kind != "sum" \
            or total.args != [prod.target]:
        return None
    along = axis_of(total.op.axis) == axis_of(logp.op.axis) and keep(total) is not None
    return (prod, y, total) if along or total.op.full else None


def _replace(body: list, logp: ArrayStmt, prod: ArrayStmt, y: str, total: ArrayStmt, namer) -> None:
    z, axis = logp.args[0], logp.op.axis
    if total.op.full:                    # np.sum(all): the sum of the row values
        target, kd = namer.temp(), None
    else:
        target, kd = total.target, (total.op.keepdims if keep(total) else None)
    text = f"row_dot_log_softmax({z}, {y}, axis={unparse(axis)}" + (", keepdims=True" if kd is not None else "") + ")"
    fused = ArrayStmt(target, RowFused("row_dot_log_softmax", axis, kd), [z, y], total.node, total.stmt, total.ctx,
                      forward=gast_parse(text).body[0].value, reads=set())
    if total.op.full:
        total.args = [target]
        for n in gast.walk(total.forward) if total.forward is not None else ():
            if isinstance(n, gast.Name) and n.id == prod.target:
                n.id = target
        body[_at(body, prod)] = fused
    else:
        body[_at(body, total)] = fused
        del body[_at(body, prod)]
    del body[_at(body, logp)]


def _at(body: list, st) -> int:
    return next(i for i, s in enumerate(body) if s is st)
