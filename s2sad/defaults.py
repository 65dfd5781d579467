"""A called function's parameters bound as Python binds them: positional arguments,
keywords, then the function's defaults, for the passes that inline or call user
functions (passes/arrayprog.py, passes/normalize.py).

Invariants:
- A default is the value Python computed when the `def` ran (`__defaults__`,
  `__kwdefaults__`), never its source text evaluated again: `def f(x, num=num)` uses
  the `num` of that moment even after the global `num` changes or is deleted.
- `DefaultValues(fn).lookup(name)` reads the default now (at call time), so an array
  default is data read where the generated code runs, as a free array is.
"""
from __future__ import annotations

import types
from typing import Any, Callable

MISSING = object()


def default_values(fn: types.FunctionType) -> dict[str, Any]:
    """Parameter name -> its default value, for the parameters that have one."""
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    out = dict(zip(positional[len(positional) - len(defaults):], defaults))
    out.update(fn.__kwdefaults__ or {})
    return out


class DefaultValues:
    """A resolver-like reader of one function's defaults (see the module doc)."""

    def __init__(self, fn: types.FunctionType):
        self.fn = fn

    def lookup(self, name: str) -> Any:
        return default_values(self.fn).get(name, MISSING)


def bind_call(fn: types.FunctionType, n_positional: int, keywords: list[str],
              error: Callable[[str], Exception]) -> tuple[list[str], dict[str, Any]]:
    """How a call `fn(<n_positional args>, <keywords>)` binds `fn`'s parameters:
    (the parameter each positional argument binds, in order; {parameter: default value}
    for the parameters that take their default). `error(message)` makes the located
    error for a call Python would refuse."""
    code = fn.__code__
    positional = list(code.co_varnames[:code.co_argcount])
    kwonly = list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    posonly = set(positional[:code.co_posonlyargcount])
    name = fn.__qualname__
    if n_positional > len(positional):
        raise error(f"'{name}' takes {len(positional)} positional argument(s), {n_positional} given")
    taken = positional[:n_positional]
    for k in keywords:
        if k not in positional + kwonly or k in posonly:
            raise error(f"'{name}' has no parameter '{k}' that a keyword can set")
        if k in taken:
            raise error(f"'{name}' got several values for the parameter '{k}'")
        taken.append(k)
    defaults = default_values(fn)
    filled = {}
    for p in positional + kwonly:
        if p not in taken:
            if p not in defaults:
                raise error(f"'{name}' is missing the argument '{p}'")
            filled[p] = defaults[p]
    return taken[:n_positional], filled
