"""Calls, methods and syntax read as array primitives: the part of the array-program
builder (passes/arrayprog.Builder) that knows the `array_prims` table.

`PrimCalls(builder)` answers the builder's questions: `function` (a call of a known
object: the table's functions by identity, Python's sum, a defvjp function), `method`
(x.sum(), x.reshape(...), x.astype(float)...), `subscript` (x[i], np.r_[...],
np.c_[...]), `matmul` (`a @ b`) and `transpose_T` (x.T). Each reads its operands
through the builder (`array`, `static`, `rename`), emits one statement whose op the
entry builds from the static parameters (`emit_prim`), and records what the builder's
in-place checks need: whether the result is new memory or a view of its operands,
and whether it is a known scalar. It returns None for a call that is not a primitive
(the builder then evaluates it as written, or inlines it). Calls over several operands
(joins, n-array calls, tuple-valued results) are primoperands.OperandCalls'; the hints
of its refusals are primhints'.
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from .. import array_prims
from ..array_prims import Prim, Reduce, StaticRefusal
from ..array_prims.callops import Call
from ..errors import UnsupportedOperationError
from ..frontend import MISSING, attribute_value
from .arrayir import Const, operand_expr
from .arrayscope import LocalFn
from .derivcalls import derivative_statement
from .primforms import FORMS
from .primhints import form_hint, refuse_form, root_name, unsupported
from .primoperands import OperandCalls

# entries whose derivative may refuse what only the values show (np.gradient of an N-D
# array with no axis): their helpers take the call's (file, line, column) as `where`
_LOCATED_AT_RUN_TIME = frozenset({"gradient"})


class PrimCalls(OperandCalls):
    def __init__(self, builder):
        self.b = builder

    # -------------------------------------------------------------- what the builder asks

    def function(self, value, e: gast.Call, scope, want=None) -> str | None:
        """A call of the known object `value`, when it is a primitive; else None."""
        if value is sum:
            return self.builtin_sum(e, scope, want)
        for prim in array_prims.for_function(value):
            t = self.prim_call(prim, value, e, scope, want)
            if t is not None:
                return self.unpacked(prim, t, e, scope) if prim.outputs is not None else t
        vjps = array_prims.user_vjp(value)
        if vjps is None:    # a grad s2sad made, of an array program: one statement (derivcalls)
            return derivative_statement(self, value, e, scope, want)
        label = self.b.label(e.func)
        xs = [self.b.array(a, scope) for a in e.args]
        if e.keywords:
            raise unsupported(label, self.b.loc(scope.ctx, e), "is called with keyword arguments; its rule "
                              "(s2sad.defvjp) takes positional arguments")
        vname = self.b.bind_value(vjps, label.replace(".", "_") + "_vjp")
        fwd = gast.Call(func=self.b.rename(e.func, scope, set()), args=[operand_expr(x) for x in xs], keywords=[])
        return self.emit_prim(array_prims.PRIMS["user"], "user", xs, {"vjp": operand_expr(vname)}, e, scope, want,
                              fwd, set())

    def reduction_method(self, e: gast.Call, scope, want=None) -> str | None:
        """x.sum(...), x.max(...)...: read before x (the reduction reads it itself)."""
        prim = array_prims.for_method(e.func.attr)
        if prim is None or prim.keywords is None:
            return None
        return self.reduction(prim, e.func.value, e.args, e.keywords, e, scope, want, method=True)

    def method(self, x, e: gast.Call, scope, want=None) -> str | None:
        """x.<m>(...) of the operand x, when it is a primitive; else None."""
        m = e.func.attr
        prim = array_prims.for_method(m)
        if prim is not None:
            t = self.prim_method(prim, m, x, e, scope, want)
            if t is not None:
                return t
        if m == "astype" and len(e.args) == 1:
            dt = attribute_value(scope.ctx.resolver, e.args[0]) \
                if isinstance(e.args[0], (gast.Name, gast.Attribute)) else MISSING
            if dt in (float, np.float64, np.float32):    # a copy, as floats
                p, reads = self.statics(e.args, e.keywords, ("dtype",), scope, e)
                fwd = self.rebuild_method(e, x, p)
                return self.emit_prim(array_prims.PRIMS["copy"], m, [x], {}, e, scope, want, fwd, reads)
        return None

    def matmul(self, e: gast.BinOp, scope, want=None) -> str:
        a, b = self.b.array(e.left, scope), self.b.array(e.right, scope)
        fwd = gast.BinOp(left=operand_expr(a), op=gast.MatMult(), right=operand_expr(b))
        return self.emit_prim(array_prims.PRIMS["matmul"], "matmul", [a, b], {}, e, scope, want, fwd, set())

    def real_part(self, x, e: gast.Attribute, scope, want=None) -> str:
        """x.real of a real array: the array itself (the table's copy entry, as a view)."""
        fwd = gast.Attribute(value=operand_expr(x), attr="real", ctx=gast.Load())
        return self.emit_prim(array_prims.PRIMS["copy"], "real", [x], {}, e, scope, want, fwd, set())

    def transpose_T(self, x, e: gast.Attribute, scope, want=None) -> str:
        fwd = gast.Attribute(value=operand_expr(x), attr="T", ctx=gast.Load())
        return self.emit_prim(array_prims.PRIMS["transpose"], "T", [x], {}, e, scope, want, fwd, set())

    # -------------------------------------------------------------- reading calls

    def subscript(self, e: gast.Subscript, scope, want=None):
        joined = self.index_trick(e, scope)
        if joined is not None:
            return self.joined(joined, e, scope, want)
        x = self.b.expr(e.value, scope)
        if isinstance(x, list):       # an item of a tuple (a tuple-valued primitive's outputs)
            return self.tuple_item(x, e, scope)
        if isinstance(x, LocalFn):
            raise self.b.err(scope.ctx, e.value, "expected an array or a number here", "Pass an array.",
                             UnsupportedOperationError)
        if isinstance(x, Const):
            idx, reads = self.b.static(e.slice, scope)
            fwd = gast.Subscript(value=operand_expr(x), slice=idx, ctx=gast.Load())
            return self.b.py_stmt(fwd, [], reads, e, scope, want, "nograd")
        idx, reads = self.b.static(e.slice, scope)
        fwd = gast.Subscript(value=operand_expr(x), slice=idx, ctx=gast.Load())
        s_ = gast.Subscript(value=gast.Attribute(value=operand_expr("np"), attr="s_", ctx=gast.Load()), slice=copy.deepcopy(idx),
                            ctx=gast.Load())
        return self.emit_prim(array_prims.PRIMS["index"], "index", [x], {"index": s_}, e, scope, want, fwd, reads)

    def index_trick(self, e: gast.Subscript, scope) -> str | None:
        """"r_" or "c_" when `e` is np.r_[...] or np.c_[...] (by the object, not the name)."""
        root = root_name(e.value)
        if root is None or self.b.lookup_local(root, scope) is not None:
            return None
        value = attribute_value(scope.ctx.resolver, e.value)
        if value is np.r_:
            return "r_"
        if value is np.c_:
            return "c_"
        return None

    def joined(self, op: str, e: gast.Subscript, scope, want=None):
        """np.r_[a, b, ...] (pieces joined along axis 0) and np.c_[a, b, ...] (as columns,
        along the last axis) of arrays and numbers; slices and string directives refused."""
        items = e.slice.elts if isinstance(e.slice, gast.Tuple) else [e.slice]
        for it in items:
            if isinstance(it, gast.Slice) or (isinstance(it, gast.Constant) and isinstance(it.value, str)):
                alt = "np.concatenate([...])" if op == "r_" else "np.column_stack([...]) or np.concatenate([...], axis=1)"
                raise self.b.err(scope.ctx, it, f"np.{op}[...] with a slice or a string directive is not supported",
                               f"Build the pieces (np.arange(...)) and join them with {alt}.",
                               UnsupportedOperationError)
        xs = [self.b.array(it, scope) for it in items]
        pieces = gast.Tuple(elts=[operand_expr(x) for x in xs], ctx=gast.Load()) if len(xs) > 1 else operand_expr(xs[0])
        fwd = gast.Subscript(value=gast.Attribute(value=operand_expr("np"), attr=op, ctx=gast.Load()), slice=pieces,
                             ctx=gast.Load())
        return self.emit_prim(array_prims.PRIMS[op], op, xs, {}, e, scope, want, fwd, set())

    def statics(self, args, keywords, names, scope, e):
        """Static parameters by position (names) and keyword -> ({name: gast}, reads)."""
        p, reads = {}, set()
        if len(args) > len(names):
            raise refuse_form(self.b.label(e.func), self.b.loc(scope.ctx, e), "is called with more arguments than s2sad "
                               "knows for it")
        for nm, a in zip(names, args):
            p[nm], rr = self.b.static(a, scope)
            reads |= rr
        for k in keywords:
            p[k.arg], rr = self.b.static(k.value, scope)
            reads |= rr
        return p, reads

    def rebuild(self, e: gast.Call, scope, arrays, p):
        # a static passed by position stays positional (its name need not be numpy's)
        pos = [k for k in p if not any(kw.arg == k for kw in e.keywords)]
        kwn = [k for k in p if k not in pos]
        return gast.Call(func=self.b.rename(e.func, scope, set()), args=[operand_expr(a) for a in arrays] + [p[k] for k in pos],
                         keywords=[gast.keyword(arg=k, value=p[k]) for k in kwn])

    def rebuild_method(self, e: gast.Call, x, p):
        kwnames = {kw.arg for kw in e.keywords}
        pos = [k for k in p if k not in kwnames]
        return gast.Call(func=gast.Attribute(value=operand_expr(x), attr=e.func.attr, ctx=gast.Load()),
                         args=[p[k] for k in pos], keywords=[gast.keyword(arg=k, value=p[k]) for k in p if k in kwnames])

    def reduction(self, prim: Prim, xe, args, keywords, e, scope, want=None, method=False):
        ctx = scope.ctx
        label = self.b.label(e.func)
        if xe is None:
            raise refuse_form(label, self.b.loc(ctx, e), "needs an array")
        self.check_keywords(prim, keywords, e, scope)
        x = self.b.array(xe, scope)
        p, reads = self.statics(args, keywords, prim.statics, scope, e)
        fwd = self.rebuild_method(e, x, p) if method else self.rebuild(e, scope, [x], p)
        return self.emit_prim(prim, prim.name, [x], p, e, scope, want, fwd, reads)

    def builtin_sum(self, e, scope, want=None):
        """Python's sum over an array sums its first axis; over an elementwise sequence
        (map, a comprehension), everything."""
        if len(e.args) != 1 or e.keywords:
            raise refuse_form("sum", self.b.loc(scope.ctx, e), "takes one iterable here")
        a = e.args[0]
        seq = self.b.ew.is_elementwise_sequence(a, scope) or (isinstance(a, gast.Call) and self.b.ew.is_elementwise(a, scope)
                                                          and self.b.ew.is_elementwise_sequence(a.args[0], scope))
        x = self.b.array(a, scope)
        p = {} if seq else {"axis": gast.Constant(value=0, kind=None)}
        fwd = gast.Call(func=gast.Attribute(value=operand_expr("np"), attr="sum", ctx=gast.Load()), args=[operand_expr(x)],
                        keywords=[gast.keyword(arg=k, value=v) for k, v in p.items()])
        return self.emit_prim(array_prims.PRIMS["sum"], "sum", [x], p, e, scope, want, fwd, set())

    def emit_prim(self, prim: Prim, spelling: str, xs: list, p: dict, e, scope, want, fwd, reads) -> str:
        """One primitive's statement: its typed op from the static parameters `p`; the
        result noted as new memory or a view of its operands (in-place updates), and as
        a known scalar when it reduces everything."""
        try:
            op = prim.op(**p)
        except StaticRefusal as r:
            label = self.b.label(e.func) if isinstance(e, gast.Call) else spelling
            raise UnsupportedOperationError(f"'{label}' {r.what}", self.b.loc(scope.ctx, e),
                                            hint=r.hint or form_hint(label)) from None
        if isinstance(op, Call) and op.kind in _LOCATED_AT_RUN_TIME:   # its refusals name this call
            loc = self.b.loc(scope.ctx, e)
            op = Call(op.kind, op.params + (("where", gast.Tuple(elts=[gast.Constant(value=v, kind=None) for v in (
                loc.filename, loc.lineno, loc.col)], ctx=gast.Load())),))
        t = self.b.emit(op, xs, e, scope, want, forward=fwd, reads=reads)
        kind = prim.result_of(spelling)
        if kind == "fresh":
            self.b.fresh.add(t)
        elif kind == "view":
            self.b.aliased.update(x for x in xs if isinstance(x, str))
        if isinstance(op, Reduce) and op.full:
            self.b.scalar.add(t)
        return t

    def prim_call(self, prim: Prim, value, e: gast.Call, scope, want=None) -> str | None:
        """A call of a function the table knows, read as its entry's form says; None
        when the call does not have that form (another reading may take it)."""
        label = self.b.label(e.func)
        loc = self.b.loc(scope.ctx, e)
        spelling = getattr(value, "__name__", label)
        if prim.form == "binary" and (prim.statics or prim.keywords is not None or prim.packed):
            return self.operands_call(prim, 2, e, scope, want)
        if prim.form == "binary":
            if len(e.args) < 2 or (not prim.statics and (len(e.args) != 2 or e.keywords)):
                raise refuse_form(label, loc, "takes two arrays here" + ("" if prim.statics else " (no keyword arguments)"))
            xs = [self.b.array(e.args[0], scope), self.b.array(e.args[1], scope)]
            p, reads = self.statics(e.args[2:], e.keywords, prim.statics, scope, e)
            return self.emit_prim(prim, spelling, xs, p, e, scope, want, self.rebuild(e, scope, xs, p), reads)
        if prim.form == "sequence":
            return self.sequence_call(prim, value, e, scope, want)
        if prim.form in FORMS:
            return FORMS[prim.form](self, prim, value, e, scope, want, lambda what: refuse_form(label, loc, what))
        if prim.form == "copy":
            if len(e.args) != 1 or e.keywords:
                return None
            x = self.b.array(e.args[0], scope)
            fwd = gast.Call(func=self.b.rename(e.func, scope, set()), args=[operand_expr(x)], keywords=[])
            return self.emit_prim(prim, spelling, [x], {}, e, scope, want, fwd, set())
        if prim.keywords is not None:
            return self.reduction(prim, e.args[0] if e.args else None, e.args[1:], e.keywords, e, scope, want)
        if not e.args:
            raise refuse_form(label, loc, "needs an array")
        x = self.b.array(e.args[0], scope)
        p, reads = self.statics(e.args[1:], e.keywords, prim.statics, scope, e)
        return self.emit_prim(prim, spelling, [x], p, e, scope, want, self.rebuild(e, scope, [x], p), reads)

    def tuple_item(self, values: list, e: gast.Subscript, scope):
        """values[k] or values[i:j] of a tuple the builder holds, the index a literal."""
        idx, _ = self.b.static(e.slice, scope)
        try:
            key = _literal_index(idx)
            return values[key]
        except (ValueError, IndexError, TypeError):
            raise self.b.err(scope.ctx, e, f"'{self.b.label(e)}': a tuple of values is indexed here by a literal "
                             f"within its {len(values)} items", "Unpack it (a, b = ...) or index it with a literal "
                             "number.", UnsupportedOperationError) from None

    def prim_method(self, prim: Prim, m: str, x, e: gast.Call, scope, want=None) -> str | None:
        """x.<m>(...) for a method the table knows (reductions are read before x)."""
        if prim.form == "binary":       # x.dot(b)
            b = self.b.array(e.args[0], scope)
            fwd = gast.Call(func=gast.Attribute(value=operand_expr(x), attr=m, ctx=gast.Load()), args=[operand_expr(b)], keywords=[])
            return self.emit_prim(prim, m, [x, b], {}, e, scope, want, fwd, set())
        if prim.form == "copy":
            if e.args:
                return None
            return self.emit_prim(prim, m, [x], {}, e, scope, want, self.rebuild_method(e, x, {}), set())
        names = prim.method_statics if prim.method_statics is not None else prim.statics
        p, reads = self.statics(e.args, e.keywords, names, scope, e)
        return self.emit_prim(prim, m, [x], p, e, scope, want, self.rebuild_method(e, x, p), reads)


def _literal_index(e):
    """The int or slice a literal index expression stands for (ValueError otherwise)."""
    if isinstance(e, gast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return -_literal_index(e.operand)
    if isinstance(e, gast.Slice):
        return slice(*(None if v is None else _literal_index(v) for v in (e.lower, e.upper, e.step)))
    raise ValueError("not a literal index")
