"""Calls of array primitives over several operands, a mixin of PrimCalls
(passes/primcalls.py): joins of a sequence (np.concatenate, np.stack, np.array of a
literal list or of a local list's items), calls of n arrays then static parameters
(solve_triangular(a, b, lower=True), cho_solve's (c, lower) pair), and the items of a
tuple-valued primitive (`w, V = eigh(A)`). Needs PrimCalls' `b` (the builder),
`statics` and `emit_prim`.
"""
from __future__ import annotations

import copy

import gast

from .. import array_prims
from ..array_prims import Linalg, Prim
from ..errors import UnsupportedOperationError
from .arrayir import operand_expr
from .arrayscope import LocalFn
from .primhints import refuse_form


class OperandCalls:
    def sequence_call(self, prim: Prim, value, e: gast.Call, scope, want=None) -> str | None:
        """np.concatenate([a, b], axis), np.stack(...), and np.array([a, b]) (a spelling
        in `literal_funcs`: one literal list, nothing else; not a join otherwise)."""
        label = self.b.label(e.func)
        literal = any(value is f for f in prim.literal_funcs)
        self.check_keywords(prim, e.keywords, e, scope)
        seq = e.args[0] if e.args else None
        stacked = self.b.stmts.stacks.join(prim, value, e, scope, want)    # a list grown at run time
        if stacked is not None:
            return stacked
        if isinstance(seq, (gast.Name, gast.ListComp, gast.GeneratorExp)):     # a local list: its items
            items = self.b.stmts.lists.expr(seq, scope) if not isinstance(seq, gast.Name) \
                else self.b.stmts.lists.sequence(seq, scope)
            if isinstance(items, list):
                seq = gast.copy_location(gast.List(elts=[], ctx=gast.Load()), seq)
                return self.sequence_items(prim, value, e, seq, items, literal, label, scope, want)
        if not isinstance(seq, (gast.List, gast.Tuple)):
            if literal:
                return None
            raise refuse_form(label, self.b.loc(scope.ctx, e), "needs a literal list of arrays here, "
                               "[a, b, ...], to be differentiated")
        xs = [self.b.array(x, scope) for x in seq.elts]
        return self.sequence_items(prim, value, e, seq, xs, literal, label, scope, want)

    def sequence_items(self, prim: Prim, value, e: gast.Call, seq, xs: list, literal: bool, label: str, scope, want):
        """The join of operands `xs` (the items of `seq`)."""
        if any(isinstance(x, list) for x in xs):
            raise refuse_form(label, self.b.loc(scope.ctx, e), "takes a list of arrays or numbers here")
        if literal:
            if len(e.args) > 1 or e.keywords:
                raise refuse_form(label, self.b.loc(scope.ctx, e), "takes one list of values here")
            p, reads = {}, set()
        else:
            p, reads = self.statics(e.args[1:], e.keywords, prim.statics, scope, e)
        seq2 = type(seq)(elts=[operand_expr(x) for x in xs], ctx=gast.Load())
        fwd = gast.Call(func=self.b.rename(e.func, scope, set()), args=[seq2],
                        keywords=[gast.keyword(arg=k, value=v) for k, v in p.items()])
        return self.emit_prim(prim, getattr(value, "__name__", label), xs, p, e, scope, want, fwd, reads)

    def check_keywords(self, prim: Prim, keywords, e, scope) -> None:
        """Refuse a keyword the entry does not take (`prim.keywords`; None: any)."""
        if prim.keywords is None:
            return
        for k in keywords:
            if k.arg not in prim.keywords:
                known = ", ".join(f"{n}=" for n in prim.keywords) or "none"
                raise refuse_form(self.b.label(e.func), self.b.loc(scope.ctx, e), f"is called with '{k.arg}=', "
                                  f"which s2sad does not differentiate (keywords taken: {known})")

    def operands_call(self, prim: Prim, n: int, e: gast.Call, scope, want=None) -> str:
        """A call of `n` arrays, then static parameters (solve_triangular(a, b, lower=True));
        an operand in `prim.packed` is a literal pair or a tuple-valued result (cho_solve's
        (c, lower)), both of whose values are operands."""
        label = self.b.label(e.func)
        if len(e.args) < n:
            raise refuse_form(label, self.b.loc(scope.ctx, e), f"takes its {n} arrays by position here")
        self.check_keywords(prim, e.keywords, e, scope)
        xs, written = [], []
        for k, a in enumerate(e.args[:n]):
            v = self.b.expr(a, scope)
            if k in prim.packed:
                if not isinstance(v, list) or len(v) != 2:
                    raise refuse_form(label, self.b.loc(scope.ctx, a), "needs its pair written out, (c, lower), or "
                                      "the pair a call returned, here")
                xs += v
                written.append(gast.Tuple(elts=[operand_expr(x) for x in v], ctx=gast.Load()))
                continue
            if isinstance(v, (list, LocalFn)):
                raise self.b.err(scope.ctx, a, "expected an array or a number here", "Pass an array.",
                                 UnsupportedOperationError)
            xs.append(v)
            written.append(operand_expr(v))
        p, reads = self.statics(e.args[n:], e.keywords, prim.statics, scope, e)
        kwnames = {k.arg for k in e.keywords}
        pos = [k for k in prim.statics[:len(e.args) - n]]
        fwd = gast.Call(func=self.b.rename(e.func, scope, set()), args=written + [p[k] for k in pos],
                        keywords=[gast.keyword(arg=k, value=v) for k, v in p.items() if k in kwnames])
        return self.emit_prim(prim, getattr(e.func, "attr", label), xs, p, e, scope, want, fwd, reads)

    def unpacked(self, prim: Prim, t: str, e, scope):
        """A tuple-valued primitive's statement `t`: one `item` statement per output, their
        list for the builder (None from `outputs`: one array, `t` itself)."""
        st = self.b.out[-1]
        count = prim.outputs(st.params)
        if isinstance(count, str):
            raise UnsupportedOperationError(
                f"'{self.b.label(e.func)}' {count}", self.b.loc(scope.ctx, e),
                hint="s2sad must know when it reads the call how many values it returns: write that parameter as a "
                     "literal (np.split(x, 3), np.split(x, [2, 5]), compute_uv=False, mode='r').")
        if count is None:
            return t
        if isinstance(st.op, Linalg):     # a refusal while its derivative runs names this line
            loc = self.b.loc(scope.ctx, e)
            st.op = st.op.located(gast.Tuple(elts=[gast.Constant(value=v, kind=None) for v in
                                                   (loc.filename, loc.lineno, loc.col)], ctx=gast.Load()))
        spelling = "piece" if prim.result == "view" else "item"
        names = [None] * count
        if self.b.unpacking is not None and self.b.unpacking[0] is e and len(self.b.unpacking[1]) == count:
            names = self.b.unpacking[1]      # `w, V = eigh(A)`: the items are named w and V
        items = []
        for k in range(count):
            index = gast.Constant(value=k, kind=None)
            fwd = gast.Subscript(value=operand_expr(t), slice=copy.deepcopy(index), ctx=gast.Load())
            items.append(self.emit_prim(array_prims.PRIMS["item"], spelling, [t], {"index": index}, e, scope,
                                        names[k], fwd, set()))
        return items
