"""Layer normalisation along the last axis, as people write it with numpy, becomes one
row-fused statement `row_layer_norm(x, eps=..., axis=...)` (array_prims/rowfused.py,
run by s2sad.rowlayernorm: one compiled pass per row forward, one backward):

    mu = np.mean(x, axis=-1, keepdims=True)         (or x.mean(-1, keepdims=True); axis 1 or -1)
    v  = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
         (or of xc ** 2, xc * xc, np.square(xc) with xc = x - mu its own statement,
          or np.var(x, -1, keepdims=True) / x.var(...) with ddof absent or 0)
    ... (x - mu) / np.sqrt(v + eps) ...             (or xc / ..., np.sqrt(eps + v),
         c * (1 / np.sqrt(v + eps)), g * c / np.sqrt(v + eps), c * g / np.sqrt(v + eps))

eps a number written in the code (or a global constant, which the builder inlines).
The statement that reads the normalised value keeps the rest of its expression (the
scale and shift, g * h + b, and whatever follows them), so it still fuses with the
elementwise work around it; `g * c / s` becomes `g * h` (one rounding apart).

Invariant: the chain is replaced only when nothing else reads its intermediate values
(the mean, the centred values, their squares, the variance), all in one block, so the
program computes the same values to rounding (s2sad.rowlayernorm states the tolerance)
and its derivatives are the same functions. S2SAD_ROW_FUSION=0 keeps the statements.
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from ..array_prims import Reduce
from ..array_prims.rowfused import RowFused
from ..kernel_text import unparse
from .arrayir import ArrayProgram, ArrayStmt, Elementwise
from .rowfusion import axis_of, blocks, enabled, keep, readers_of, replace, shape

_SQUARES = ("A0 ** 2", "A0 ** 2.0", "A0 * A0", "square(A0)")
_CENTRED_SQUARES = tuple(s.replace("A0", "(A0 - A1)") for s in _SQUARES[:3]) + ("square(A0 - A1)",)


def fuse_layer_norms(prog: ArrayProgram) -> None:
    """Replace each layer normalisation's statements by one row-fused statement."""
    if not enabled():
        return
    readers = readers_of(prog)
    for body in blocks(prog.body):
        for st in [s for s in body if isinstance(s, ArrayStmt) and _row_mean(s, "mean")]:
            _Norm(readers, st).fuse(body, prog.namer)


def _row_mean(st, kind: str) -> bool:
    """A `kind` reduction of a name along axis 1 or -1, with keepdims=True (var: ddof
    absent or 0)."""
    op = st.op
    if not isinstance(op, Reduce) or op.kind != kind or axis_of(op.axis) not in (1, -1) or keep(st) is not True:
        return False
    ddof = getattr(op, "ddof", None)
    if ddof is not None and not (isinstance(ddof, gast.Constant) and type(ddof.value) is int and ddof.value == 0):
        return False
    return isinstance(st.args[0], str)


def _number(e) -> bool:
    return isinstance(e, gast.Constant) and type(e.value) in (int, float)


class _Norm:
    """The candidates from one row mean `mu` of `x`."""

    def __init__(self, readers: dict, mu: ArrayStmt):
        self.readers, self.mu = readers, mu
        self.x, self.axis = mu.args[0], axis_of(mu.op.axis)

    def users(self, name: str) -> list:
        return [s for s in self.readers.get(name, []) if isinstance(s, ArrayStmt)]

    def only(self, name: str, *stmts) -> bool:
        """Is `name` read by exactly `stmts`?"""
        got = self.readers.get(name, [])
        return len(got) == len(stmts) and {id(s) for s in got} == {id(s) for s in stmts}

    def same_rows(self, st) -> bool:
        return axis_of(st.op.axis) == self.axis

    def fuse(self, body: list, namer) -> bool:
        for gone, v, centred in self.variances():
            for last in self.users(v.target):
                if not isinstance(last.op, Elementwise) or not self.only(v.target, last):
                    continue
                if not self.read_only_inside(gone, last, centred):
                    continue
                finder = _Locate(self.x, self.mu.target, centred.target if centred else None, v.target)
                op = RowFused("row_layer_norm", self.mu.op.axis, None, finder.eps_node(last))
                if op.eps is None:
                    continue
                text = f"row_layer_norm({self.x}, eps={unparse(op.eps)}, axis={unparse(op.axis)})"
                if replace(body, gone, last, finder.locate, op, text, self.readers, namer):
                    return True
        return False

    def variances(self):
        """(statements consumed, the variance statement, the centring statement or None)."""
        for u in self.users(self.x):                       # x.var(-1, keepdims=True)
            if _row_mean(u, "var") and u.args[0] == self.x and self.same_rows(u):
                for c in self.centrings():
                    yield [self.mu, c, u], u, c
                yield [self.mu, u], u, None
        for sq in self.users(self.mu.target):              # mean((x - mu) ** 2)
            if shape(sq) in _CENTRED_SQUARES and sq.args == [self.x, self.mu.target]:
                v = self.row_mean_of(sq)
                if v is not None:
                    yield [self.mu, sq, v], v, None
        for c in self.centrings():                         # xc = x - mu; mean(xc ** 2)
            for sq in self.users(c.target):
                if shape(sq) in _SQUARES and sq.args == [c.target]:
                    v = self.row_mean_of(sq)
                    if v is not None:
                        yield [self.mu, c, sq, v], v, c

    def centrings(self):
        return [c for c in self.users(self.mu.target) if shape(c) == "A0 - A1" and c.args == [self.x, self.mu.target]]

    def row_mean_of(self, sq: ArrayStmt):
        us = self.users(sq.target)
        if len(us) == 1 and self.only(sq.target, us[0]) and _row_mean(us[0], "mean") and us[0].args == [sq.target] \
                and self.same_rows(us[0]):
            return us[0]
        return None

    def read_only_inside(self, gone: list, last, centred) -> bool:
        """Are the mean and the centred values read by the chain's statements alone?"""
        if not self.only(self.mu.target, *([centred] if centred else []), *self.mu_readers(gone, last)):
            return False
        return centred is None or self.only(centred.target, *self.centred_readers(gone, last))

    def mu_readers(self, gone: list, last) -> list:
        """Who else may read the mean: the squares of x - mu, and the closing statement
        where the centring is written in it."""
        out = [s for s in gone[1:] if isinstance(s.op, Elementwise) and s.args == [self.x, self.mu.target]
               and shape(s) != "A0 - A1"]
        return out + ([last] if any(a == self.mu.target for a in last.args) else [])

    def centred_readers(self, gone: list, last) -> list:
        return [s for s in gone[1:] if isinstance(s.op, Elementwise) and shape(s) in _SQUARES] + [last]


class _Locate:
    """Finds c / sqrt(v + eps) (and its spellings, module docstring) in the closing
    statement's template: the centred value c is `xc` or `x - mu` by operand name."""

    def __init__(self, x: str, mu: str, xc: str | None, v: str):
        self.x, self.mu, self.xc, self.v = x, mu, xc, v
        self.eps = None

    def eps_node(self, last: ArrayStmt):
        got = self.locate(last)
        return None if got is None else self.eps

    def locate(self, last: ArrayStmt):
        arg = {h: a for h, a in zip(last.op.holders, last.args)}
        sqrt = {n for n, f in last.op.bindings.items() if f is np.sqrt}
        for node in gast.walk(last.op.expr):
            if not isinstance(node, gast.BinOp):
                continue
            got = self.match(node, arg, sqrt)
            if got is not None:
                return node, got
        return None

    def match(self, node, arg, sqrt):
        """The maker of node's replacement (holder -> expression), or None."""
        c, s, inv = lambda e: self.centred(e, arg), lambda e: self.root(e, arg, sqrt), \
            lambda e: _binop(e, gast.Div) and _one(e.left) and self.root(e.right, arg, sqrt)
        if isinstance(node.op, gast.Div) and s(node.right):
            if c(node.left):
                return lambda h: h
            left = node.left
            if _binop(left, gast.Mult) and c(left.right):
                return lambda h: gast.BinOp(left=copy.deepcopy(left.left), op=gast.Mult(), right=h)
            if _binop(left, gast.Mult) and c(left.left):
                return lambda h: gast.BinOp(left=h, op=gast.Mult(), right=copy.deepcopy(left.right))
        if isinstance(node.op, gast.Mult) and (c(node.left) and inv(node.right) or inv(node.left) and c(node.right)):
            return lambda h: h
        return None

    def centred(self, e, arg) -> bool:
        if isinstance(e, gast.Name):
            return self.xc is not None and arg.get(e.id) == self.xc
        return self.xc is None and _binop(e, gast.Sub) and isinstance(e.left, gast.Name) \
            and isinstance(e.right, gast.Name) and arg.get(e.left.id) == self.x and arg.get(e.right.id) == self.mu

    def root(self, e, arg, sqrt) -> bool:
        """sqrt(v + eps) or sqrt(eps + v), noting eps."""
        if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id in sqrt
                and len(e.args) == 1 and not e.keywords and _binop(e.args[0], gast.Add)):
            return False
        a, b = e.args[0].left, e.args[0].right
        for var, eps in ((a, b), (b, a)):
            if isinstance(var, gast.Name) and arg.get(var.id) == self.v and _number(eps):
                self.eps = gast.Constant(value=float(eps.value), kind=None)
                return True
        return False


def _binop(e, op) -> bool:
    return isinstance(e, gast.BinOp) and isinstance(e.op, op)


def _one(e) -> bool:
    return _number(e) and e.value == 1
