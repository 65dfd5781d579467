"""What a derivative s2sad made refuses at given primals, checked before jvp, vjp or a
Jacobian differentiates it again (higher order): the nested path would otherwise take
what the derivative itself refuses (a map's grad element by element, a list under `**`)
and give a number for a call the first-order derivative never answers.

Invariant: it only raises (the derivative's own located refusal) or returns; it computes
nothing the caller uses, and a derivative that cannot be planned is left to the path
that builds the composition, which refuses it naming its level. `FirstOrderCheck` (one
per Jacobian wrapper) remembers, per plan, that the plan needs no check (an array
program, or one fused kernel whose sum is the loss): a warm call then tests only that
the plan still serves (its code, the plans' generation, its assumptions), as the hot
paths do, instead of looking the plan up twice.
"""
from __future__ import annotations

from typing import Any

from . import marks, runtime
from .array_higher import is_array_derivative
from .errors import S2SADError
from .frontend import bound
from .plans import PLANS, compiled
from .targets import bind
from .treecalls import has_nodes, tree_calls


def first_order_checked(mark: marks.DerivativeMark, primals: tuple) -> None:
    """What the derivative `mark` (grad or value_and_grad of f) refuses at these primals,
    refused before jvp or vjp differentiates it again: a container it does not take (it
    is called once: a list under `**`), or f's output not a scalar (f a map of numbers,
    whose derivative the nested path would take element by element: the grad refuses)."""
    if has_nodes(primals):
        mark_fun = mark.derivative
        with bound(mark_fun.fun):
            tree_calls(mark_fun)(bind(mark_fun.fun, primals, {}))
        return
    _checked_planned(mark, primals)


def _checked_planned(mark: marks.DerivativeMark, primals: tuple) -> Any:
    """first_order_checked for primals with no containers; -> the plan, where the plan
    alone says nothing is checked for any primals (else None)."""
    d = mark.derivative
    if is_array_derivative(mark):
        return _plain_plan(d)       # (an array program's jvp checks it)
    if len(primals) != d.arity:
        return None     # (a call it does not take is refused there)
    with bound(d.fun):
        try:
            c = d.c
        except S2SADError:      # no plan: the composition is refused where it is built, naming its level
            return None
        if c.fused and c.plan.reduction not in ("sum", "mean"):
            c.check_scalar_loss(*c.kernel_args(primals))
            return None
    return c if d.layout is None and hasattr(d.fun, "__code__") else None


def _plain_plan(d) -> Any:
    """The plan `d` runs when it is the plain one (no containers' layout), else None."""
    if d.layout is not None or not hasattr(d.fun, "__code__"):
        return None
    with bound(d.fun):
        return compiled(d.fun)


class FirstOrderCheck:
    """first_order_checked(mark, primals) as `check(primals)`, for one mark, the plan
    that needs no check remembered (see the module doc)."""

    def __init__(self, mark: marks.DerivativeMark):
        self.mark = mark
        self.quiet: tuple | None = None     # (code, generation, assumptions' hold) of that plan

    def __call__(self, primals: tuple) -> None:
        q = self.quiet
        if q is not None and not has_nodes(primals):
            fun = self.mark.derivative.fun
            if fun.__code__ is q[0] and PLANS.generation == q[1] and q[2](fun):
                return
        if has_nodes(primals):
            first_order_checked(self.mark, primals)
            return
        c = _checked_planned(self.mark, primals)
        self.quiet = None if c is None else (c.assumptions.code, PLANS.generation, c.assumptions.hold)
