"""Row fusion: the numpy idioms of a max-shifted softmax family along the last axis, as
one row-fused primitive each (array_prims/rowfused.py), before elementwise fusion.

    m = np.max(z, axis=-1, keepdims=True)              (axis 1 or -1, written as such)
    t = z - m
    l = t - np.log(np.sum(np.exp(t), axis=-1, keepdims=True))          -> row_log_softmax(z)
    p = e / np.sum(e, axis=-1, keepdims=True), e = np.exp(z - m)       -> row_softmax(z)
    l = np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)) + m      -> row_logsumexp(z)

(`t` may be its own statement or written inside the exp). Each runs as one compiled pass
per row forward and one backward (s2sad.rowsoftmax), where the statements took four to
six passes over the (n, k) values and as many numpy row reductions, forward and backward.

Invariant: a chain is replaced only when nothing else reads its intermediate values
(the max, the shifted values, the exponentials, the sums), all of it in one block, so
the program computes the same values (to rounding: the sums' order, exp and log are
s2sad's own, rowsoftmax states the tolerance) and its derivatives are the same
functions. S2SAD_ROW_FUSION=0, read when a program is built, keeps the statements.
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from ..array_prims import Reduce
from ..array_prims.rowfused import RowFused
from .. import envflags
from ..frontend import location_of
from ..kernel_text import unparse
from ..parsing import gast_parse
from .arrayir import ArrayProgram, ArrayStmt, Elementwise, ForStmt, IfStmt, stmt_reads, walk_stmts

# numpy functions by name in the texts patterns are written in
_UFUNCS = {id(np.exp): "exp", id(np.log): "log", id(np.sqrt): "sqrt", id(np.square): "square"}


class Switch:
    """Row fusion on or off: S2SAD_ROW_FUSION as `enabled()` last read it. The row
    functions a plan runs (rowsoftmax, rowlayernorm) read `SWITCH.on` at each call, not
    the environment (a lookup in os.environ costs about a microsecond a call)."""
    on = True


SWITCH = Switch()


def enabled() -> bool:
    """Row fusion on? (S2SAD_ROW_FUSION=0 turns it off, for comparisons and tests.) Read
    from the environment here: when a plan is built, and when a caller asks."""
    SWITCH.on = envflags.switch("S2SAD_ROW_FUSION")
    return SWITCH.on


enabled()


def fuse_rows(prog: ArrayProgram) -> None:
    """Replace each idiom's statements by one row-fused statement, in every block."""
    if not enabled():
        return
    readers = readers_of(prog)
    for body in blocks(prog.body):
        _block(body, readers, prog.namer)


def readers_of(prog: ArrayProgram) -> dict[str, list]:
    """SSA name -> the statements that read it ("return" for the result)."""
    readers: dict[str, list] = {}
    for st in walk_stmts(prog.body):
        for r in stmt_reads(st):
            readers.setdefault(r, []).append(st)
    if isinstance(prog.result, str):
        readers.setdefault(prog.result, []).append("return")
    return readers


def blocks(body: list):
    """Every block of statements, inner blocks first."""
    for st in body:
        if isinstance(st, ForStmt):
            yield from blocks(st.body)
        elif isinstance(st, IfStmt):
            yield from blocks(st.body)
            yield from blocks(st.orelse)
    yield body


def _block(body: list, readers: dict, namer) -> None:
    for st in [s for s in body if isinstance(s, ArrayStmt) and _last_axis_max(s)]:
        chain = _Chain(body, readers, st)
        for find in (chain.log_softmax, chain.softmax, chain.logsumexp):
            got = find()
            if got and _replace(body, got, readers, namer):
                break


def shape(st) -> str | None:
    """An Elementwise statement's expression with its operands as A0, A1... and numpy's
    exp and log by name; None for any other statement (or other functions)."""
    if not isinstance(st, ArrayStmt) or not isinstance(st.op, Elementwise) or st.op.prelude:
        return None
    e = copy.deepcopy(st.op.expr)
    holders = {h: f"A{i}" for i, h in enumerate(st.op.holders)}
    for n in gast.walk(e):
        if isinstance(n, gast.Name):
            if n.id in holders:
                n.id = holders[n.id]
            elif n.id in st.op.bindings:
                f = _UFUNCS.get(id(st.op.bindings[n.id]))
                if f is None:
                    return None
                n.id = f
            else:
                return None
    return unparse(e)


def axis_of(e) -> int | None:
    """A literal int axis (None for anything else)."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) and isinstance(e.operand, gast.Constant):
        v = e.operand.value
        return -v if type(v) is int else None
    return e.value if isinstance(e, gast.Constant) and type(e.value) is int else None


def keep(st) -> bool | None:
    """A reduction's keepdims: False when absent, None when not a literal bool."""
    k = st.op.keepdims
    if k is None:
        return False
    return k.value if isinstance(k, gast.Constant) and type(k.value) is bool else None


def _last_axis_max(st) -> bool:
    return isinstance(st.op, Reduce) and st.op.kind == "max" and axis_of(st.op.axis) in (1, -1) \
        and keep(st) is True and isinstance(st.args[0], str)


class _Chain:
    """One candidate chain from a last-axis max `m` of `z`. Each idiom's finder returns
    (statements consumed, the statement that reads the pattern, the pattern's texts
    (`_texts`), kind, keepdims) or None."""

    def __init__(self, body: list, readers: dict, m: ArrayStmt):
        self.body, self.readers, self.m = body, readers, m
        self.z, self.axis = m.args[0], axis_of(m.op.axis)

    def only(self, name: str, *stmts) -> bool:
        """Is `name` read by exactly `stmts` (each once)?"""
        got = self.readers.get(name, [])
        return len(got) == len(stmts) and {id(s) for s in got} == {id(s) for s in stmts}

    def users(self, name: str) -> list:
        return [s for s in self.readers.get(name, []) if isinstance(s, ArrayStmt)]

    def row_sum(self, e: ArrayStmt):
        """The one statement reading e, if it sums e along the same axis with keepdims."""
        us = [s for s in self.users(e.target) if isinstance(s.op, Reduce) and s.op.kind == "sum"
              and s.args[0] == e.target and axis_of(s.op.axis) == self.axis and keep(s) is True]
        return us[0] if len(us) == 1 and self.only(e.target, us[0]) else None

    def shifted(self, t: ArrayStmt) -> bool:
        return shape(t) == "A0 - A1" and t.args == [self.z, self.m.target]

    def shifted_exps(self):
        """(statements, e): e = exp(z - m), written in one statement or as exp(t)."""
        out = []
        for u in self.users(self.m.target):
            if shape(u) == "exp(A0 - A1)" and u.args == [self.z, self.m.target]:
                out.append(([u], u))
            elif self.shifted(u):
                for e in self.users(u.target):
                    if shape(e) == "exp(A0)" and e.args == [u.target] and self.only(u.target, e):
                        out.append(([u, e], e))
        return out

    def closing(self, s: ArrayStmt) -> ArrayStmt | None:
        ls = self.users(s.target)
        return ls[0] if len(ls) == 1 and isinstance(ls[0].op, Elementwise) and self.only(s.target, ls[0]) else None

    def log_softmax(self):
        for t in self.users(self.m.target):
            if not self.shifted(t) or not self.only(self.m.target, t):
                continue
            for e in self.users(t.target):
                if shape(e) != "exp(A0)" or e.args != [t.target]:
                    continue
                s = self.row_sum(e)
                last = self.closing(s) if s is not None else None
                if last is not None and self.only(t.target, e, last):
                    return [self.m, t, e, s], last, {f"A_{t.target} - log(A_{s.target})"}, "row_log_softmax", False
        return None

    def softmax(self):
        for stmts, e in self.shifted_exps():
            if not self.only(self.m.target, stmts[0]):
                continue
            s = [u for u in self.users(e.target) if isinstance(u.op, Reduce)]
            if len(s) != 1:
                continue
            s = s[0]
            if s.op.kind != "sum" or axis_of(s.op.axis) != self.axis or keep(s) is not True:
                continue
            last = self.closing(s)
            if last is not None and self.only(e.target, s, last):
                return [self.m, *stmts, s], last, {f"A_{e.target} / A_{s.target}"}, "row_softmax", False
        return None

    def logsumexp(self):
        for stmts, e in self.shifted_exps():
            s = self.row_sum(e)
            last = self.closing(s) if s is not None else None
            if last is None or not self.only(self.m.target, stmts[0], last):
                continue
            m, st = self.m.target, s.target
            return [self.m, *stmts, s], last, {f"log(A_{st}) + A_{m}", f"A_{m} + log(A_{st})"}, "row_logsumexp", True
        return None


def texts_of(node, st: ArrayStmt) -> str:
    """A subexpression of st's template with its operands as A_<name> and numpy's exp
    and log by name (other functions as B_<name>)."""
    holders = {h: st.args[i] for i, h in enumerate(st.op.holders)}
    e = copy.deepcopy(node)
    for n in gast.walk(e):
        if isinstance(n, gast.Name):
            if n.id in holders:
                a = holders[n.id]
                n.id = f"A_{a}" if isinstance(a, str) else "C_"
            elif n.id in st.op.bindings:
                n.id = _UFUNCS.get(id(st.op.bindings[n.id])) or f"B_{n.id}"
    return unparse(e)


def by_texts(texts: set):
    """A locator (see `replace`) of the first subexpression whose text is in `texts`,
    replaced by the fused value alone."""
    def locate(last: ArrayStmt):
        node = next((n for n in gast.walk(last.op.expr) if isinstance(n, gast.expr) and texts_of(n, last) in texts),
                    None)
        return None if node is None else (node, lambda filler: filler)
    return locate


def _split(last: ArrayStmt, locate, gone: list, new_name: str):
    """last's template with the pattern replaced by a holder of `new_name`: (expr,
    holders, args), or None where the pattern is absent or a consumed value is read
    outside it."""
    found = locate(last)
    if found is None:
        return None
    node, make = found
    memo: dict = {}
    expr = copy.deepcopy(last.op.expr, memo)
    hole = memo[id(node)]
    new_h = next(f"__h{i}" for i in range(len(last.op.holders) + 1) if f"__h{i}" not in last.op.holders)
    filler = make(gast.Name(id=new_h, ctx=gast.Load(), annotation=None, type_comment=None))
    if expr is hole:
        expr = filler
    else:
        for parent in gast.walk(expr):
            for field, value in gast.iter_fields(parent):
                if value is hole:
                    setattr(parent, field, filler)
                elif isinstance(value, list) and any(v is hole for v in value):
                    setattr(parent, field, [filler if v is hole else v for v in value])
    used = {n.id for n in gast.walk(expr) if isinstance(n, gast.Name)}
    consumed = {st.target for st in gone}
    holders, args = [], []
    for h, a in zip(last.op.holders, last.args):
        if h in used:
            if a in consumed:
                return None
            holders.append(h)
            args.append(a)
    return expr, holders + [new_h], args + [new_name]


def _replace(body: list, got, readers: dict, namer) -> bool:
    """A softmax-family chain (a _Chain finder's result) replaced (see `replace`)."""
    gone, last, texts, kind, keepdims = got
    z, axis = gone[0].args[0], gone[0].op.axis
    kd = gast.Constant(value=True, kind=None) if keepdims else None
    text = f"{kind}({z}, axis={unparse(axis)}" + (", keepdims=True" if keepdims else "") + ", shift='max')"
    return replace(body, gone, last, by_texts(texts), RowFused(kind, axis, kd), text, readers, namer)


def replace(body: list, gone: list, last: ArrayStmt, locate, op: RowFused, text: str, readers: dict, namer) -> bool:
    """The chain's statements `gone` out and a statement of `op` over gone[0]'s operand
    (its forward line `text`) in, before what is left of `last`, the statement that
    reads the pattern (or as it, when the pattern was all of it). `locate(last)` gives
    (the pattern's node in last's template, make: the fused value's holder -> what
    replaces that node), or None. False (nothing changed) where the pattern is absent
    or a consumed value is read outside it."""
    if not all(any(s is t for s in body) for t in (*gone, last)):
        return False                 # a chain across blocks (a loop's body and its outside): kept
    fused_name = namer.temp()
    split = _split(last, locate, gone, fused_name)
    if split is None:
        return False
    expr, holders, args = split
    z = gone[0].args[0]
    whole = len(holders) == 1 and isinstance(expr, gast.Name)
    target = last.target if whole else fused_name
    first = gone[0].stmt if gone[0].stmt is not None else gone[0].node
    fused = ArrayStmt(target, op, [z], last.node, last.stmt, last.ctx,
                      forward=gast_parse(text).body[0].value, reads=set(),
                      origin=location_of(gone[0].ctx.filename, first) if gone[0].ctx is not None else None)
    at = next(i for i, s in enumerate(body) if s is last)
    if whole:
        body[at] = fused
    else:
        ew = last.op
        last.op = Elementwise(expr, holders, ew.prelude, ew.sites, ew.bindings, ew.ctx_bound)
        last.args = args
        body.insert(at, fused)
        readers.setdefault(fused_name, []).append(last)
    body[:] = [s for s in body if not any(s is g for g in gone)]
    for name, rs in readers.items():
        kept = [r for r in rs if not any(r is g for g in gone) and (r is not last or not whole)]
        readers[name] = kept + ([fused] if name == z else [])
    return True
