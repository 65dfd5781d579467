"""Loops of the differentiated function, lowered by the array-program builder's
statements (passes/arraystmts.Statements): `for` over `range` and `while` (a `ForStmt`
with loop-carried phis; a while's test is a `LoopExit` at the head of its body), `for`
over a tuple (unrolled). A loop that `break`s (passes/jumps.py made the break a flag,
named on the loop node as `s2sad_stop`) gets that flag's value at the end of the body
as its `stop`.

Invariants: every user name the body rebinds (assigns, or writes elements of) gets one
phi, so each SSA name is assigned once; a phi is fresh (new memory) only when every
value that can reach it is; a name written in place in the body must get a fresh value
for the next iteration (else the write would reach an argument or a view).
"""
from __future__ import annotations

import builtins

import gast
import numpy as np

from ..errors import UnsupportedOperationError
from .arrayir import ArrayStmt, Const, ForStmt, LoopExit, Phi
from ..frontend import MISSING
from .arrayints import is_int_const, loop_ints
from .arraylists import lists_appended, rows_loop
from .arrayscope import LocalFn, Scope, is_number
from .trees import assigned_names


def rebound_names(body) -> set:
    """The names a block rebinds: those it assigns, the arrays it writes into (`y[i] =
    ...` makes a new value of y: arraywrites) and the lists it appends to (arraystacks)."""
    written = {n.value.id for st in body for n in gast.walk(st)
               if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) and isinstance(n.value, gast.Name)}
    return assigned_names(body) | written | lists_appended(body)


class Loops:
    """The builder's loop lowering; `stmts` is the Statements part (its block and phi tables)."""

    def __init__(self, builder, stmts):
        self.b = builder
        self.s = stmts

    # -------------------------------------------------------------- over items known now

    def unrolled_for(self, s: gast.For, items: list, scope: Scope) -> None:
        """`for c in coeffs:` over a tuple or list (zip, enumerate of them: arraylists):
        the body once per item, the target bound to it (a break is a flag the later
        items' bodies are guarded by: passes/jumps.py)."""
        body = s.body
        flag = getattr(s, "s2sad_stop", None)
        if flag:      # after a break, the later items' bodies do not run
            test = gast.UnaryOp(op=gast.Not(), operand=gast.Name(id=flag, ctx=gast.Load(), annotation=None,
                                                                 type_comment=None))
            body = [gast.copy_location(gast.If(test=gast.copy_location(test, s), body=s.body, orelse=[]), s)]
            gast.copy_location(test.operand, s)
        for item in items:
            self.s.lists.bind_target(s.target, item, scope, s)
            self.s.block(body, scope)

    def is_array(self, e, scope: Scope) -> bool:
        """Is the iterable `e` an array (its rows are the items), not a range or a call
        that makes items?"""
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id in ("range", "zip", "enumerate"):
            return False
        if isinstance(e, gast.Name):
            v = self.b.lookup_local(e.id, scope)
            if v is None:
                return isinstance(scope.ctx.resolver.lookup(e.id), np.ndarray)
            return isinstance(v, str) and v not in self.b.scalar
        return isinstance(e, (gast.Attribute, gast.BinOp, gast.Subscript, gast.Call))

    def fresh_user_name(self, base: str, scope: Scope) -> str:
        k = 1
        while True:
            nm = f"{base}_{k}"
            if self.b.lookup_local(nm, scope) is None and scope.ctx.resolver.lookup(nm) is MISSING:
                return nm
            k += 1

    # -------------------------------------------------------------- for over range, while

    def for_stmt(self, s: gast.For, scope: Scope):
        ctx = scope.ctx
        it = s.iter
        if s.orelse:
            raise self.b.err(ctx, s, "'for ... else' is not supported", "Use a flag variable.")
        appends = any(isinstance(self.b.lookup_local(nm, scope), list) for nm in lists_appended(s.body))
        if isinstance(it, gast.Name) and it.id in lists_appended(s.body):
            raise self.b.err(ctx, s, f"the loop appends to '{it.id}', the list it runs over (Python's loop would "
                             f"run over the new items too)", "Append to another list, and join them after the loop.",
                             UnsupportedOperationError)
        items = self.s.lists.items(it, scope, ranges=appends)     # range(<constant>) only to build a list
        if items is not None:
            self.unrolled_for(s, items, scope)
            return
        rows = rows_loop(s, lambda e: self.is_array(e, scope), lambda base: self.fresh_user_name(base, scope))
        if rows is not None:       # over the rows of arrays: a range loop that indexes them
            self.s.block(rows, scope)
            return
        if not isinstance(s.target, gast.Name):
            raise self.b.err(ctx, s, "an array-level loop needs a plain loop variable", "Write `for i in range(n):`.")
        is_range = (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                    and self.b.lookup_local(it.func.id, scope) is None
                    and scope.ctx.resolver.lookup(it.func.id) is builtins.range)
        if not is_range or it.keywords or not 1 <= len(it.args) <= 3:
            raise self.b.err(ctx, it, "an array-level `for` must loop over range(...) or a tuple",
                           "Write `for i in range(n):` and index arrays with i (x[i]).",
                           UnsupportedOperationError)
        rargs, reads = [], set()
        for a in it.args:
            r, rr = self.b.static(a, scope)
            rargs.append(r)
            reads |= rr
        loopvar = s.target.id
        self.s.stacks.convert(lists_appended(s.body), scope, s)    # lists grown here: arrays
        phis = self.open_phis(rebound_names(s.body) - {loopvar}, scope, s.body)
        var = self.b.namer.fresh(loopvar)
        self.b.scalar.add(var)
        self.s.ints.add(var)
        scope.vars[loopvar] = var
        body, stop = self.body(s, scope, [])
        self.close_phis(s, phis, rebound_names(s.body) - {loopvar}, scope)
        self.b.out.append(ForStmt(var, rargs, body, phis, s, ctx, reads, stop=stop))

    def while_stmt(self, s: gast.While, scope: Scope):
        ctx = scope.ctx
        if s.orelse:
            raise self.b.err(ctx, s, "'while ... else' is not supported", "Use a flag variable.")
        rebound = rebound_names(s.body)
        self.s.stacks.convert(lists_appended(s.body), scope, s)    # lists grown here: arrays
        phis = self.open_phis(rebound, scope, s.body)
        saved = self.b.out
        self.b.out = []
        self.b.cur_stmt = s
        test = self.s.condition(s.test, scope)
        if isinstance(test, (list, LocalFn)):
            raise self.b.err(ctx, s.test, "the condition of a `while` must be a value", "Fix the condition.")
        self.b.out.append(ArrayStmt(None, LoopExit(), [test], s.test, s, ctx))
        head, self.b.out = self.b.out, saved
        body, stop = self.body(s, scope, head)
        self.close_phis(s, phis, rebound, scope)
        self.b.out.append(ForStmt(self.b.namer.fresh("iteration"), None, body, phis, s, ctx, set(), stop=stop))

    def body(self, s, scope: Scope, head: list) -> tuple[list, object]:
        """The loop body's statements (after `head`) and its stop flag's value at its end."""
        saved = self.b.out
        self.b.out = list(head)
        self.s.block(s.body, scope)
        body, self.b.out = self.b.out, saved
        flag = getattr(s, "s2sad_stop", None)
        stop = scope.vars.get(flag) if flag else None
        if isinstance(stop, Const) and not stop.value:
            stop = None
        return body, stop

    def open_phis(self, rebound: set, scope: Scope, body=()) -> list:
        """One phi per name the body rebinds that has a value before the loop; those
        that stay ints through it (arrayints.loop_ints) are ints."""
        phis = []
        ints = loop_ints(body, {nm for nm in rebound if self.s.is_int(nm, scope)},
                         lambda nm: self.s.is_int(nm, scope))
        for nm in sorted(rebound):
            init = scope.vars.get(nm)
            if init is None or isinstance(init, LocalFn):
                continue
            if isinstance(init, list):
                raise self.b.err(scope.ctx, next(iter(body), None) or scope.ctx.pf.node,
                                 f"'{nm}', a list, is rebound in a loop whose number of iterations is known only "
                                 f"at run time", "Preallocate an array and write into it (H = np.zeros((n, m)); "
                                 "H[i] = h), or loop over a tuple or range(<constant>).", UnsupportedOperationError)
            ph = Phi(self.b.namer.fresh(nm), init, None, nm)
            phis.append(ph)
            if is_number(init) or (isinstance(init, str) and init in self.b.fresh and init not in self.b.aliased):
                self.b.fresh.add(ph.name)
            self.s.phis_open.add(ph.name)
            scope.vars[nm] = ph.name
            if init in self.s.stacks.stacked:
                self.s.stacks.stacked.add(ph.name)
                self.b.named.add(ph.name)      # a second name for it is an alias (appends refused)
                if init in self.b.aliased:
                    self.b.aliased.add(ph.name)
            if nm in ints:
                self.s.ints.add(ph.name)
                self.b.scalar.add(ph.name)
        return phis

    def close_phis(self, s, phis: list, rebound: set, scope: Scope) -> None:
        """The phis' values at the end of the body; phis for names first assigned in it
        (after the loop: their last value); what is fresh and scalar after the loop."""
        for ph in phis:
            ph.second = scope.vars.get(ph.user)
            self.s.phis_open.discard(ph.name)
        for nm in sorted(rebound - {ph.user for ph in phis}):
            v = scope.vars.get(nm)
            if v is None or isinstance(v, LocalFn):
                continue
            phis.append(Phi(self.b.namer.fresh(nm), Const(None), v, nm))
        for ph in phis:
            scope.vars[ph.user] = ph.name
            if ph.first in self.s.stacks.stacked or ph.second in self.s.stacks.stacked:
                self.s.stacks.stacked.add(ph.name)
            if (is_number(ph.first) or ph.first in self.b.scalar) and \
                    (is_number(ph.second) or ph.second in self.b.scalar):
                self.b.scalar.add(ph.name)
            self.check_in_place(ph)
            self.check_int(ph, s, scope.ctx)
            if not (isinstance(ph.second, str) and ph.second in self.b.fresh and ph.second not in self.b.aliased):
                self.b.fresh.discard(ph.name)

    def check_int(self, ph: Phi, s, ctx) -> None:
        """A loop-carried int stays one (loop_ints read the body's assignments)."""
        second = ph.second
        if ph.name in self.s.ints and not ((isinstance(second, Const) and is_int_const(second.value))
                                           or second in self.s.ints):
            raise self.b.err(ctx, s, f"'{ph.user}' starts as an int and changes type in a loop",
                             f"Start it as the type it ends with ({ph.user} = 0.0).", UnsupportedOperationError)

    def check_in_place(self, ph: Phi) -> None:
        """A name updated in place in the body must come back fresh for the next iteration."""
        if ph.name in self.s.phi_inplace and isinstance(ph.second, str) and \
                (ph.second not in self.b.fresh or ph.second in self.b.aliased):
            node, c = self.s.phi_inplace[ph.name]
            raise self.b.err(c, node, f"'{ph.user}' is updated in place in a loop whose next iteration also "
                             f"sees it through another name: s2sad does not differentiate in-place updates",
                             f"Write `{ph.user} = {ph.user} + ...`, which makes a new array.",
                             UnsupportedOperationError)
        if ph.name in self.s.phi_written and not (isinstance(ph.second, str) and ph.second in self.b.fresh):
            node, c = self.s.phi_written[ph.name]
            raise self.b.err(c, node, f"'{ph.user}' is written in place in a loop, and its next iteration holds "
                             f"an array that may share memory with another (an argument, a view, free data)",
                             f"Keep '{ph.user}' a local array in the loop: assign it a copy (`{ph.user} = "
                             f"....copy()`) rather than another array.", UnsupportedOperationError)
