"""Which parameters a function's source needs to have at least one dimension: those it
indexes (`a[1:]`, `a[0]`), takes the length of (`len(a)`), reads a dimension of
(`a.shape[0]`) or loops over (`for r in a:`), on a path every call runs.

A number (a float, a numpy scalar, a 0-d array) given for such a parameter (a Python
float for `a[...]` / `a[()]`) makes the user's own function raise (TypeError, IndexError, AttributeError); s2sad refuses it up
front, at that use, instead of letting the generated code raise the same error from
its insides (arguments.check_args).

Invariant: a use counts only where it is certain to run before the parameter could
be rebound: a parameter assigned anywhere in the function is not counted, and only
the top-level statements and the headers of compound statements (a loop's iterable,
an `if`'s or `while`'s test) are read, not bodies, branches of conditional
expressions, short-circuit operands, comprehensions or nested functions. So every
use it reports fails for a number: a refusal here never refuses a call that runs.
"""
from __future__ import annotations

import gast

_UNCERTAIN = (gast.IfExp, gast.BoolOp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
              gast.GeneratorExp, gast.FunctionDef, gast.ClassDef)


def array_uses(node) -> dict[str, tuple[gast.AST, str, int]]:
    """{parameter: (its first use that needs an array, what that use does, the fewest
    dimensions it needs)} for a parsed function or lambda. 0 dimensions: `a[...]` and
    `a[()]`, which a numpy scalar or a 0-d array takes and a Python float does not; 1: the
    rest. A use needing 1 is reported before one needing 0."""
    params = [a.id for a in node.args.args if isinstance(a, gast.Name)]
    body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
    rebound = {n.id for s in body for n in gast.walk(s) if isinstance(n, gast.Name)
               and isinstance(n.ctx, (gast.Store, gast.Del))}
    wanted = set(params) - rebound
    found: dict[str, tuple[gast.AST, str, int]] = {}
    for expr in _always_run(body):
        for n in _walk_certain(expr):
            p, what, ndim = _needs_array(n)
            if p in wanted and (p not in found or found[p][2] < ndim):
                found[p] = (n, what, ndim)
    return found


def _always_run(body):
    """The expressions of `body` that every call evaluates (see the module docstring)."""
    for s in body:
        if isinstance(s, (gast.For, gast.AsyncFor)):
            yield s.iter
            if isinstance(s.iter, gast.Name):
                yield gast.For(target=s.target, iter=s.iter, body=[], orelse=[], type_comment=None)   # the loop's header
        elif isinstance(s, (gast.If, gast.While)):
            yield s.test
        elif isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Return, gast.Expr)):
            if getattr(s, "value", None) is not None:
                yield s.value
        else:       # with, try, match...: stop reading (what follows may not run)
            return
        if isinstance(s, (gast.Return, gast.If, gast.While, gast.For, gast.AsyncFor)):
            return  # an early return or a loop's break may end the call: the rest is uncertain


def _walk_certain(e):
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, _UNCERTAIN):
            continue
        yield n
        stack.extend(gast.iter_child_nodes(n))


def _needs_array(n) -> tuple[str | None, str, int]:
    """(the parameter `n` needs to be an array, what `n` does with it, the fewest
    dimensions it needs), or (None, "", 0)."""
    if isinstance(n, gast.Subscript):
        v = n.value
        if isinstance(v, gast.Attribute) and v.attr == "shape" and isinstance(v.value, gast.Name):
            return v.value.id, "reads a dimension of it", 1    # a.shape[k]: () has no item k
        if isinstance(v, gast.Name):
            return v.id, "indexes it", 0 if _whole(n.slice) else 1
    if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == "len" \
            and len(n.args) == 1 and isinstance(n.args[0], gast.Name) and not n.keywords:
        return n.args[0].id, "takes its length", 1
    if isinstance(n, gast.For) and isinstance(n.iter, gast.Name):
        return n.iter.id, "loops over it", 1
    return None, "", 0


def _whole(index) -> bool:
    """`a[...]` and `a[()]`: defined for a numpy scalar and a 0-d array too."""
    return (isinstance(index, gast.Constant) and index.value is Ellipsis) or \
        (isinstance(index, gast.Tuple) and not index.elts)
