"""Derivatives of derivatives: a derivative s2sad made, given to an entry point, as a
function of known source that the one pipeline plans like any other.

`grad(grad(f))` plans `caller_of(grad(f))`, a generated

    def grad_of_f(x, y):
        return derivative(x, y)

whose `derivative` is grad(f) itself. The normalizer meets that call (normcalls.py,
`derivative_helper`) and puts in its place the derivative's own program: f's forward
dual, selecting the partial. Planning the caller again for a derivative (its dual) gives
nested duals: value, first and second partials in one kernel, to any depth.

Invariants:
- `caller_of(fn)` is None unless `fn` is a grad or value_and_grad s2sad made (a pullback
  has no program to take again) whose output is one number, or `item` picks one; the
  caller has the parameters of the function differentiated (positional, its
  defaults), so binding a call works as for it.
- The caller's source is registered with linecache under a name starting with
  `marks.GENERATED_CALLER_PREFIX`; errors located there are located at the user's
  function instead (marks.higher_order_error).
- One caller per derivative object (and item), held by that object only, so that it
  keeps nothing alive longer than the derivative; a plan found by the caller's code
  re-checks (Assumptions) that `derivative` is the same object.
"""
from __future__ import annotations

import inspect
import linecache
import types
from typing import Any, Callable

from . import marks
from .locks import ForkSafeLock

# the callers of a derivative, on the derivative itself (item -> caller): they live and
# die with it (a cycle through the caller's globals, which the collector frees)
_CALLERS = "__s2sad_callers__"
_LOCK = ForkSafeLock()


def is_taken_again(mark: marks.DerivativeMark) -> bool:
    """Whether s2sad can differentiate this derivative again (a grad or value_and_grad
    with its Derivative; whether its function is scalar code is found when it is planned)."""
    return mark.made_by in ("grad", "value_and_grad") and mark.derivative is not None \
        and type(mark.derivative.fun) is types.FunctionType


def gives_a_tuple(mark: marks.DerivativeMark) -> bool:
    """Whether the derivative's output is a tuple (value_and_grad; grad with a tuple of
    argnums), which an entry point cannot differentiate whole: one item at a time."""
    d = mark.derivative
    return mark.made_by == "value_and_grad" or (d is not None and isinstance(d.argnums_spec, (tuple, list)))


def why_not(mark: marks.DerivativeMark) -> str:
    """Why `caller_of` has no caller for this derivative (the refusal's reason)."""
    if not is_taken_again(mark):
        return "a pullback has no program s2sad can differentiate again"
    return (f"its output is a tuple, which s2sad differentiates one item at a time "
            f"(a derivative of order {mark.order + 1} of one item: lambda x: d(x)[1], or s2sad.hessian)")


def caller_of(fn: Any, item: tuple[int, ...] = ()) -> types.FunctionType | None:
    """The generated caller of the derivative `fn` (see the module doc), of the `item`
    of its output when given (`(1,)`: `fn(x)[1]`); None when there is none (`why_not`)."""
    mark = marks.derivative_mark(fn)
    if mark is None or not is_taken_again(mark) or (gives_a_tuple(mark) and not item):
        return None
    made = _callers(fn).get(item)
    if made is None:
        with _LOCK:
            made = _callers(fn).get(item)
            if made is None:
                made = _callers(fn)[item] = _generate(fn, mark, item)
    return made


def _callers(fn: types.FunctionType) -> dict:
    """fn's own table of callers: a table copied onto it with its __dict__ (grad's
    wrapper copies its function's, functools.wraps a user's) is another function's."""
    table = fn.__dict__.get(_CALLERS)
    if table is None or table.get("owner") is not fn:
        table = fn.__dict__[_CALLERS] = {"owner": fn}
    return table


def parameters_of(fun: types.FunctionType) -> tuple[str, ...] | None:
    """The names a call of `fun` binds, in the order the plan takes them; None when it
    takes *args or **kwargs."""
    code = fun.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _generate(fn: Callable, mark: marks.DerivativeMark, item: tuple[int, ...]) -> types.FunctionType:
    inner = mark.derivative.fun
    params = parameters_of(inner)
    if params is None:
        params = ("x",)     # refused where it is planned, as the function it stands for
    base = inner.__name__ if inner.__name__.isidentifier() else "fn"
    fname = f"{mark.made_by}_of_{base}" + "".join(f"_{k}" for k in item)
    callee = "derivative" if "derivative" not in params else "derivative_"
    picked = "".join(f"[{k}]" for k in item)
    label = mark.describe() + picked
    filename = f"{marks.GENERATED_CALLER_PREFIX}{label}>"
    text = f"def {fname}({', '.join(params)}):\n    return {callee}({', '.join(params)}){picked}\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)  # never checked on disk
    env: dict[str, Any] = {callee: fn}
    exec(compile(text, filename, "exec"), env)
    made = env[fname]
    if not inner.__code__.co_kwonlyargcount:
        made.__defaults__ = inner.__defaults__     # a call binds its defaults as the function's would
    made.__qualname__ = label
    return made


def user_function_of_caller(fn: Any) -> Callable | None:
    """The user's function under a caller `_generate` made (through every derivative
    level), None for any other function: an error about a call of the caller is the
    user's call of their derivative, located at their function."""
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_filename.startswith(marks.GENERATED_CALLER_PREFIX):
        return None
    callee = fn.__globals__.get("derivative", fn.__globals__.get("derivative_"))
    mark = marks.derivative_mark(callee)
    return mark.innermost() if mark is not None else None


def explain_levels(mark: marks.DerivativeMark) -> list[str]:
    """For explain: the path each level of a composition takes, outermost first."""
    lines = [f"  higher order: {mark.describe()}, a derivative of order {mark.order}, one kernel with nested duals"]
    m, level = mark, mark.order
    while m is not None:
        d = m.derivative
        nums = d.argnums_spec if d is not None else "-"
        if level == mark.order:
            path = ("the kernel's dual (forward mode: one partial per element), summed by the generated "
                    f"{m.made_by}")
        else:
            path = ("a helper of that kernel: the forward dual of the level below selecting its partial, "
                    "dualized again by every level above (f__dual__dual)")
        lines.append(f"    level {level}: {m.describe()} (argnums {nums}): {path}")
        m, level = marks.derivative_mark(m.of), level - 1
    lines.append(f"    level 0: {marks.function_name(mark.innermost())}: the scalar function itself, normalized once")
    return lines
