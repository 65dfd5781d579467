"""What the entry points (grad, value_and_grad, jvp, vjp, broadcast, differentiate,
explain) take: the function s2sad plans for what it is given, and a call's arguments
bound to that function's parameters.

Invariants:
- `target(fun, entry)` never sees through a user's wrapper (`__wrapped__`): it is the
  function itself, an @s2sad.differentiate object's function, a decorator's forwarder
  spelled out (forwarders.py), or a generated caller of a numpy/math callable
  (callables.py). A derivative s2sad made is a generated caller of it (nested.py), which
  the passes differentiate again; a pullback is refused (HigherOrderNotSupportedError).
- `bind(fun, args, kwargs)` gives one value per parameter (positional, then
  keyword-only), defaults filled in, exactly as Python binds a call of `fun`; the plan's
  parameters are these (`entry_function`).
"""
from __future__ import annotations

import copy
import functools
import inspect
import sys
import types
import weakref
from typing import Any, Callable, Sequence

from . import marks
from .callables import as_python_function
from .errors import ArgumentError, NoSourceError, S2SADError
from .frontend import ParsedFunction, forwarded, parse_function
from .nested import caller_of, user_function_of_caller, why_not


def target(fun: Any, entry: str) -> Callable:
    """The function s2sad plans for `fun` given to the entry point `entry` (see the
    module doc). A derivative s2sad made is never read as the function it came from: it
    is its generated caller (nested.caller_of), or refused."""
    mark = marks.derivative_mark(fun)
    if mark is not None:    # differentiated again through a caller of known source (nested.py)
        caller = caller_of(fun)
        if caller is None:
            raise marks.higher_order_error(mark, None, why_not(mark))
        return caller
    inner = marks.user_function_of(fun) or forwarded(fun)
    if inner is not None:
        return inner
    if marks.jacobian_mark(fun) is not None:   # a Jacobian or Hessian s2sad made: one order too many
        raise marks.jacobian_error(fun, None)
    if type(fun) is not types.FunctionType:
        if not callable(fun):
            raise S2SADError(f"s2sad.{entry} needs a function, not a {type(fun).__name__}",
                             hint="Pass a Python function (a def or a lambda).")
        made = as_python_function(fun)
        if made is not None:
            return made
        if isinstance(fun, functools.partial):
            raise NoSourceError(f"s2sad.{entry} of a functools.partial object is not supported",
                                hint="Write the call as a lambda instead: lambda x: f(x, <the bound arguments>).")
        wrapped = getattr(fun, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType):    # functools.lru_cache and the like: not seen through
            raise NoSourceError(
                f"'{getattr(fun, '__name__', type(fun).__name__)}' is a {type(fun).__name__} wrapping "
                f"'{wrapped.__qualname__}', with no Python source s2sad can read",
                marks.location_of_function(wrapped),
                hint="s2sad differentiates the code that runs and does not see through wrappers: if this one "
                     "does not change the value, pass the function itself (its __wrapped__).")
        parse_function(fun)     # no source: NoSourceError, with what to do
    return fun


def arity(fun: Callable) -> int:
    """How many arguments a positional call of `fun` passes when it binds each of its
    parameters (keyword-only ones included); -1 when that is not a fixed number."""
    code = getattr(fun, "__code__", None)
    if code is None or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return -1
    return code.co_argcount + code.co_kwonlyargcount


def positional_count(fun: Callable) -> int:
    """How many arguments a call may pass by position (more: Python refuses the call,
    `bind` says so); sys.maxsize where that is not a fixed number (*args)."""
    code = getattr(fun, "__code__", None)
    if code is None or code.co_flags & inspect.CO_VARARGS:
        return sys.maxsize
    return code.co_argcount


def _bind_quickly(fun: types.FunctionType, args: Sequence[Any], kwargs: dict) -> tuple | None:
    """`bind` for a call Python takes, from the code's names and the function's defaults
    (no inspect.signature: a few hundred ns); None for anything else, which `bind`
    then binds, or refuses with Python's message."""
    code = fun.__code__
    n, nk = code.co_argcount, code.co_kwonlyargcount
    if not kwargs and not nk:
        defaults = fun.__defaults__ or ()
        if n - len(defaults) <= len(args) < n:    # trailing defaults: the common case
            return tuple(args) + defaults[len(args) - n:]
        return None
    names = code.co_varnames[:n + nk]
    if len(args) > n or any(k not in names[code.co_posonlyargcount:] for k in kwargs):
        return None
    values = list(args) + [_UNSET] * (n + nk - len(args))
    for k, v in kwargs.items():
        i = names.index(k)
        if values[i] is not _UNSET:
            return None         # given twice
        values[i] = v
    defaults, kwdefaults = fun.__defaults__ or (), fun.__kwdefaults__ or {}
    for i, v in enumerate(values):
        if v is _UNSET:
            j = i - (n - len(defaults))
            if i < n and j >= 0:
                values[i] = defaults[j]
            elif i >= n and names[i] in kwdefaults:
                values[i] = kwdefaults[names[i]]
            else:
                return None     # missing
    return tuple(values)


_UNSET = object()


def call_error(fun: Callable, args: Sequence[Any], kwargs: dict, fallback: str) -> ArgumentError:
    """The error of a call `fun` would not take: Python's own message (its stub's, see
    `pythons_message`; `fallback`, inspect's, where there is none), at `fun`'s def."""
    name = marks.function_name(fun)
    message = pythons_message(fun, args, kwargs) or f"{name}(): {fallback}"
    return ArgumentError(message, marks.location_of_function(user_function_of_caller(fun) or fun),
                         hint=f"Pass the arguments {name} takes, as a direct call of it would.")


def pythons_message(fun: Callable, args: Sequence[Any], kwargs: dict) -> str | None:
    """What Python says for this call of the plain function `fun` (a stub of its
    signature, called: inspect.Signature.bind names a missing argument where Python
    names an unexpected keyword first); None if the stub takes the call or `fun` is no
    plain function."""
    code = getattr(fun, "__code__", None)
    if type(fun) is not types.FunctionType or code is None:
        return None
    n, nk, npos = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    names = list(code.co_varnames[:n + nk])
    first_default = n - len(fun.__defaults__ or ())
    kwdefaults = fun.__kwdefaults__ or {}
    params = [nm + ("=None" if i >= first_default else "") for i, nm in enumerate(names[:n])]
    if npos:
        params.insert(npos, "/")
    k = n + nk
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + code.co_varnames[k])
        k += 1
    elif nk:
        params.append("*")
    params += [nm + ("=None" if nm in kwdefaults else "") for nm in names[n:]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + code.co_varnames[k])
    space: dict = {}
    exec(f"def s2sad_stub({', '.join(params)}): pass", space)   # (names are identifiers: the code's own)
    try:
        space["s2sad_stub"](*args, **kwargs)
    except TypeError as e:
        text = str(e)
        return marks.function_name(fun) + text[len("s2sad_stub"):] if text.startswith("s2sad_stub") else text
    return None

_SIGNATURES: "weakref.WeakKeyDictionary[Callable, inspect.Signature]" = weakref.WeakKeyDictionary()


def _signature(fun: Callable) -> inspect.Signature | None:
    """`fun`'s own signature (never its __wrapped__'s), made once per function."""
    try:
        sig = _SIGNATURES.get(fun)
    except TypeError:       # not weak-referenceable
        sig = None
    if sig is None:
        try:
            sig = inspect.signature(fun, follow_wrapped=False)
        except (TypeError, ValueError):
            return None
        try:
            _SIGNATURES[fun] = sig
        except TypeError:
            pass
    return sig


def bind(fun: Callable, args: Sequence[Any], kwargs: dict) -> tuple:
    """A call's arguments as one value per parameter of `fun` (positional, then
    keyword-only), in order, defaults filled in: as Python binds them (the plan's
    parameters are these). TypeError, as Python's, for a call `fun` would not take."""
    if type(fun) is types.FunctionType and not fun.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        quick = _bind_quickly(fun, args, kwargs)
        if quick is not None:
            return quick
    sig = _signature(fun)
    if sig is None:
        return tuple(args)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        return tuple(args)      # the plan refuses *args/**kwargs, located
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise call_error(fun, args, kwargs, str(e)) from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def entry_function(pf: ParsedFunction) -> ParsedFunction:
    """The function s2sad differentiates as its passes see it: every parameter a call can
    bind (positional-only, positional, keyword-only, in that order) is a plain parameter;
    defaults are gone, since the entry points bind every argument before a call (`bind`).
    *args and **kwargs stay, for the passes to refuse. The parsed tree is not changed."""
    a = pf.node.args
    if not (a.posonlyargs or a.kwonlyargs or a.defaults or a.kw_defaults):
        return pf
    args = copy.copy(a)
    args.args, args.posonlyargs, args.kwonlyargs = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs), [], []
    args.defaults, args.kw_defaults = [], []
    node = copy.copy(pf.node)
    node.args = args
    return ParsedFunction(pf.fn, node, pf.filename, pf.resolver)
