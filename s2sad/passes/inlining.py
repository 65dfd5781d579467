"""Calls of the user's own functions, inlined by the array-program builder
(passes/arrayprog.Builder): local defs and lambdas (`inline_local`), and module-level
Python functions (`inline_function`, parsed with frontend.parse_function).

A call's arguments are lowered in the caller's scope and bound to the callee's
parameters as Python binds them; the callee's body is then lowered in a new scope
whose parent is the scope it was defined in (its closure). Invariants: recursion is
refused (the stack of functions being inlined is the builder's `stack`); an argument
bound to a parameter counts as a second name for its value (the in-place checks see
the alias); a default is a constant, or free data read when the derivative runs.
"""
from __future__ import annotations

import gast
import numpy as np

from ..defaults import DefaultValues, bind_call
from ..errors import RecursionNotSupportedError
from ..frontend import classify, parse_function
from .arrayir import Const, Ctx
from .arrayscope import Bound, LocalFn, Scope
from .trees import assigned_names


class Inliner:
    """The builder's inlining of user functions; the body is lowered by the builder."""

    def __init__(self, builder):
        self.b = builder

    def inline_local(self, lf: LocalFn, e: gast.Call, scope: Scope, want=None):
        return self.inline(lf.node, lf.scope.ctx, lf.scope, e, scope, want, key=id(lf.node), label=lf.name)

    def inline_function(self, fn, e: gast.Call, scope: Scope, want=None):
        pf = parse_function(fn, self.b.loc(scope.ctx, e))
        return self.inline(pf.node, Ctx(pf), None, e, scope, want, key=id(fn), label=fn.__qualname__, fn=pf.fn)

    def inline(self, node, ctx: Ctx, parent: Scope | None, e: gast.Call, scope: Scope, want, key, label, fn=None):
        if key in self.b.stack:
            raise RecursionNotSupportedError(f"'{label}' calls itself (recursion)", self.b.loc(scope.ctx, e),
                                             hint="Write the recursion as a for loop.")
        a = node.args
        if a.vararg or a.kwarg:
            raise self.b.err(ctx, node, f"'{label}' cannot take *args or **kwargs to be used at the array level",
                           "Name its parameters (def f(x, y, k=1.0)); a decorator's wrapper that only forwards them, "
                           "fn(*args, **kwargs), is taken.")
        if fn is not None:    # a function object: its defaults are the values its `def` computed
            vals = self.bind_function(fn, node, ctx, e, scope)
        else:
            vals = self.bind_local(node, ctx, e, scope, label)
        params = list(vals)
        body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
        if isinstance(node, gast.Lambda):
            gast.copy_location(body[0], node.body)
        inner = Scope(ctx, dict(vals), set(params) | assigned_names(body), parent)
        for v in vals.values():
            if isinstance(v, str):
                if v in self.b.named:
                    self.b.aliased.add(v)
                self.b.named.add(v)
            elif isinstance(v, list):     # a local list passed on: appends through either name refused
                self.b.stmts.lists.note_bound(v)
        self.b.stack.append(key)
        saved_stmt = self.b.cur_stmt
        try:
            result, _ = self.b.function_body(body, inner, node, want)
        finally:
            self.b.stack.pop()
            self.b.cur_stmt = saved_stmt
        return result

    def bind_local(self, node, ctx: Ctx, e: gast.Call, scope: Scope, label: str) -> dict:
        """A call's parameter values for a local function (a def or lambda of the code
        being differentiated): positional parameters, constant defaults."""
        a = node.args
        if a.kwonlyargs or a.posonlyargs:
            raise self.b.err(ctx, node, f"'{label}' must take plain positional parameters to be used at the "
                           "array level", "Remove keyword-only parameters.")
        params = [p.id for p in a.args]
        vals = {}
        for p, arg in zip(params, e.args):
            vals[p] = self.b.expr(arg, scope)
        for k in e.keywords:
            if k.arg not in params:
                raise self.b.err(scope.ctx, e, f"'{label}' has no parameter '{k.arg}'", "Fix the call.")
            vals[k.arg] = self.b.expr(k.value, scope)
        if len(e.args) > len(params):
            raise self.b.err(scope.ctx, e, f"'{label}' takes {len(params)} arguments, {len(e.args)} given",
                           "Fix the call.")
        defaults = a.defaults
        for i, p in enumerate(params):
            if p not in vals:
                j = i - (len(params) - len(defaults))
                if j < 0:
                    raise self.b.err(scope.ctx, e, f"'{label}' is missing the argument '{p}'", "Fix the call.")
                d = defaults[j]
                if not isinstance(d, gast.Constant):   # computed when the `def` ran, in its scope
                    raise self.b.err(ctx, d, f"the default of '{p}' of the local function '{label}' is not a "
                                   "constant", f"Pass '{p}' in the call, or make its default a number.")
                vals[p] = Const(d.value)
        return vals

    def bind_function(self, fn, node, ctx: Ctx, e: gast.Call, scope: Scope) -> dict:
        """A call's parameter values (SSA names, constants) for a function object,
        bound as Python binds them (defaults.bind_call)."""
        positional, filled = bind_call(fn, len(e.args), [k.arg for k in e.keywords],
                                       lambda msg: self.b.err(scope.ctx, e, msg, "Fix the call."))
        given = dict(zip(positional, e.args))
        given.update((k.arg, k.value) for k in e.keywords)
        order = [p.id for p in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        vals = {}
        for p in order:
            vals[p] = self.b.expr(given[p], scope) if p in given else self.default_value(fn, p, filled[p], ctx)
        return vals

    def default_value(self, fn, p: str, value, ctx: Ctx):
        """A default as an operand: a number or tuple compiled in; an array read when
        the derivative runs (defaults.DefaultValues), as a free array is."""
        kind = classify(value).kind
        if kind in ("constant", "tuple") or value is None:
            return Const(value)
        if isinstance(value, (np.ndarray, list)):
            key = (id(fn), "default " + p)
            g = self.b.free_keys.get(key)
            if g is None:
                g = self.b.free_keys[key] = self.b.namer.fresh(p)
                self.b.free[g] = (DefaultValues(fn), p)
            return g
        return Bound(value, p)
