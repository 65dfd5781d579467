"""Statements of the differentiated function, lowered by the array-program builder
(passes/arrayprog.Builder): assignments, augmented assignments, and control flow:
`for` over `range` (a `ForStmt` with loop-carried phis), `for` over a tuple (unrolled),
`if` on a scalar (an `IfStmt` with phis joining the branches' values).

Invariants: every user name assigned in a loop or a branch gets one phi, so each SSA
name is assigned once; a value is *fresh* (new memory no other name sees) only when
every value that can reach it is, and `x += ...` is taken only on a fresh, unaliased
value (elsewhere it would mutate an argument, free data or a view), so the generated
code never mutates. `drop_dead_phis` then removes the phis of names first assigned in
a loop body and never read after it.
"""
from __future__ import annotations

import gast

from ..errors import StatefulError, UnsupportedOperationError
from .arrayir import ArrayProgram, Const, ForStmt, IfStmt, Phi, operand_expr, stmt_reads, walk_stmts
from .arrayscope import LocalFn, Scope, is_number, source_text
from .arrayloops import Loops, rebound_names
from .arrayints import int_arith, int_expr, is_int_const
from .arraylists import Lists, lists_appended
from .arraystacks import Stacks
from .arraywrites import Writes
from .primhints import call_params, register_hint, root_name
from .trees import assigned_names


class Statements:
    """The builder's statement lowering; it emits into the builder's `out`."""

    def __init__(self, builder):
        self.b = builder
        self.phi_inplace: dict[str, tuple] = {}   # phi name -> (node, ctx) of an in-place update on it
        self.phis_open: set[str] = set()          # phis of the loops being built
        self.phi_written: dict[str, tuple] = {}   # phi name -> (node, ctx) of a write into its elements
        self.writes = Writes(builder)              # y[i] = ..., y[i] += ...
        self.loops = Loops(builder, self)          # for and while
        self.ints: set[str] = set()                 # SSA names holding Python ints (arrayints)
        self.lists = Lists(builder, self)          # local lists of arrays
        self.stacks = Stacks(builder, self)        # lists grown at run time, kept as arrays

    def block(self, stmts, scope: Scope):
        for s in stmts:
            self.b.cur_stmt = s
            self.stmt(s, scope)

    def stmt(self, s, scope: Scope):
        ctx = scope.ctx
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                return
            if self.lists.append(s, scope):
                return
            raise self.b.err(ctx, s, "an expression whose value is unused (a call for its side effects?)",
                           "s2sad differentiates functions without side effects: assign the value to a "
                           "variable you use, or remove the statement.", UnsupportedOperationError)
        if isinstance(s, gast.Pass):
            return
        if isinstance(s, gast.FunctionDef):
            if s.decorator_list:
                raise self.b.err(ctx, s, "decorated local functions are not supported", "Remove the decorator.")
            scope.vars[s.name] = LocalFn(s, scope, s.name)
            return
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1:
                raise self.b.err(ctx, s, "chained assignment (a = b = ...) is not supported at the array level",
                               "Assign each name separately.")
            return self.assign(s.targets[0], s.value, scope, s)
        if isinstance(s, gast.AnnAssign):
            if s.value is None:
                return
            return self.assign(s.target, s.value, scope, s)
        if isinstance(s, gast.AugAssign):
            return self.augassign(s, scope)
        if isinstance(s, gast.For):
            return self.loops.for_stmt(s, scope)
        if isinstance(s, gast.If):
            return self.if_stmt(s, scope)
        if isinstance(s, gast.While):
            return self.loops.while_stmt(s, scope)
        if isinstance(s, (gast.Global, gast.Nonlocal)):
            raise self.b.err(ctx, s, f"'{'global' if isinstance(s, gast.Global) else 'nonlocal'} "
                           f"{', '.join(s.names)}': the differentiated function writes state outside itself",
                           "Return the value instead of storing it.", StatefulError)
        if isinstance(s, (gast.Break, gast.Continue)):
            raise self.b.err(ctx, s, f"'{type(s).__name__.lower()}' in an array-level loop is not supported",
                           "Loop over the exact range you need; select values with np.where.")
        kw = {gast.Try: "try", gast.With: "with", gast.ClassDef: "class", gast.Import: "import",
              gast.ImportFrom: "import", gast.Delete: "del", gast.Raise: "raise", gast.Assert: "assert"}
        what = kw.get(type(s), type(s).__name__)
        raise self.b.err(ctx, s, f"'{what}' is not supported in a differentiated function",
                       "Move it out of the function s2sad differentiates.")

    def assign(self, target, value, scope: Scope, s):
        ctx = scope.ctx
        if isinstance(target, gast.Name):
            if isinstance(value, gast.Lambda):
                scope.vars[target.id] = LocalFn(value, scope, target.id)
                return
            op = self.int_value(value, scope, target.id) if int_expr(value, lambda n: self.is_int(n, scope)) \
                else self.b.expr(value, scope, want=target.id)
            self.bind(scope, target.id, op)
            return
        if isinstance(target, (gast.Tuple, gast.List)):
            if not all(isinstance(t, gast.Name) for t in target.elts):
                raise self.b.err(ctx, s, "only names can be unpacked into", "Unpack into plain variables.")
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                ops = [self.b.expr(v, scope, want=t.id) for t, v in zip(target.elts, value.elts)]
            elif isinstance(value, gast.Attribute) and value.attr == "shape":
                ops = self.shape_items(value, [t.id for t in target.elts], scope, s)
            else:
                # a tuple-valued call's items take the names (primoperands.unpacked)
                self.b.unpacking = (value, [t.id for t in target.elts])
                try:
                    ops = self.b.expr(value, scope)
                finally:
                    self.b.unpacking = None
                if not isinstance(ops, list) and isinstance(value, gast.Call):    # an unknown call's result
                    label = self.b.label(value.func)
                    raise UnsupportedOperationError(
                        f"'{label}' returns values s2sad cannot unpack here: it has no rule at the array level", self.b.loc(ctx, value), hint=register_hint(label, call_params(value)))
                if not isinstance(ops, list) or len(ops) != len(target.elts):
                    shape = isinstance(value, gast.Attribute) and value.attr == "shape"
                    raise self.b.err(ctx, s, "tuple unpacking at the array level needs a tuple of the same length",
                                   "Read each dimension by itself: " + ", ".join(
                                       f"{t.id} = {source_text(value)}[{k}]" for k, t in enumerate(target.elts))
                                   if shape else "Assign each variable separately.", UnsupportedOperationError)
            for t, op in zip(target.elts, ops):
                self.bind(scope, t.id, op)
            return
        if isinstance(target, gast.Subscript):
            return self.writes.assign_item(target, value, scope, s)
        raise self.b.err(ctx, s, "unsupported assignment target", "Assign to a plain variable.")

    def bind(self, scope: Scope, user_name: str, op):
        if isinstance(op, str):
            if op in self.b.named:
                self.b.aliased.add(op)   # two names now refer to one object
            self.b.named.add(op)
        elif isinstance(op, list):
            # a tuple held by a name (t = (a, b), res = np.linalg.qr(A)) keeps its items:
            # `a += 1` would change t[0] too, so none of them is updated in place
            self.b.aliased.update(x for x in op if isinstance(x, str))
            self.lists.note_bound(op)
        scope.vars[user_name] = op

    def augassign(self, s, scope: Scope):
        ctx = scope.ctx
        if isinstance(s.target, gast.Subscript):
            return self.writes.augassign_item(s, scope)
        if not isinstance(s.target, gast.Name):
            base = root_name(s.target)
            raise self.b.err(ctx, s, f"'{source_text(s.target)} {opsym(s.op)}= ...' updates '{base}' in place, which s2sad "
                           f"does not differentiate",
                           "Build a new array instead, e.g. with np.where(mask, new, old) or np.concatenate.",
                           UnsupportedOperationError)
        nm = s.target.id
        cur = self.b.lookup(nm, scope, s.target)
        if isinstance(cur, str) and cur not in self.b.scalar and (cur not in self.b.fresh or cur in self.b.aliased):
            what = ("an argument of the differentiated function" if cur in self.b.params else
                    "a free variable" if cur in self.b.free else
                    "a value that may share memory with another name (a view, an alias or an argument)")
            raise self.b.err(ctx, s, f"'{nm} {opsym(s.op)}= ...' updates '{nm}' in place, and '{nm}' is {what}: "
                           f"s2sad does not differentiate in-place updates",
                           f"Write `{nm} = {nm} {opsym(s.op)} ...`, which makes a new array.",
                           UnsupportedOperationError)
        if isinstance(cur, str) and cur in self.phis_open:
            self.phi_inplace[cur] = (s, ctx)
        value = gast.BinOp(left=gast.Name(id=nm, ctx=gast.Load(), annotation=None, type_comment=None),
                           op=s.op, right=s.value)
        gast.copy_location(value, s)
        if int_arith(value, lambda n: self.is_int(n, scope)):
            return self.bind(scope, nm, self.int_value(value, scope, nm))
        op = self.b.expr(value, scope, want=nm)
        self.bind(scope, nm, op)

    def is_int(self, nm: str, scope: Scope) -> bool:
        """Does the name hold a Python int here (arrayints)?"""
        v = self.b.lookup_local(nm, scope)
        return (isinstance(v, Const) and is_int_const(v.value)) or (isinstance(v, str) and v in self.ints)

    def shape_items(self, value: gast.Attribute, names: list[str], scope: Scope, s) -> list[str]:
        """`n, d = x.shape`: each name a Python int, as `x.shape[k]` is (int_value); a
        shape of another length refused where the statement is (shape_helpers.shape_items)."""
        loc = self.b.loc(scope.ctx, s)
        where = gast.Constant(value=(loc.filename, loc.lineno, loc.col, source_text(value)), kind=None)
        ops = []
        for k, nm in enumerate(names):
            reads: set = set()
            shape = self.b.rename(value, scope, reads)
            item = gast.Call(func=gast.Name(id="shape_items", ctx=gast.Load(), annotation=None, type_comment=None),
                             args=[shape, gast.Constant(value=len(names), kind=None), gast.Constant(value=k, kind=None),
                                   where], keywords=[])
            t = self.b.py_stmt(item, sorted(reads), set(), value, scope, nm, "nograd", fresh=True)
            self.ints.add(t)
            self.b.scalar.add(t)
            ops.append(t)
        return ops

    def int_value(self, e, scope: Scope, want: str) -> str:
        """Integer arithmetic on ints, evaluated as written: an int, as in the user's code."""
        reads: set = set()
        fwd = self.b.rename(e, scope, reads)
        t = self.b.py_stmt(fwd, sorted(reads), set(), e, scope, want, "nograd", fresh=True)
        self.ints.add(t)
        self.b.scalar.add(t)
        return t

    def condition(self, e, scope: Scope):
        """An `if` test: only its truth counts, so `and`/`or`/`not` are control here."""
        if isinstance(e, gast.BoolOp) or (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not)):
            parts = [self.condition(v, scope) for v in (e.values if isinstance(e, gast.BoolOp) else [e.operand])]
            fwd = gast.BoolOp(op=e.op, values=[operand_expr(p) for p in parts]) if isinstance(e, gast.BoolOp) else \
                gast.UnaryOp(op=gast.Not(), operand=operand_expr(parts[0]))
            return self.b.py_stmt(fwd, [p for p in parts if isinstance(p, str)], set(), e, scope, None, "nograd")
        return self.b.expr(e, scope)

    def if_stmt(self, s: gast.If, scope: Scope):
        ctx = scope.ctx
        test = self.condition(s.test, scope)
        if isinstance(test, (list, LocalFn)):
            raise self.b.err(ctx, s.test, "the condition of an `if` must be a value", "Fix the condition.")
        self.stacks.convert(lists_appended(s.body + s.orelse), scope, s)   # lists grown in a branch: arrays
        saved = self.b.out
        branches = []
        for stmts in (s.body, s.orelse):
            sc = scope.child_copy()
            self.b.out = []
            self.block(stmts, sc)
            branches.append((self.b.out, sc))
        self.b.out = saved
        (b1, s1), (b2, s2) = branches
        phis = []
        for nm in sorted(rebound_names(s.body) | rebound_names(s.orelse)):
            v1, v2 = s1.vars.get(nm, Const(None)), s2.vars.get(nm, Const(None))
            if isinstance(v1, LocalFn) or isinstance(v2, LocalFn):
                if v1 is not v2:
                    raise self.b.err(ctx, s, f"'{nm}' is bound to different functions in the branches of an `if`",
                                   "Define the function once, outside the `if`.")
                scope.vars[nm] = v1
                continue
            if v1 == v2:
                scope.vars[nm] = v1
                continue
            p = self.b.namer.fresh(nm)
            phis.append(Phi(p, v1, v2, nm))
            scope.vars[nm] = p
            if all(v in self.b.scalar or (isinstance(v, Const) and isinstance(v.value, (int, float))) for v in (v1, v2)):
                self.b.scalar.add(p)
            if all(v in self.b.fresh and v not in self.b.aliased for v in (v1, v2) if isinstance(v, str)):
                self.b.fresh.add(p)
            if all((isinstance(v, Const) and is_int_const(v.value)) or v in self.ints for v in (v1, v2)):
                self.ints.add(p)
            if v1 in self.stacks.stacked or v2 in self.stacks.stacked:
                self.stacks.stacked.add(p)
        self.b.out.append(IfStmt(test, b1, b2, phis, s, ctx))


def opsym(op) -> str:
    return {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**", gast.FloorDiv: "//",
            gast.Mod: "%", gast.MatMult: "@"}.get(type(op), "?")


def drop_dead_phis(prog: ArrayProgram):
    used = set()
    for st in walk_stmts(prog.body):
        used |= stmt_reads(st)
    if isinstance(prog.result, str):
        used.add(prog.result)

    def visit(body):
        for st in body:
            if isinstance(st, ForStmt):
                st.phis = [p for p in st.phis if not (isinstance(p.first, Const) and p.first.value is None
                                                      and p.name not in used)]
                visit(st.body)
            elif isinstance(st, IfStmt):
                visit(st.body)
                visit(st.orelse)
    visit(prog.body)
