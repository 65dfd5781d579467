"""The functions s2sad itself made, recognised by s2sad's own marks, never by
`__wrapped__` or `__module__` (functools.wraps copies those onto any user's decorator).

Invariants:
- `derivative_mark(value)` is the `DerivativeMark` of a function s2sad returned as a
  derivative (grad, value_and_grad, a vjp pullback), else None. Only a function whose
  code is one of s2sad's own wrapper codes counts: a user's function that copied a
  derivative's `__dict__` (functools.wraps(grad_f)) is the user's code, differentiated
  as written.
- `user_function_of(value)` is the user's function inside an object s2sad made with
  @s2sad.differentiate (an instance of `HoldsUserFunction`), else None.
- `higher_order_error` is the one refusal of a derivative met where a function to
  differentiate was expected (parse_function, the entry points).
- The recognisers run no user code: no getattr that could reach a user's __getattr__.
- `is_entry_point(value, role)` recognises s2sad's own entry points (`s2sad.broadcast`)
  where user code calls them, by identity: api registers each with `entry_point` when it
  is imported (before any pass runs), so that the passes need not import api.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from .errors import HigherOrderNotSupportedError, SourceLocation

DERIVATIVE_MARK = "__s2sad_derivative__"

_WRAPPER_CODES: dict[int, types.CodeType] = {}   # id -> the code object (kept, so ids stay unique)


class DerivativeMark:
    """What s2sad put on a derivative it returned: which entry point made it, of what.
    (A plain class with slots, not a frozen dataclass: a training loop that makes a new
    grad object per step pays for its construction, 0.45 us frozen.)"""

    __slots__ = ("made_by", "of", "derivative")

    def __init__(self, made_by: str, of: Callable, derivative: Any = None) -> None:
        self.made_by = made_by        # "grad", "value_and_grad", "vjp"
        self.of = of                  # the function it is the derivative of (the user's, as given)
        self.derivative = derivative  # derivative.Derivative, where there is one


def mark_derivative(fn: types.FunctionType, made_by: str, of: Callable, derivative: Any = None):
    """Mark `fn`, a function s2sad made, as a derivative; returns `fn`."""
    code = fn.__code__
    if id(code) not in _WRAPPER_CODES:
        _WRAPPER_CODES[id(code)] = code
    fn.__dict__[DERIVATIVE_MARK] = DerivativeMark(made_by, of, derivative)
    return fn


def derivative_mark(value: Any) -> DerivativeMark | None:
    if type(value) is not types.FunctionType or _WRAPPER_CODES.get(id(value.__code__)) is not value.__code__:
        return None
    mark = value.__dict__.get(DERIVATIVE_MARK)
    return mark if isinstance(mark, DerivativeMark) else None


def location_of_function(fn: Any) -> SourceLocation | None:
    """Where a Python function's `def` (or lambda) starts; None for anything else."""
    if type(fn) is not types.FunctionType:
        return None
    return SourceLocation(fn.__code__.co_filename, fn.__code__.co_firstlineno, 0)


def higher_order_error(mark: DerivativeMark, used_at: SourceLocation | None) -> HigherOrderNotSupportedError:
    """The refusal of a derivative s2sad made, met where a function to differentiate was
    expected: located where it is used, else at the function it is the derivative of."""
    of = mark.of
    of_name = getattr(of, "__qualname__", None) or getattr(of, "__name__", None) or repr(of)
    where = used_at or location_of_function(of)
    return HigherOrderNotSupportedError(
        f"this function is s2sad.{mark.made_by}({of_name}), a derivative made by s2sad; differentiating "
        "it again (a higher-order derivative) is not supported yet", where,
        hint="Until higher-order derivatives land, write the derivative by hand as a Python function "
             "and differentiate that, or register its derivative with s2sad.defrule.")


_ENTRY_POINTS: dict[str, Callable] = {}   # role -> the function of api that plays it


def entry_point(role: str) -> Callable[[Callable], Callable]:
    """Decorator: the function is s2sad's entry point for `role` (e.g. "broadcast")."""
    def register(fn: Callable) -> Callable:
        _ENTRY_POINTS[role] = fn
        return fn
    return register


def is_entry_point(value: Any, role: str) -> bool:
    """Whether `value` is the function registered for `role` (identity, no user code run)."""
    fn = _ENTRY_POINTS.get(role)
    return fn is not None and value is fn


class HoldsUserFunction:
    """Base of s2sad's objects that stand for a user's function (Differentiable): the
    function in `__wrapped_fun__` is what s2sad differentiates."""

    __wrapped_fun__: Callable


def user_function_of(value: Any) -> Callable | None:
    if isinstance(value, HoldsUserFunction):
        return value.__dict__.get("__wrapped_fun__")
    return None
