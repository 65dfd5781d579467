"""A decorator's forwarding wrapper, spelled out: `def wrapper(*args, **kwargs):
return 10 * fn(*args, **kwargs)` -> the same wrapper with `fn`'s parameters,
`def wrapper(x, k=<fn's default>): return 10 * fn(x, k=k)`, made as a real function
(generated source, registered with linecache) that shares the wrapper's globals and
closure cells. s2sad then differentiates the wrapper as written, with a signature
its passes and entry points can bind.

Invariants:
- `expand(fn, node, lookup, expand_nested)` is None unless every use of the wrapper's *args and
  **kwargs is exactly a call's `*args` / `**kwargs` (nothing else in that call) of one
  and the same callee name, the wrapper has no other parameters, the callee (read as
  Python reads it now: `lookup`) is a Python function with a fixed signature, and its
  parameter names are not otherwise used in the wrapper. Anything else stays as it is
  (the passes refuse *args, located).
- The generated function's code is compiled from the generated source (what s2sad
  reads is what runs); its defaults are the callee's default values, not source text.
"""
from __future__ import annotations

import ast
import itertools
import linecache
import types
from typing import Any, Callable

import gast

from .marks import derivative_mark, user_function_of

_COUNTER = itertools.count(1)


def expand(fn: types.FunctionType, node, lookup: Callable[[str], Any],
           expand_nested: Callable) -> tuple[str, Any, types.FunctionType] | None:
    """(the callee's name, the callee, the spelled-out wrapper), or None (see the module doc)."""
    a = node.args
    if a.args or a.posonlyargs or a.kwonlyargs or not (a.vararg or a.kwarg):
        return None
    va = a.vararg.id if a.vararg else None
    kw = a.kwarg.id if a.kwarg else None
    found = _forwarding_calls(node, va, kw)
    if found is None:
        return None
    node, calls = found
    callee_names = {c.func.id for c in calls if isinstance(c.func, gast.Name)}
    if len(callee_names) != 1 or len(calls) != sum(isinstance(c.func, gast.Name) for c in calls):
        return None
    callee_name = callee_names.pop()
    callee_value = lookup(callee_name)
    callee = _plain_function(callee_value, expand_nested)
    if callee is None:
        return None
    code = callee.__code__
    positional = list(code.co_varnames[:code.co_argcount])
    kwonly = list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    if (va is None and positional) or (kw is None and kwonly):
        return None     # fn(*args) of a function with keyword-only parameters: not a plain forward
    used = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)} - {va, kw}
    if used & set(positional + kwonly):
        return None
    for c in calls:
        c.args = [gast.Name(id=p, ctx=gast.Load(), annotation=None, type_comment=None) for p in positional]
        c.keywords = [gast.keyword(arg=k, value=gast.Name(id=k, ctx=gast.Load(), annotation=None,
                                                          type_comment=None)) for k in kwonly]
    out = _compile(fn, node, positional, kwonly, callee)
    return None if out is None else (callee_name, callee_value, out)


def _forwarding_calls(node, va: str | None, kw: str | None) -> tuple | None:
    """(a copy of the tree, its calls that forward *args/**kwargs), or None when they
    are used any other way or not at all."""
    node = _copy(node)
    calls, forwarded = [], set()
    for n in gast.walk(node):
        if not isinstance(n, gast.Call):
            continue
        stars = [x for x in n.args if isinstance(x, gast.Starred)]
        splats = [k for k in n.keywords if k.arg is None]
        if not stars and not splats:
            continue
        want_args = [] if va is None else [va]
        want_kw = [] if kw is None else [kw]
        if [getattr(x.value, "id", None) for x in n.args if isinstance(x, gast.Starred)] != want_args or \
                len(n.args) != len(want_args) or [getattr(k.value, "id", None) for k in n.keywords] != want_kw \
                or len(splats) != len(n.keywords):
            return None
        calls.append(n)
        forwarded |= {id(x.value) for x in stars} | {id(k.value) for k in splats}
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in (va, kw) and id(n) not in forwarded and \
                not isinstance(n.ctx, gast.Param):
            return None
    return (node, calls) if calls else None


def _copy(node):
    return gast.ast_to_gast(gast.gast_to_ast(node))


def _plain_function(value: Any, expand_nested: Callable) -> types.FunctionType | None:
    """The function whose signature the wrapper takes: the callee, an @differentiate's
    function, a nested forwarder spelled out, or the function a derivative s2sad made
    is of (same signature; the derivative is refused where it is called)."""
    mark = derivative_mark(value)
    value = mark.of if mark is not None else (user_function_of(value) or expand_nested(value) or value)
    if type(value) is not types.FunctionType:
        return None
    if value.__code__.co_flags & (0x04 | 0x08):    # CO_VARARGS | CO_VARKEYWORDS
        return None
    return value


def _compile(fn: types.FunctionType, node, positional, kwonly, callee) -> types.FunctionType | None:
    """The spelled-out wrapper as a function sharing `fn`'s globals and closure cells."""
    params = [gast.Name(id=p, ctx=gast.Param(), annotation=None, type_comment=None) for p in positional]
    kwparams = [gast.Name(id=p, ctx=gast.Param(), annotation=None, type_comment=None) for p in kwonly]
    node.args = gast.arguments(args=params, posonlyargs=[], vararg=None, kwonlyargs=kwparams,
                               kw_defaults=[None] * len(kwonly), kwarg=None, defaults=[])
    name = fn.__code__.co_name if fn.__code__.co_name.isidentifier() else "wrapper"
    if isinstance(node, gast.Lambda):
        node = gast.FunctionDef(name=name, args=node.args, body=[gast.Return(value=node.body)], decorator_list=[],
                                returns=None, type_comment=None, type_params=[])
    else:
        node.name, node.decorator_list, node.returns = name, [], None
    freevars = list(fn.__code__.co_freevars)
    outer = gast.FunctionDef(name="s2sad_outer", args=gast.arguments(
        args=[gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in freevars],
        posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, gast.Return(value=gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.gast_to_ast(gast.Module(body=[outer], type_ignores=[]))
    text = ast.unparse(ast.fix_missing_locations(module)) + "\n"
    filename = f"<s2sad: {fn.__qualname__} forwarding to {callee.__qualname__} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        outer_code = compile(text, filename, "exec").co_consts[0]
    except SyntaxError:
        return None
    code = next(c for c in outer_code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[v] for v in code.co_freevars)
    out = types.FunctionType(code, fn.__globals__, fn.__name__, callee.__defaults__, closure or None)
    out.__kwdefaults__ = dict(callee.__kwdefaults__) if callee.__kwdefaults__ else None
    out.__qualname__ = fn.__qualname__
    return out
