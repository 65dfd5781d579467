"""What a differentiated function returns, read for one layout (passes/containers.py):
for has_aux, the loss out of `return loss, aux`; for a function returning a container
literal, one leaf of it (`returned`); the expression a one-line helper returns, its
parameters replaced by a call's arguments (`inlined_return`); and the constant keys
(`const_key`).

Invariant: a return this cannot read as asked is a located UnsupportedSyntaxError that
says how to write it, never a guess.
"""
from __future__ import annotations

from typing import Any

import copy

import gast

from ..errors import UnsupportedSyntaxError
from ..frontend import location_of

LEAF = "leaf"
STATIC = "static"     # a string leaf: (STATIC, (value,), ())


def const_key(e) -> tuple[bool, Any]:
    """(True, value) for a constant key or position (a constant, -k, a tuple of them)."""
    if isinstance(e, gast.Constant):
        return True, e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) and isinstance(e.operand, gast.Constant) \
            and isinstance(e.operand.value, int):
        return True, -e.operand.value
    if isinstance(e, gast.Tuple) and all(const_key(x)[0] for x in e.elts):
        return True, tuple(const_key(x)[1] for x in e.elts)
    return False, None


def own_returns(fnode) -> list:
    """The function's own return statements (not those of functions defined inside)."""
    out, todo = [], list(fnode.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Return):
            out.append(n)
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        todo.extend(gast.iter_child_nodes(n))
    return out


# ------------------------------------------------------------------ what is returned

def returned(pf, value, at, layout):
    """The expression a return gives the planned function: the loss of (loss, aux)
    with has_aux, the leaf layout.out of a returned literal (layout: containers.Layout)."""
    if layout.aux:
        if not (isinstance(value, gast.Tuple) and len(value.elts) == 2):
            raise UnsupportedSyntaxError(
                "with has_aux=True the function returns (loss, aux); this return is not a pair written out",
                location_of(pf.filename, at), hint="Return the pair as written: return loss, aux.")
        value = value.elts[0]
    if layout.out is not None:
        exprs = literal_leaves(pf, value, layout.out_skeleton)
        value = exprs[layout.out]
    return value


def literal_leaves(pf, e, skel) -> list:
    """The leaf expressions of a returned literal container, in flatten order."""
    kind, meta, children = skel
    if kind in (LEAF, STATIC):
        return [e]
    if kind == "none" and isinstance(e, gast.Constant) and e.value is None:
        return []
    if kind in ("tuple", "list") and isinstance(e, (gast.Tuple, gast.List)) and len(e.elts) == len(children):
        return [x for c, el in zip(children, e.elts) for x in literal_leaves(pf, el, c)]
    if kind == "dict" and isinstance(e, gast.Dict) and all(k is not None and const_key(k)[0] for k in e.keys):
        by_key = {const_key(k)[1]: v for k, v in zip(e.keys, e.values)}
        if set(by_key) == set(meta) and len(by_key) == len(e.keys):
            return [x for k, c in zip(meta, children) for x in literal_leaves(pf, by_key[k], c)]
    raise UnsupportedSyntaxError(
        f"this function returns a {kind}, and s2sad differentiates a returned container one leaf at a time "
        "from its literal; this return is not written as one",
        location_of(pf.filename, e),
        hint="Return the container as a literal of the values (return a, b or return {'a': a, 'b': b}).")


def returns_container(node, aux: bool) -> bool:
    """Whether the function's returns are written as container literals (of the loss, with aux)."""
    values = [node.body] if isinstance(node, gast.Lambda) else [r.value for r in own_returns(node)]
    for v in values:
        if aux and isinstance(v, gast.Tuple) and len(v.elts) == 2:
            v = v.elts[0]
        if isinstance(v, (gast.Tuple, gast.List, gast.Dict)):
            return True
    return False


_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp, gast.NamedExpr)


def inlined_return(fnode, args: list, keywords: list, caller_names: set):
    """The expression `return <e>`, a helper's only statement (after a docstring),
    with its parameters replaced by a call's arguments; None where that would not mean
    what the call does: a parameter left to its default, a name of its own the caller
    also binds, a scope inside e (a lambda, a comprehension), or an argument that is not
    a name or a constant read more than once (it would be computed twice)."""
    body = [st for st in fnode.body if not (isinstance(st, gast.Expr) and isinstance(st.value, gast.Constant))]
    if len(body) != 1 or not isinstance(body[0], gast.Return) or body[0].value is None:
        return None
    params = [a.id for a in fnode.args.args]
    bound = dict(zip(params, args))
    for kw in keywords:
        if kw.arg is None:
            return None
        bound[kw.arg] = kw.value
    if len(args) > len(params) or set(bound) != set(params):
        return None
    e = body[0].value
    loads = [n for n in gast.walk(e) if isinstance(n, gast.Name)]
    if any(isinstance(n, _SCOPES) for n in gast.walk(e)) or \
            any(n.id not in bound and n.id in caller_names for n in loads):
        return None
    for p, a in bound.items():
        if not isinstance(a, (gast.Name, gast.Constant)) and sum(n.id == p for n in loads) > 1:
            return None

    class Substitute(gast.NodeTransformer):
        def visit_Name(self, n):
            return copy.deepcopy(bound[n.id]) if n.id in bound and isinstance(n.ctx, gast.Load) else n
    return Substitute().visit(copy.deepcopy(e))
