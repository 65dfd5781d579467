"""explain of the Jacobian and Hessian wrappers (higher.py): `s2sad.explain(hessian(f),
x)`, `explain(jacfwd(f), x)`, `explain(jacrev(f), x)` call the wrapper on the example
arguments and say which path each level took on them, as the wrapper recorded it
(`wrapper.took`, one line per level, outermost first):
- "diagonal": an elementwise map, its Jacobian's diagonal from one gradient (jacdiag);
- "batched sweep": every column from one sweep of tangents with a leading batch axis
  (batched_jac), or every row from one pullback of batched cotangents (batched_rows),
  with its chunks (sweeps x directions, by batched_jac.BUDGET);
- "unrolled": a small fixed-shape program unrolled into straight-line scalars, its
  second derivatives (hessian, jacfwd/jacrev of a grad) or first (jacfwd/jacrev of the
  program) by sparse forward mode, one call into machine code (small_hessian,
  small_jacobian); where hessian's was not taken, its batched or per-column line says why not;
- "per column" / "per row": one jvp per input element or one pullback per output
  element, and why not batched (the statement with no batched form, or the reason);
- for the derivative below (the grad that hessian and jacfwd(grad(f)) differentiate):
  nested duals (a fused kernel's derivative dualized again) or forward over reverse of
  its adjoint program.
Then each wrapper's table of paths (higher_paths, `wrapper.paths`) in the order its
last call tried them: the ones before the path that answered declined (with the path's
`why_not` where it has one), the ones after it were not tried.
The path depends on the arguments (a number or an empty array is not batched), hence
the example arguments. Nothing here changes what a wrapper computes.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import marks
from .api import Explanation
from .batched_jac import BUDGET, Blocks
from .batched_rows import Rows
from .higher_paths import answered

FUSED = "not an array program"      # how batched_jac / batched_rows say "one fused kernel"


def explanation(wrapper: Callable, args: tuple) -> Explanation:
    """Call `wrapper` on `args` (none: its last call) and say which path each level took."""
    if args:
        wrapper(*args)
    name = f"s2sad.{wrapper.kind}({_describe(wrapper.of)})"     # (the whole composition: jacfwd(grad(f)))
    at = f" at ({', '.join(_arg(a) for a in args)})" if args else " (its last call)"
    lines = [f"s2sad.explain: {name}{at}"]
    levels = levels_of(wrapper, args)
    lines += [f"  level {len(levels) - k}: {t}" for k, t in enumerate(levels)]
    lines.append(f"  level 0: {marks.function_name(_innermost(wrapper.of))} "
                 f"(s2sad.explain of it shows its own plan)")
    lines += path_lines(wrapper)
    below = wrapper.took[1] if len(wrapper.took) > 1 else None     # (hessian's jacfwd of its grad)
    if below is not None:
        lines += path_lines(below)
    return Explanation(name, lines)


def path_lines(wrapper: Callable) -> list[str]:
    """The wrapper's paths in the order its last call tried them: the ones that declined
    (and why, where the path says), the one that answered, the ones not tried."""
    at = answered(wrapper)
    if at is None:
        return []
    lines = [f"  paths of s2sad.{wrapper.kind}({_describe(wrapper.of)}), in order:"]
    for k, path in enumerate(wrapper.paths):
        if k < at:
            why = path.why_not
            state = f"declined: {why}" if why else "declined"
        else:
            state = "answered" if k == at else "not tried"
        lines.append(f"    {k + 1}. {path.step or path.name}: {state}")
    return lines


def levels_of(wrapper: Callable, args: tuple) -> list[str]:
    """The path of `wrapper`'s last call, then of the levels below it, outermost first."""
    took, batched, of = wrapper.took, wrapper.batched, wrapper.of
    what = f"s2sad.{wrapper.kind}({_describe(of)})"
    if not took:
        return [f"{what}: not called yet (pass example arguments: explain(wrapper, *args))"]
    if wrapper.kind == "hessian":
        what = f"{what} = jacfwd of s2sad.grad({_describe(of)})"
        if took[0] == "unrolled":
            return [f"{what}: unrolled: the program for these shapes as straight-line scalars, its second "
                    f"derivatives by sparse forward mode, one call into machine code (small_hessian)"]
        unrolled = f"; not unrolled: {wrapper.small.why_not}" if wrapper.small.why_not else ""
        if took[0] == "batched":
            return [_batched(what, batched) + unrolled, f"s2sad.grad({_describe(of)}): {FOR}"]
        inner = took[1] if len(took) > 1 else None
        return [f"{what}, not batched: {batched.why_not}{unrolled}"] + \
            (levels_of(inner, args) if inner is not None else [])
    if took[0] == "unrolled":
        return [f"{what}: unrolled: the program for these shapes as straight-line scalars, its "
                f"{_order(wrapper)} derivatives by sparse forward mode, one call into machine code "
                f"({'small_hessian' if _order(wrapper) == 'second' else 'small_jacobian'})"]
    if took[0] == "diagonal":
        return [f"{what}: diagonal: an elementwise map of the argument, its Jacobian's diagonal from one "
                f"gradient of the map's sum (jacdiag), zeros elsewhere"] + _below(of, ELEMENTWISE)
    if took[0] == "batched":
        return [_batched(what, batched)] + _below(of, FOR)
    why = batched.why_not or "no batched form"
    if wrapper.kind == "jacrev":
        return [f"{what}: per row: one pullback per output element, not batched: {why}"] + \
            _below(of, NESTED if why.startswith(FUSED) else REVERSE)
    n = sum(int(np.size(args[i])) for i in _nums(wrapper.argnums) if -len(args) <= i < len(args)) if args else "?"
    return [f"{what}: per column: one jvp per input element ({n}), not batched: {why}"] + \
        _below(of, NESTED if why.startswith(FUSED) else FOR_EACH)


def _order(wrapper: Callable) -> str:
    """Which derivatives the unrolled plan of a jacfwd/jacrev wrapper computes: second
    for one of a grad (hessian's plan), first otherwise."""
    return "second" if marks.derivative_mark(wrapper.of) is not None else "first"


# what the level above makes of the grad below it
FOR = "its adjoint program differentiated in forward mode with batched tangents (forward over reverse)"
FOR_EACH = "each jvp is forward over reverse of its adjoint program (one hvp sweep each)"
REVERSE = "each pullback is reverse over reverse of its adjoint program"
NESTED = ("each derivative differentiates its fused kernel again: nested duals (value, first and second "
          "partials) in one kernel pass")
ELEMENTWISE = ("an elementwise map (a fused kernel's derivative): the level above differentiates its sum once "
               "more, nested duals in one kernel pass")


def _batched(what: str, batched: Blocks | Rows) -> str:
    sweeps, k = batched.chunks
    if isinstance(batched, Rows):
        how = ("every row from one pullback of batched cotangents (the identity, a leading batch axis on every "
               "adjoint; batched_rows)")
        unit = "row"
    else:
        how = "every column from one sweep whose tangents carry a leading batch axis (the identity; batched_jac)"
        unit = "column"
    return (f"{what}: batched sweep: {how}, {sweeps} sweep{'s' if sweeps != 1 else ''} of {k} "
            f"{unit}{'s' if k != 1 else ''} (chunks of at most {BUDGET} elements)")


def _below(fun: Callable, how: str) -> list[str]:
    """The line for the derivative a wrapper differentiates (none for a plain function)."""
    mark = marks.derivative_mark(fun)
    if mark is None:
        return []
    return [f"{mark.describe()}: {how}"]


def _describe(fun: Callable) -> str:
    mark = marks.derivative_mark(fun)
    return mark.describe() if mark is not None else marks.function_name(fun)


def _innermost(fun: Callable) -> Callable:
    mark = marks.derivative_mark(fun)
    return mark.innermost() if mark is not None else fun


def _nums(argnums) -> tuple:
    return tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)


def _arg(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"{a.dtype} {a.shape}"
    return type(a).__name__
