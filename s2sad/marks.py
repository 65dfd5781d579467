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
  differentiate was expected and s2sad cannot differentiate it again (a pullback, a call
  it cannot take): it names the composition (`describe`) and its order. A derivative of
  a scalar function is differentiated again (nested.py, normcalls.py), one of an array
  program through a "derivative" statement (passes/derivcalls.py).
- The recognisers run no user code: no getattr that could reach a user's __getattr__.
- `is_entry_point(value, role)` recognises s2sad's own entry points (`s2sad.broadcast`)
  where user code calls them, by identity: api registers each with `entry_point` when it
  is imported (before any pass runs), so that the passes need not import api.
"""
from __future__ import annotations

import functools
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

    @property
    def order(self) -> int:
        """1 for grad(f), 2 for grad(grad(f)), ...: how many derivatives deep it is."""
        inner = derivative_mark(self.of)
        return 1 + (inner.order if inner is not None else 0)

    def describe(self) -> str:
        """`s2sad.grad(s2sad.grad(f))`: the composition, named as the user wrote it."""
        inner = derivative_mark(self.of)
        of = inner.describe() if inner is not None else function_name(self.of)
        return f"s2sad.{self.made_by}({of})"

    def innermost(self) -> Callable:
        """The user's function at the bottom of the composition."""
        inner = derivative_mark(self.of)
        return inner.innermost() if inner is not None else self.of


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


JACOBIAN_MARK = "__s2sad_jacobian__"


def mark_jacobian(fn: types.FunctionType, made_by: str, of: Callable):
    """Mark `fn`, a Jacobian or Hessian function s2sad made (higher.py: "jacfwd",
    "jacrev", "hessian"), so that differentiating it, or calling it inside a function
    s2sad differentiates, is refused by `jacobian_error`; returns `fn`."""
    code = fn.__code__
    if id(code) not in _WRAPPER_CODES:
        _WRAPPER_CODES[id(code)] = code
    fn.__dict__[JACOBIAN_MARK] = (made_by, of)
    return fn


def jacobian_mark(value: Any) -> tuple[str, Callable] | None:
    """(the entry point that made it, the function it is of) for a `mark_jacobian` function."""
    if type(value) is not types.FunctionType or _WRAPPER_CODES.get(id(value.__code__)) is not value.__code__:
        return None
    mark = value.__dict__.get(JACOBIAN_MARK)
    return mark if isinstance(mark, tuple) else None


def jacobian_error(value: Callable, used_at: SourceLocation | None) -> HigherOrderNotSupportedError:
    """The refusal of a Jacobian or Hessian function s2sad made, differentiated (used_at
    None: located at the user's function) or called inside a function s2sad
    differentiates (located at the call): the derivative asked for is one order above
    it, which s2sad does not take through these objects."""
    made_by, of = jacobian_mark(value)
    inner = derivative_mark(of)
    order = 2 if made_by == "hessian" else 1 + (inner.order if inner is not None else 0)
    named = f"s2sad.{made_by}({inner.describe() if inner is not None else function_name(of)})"
    base = inner.innermost() if inner is not None else of
    how = "called inside a function s2sad differentiates" if used_at is not None else "differentiated"
    return HigherOrderNotSupportedError(
        f"this function is {named}, a derivative of order {order} made by s2sad, {how}: that asks for a "
        f"derivative of order {order + 1}, which s2sad does not take through a "
        f"{'Hessian' if made_by == 'hessian' else 'Jacobian'} object", used_at or location_of_function(base),
        hint=f"Compute it outside the differentiated function and pass its value in as data "
             f"(M = {named}(x); then differentiate a loss of x and M, in which M is a constant)"
             + (f"; for a second derivative of {function_name(base)}, ask for it directly: s2sad.hessian, "
                "s2sad.jacfwd(s2sad.grad(...)) or a loss calling a grad by name (g = s2sad.grad(...))." if order == 1 else
                "; third derivatives are not computed: write the second derivative as a Python function of "
                "your own and differentiate that."))


def location_of_function(fn: Any) -> SourceLocation | None:
    """Where a Python function's `def` (or lambda) starts, a bound method's or a
    partial's function's included; None for anything else."""
    while isinstance(fn, (types.MethodType, functools.partial)):
        fn = fn.__func__ if isinstance(fn, types.MethodType) else fn.func
    if type(fn) is not types.FunctionType:
        return None
    return SourceLocation(fn.__code__.co_filename, fn.__code__.co_firstlineno, 0)


def function_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


# the file names of the Python callers s2sad generates for derivatives (nested.py): an
# error located there is located at the user's function instead
GENERATED_CALLER_PREFIX = "<s2sad: derivative "


def higher_order_error(mark: DerivativeMark, used_at: SourceLocation | None,
                       why: str = "") -> HigherOrderNotSupportedError:
    """The refusal of a derivative s2sad made, met where a function to differentiate was
    expected: located where it is used, else at the user's function it is the derivative
    of; `why` says what this composition lacks (by default: a pullback, or a kind of
    program whose derivatives s2sad cannot differentiate again yet)."""
    if used_at is not None and used_at.filename.startswith(GENERATED_CALLER_PREFIX):
        used_at = None
    where = used_at or location_of_function(mark.innermost())
    if not why and mark.derivative is None:
        why = "a pullback has no program s2sad can differentiate again"
    why = why or (f"differentiating it again (a derivative of order {mark.order + 1}, a higher-order derivative) "
                  "is supported for derivatives of scalar functions of numbers (nested duals) and of array "
                  "programs called by name inside another (reverse over reverse), and this is neither")
    return HigherOrderNotSupportedError(
        f"this function is {mark.describe()}, a derivative made by s2sad; {why}", where,
        hint="Higher-order derivatives are compiled for scalar functions of numbers (grad(grad(f)), "
             "broadcast(grad(f), x)) and for array programs (hessian, jvp(grad(f)), a loss calling g = grad(f) "
             "by name); otherwise write the derivative by hand as a Python function and differentiate that, or "
             "register its derivative with s2sad.defrule or s2sad.defvjp.")


_ENTRY_POINTS: dict[str, Callable] = {}   # role -> the function of api that plays it


def entry_point(role: str) -> Callable[[Callable], Callable]:
    """Decorator: the function is s2sad's entry point for `role` (e.g. "broadcast")."""
    def register(fn: Callable) -> Callable:
        _ENTRY_POINTS[role] = fn
        return fn
    return register


def entry_point_function(role: str) -> Callable | None:
    """The function registered for `role`, called by the passes that meet it written in
    user code (`s2sad.grad(f)` inside a loss)."""
    return _ENTRY_POINTS.get(role)


def is_entry_point(value: Any, role: str) -> bool:
    """Whether `value` is the function registered for `role` (identity, no user code run)."""
    fn = _ENTRY_POINTS.get(role)
    return fn is not None and value is fn


class HoldsUserFunction:
    """Base of s2sad's objects that stand for a user's function (Differentiable): the
    function in `__wrapped_fun__` is what s2sad differentiates."""

    __wrapped_fun__: Callable


class HoldsBoundMethod:
    """Base of s2sad's objects that stand for a user's bound method (a method decorated
    with @s2sad.differentiate, read from its instance): `bound_method` is that method,
    what s2sad differentiates (callables.bound_call), never the object's own __call__."""

    bound_method: Callable


def user_function_of(value: Any) -> Callable | None:
    if isinstance(value, HoldsUserFunction):
        return value.__dict__.get("__wrapped_fun__")
    return None
