"""Callables with no Python source given to s2sad directly (`grad(np.sin)`,
`grad(math.sin)`, `vjp(np.tanh, x)`, `grad(np.sum)`, a C function with a
s2sad.defrule rule) -> a small generated Python function that calls them, so that the
one pipeline (source -> plan) differentiates them as it would a call in user code.

Invariants:
- `as_python_function(f)` is None unless `f` is a primitive with a rule (math, numpy
  ufuncs, builtins), a function with a user rule, or a function of numpy's namespace
  (np.sum, np.dot...); anything else keeps going to parse_function, which says there
  is no source (NoSourceError, with the defrule hint).
- The generated source is registered with linecache under `<s2sad: call of NAME>`, so
  errors located in it quote it; it calls `f` by the spelling numpy's and math's
  users write (np.sin, math.sin), which resolves to `f` itself.
- One function per callable, made once: these are module-level objects (or registered
  with a rule), so keeping them costs nothing and plans are reused.
- `bound_call(f)` reads a bound method, an object with `__call__` or a
  functools.partial as a function and its bound arguments (data); it keeps nothing.
"""
from __future__ import annotations

import functools
import inspect
import linecache
import math
import types
from typing import Any, Callable

import numpy as np

from . import marks, rules
from .errors import StaleSourceError
from .locks import ForkSafeLock

_MADE: dict[Any, Callable] = {}
_LOCK = ForkSafeLock()


def as_python_function(f: Any) -> Callable | None:
    """A Python function of known source computing `f`, or None (see the module doc)."""
    try:
        made = _MADE.get(f)
    except TypeError:   # unhashable: not a module-level callable
        return None
    if made is not None:
        return made
    spelled = _spelling(f)
    if spelled is None:
        return None
    callee, params, namespace = spelled
    with _LOCK:
        made = _MADE.get(f)
        if made is None:
            made = _MADE[f] = _generate(f, callee, params, namespace)
    return made


def _spelling(f: Any) -> tuple[str, tuple[str, ...], dict] | None:
    """(how the generated code calls f, its parameters, the names it needs) or None."""
    name = getattr(f, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        return None
    user = rules.user_rule(f)
    if user is not None:
        return "fn", tuple(user.params), {"fn": f}
    prim = rules.python_callables().get(f)
    for module, label in ((np, "np"), (math, "math")):
        if getattr(module, name, None) is f:
            if prim is not None:
                return f"{label}.{name}", rules.RULES[prim].params, {label: module}
            params = _required_positional(f) if module is np else None
            return (f"{label}.{name}", params, {label: module}) if params else None
    if prim is not None:   # a builtin (abs, min, max...)
        return "fn", rules.RULES[prim].params, {"fn": f}
    return None


def _required_positional(f: Any) -> tuple[str, ...] | None:
    """The parameters of a numpy function that a call must pass (np.sum: a)."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return tuple(p.name for p in params) or None


def _generate(f: Any, callee: str, params: tuple[str, ...], namespace: dict) -> Callable:
    label = callee if callee != "fn" else f.__name__
    filename = f"<s2sad: call of {label}>"
    fname = f.__name__ if f.__name__ not in namespace else f"{f.__name__}_"
    text = f"def {fname}({', '.join(params)}):\n    return {callee}({', '.join(params)})\n"
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)   # mtime None: never checked on disk
    env = dict(namespace)
    exec(compile(text, filename, "exec"), env)
    fn = env[fname]
    fn.__qualname__ = label
    return fn


class BoundCall:
    """A callable that is a function with leading arguments or keywords bound: a bound
    method (its instance first), an object with `__call__` (the object first), a
    functools.partial. `fn` is what is differentiated (its own target); `args` and
    `kwargs` are data, read at each call: a partial's `kwargs` is its own `keywords`
    dict (Python's partial reads it at each call, so a keyword set after the derivative
    was made is the one used). `obj`: the object whose class's `__call__` is `fn` (None
    for other callables); Python looks `__call__` up at each call, so `check_current`
    refuses a derivative whose object's class no longer calls `fn`."""

    __slots__ = ("fn", "args", "kwargs", "obj")

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, obj: Any = None):
        self.fn, self.args, self.kwargs, self.obj = fn, args, kwargs, obj

    def check_current(self) -> None:
        """Raise a located StaleSourceError where the object's class's `__call__` is no
        longer the function this derivative differentiates (rebound on the class, or the
        object's `__class__` changed)."""
        if self.obj is None:
            return
        now = getattr(type(self.obj), "__call__", None)
        if now is self.fn:
            return
        name, made = type(self.obj).__qualname__, marks.location_of_function(self.fn)
        raise StaleSourceError(
            f"{name}.__call__ is not the function this derivative of a {type(self.obj).__name__} object was made "
            f"of (the __call__ at {made}): calling the object now runs another function",
            marks.location_of_function(now) or made,
            hint="Make the derivative again after changing the class's __call__ (s2sad.grad(obj)); a derivative "
                 "differentiates the __call__ the object's class had when it was made.")


def bound_call(f: Any) -> BoundCall | None:
    """`f` as a function with bound arguments, or None when it is not such a callable
    (a plain function, a numpy or math callable, an s2sad object, a C callable)."""
    if isinstance(f, marks.HoldsBoundMethod):
        f = f.bound_method
    if isinstance(f, types.MethodType):
        inner = bound_call(f.__func__)
        if inner is None:
            return BoundCall(f.__func__, (f.__self__,), {})
        return BoundCall(inner.fn, inner.args + (f.__self__,), inner.kwargs)
    if isinstance(f, functools.partial):
        inner = bound_call(f.func)
        if inner is None:
            return BoundCall(f.func, tuple(f.args), f.keywords)
        kwargs = {**inner.kwargs, **f.keywords} if inner.kwargs else f.keywords
        return BoundCall(inner.fn, inner.args + tuple(f.args), kwargs, inner.obj)
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and not isinstance(f, (types.FunctionType, type)) \
            and not isinstance(f, marks.HoldsUserFunction):
        return BoundCall(call, (f,), {}, f)
    return None
