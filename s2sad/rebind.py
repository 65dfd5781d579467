"""A derivative of a bound callable, differentiated again: the grad (or value_and_grad)
of a bound method, an object with `__call__` or a functools.partial given to jvp, vjp,
grad, jacfwd, jacrev (and hessian / hvp of the bound callable itself).

Such a derivative is, by construction, the same derivative of the plain function
(`callables.BoundCall.fn`) called with the bound arguments first, as data. The entry
points differentiate that one: `remember` keeps, on the derivative s2sad returned, the
bound call and how to build the derivative of the plain function (argnums shifted past
the bound arguments); `unbound` builds it once, on first use. Without this, the
second-order paths bound the user's arguments to the plain function without the
instance and answered "missing 1 required positional argument" for a call that
passed it.

Invariants: the derivative built is of the plain function, so it keeps no instance
alive (only the wrapper that already holds the bound call does, as grad's own does);
the user's arguments follow the bound ones, so their positions and argnums shift by the
number of bound positional arguments; a bound argument gets a zero tangent and its
adjoint is dropped.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Sequence

import numpy as np

from . import marks
from .callables import BoundCall
from .errors import ArgumentError
from .targets import bind

UNBOUND = "__s2sad_unbound__"


def remember(wrapper: types.FunctionType, call: BoundCall, build: Callable[[], Callable]) -> None:
    """Keep on `wrapper` (a derivative of `call`) how to make the same derivative of call.fn."""
    wrapper.__dict__[UNBOUND] = [call, build, None]


def unbound(fun: Any) -> tuple[Callable, BoundCall] | None:
    """(the derivative of the plain function, the bound call) for a derivative `remember`
    marked, else None."""
    if type(fun) is not types.FunctionType:
        return None
    entry = fun.__dict__.get(UNBOUND)
    if entry is None:
        return None
    call, build, made = entry
    call.check_current()
    if made is None:
        made = entry[2] = build()
    return made, call


def as_call(fun: Any) -> BoundCall | None:
    """A derivative `remember` marked as a BoundCall of the plain function's derivative."""
    u = unbound(fun)
    if u is None:
        return None
    made, call = u
    return BoundCall(made, call.args, call.kwargs)


def shifted(argnums, k: int):
    """argnums counted after k bound positional arguments (negative ones count from the end)."""
    if isinstance(argnums, (tuple, list)):
        return type(argnums)(i + k if isinstance(i, int) and i >= 0 else i for i in argnums)
    return argnums + k if isinstance(argnums, int) and argnums >= 0 else argnums


def check_not_bound(call: BoundCall, argnums) -> None:
    """argnums (already shifted) must not select a parameter the partial binds by keyword:
    bound arguments are data (README), and JAX refuses argnums past the positional
    arguments given. Without this, grad(partial(f, w=W))(x=X) differentiated w."""
    if not call.kwargs:
        return
    code = getattr(call.fn, "__code__", None)
    if code is None:
        return
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    for i in (argnums if isinstance(argnums, (tuple, list)) else (argnums,)):
        if not isinstance(i, int) or not -len(names) <= i < len(names):
            continue    # (an argnums out of range: refused where it is checked)
        name = names[i]
        if name in call.kwargs:
            fn = marks.function_name(call.fn)
            raise ArgumentError(
                f"argnums {i - len(call.args) if i >= 0 else i} selects '{name}' of {fn}, which the "
                f"functools.partial binds by keyword: a partial's bound arguments are data, not differentiated",
                marks.location_of_function(call.fn),
                hint=f"Pass argnums of a parameter the call gives (counted after the partial's positional "
                     f"arguments), or leave '{name}' out of the partial and pass it to the call to "
                     f"differentiate it.")


def full_primals(call: BoundCall, primals: Sequence[Any]) -> tuple:
    """The bound arguments, then the user's, then keywords and defaults: one value per
    parameter of call.fn, as Python binds them."""
    return bind(call.fn, tuple(call.args) + tuple(primals), call.kwargs)


def full_tangents(call: BoundCall, full: tuple, tangents: Sequence[Any]) -> tuple:
    """The user's tangents at the user's positions (after the bound arguments), zeros of
    the value's kind at every other position."""
    k, n = len(call.args), len(tangents)
    return tuple(tangents[i - k] if k <= i < k + n else _zero_like(v) for i, v in enumerate(full))


def _zero_like(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.zeros_like(value)
    return 0.0
