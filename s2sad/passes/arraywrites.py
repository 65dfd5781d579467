"""In-place writes into local arrays, lowered by the array-program builder
(passes/arrayprog.Builder): `y[index] = v` and `y[index] op= v` become one `SetItem`
statement each, a functional update (`y_2 = set_items(y, np.s_[index], v)`), and `y` is
rebound to the new value; `y[index] op= v` is `y[index] = y[index] op v`, as numpy
computes it (repeated indices not accumulated).

Invariants that keep this numpy's semantics:
- the written array is *fresh*: new memory made in the function (np.zeros, x.copy(),
  arithmetic...), never an argument, free data, or a value that may be a view of one;
  elsewhere the write is a located refusal saying what to write instead;
- `check_writes`, after the body is built: nothing that may share the written array's
  memory (another name for it, a view of it) is read after the write, where numpy would
  show the new elements and the functional update the old ones; that is a refusal too.
  "After" is program order, and within a loop that writes, any read of such a value
  made before the loop (a later iteration reads it after this one's write).
"""
from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict

import gast

from ..errors import UnsupportedOperationError
from .arrayir import ArrayStmt, ForStmt, IfStmt, Py, SetItem, operand_expr, walk_stmts
from .arrayscope import Scope, source_text
from .write_helpers import in_place_setter, set_items, set_items_base_bar, set_items_value_bar


class Writes:
    """The builder's lowering of writes into array elements."""

    def __init__(self, builder):
        self.b = builder

    def assign_item(self, target: gast.Subscript, value, scope: Scope, s) -> None:
        """`name[index] = value`."""
        nm = self.base_name(target, scope, s)
        v = self.b.array(value, scope)
        cur = self.b.lookup(nm, scope, target.value)
        self.check_fresh(nm, cur, scope, s)
        self.emit(nm, cur, target, v, scope)

    def augassign_item(self, s: gast.AugAssign, scope: Scope) -> None:
        """`name[index] op= value`: `name[index] = name[index] op value`."""
        target = s.target
        self.base_name(target, scope, s)
        read = gast.Subscript(value=target.value, slice=target.slice, ctx=gast.Load())
        value = gast.BinOp(left=read, op=s.op, right=s.value)
        gast.copy_location(read, target)
        gast.copy_location(value, s)
        self.assign_item(target, value, scope, s)

    def base_name(self, target: gast.Subscript, scope: Scope, s) -> str:
        if not isinstance(target.value, gast.Name):
            raise self.b.err(scope.ctx, s, f"a write into '{source_text(target)}': s2sad writes only into the elements "
                             "of a local array named directly (name[index] = ...)",
                             "Index once (y[i, j] = ... rather than y[i][j] = ...), or build the value and assign it "
                             "to a variable.", UnsupportedOperationError)
        return target.value.id

    def check_fresh(self, nm: str, cur, scope: Scope, s) -> None:
        b = self.b
        if isinstance(cur, str) and cur in b.fresh:
            if cur in b.stmts.phis_open:
                b.stmts.phi_written[cur] = (s, scope.ctx)
            return
        if isinstance(cur, str) and cur in b.params:
            what, hint = (f"an argument of the differentiated function: s2sad never changes its arguments",
                          f"Write into a local copy: `{nm} = {nm}.copy()` first, then `{nm}[...] = ...`.")
        elif isinstance(cur, str) and cur in b.free:
            what, hint = ("data from outside the function (a free variable): s2sad does not write state",
                          f"Write into a local copy: `{nm} = {nm}.copy()` first, then `{nm}[...] = ...`.")
        elif isinstance(cur, str):
            what, hint = ("a value that may share memory with another array (a view such as x[:, 0], x.T or a "
                          "reshape, an argument, or another name)",
                          f"Write into a local copy (`{nm} = {nm}.copy()`), or into the array it is a view of, "
                          f"indexed in full (y[:, 0] = ...).")
        else:
            what, hint = ("not an array (a number or a tuple)", f"Make it an array first: `{nm} = np.array(...)`.")
        raise b.err(scope.ctx, s, f"'{nm}' is written in place here, and '{nm}' is {what}", hint,
                    UnsupportedOperationError)

    def emit(self, nm: str, cur: str, target: gast.Subscript, v, scope: Scope) -> None:
        b = self.b
        idx, reads = b.static(target.slice, scope)
        s_ = gast.Subscript(value=gast.Attribute(value=operand_expr("np"), attr="s_", ctx=gast.Load()), slice=idx,
                            ctx=gast.Load())
        where = b.loc(scope.ctx, target)
        setter = b.bind_value(functools.partial(set_items, where=where), "set_items")
        op = SetItem(s_, setter, b.bind_value(set_items_base_bar, "set_items_base_bar"),
                     b.bind_value(set_items_value_bar, "set_items_value_bar"))
        fwd = gast.Call(func=operand_expr(setter), args=[operand_expr(cur), s_, operand_expr(v)], keywords=[])
        t = b.emit(op, [cur, v], target, scope, nm, forward=fwd, reads=reads)
        b.fresh.add(t)
        b.stmts.bind(scope, nm, t)


# ------------------------------------------------------------------ after the body: no stale views

_NOT_ARRAYS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes"}


def _may_share(st: ArrayStmt, fresh: set, scalar: set) -> bool:
    """May st's result share memory with its operands (a view, the same object)?"""
    if not st.target or st.target in fresh or st.target in scalar:
        return False
    fwd = st.forward
    if isinstance(st.op, Py) and isinstance(fwd, gast.Attribute) and fwd.attr in _NOT_ARRAYS:
        return False
    if isinstance(st.op, Py) and isinstance(fwd, gast.Call) and isinstance(fwd.func, gast.Name) \
            and fwd.func.id in ("len", "int", "float", "bool"):
        return False
    return True


class _Timeline:
    """The program's reads and definitions in program order: (position, enclosing loops,
    branch path) each; a loop's phis are defined at its head and, for reads after the
    loop, at its end."""

    def __init__(self, prog, fresh: set, scalar: set):
        self.fresh, self.scalar = fresh, scalar
        self.pos = 0
        self.reads: list = []                 # (pos, name, loops, branches, node-ish statement)
        self.moves: set[int] = set()          # the reads that are a phi's value moving (by index in reads)
        self.defs: dict[str, tuple] = {}      # name -> (pos, loops)
        self.after_loop: dict[str, int] = {}  # a loop's phi -> the loop's end position
        self.writes: list = []                # (pos, SetItem statement, loops, branches)
        self.derived: dict[str, set] = defaultdict(set)   # name -> names that may share its memory
        for p in list(prog.params) + list(prog.free):
            self.defs[p] = (-1, ())
        self.block(prog.body, (), ())
        self.pos += 1
        if isinstance(prog.result, str):
            self.read(prog.result, (), (), None)

    def read(self, name, loops, branches, st, move=False):
        if isinstance(name, str):
            if move:
                self.moves.add(len(self.reads))
            self.reads.append((self.pos, name, loops, branches, st))

    def block(self, body, loops, branches):
        for st in body:
            self.pos += 1
            if isinstance(st, ArrayStmt):
                for r in sorted({a for a in st.args if isinstance(a, str)} | set(st.reads)):
                    self.read(r, loops, branches, st)
                if st.target:
                    self.defs[st.target] = (self.pos, loops)
                    if _may_share(st, self.fresh, self.scalar):
                        for a in st.args:
                            if isinstance(a, str):
                                self.derived[a].add(st.target)
                if isinstance(st.op, SetItem):
                    self.writes.append((self.pos, st, loops, branches))
            elif isinstance(st, ForStmt):
                self.loop(st, loops, branches)
            elif isinstance(st, IfStmt):
                self.branch(st, loops, branches)

    def loop(self, st, loops, branches):
        for ph in st.phis:
            self.read(ph.first, loops, branches, st, move=True)
        for r in sorted(st.reads):
            self.read(r, loops, branches, st)
        inner = loops + (id(st),)
        for ph in st.phis:
            self.defs[ph.name] = (self.pos, inner)
            for v in (ph.first, ph.second):
                if isinstance(v, str):
                    self.derived[v].add(ph.name)
        self.defs[st.var] = (self.pos, inner)
        self.block(st.body, inner, branches)
        self.pos += 1
        for ph in st.phis:
            self.read(ph.second, inner, branches, st, move=True)
        for ph in st.phis:
            self.after_loop[ph.name] = self.pos

    def branch(self, st, loops, branches):
        self.read(st.test, loops, branches, st)
        self.block(st.body, loops, branches + ((id(st), 0),))
        self.block(st.orelse, loops, branches + ((id(st), 1),))
        self.pos += 1
        for ph in st.phis:
            self.read(ph.first, loops, branches + ((id(st), 0),), st, move=True)
            self.read(ph.second, loops, branches + ((id(st), 1),), st, move=True)
        for ph in st.phis:
            self.defs[ph.name] = (self.pos, loops)
            for v in (ph.first, ph.second):
                if isinstance(v, str):
                    self.derived[v].add(ph.name)

    def def_pos(self, name: str, read_pos: int) -> tuple:
        pos, loops = self.defs.get(name, (-1, ()))
        end = self.after_loop.get(name)
        if end is not None and read_pos >= end:
            return end, loops[:-1]
        return pos, loops


def _sharing(tl: _Timeline, base: str, phi_inputs: dict) -> set:
    """The names that may hold the written array's memory: it, what flows into it through
    phis (its value in another iteration or branch), and everything derived from those
    without a copy."""
    roots, todo = set(), [base]
    while todo:
        n = todo.pop()
        if n in roots:
            continue
        roots.add(n)
        todo.extend(phi_inputs.get(n, ()))
    out, todo = set(), list(roots)
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(tl.derived.get(n, ()))
    return out


def _exclusive(a: tuple, b: tuple) -> bool:
    """Are two branch paths the two sides of one `if` (never both run)?"""
    sides = dict(a)
    return any(k in sides and sides[k] != side for k, side in b)


def check_writes(prog, builder) -> None:
    """Refuse a write into an array whose old contents are read after it through another
    name or a view (see the module docstring); then mark the writes that may reuse their
    array (mark_in_place)."""
    tl = _Timeline(prog, builder.fresh, builder.scalar)
    if not tl.writes:
        return
    phi_inputs: dict[str, list] = {}
    for st in walk_stmts(prog.body):
        if isinstance(st, (ForStmt, IfStmt)):
            for ph in st.phis:
                phi_inputs[ph.name] = [v for v in (ph.first, ph.second) if isinstance(v, str)]
    _refuse_stale_reads(tl, phi_inputs, builder)
    mark_in_place(tl, phi_inputs, builder)


def mark_in_place(tl: _Timeline, phi_inputs: dict, builder) -> None:
    """A write whose array (any name that may hold its memory) is read by no statement
    but the write itself and the phis that carry it, except after the write and outside
    its loops, needs its old contents nowhere (the forward code, the tape, the reverse
    sweep): its setter may write in place (write_helpers.in_place_setter, which checks at
    run time that only those names hold the array). O(1) per write instead of a copy."""
    for wpos, w, wloops, wbranches in tl.writes:
        shared = _sharing(tl, w.args[0], phi_inputs)
        if any(not (k in tl.moves or name not in shared or rst is w or _exclusive(wbranches, rbranches)
                    or (rpos > wpos and not any(L in rloops for L in wloops)))
               for k, (rpos, name, rloops, rbranches, rst) in enumerate(tl.reads)):
            continue
        setter = builder.bind_value(in_place_setter(builder.loc(w.ctx, w.node), len(shared)), "set_items_in_place")
        w.op = dataclasses.replace(w.op, setter=setter)
        w.forward = gast.Call(func=operand_expr(setter), args=w.forward.args, keywords=w.forward.keywords)


def _refuse_stale_reads(tl: _Timeline, phi_inputs: dict, builder) -> None:
    for wpos, w, wloops, wbranches in tl.writes:
        shared = _sharing(tl, w.args[0], phi_inputs)
        for rpos, name, rloops, rbranches, rst in tl.reads:
            if name not in shared or rst is w or _exclusive(wbranches, rbranches):
                continue
            dpos, dloops = tl.def_pos(name, rpos)
            later = dpos < wpos < rpos
            next_iteration = any(L in rloops and L not in dloops for L in wloops)
            if later or next_iteration:
                _refuse(builder, w, rst, name)


def _refuse(builder, w: ArrayStmt, reader, name: str):
    node = reader.node if reader is not None else None
    where = f" (line {node.lineno})" if getattr(node, "lineno", None) else " (the returned value)" \
        if reader is None else ""
    base = source_text(w.node.value) if isinstance(w.node, gast.Subscript) else "the array"
    raise builder.err(w.ctx, w.node, f"'{source_text(w.node)}' writes into '{base}' in place, and a value that may "
                      f"share its memory (another name for it, or a view such as {base}[...], {base}.T) is read "
                      f"after the write{where}: numpy would show the new elements there, s2sad's update does not",
                      f"Take a copy where that value is made (v = {base}[...].copy()), or read it before the write.",
                      UnsupportedOperationError)

