"""What a derivative s2sad made refuses at given primals, checked before jvp, vjp or a
Jacobian differentiates it again (higher order): the nested path would otherwise take
what the derivative itself refuses (a map's grad element by element, a list under `**`)
and give a number for a call the first-order derivative never answers.

Invariant: it only raises (the derivative's own located refusal) or returns; it computes
nothing the caller uses, and a derivative that cannot be planned is left to the path
that builds the composition, which refuses it naming its level.
"""
from __future__ import annotations

from . import marks, runtime
from .array_higher import is_array_derivative
from .errors import S2SADError
from .frontend import bound
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
    d = mark.derivative
    if is_array_derivative(mark) or len(primals) != d.arity:
        return      # (an array program's jvp checks it; a call it does not take is refused there)
    with bound(d.fun):
        try:
            c = d.c
        except S2SADError:      # no plan: the composition is refused where it is built, naming its level
            return
        if c.fused and c.plan.reduction not in ("sum", "mean"):
            c.check_scalar_loss(runtime.broadcast_size(*c.kernel_args(primals)))
