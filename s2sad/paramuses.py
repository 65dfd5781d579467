"""Which parameters a function's source needs to have at least one dimension: those it
indexes (`a[1:]`, `a[0]`), takes the length of (`len(a)`), reads a dimension of
(`a.shape[0]`), reads the shape of (`n, d = a.shape`) or loops over (`for r in a:`), on a path every call runs.

A number (a float, a numpy scalar, a 0-d array) given for such a parameter (a Python
float for `a[...]` / `a[()]`) makes the user's own function raise (TypeError, IndexError, AttributeError); s2sad refuses it up
front, at that use, instead of letting the generated code raise the same error from
its insides (arguments.check_args).

A parameter passed on to a helper function (`first(a)`, a plain Python function the
name resolves to, with source) counts where the helper's own body needs it (`needs`,
followed through helpers of helpers, a function met twice not read again): the
refusal is located at the helper's use and names the call.

Invariant: a use counts only where it is certain to run before the parameter could
be rebound: a parameter assigned anywhere in the function is not counted, and only
the top-level statements and the headers of compound statements (a loop's iterable,
an `if`'s or `while`'s test) are read, not bodies, branches of conditional
expressions, short-circuit operands, comprehensions or nested functions. So every
use it reports fails for a number: a refusal here never refuses a call that runs.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

import gast

from .errors import S2SADError, SourceLocation
from .frontend import MISSING, ParsedFunction, Resolver, classify, parse_function
from .marks import derivative_mark, function_name

_UNCERTAIN = (gast.IfExp, gast.BoolOp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
              gast.GeneratorExp, gast.FunctionDef, gast.ClassDef)


def array_uses(node) -> dict[str, tuple[gast.AST, str, int]]:
    """{parameter: (its first use that needs an array, what that use does, the fewest
    dimensions it needs)} for a parsed function or lambda. 0 dimensions: `a[...]` and
    `a[()]`, which a numpy scalar or a 0-d array takes and a Python float does not; 1: the
    rest. A use needing 1 is reported before one needing 0."""
    body = _body(node)
    wanted = _unrebound_params(node)
    found: dict[str, tuple[gast.AST, str, int]] = {}
    for expr in _always_run(body):
        for n in _walk_certain(expr):
            p, what, ndim = _needs_array(n)
            if p in wanted and (p not in found or found[p][2] < ndim):
                found[p] = (n, what, ndim)
    return found


@dataclass(frozen=True)
class Need:
    """A parameter's first use that needs an array: where it is, what it does (through
    which helper calls), the fewest dimensions it needs."""

    where: SourceLocation
    what: str
    ndim: int


_DEPTH = 8      # helpers of helpers read at most this deep


def needs(pf: ParsedFunction, _seen: frozenset = frozenset()) -> dict[str, Need]:
    """`array_uses` of `pf`'s own body, and of the helpers it passes a parameter to on a
    path every call runs (each call's argument bound to the helper's parameter as
    Python binds it): {parameter: Need}."""
    found = {p: Need(pf.location(n), what, ndim) for p, (n, what, ndim) in array_uses(pf.node).items()}
    seen = _seen | {pf.fn.__code__}
    if len(seen) > _DEPTH:
        return found
    wanted = _unrebound_params(pf.node)
    for call, helper in _helper_calls(pf, seen):
        inner = needs(helper, seen)
        for p, q in _passed(call, helper):
            need = inner.get(q)
            if need is not None and p in wanted and (p not in found or found[p].ndim < need.ndim):
                label = function_name(helper.fn)
                found[p] = Need(need.where, f"passes it to {label}() (line {call.lineno}), which {need.what}",
                                need.ndim)
    return found


def _helper_calls(pf: ParsedFunction, seen: frozenset):
    """(call, parsed helper) for each call `h(...)` every call of `pf` makes whose `h` is a
    plain Python function with source, not `pf` itself or one already being read."""
    body = _body(pf.node)
    local = _rebound(body) | {a.id for a in pf.node.args.args if isinstance(a, gast.Name)}
    resolver = Resolver(pf.fn)
    for expr in _always_run(body):
        for n in _walk_certain(expr):
            if not (isinstance(n, gast.Call) and isinstance(n.func, gast.Name)) or n.func.id in local:
                continue
            value = resolver.current(n.func.id)
            if value is MISSING or derivative_mark(value) is not None:
                continue
            helper = classify(value).value if classify(value).kind == "function" else None
            if type(helper) is not types.FunctionType or helper.__code__ in seen:
                continue
            try:
                yield n, parse_function(helper)
            except S2SADError:      # no source: nothing to read
                continue


def _passed(call: gast.Call, helper: ParsedFunction):
    """(parameter of the caller, parameter of the helper it binds) for each argument of
    `call` that is a plain name, as Python binds it (up to a `*` or `**` argument)."""
    code = helper.fn.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    for k, a in enumerate(call.args):
        if isinstance(a, gast.Starred):
            return
        if isinstance(a, gast.Name) and k < code.co_argcount:
            yield a.id, names[k]
    for kw in call.keywords:
        if kw.arg is not None and isinstance(kw.value, gast.Name) and kw.arg in names[code.co_posonlyargcount:]:
            yield kw.value.id, kw.arg


def _body(node) -> list:
    return [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body


def _rebound(body) -> set[str]:
    return {n.id for s in body for n in gast.walk(s) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Del))}


def _unrebound_params(node) -> set[str]:
    """The parameters of a function or lambda that its body never assigns or deletes."""
    return {a.id for a in node.args.args if isinstance(a, gast.Name)} - _rebound(_body(node))


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
    if isinstance(n, gast.Attribute) and n.attr == "shape" and isinstance(n.value, gast.Name):
        return n.value.id, "reads its shape", 0     # (a numpy scalar's shape is (); a float has none)
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
