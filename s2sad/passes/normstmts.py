"""Statements of a scalar function -> the core language (a mixin of `Normalizer`).

Assignments (augmented, annotated, multiple, unpacking) become plain assignments of
normalized expressions; `if` and `while` keep their shape; `for` runs over `range(...)`
with its defaults filled in, or over a tuple (unrolled by passes/tuples.py); local defs
and lambdas are recorded in the scope, lifted at their first call (passes/normcalls.py).
Everything else is refused with its location. Expressions go through `self.expr`.
"""
from __future__ import annotations

import builtins
import copy

import gast

from ..errors import StatefulError
from .normscope import LocalFunction, Scope
from .state import MUTATING_METHODS, item_key
from .trees import assign, const, constant_value, name


UNSUPPORTED_STMTS = {
    gast.Try: "try", gast.With: "with", gast.AsyncWith: "async with", gast.ClassDef: "class",
    gast.Import: "import", gast.ImportFrom: "import", gast.Delete: "del", gast.Raise: "raise",
    gast.Assert: "assert", gast.AsyncFor: "async for", gast.AsyncFunctionDef: "async def",
}


class StatementMixin:
    """Normalizes statements; needs `expr`, `err` and the capture/state/tuple mixins."""

    def block(self, body: list[gast.stmt], scope: Scope) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in body:
            out.extend(self.stmt(s, scope))
        return out

    def stmt(self, s: gast.stmt, scope: Scope) -> list[gast.stmt]:
        if type(s) in UNSUPPORTED_STMTS:
            kw = UNSUPPORTED_STMTS[type(s)]
            raise self.err(scope, s, f"'{kw}' is not supported in a differentiated scalar function",
                           "Move it out of the function s2sad differentiates.")
        if isinstance(s, (gast.Global, gast.Nonlocal)):
            return []  # declared as state cells before the body (declare_state)
        if isinstance(s, gast.FunctionDef):
            scope.local_functions[s.name] = LocalFunction(s)
            return []
        if isinstance(s, gast.Assign):
            return self.assign_stmt(s, scope)
        if isinstance(s, gast.AugAssign):
            if not isinstance(s.target, (gast.Name, gast.Subscript)):
                raise self.err(scope, s, "assignment into an attribute writes state s2sad cannot carry",
                               "Keep state in a global number or an item of a list, array or dict.",
                               StatefulError)
            value = gast.BinOp(left=copy.deepcopy(s.target), op=s.op, right=s.value)
            if isinstance(s.target, gast.Subscript):
                value.left.ctx = gast.Load()
            gast.copy_location(value, s)
            return self.assign_to(s.target, value, scope, s)
        if isinstance(s, gast.AnnAssign):
            if s.value is None:
                return []
            return self.assign_to(s.target, s.value, scope, s)
        if isinstance(s, gast.If):
            return [gast.If(test=self.expr(s.test, scope), body=self.block(s.body, scope) or [gast.Pass()],
                            orelse=self.block(s.orelse, scope))]
        if isinstance(s, gast.While):
            if s.orelse:
                raise self.err(scope, s, "'while ... else' is not supported", "Use a flag variable.")
            return [gast.While(test=self.expr(s.test, scope), body=self.block(s.body, scope) or [gast.Pass()], orelse=[])]
        if isinstance(s, gast.For):
            return self.for_stmt(s, scope)
        if isinstance(s, gast.Return):
            if s.value is None:
                raise self.err(scope, s, "a scalar function must return a number", "Return a value.")
            if isinstance(s.value, gast.Tuple):
                raise self.err(scope, s, "a scalar function used elementwise must return one number",
                               "Return a single number.")
            pre, value = self.maybe_stateful_call(s.value, scope)
            return pre + [gast.Return(value=value)]
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                return []  # docstring
            v = s.value
            if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and v.func.attr in MUTATING_METHODS \
                    and isinstance(v.func.value, gast.Name):
                raise self.err(scope, s, f"calls the mutating method '{v.func.attr}' on '{v.func.value.id}'",
                               "s2sad carries numbers as state: a global number, or an item of a list, "
                               "array or dict assigned with `S[0] = ...`.", StatefulError)
            if isinstance(v, gast.Call):
                pre, value = self.maybe_stateful_call(v, scope)
                if pre:
                    return pre
            raise self.err(scope, s, "an expression whose value is unused (a call for its side effects?)",
                           "Remove it, or assign its value to a variable you use.")
        if isinstance(s, (gast.Pass, gast.Break, gast.Continue)):
            return [type(s)()]
        raise self.err(scope, s, f"'{type(s).__name__}' statements are not supported in a scalar function",
                       "Rewrite it with assignments, if, while and for-range.")

    def assign_stmt(self, s: gast.Assign, scope: Scope) -> list[gast.stmt]:
        pre = self.tuple_assign(s, scope) if len(s.targets) == 1 else None
        if pre is not None:
            return pre
        if len(s.targets) == 1 and isinstance(s.value, gast.Lambda) and isinstance(s.targets[0], gast.Name):
            scope.local_functions[s.targets[0].id] = LocalFunction(s.value)
            return []
        if len(s.targets) == 1:
            return self.assign_to(s.targets[0], s.value, scope, s)
        tmp = scope.temp()
        out = [assign(tmp, self.expr(s.value, scope))]
        for t in s.targets:
            out += self.assign_to(t, name(tmp), scope, s, normalized=True)
        return out

    def assign_to(self, target, value, scope: Scope, s, normalized: bool = False) -> list[gast.stmt]:
        if isinstance(target, gast.Name):
            if target.id in scope.local_functions:
                del scope.local_functions[target.id]
            if normalized:
                return [assign(target.id, value)]
            pre, v = self.maybe_stateful_call(value, scope)
            return pre + [assign(target.id, v)]
        if isinstance(target, (gast.Tuple, gast.List)):
            names = target.elts
            if not all(isinstance(n, gast.Name) for n in names):
                raise self.err(scope, s, "only names can be unpacked into", "Unpack into plain variables.")
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(names) and not normalized:
                temps = [scope.temp() for _ in names]
                out = [assign(t, self.expr(v, scope)) for t, v in zip(temps, value.elts)]
                return out + [assign(n.id, name(t)) for n, t in zip(names, temps)]
            unpacked = self.tuple_unpack(names, value, scope, s) if not normalized else None
            if unpacked is not None:
                return unpacked
            raise self.err(scope, s, "tuple unpacking needs a tuple of the same length on the right",
                           "Assign each variable separately.")
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            cell = scope.state_cell("item", target.value.id, item_key(target.slice))
            if cell is not None:
                return [assign(cell.param, value if normalized else self.expr(value, scope))]
        if isinstance(target, (gast.Subscript, gast.Attribute)):
            raise self.err(scope, s, "assignment into an item or attribute that s2sad cannot carry as state",
                           "Keep state in a global number or an item (constant key) of a list, array or "
                           "dict defined outside the function.", StatefulError)
        raise self.err(scope, s, "unsupported assignment target", "Assign to a plain variable.")

    def for_stmt(self, s: gast.For, scope: Scope) -> list[gast.stmt]:
        if s.orelse:
            raise self.err(scope, s, "'for ... else' is not supported", "Use a flag variable.")
        it = s.iter
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id not in scope.locals \
                and scope.resolver.lookup(it.func.id) is builtins.range:
            if not isinstance(s.target, gast.Name):
                raise self.err(scope, s, "a for loop over range() needs a plain loop variable",
                               "Write `for i in range(n):`.")
            if it.keywords or not 1 <= len(it.args) <= 3:
                raise self.err(scope, it, "range() takes one to three positional arguments", "Fix the call.")
            args = [self.expr(a, scope) for a in it.args]
            if len(args) == 1:
                args = [const(0), args[0], const(1)]
            elif len(args) == 2:
                args.append(const(1))
            step = constant_value(args[2])
            if step is None or step == 0:
                raise self.err(scope, it, "the step of range() in a scalar function must be a nonzero constant",
                               "Use a while loop for a variable step.")
            rng = gast.Call(func=name("range"), args=args, keywords=[])
            return [gast.For(target=name(s.target.id, gast.Store()), iter=rng,
                             body=self.block(s.body, scope) or [gast.Pass()], orelse=[], type_comment=None)]
        if leaves_loop(s.body):
            raise self.err(scope, s, "break/continue in a loop over a tuple is not supported",
                           "Loop over range(len(...)) instead.")
        unrolled = self.unrolled_for(s, scope)
        if unrolled is None:
            raise self.err(scope, it, "a for loop in a scalar function must run over range(...) or a tuple "
                           "(also through enumerate or zip)", "Use range(...) or a while loop.")
        return unrolled


def leaves_loop(body: list[gast.stmt]) -> bool:
    """Whether a break/continue in `body` belongs to the loop around it (not to a loop
    nested inside)."""
    for st in body:
        if isinstance(st, (gast.Break, gast.Continue)):
            return True
        if isinstance(st, (gast.For, gast.While, gast.FunctionDef)):
            continue
        for field in ("body", "orelse"):
            if leaves_loop(getattr(st, field, []) or []):
                return True
    return False

