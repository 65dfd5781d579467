"""Attributes and calls that are not elementwise, lowered by the array-program
builder (passes/arrayprog.Builder): a call dispatches to the array primitives
(primcalls.PrimCalls), to the inliner (the user's own functions), to a no-grad
evaluation (NOGRAD_FUNCS: shapes, index arithmetic, masks, new zero/one arrays), or
is evaluated as written as a `Py` statement, an error when the derivative must flow
through it. Attributes: x.T is a primitive, x.shape and the like are no-grad, a module
attribute is a constant or a bound object.

Invariant: a value evaluated as written aliases its operands unless it is known new
memory (FRESH_NOGRAD), so the in-place checks stay sound.
"""
from __future__ import annotations

import types

import gast
import numpy as np

from ..errors import UnsupportedOperationError
from ..frontend import MISSING, attribute_value, classify
from ..marks import jacobian_error, jacobian_mark
from .arrayir import Const, operand_expr
from .arrayscope import Bound, LocalFn, Scope, source_text
from .inplace_calls import inplace_write
from .primhints import root_name, unsupported
from .routes import made_in_place_refusal


def _np_funcs(*names):
    return {getattr(np, n) for n in names if hasattr(np, n)}


# functions whose value does not depend differentiably on their inputs: evaluated as is
NOGRAD_FUNCS = _np_funcs(
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
    "linspace", "eye", "identity", "shape", "size", "ndim", "argmax", "argmin", "argsort", "nonzero",
    "isnan", "isinf", "isfinite", "flatnonzero", "count_nonzero", "logical_and", "logical_or",
    "logical_not", "logical_xor", "all", "any", "array_equal", "allclose", "isclose", "searchsorted",
    "digitize", "tril_indices", "triu_indices", "ravel_multi_index", "unravel_index") | {len, range, bool}
FRESH_NOGRAD = _np_funcs("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
                         "empty_like", "arange", "linspace", "eye", "identity")
SCALAR_NOGRAD = {len} | _np_funcs("size", "ndim")
# (x.imag of a real array is zeros: no derivative flows through it)
NOGRAD_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "imag"}


class Calls:
    """The builder's lowering of attributes and of calls that are not elementwise."""

    def __init__(self, builder):
        self.b = builder

    def attribute(self, e: gast.Attribute, scope: Scope, want=None):
        root = root_name(e)
        if root is not None and self.b.lookup_local(root, scope) is None:
            value = attribute_value(scope.ctx.resolver, e)
            if value is not MISSING:
                if classify(value).kind == "constant" or value is None:
                    return Const(value)
                if isinstance(value, np.ndarray):
                    raise self.b.err(scope.ctx, e, f"'{source_text(e)}' is an array read through a module attribute",
                                   "Bind it to a module-level name, or pass it as an argument.",
                                   UnsupportedOperationError)
                return Bound(value, source_text(e))
        x = self.b.array(e.value, scope)
        if e.attr == "T":
            return self.b.prims.transpose_T(x, e, scope, want)
        if e.attr == "real":
            return self.b.prims.real_part(x, e, scope, want)
        if e.attr in NOGRAD_ATTRS:
            fwd = gast.Attribute(value=operand_expr(x), attr=e.attr, ctx=gast.Load())
            t = self.b.py_stmt(fwd, [x], set(), e, scope, want, "nograd")
            if e.attr in ("ndim", "size", "itemsize", "nbytes"):
                self.b.scalar.add(t)
            return t
        fwd = gast.Attribute(value=operand_expr(x), attr=e.attr, ctx=gast.Load())
        return self.b.py_stmt(fwd, [x], set(), e, scope, want, "unsupported", label=f".{e.attr}")

    def call(self, e: gast.Call, scope: Scope, want=None):
        ctx = scope.ctx
        if any(isinstance(a, gast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise self.b.err(ctx, e, "*args and **kwargs in calls are not supported at the array level",
                           "Pass arguments one by one.", UnsupportedOperationError)
        kind, value = self.b.resolve_call(e.func, scope)
        label = source_text(e.func)
        if kind in ("value", "method"):
            self.refuse_inplace(e, value if kind == "value" else None, value if kind == "method" else None, scope)
        if kind == "local":
            return self.b.inliner.inline_local(value, e, scope, want)
        if kind == "called_value":
            raise self.b.err(ctx, e, f"'{label}' is a value, not a function", "Call a function.",
                           UnsupportedOperationError)
        if kind == "missing":
            raise self.b.err(ctx, e, f"cannot resolve '{label}'", "Call numpy or a function written in Python.",
                           UnsupportedOperationError)
        if kind == "method":
            return self.method(e, scope, want)
        if kind == "expr":
            refused = made_in_place_refusal(e.func, scope.ctx.resolver, self.b.loc(ctx, e)) \
                if isinstance(e.func, gast.Call) else None
            if refused is not None:    # s2sad.grad(f)(x) of an array program f
                raise refused
            raise self.b.err(ctx, e, "calling the result of an expression is not supported",
                           "Call a named function.", UnsupportedOperationError)
        # a known Python object
        t = self.b.prims.function(value, e, scope, want)
        if t is not None:
            return t
        if value in NOGRAD_FUNCS or value is isinstance:
            fwd, reads = self.plain_call(e, scope)
            t = self.b.py_stmt(fwd, sorted(reads), set(), e, scope, want, "nograd", label,
                             fresh=value in FRESH_NOGRAD)
            if value in SCALAR_NOGRAD:
                self.b.scalar.add(t)
            return t
        r = classify(value)
        if r.kind == "function" and isinstance(r.value, types.FunctionType):   # (an @differentiate's function)
            return self.b.inliner.inline_function(r.value, e, scope, want)
        if jacobian_mark(value) is not None:     # a Jacobian or Hessian s2sad made: one order too many
            raise jacobian_error(value, self.b.loc(ctx, e))
        if r.kind == "s2sad":
            refused = made_in_place_refusal(e, scope.ctx.resolver, self.b.loc(ctx, e))
            if refused is not None:    # g = s2sad.grad(f) of an array program f
                raise refused
            raise unsupported(label, self.b.loc(ctx, e), "cannot be called inside a function s2sad differentiates")
        # anything else: evaluated as is; an error if it reads a differentiated value
        fwd, reads = self.plain_call(e, scope)
        return self.b.py_stmt(fwd, sorted(reads), set(), e, scope, want, "unsupported", label)

    def refuse_inplace(self, e: gast.Call, value, method, scope: Scope) -> None:
        """A call that writes into an operand (inplace_calls): run as written it would change
        the caller's array (an argument, free data) or be dropped where its value is unread."""
        what = inplace_write(e, value, method)
        if what is not None:
            raise self.b.err(scope.ctx, e, f"'{source_text(e.func)}' writes into an array in place ({what}): s2sad "
                             f"never changes its arguments or free data, and differentiates values, not effects",
                             "Make a new array and use it: y = np.exp(b) rather than np.exp(b, out=b), np.sort(b) "
                             "rather than b.sort(), np.full_like(b, 0.0) rather than b.fill(0.0), np.where(...) "
                             "or a local copy's items (c = b.copy(); c[i] = ...).", UnsupportedOperationError)

    def plain_call(self, e: gast.Call, scope: Scope):
        """A call evaluated as written, its arguments computed first. -> (gast, reads)"""
        reads: set = set()
        args = []
        for a in e.args:
            if isinstance(a, gast.Lambda) or (isinstance(a, gast.Name) and
                                              isinstance(self.b.lookup_local(a.id, scope), LocalFn)):
                raise unsupported(source_text(e.func), self.b.loc(scope.ctx, e), "is called with a function argument")
            v, rr = self.b.static(a, scope)
            args.append(v)
            reads |= rr
        kws = []
        for k in e.keywords:
            kv, rr = self.b.static(k.value, scope)
            kws.append(gast.keyword(arg=k.arg, value=kv))
            reads |= rr
        return gast.Call(func=self.b.rename(e.func, scope, set()), args=args, keywords=kws), reads

    def method(self, e: gast.Call, scope: Scope, want=None):
        f = e.func
        m = f.attr
        t = self.b.prims.reduction_method(e, scope, want)
        if t is not None:
            return t
        x = self.b.array(f.value, scope)
        t = self.b.prims.method(x, e, scope, want)
        if t is not None:
            return t
        args = [self.b.array(a, scope) for a in e.args]
        kws, reads = [], set()
        for k in e.keywords:
            kv, rr = self.b.static(k.value, scope)
            kws.append(gast.keyword(arg=k.arg, value=kv))
            reads |= rr
        fwd = gast.Call(func=gast.Attribute(value=operand_expr(x), attr=m, ctx=gast.Load()), args=[operand_expr(a) for a in args],
                        keywords=kws)
        return self.b.py_stmt(fwd, [x] + args, reads, e, scope, want, "unsupported", f".{m}()")
