"""A call of a derivative s2sad made of an array program, as one array primitive.

`g = s2sad.grad(f)` (or `value_and_grad`) called inside another function planned at
the array level (`np.sum(g(W, X) ** 2)`, a loss of `jacrev(g)`...) is one statement:

- forward: g's own call (its compiled gradient program);
- VJP: for g = grad_a f at x with seed v (the adjoint of g's output), the adjoint of
  operand i is d/dx_i <v, grad_a f(x)> = H_ia v = d/de grad_i f(x + e v e_a) at e = 0:
  one forward-over-reverse sweep of f (passes/hvp_sweep.py), its tangents v on the
  argnums operands and 0 on the others, reading the tangents of every active operand's
  gradient. value_and_grad's value seed w adds w * grad_i f (the same sweep gives it).
  Exact, compiled, no tape of g's adjoint;
- JVP: g's output tangent sum_j H_aj t_j, the same sweep along the operands' tangents.

Both are one call for all the operands (`vjps`, `jvps`: one sweep, not one per
operand). The functions they call run in the plan layer (array_higher.py), which
this table cannot import: the builder binds them by value in the generated code's
namespace; g is a free name read at each call (the op's fields name them). g's output is a tuple for a
tuple of argnums and for value_and_grad: one `item` statement per entry (`outputs`),
whose adjoints reach the VJP as a linalg_base.Parts (None: no adjoint).

Forward over reverse through it (a third derivative) has no `second`: refused, located
(hvp_reverse's SECOND_ORDER does not list it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .ops import PrimOp
from .prim import Prim, pieces


@dataclass(frozen=True)
class DerivativeCall(PrimOp):
    """`fn`: the free name of the derivative called; `vjp`, `jvp`: the bound names of the plan layer's
    derivative_vjp / derivative_jvp; `count`: how many values it returns (a gast
    constant, None for one array). Every field is a gast Name or Constant."""
    fn: Any = None
    vjp: Any = None
    jvp: Any = None
    count: Any = None
    STATIC = ("fn", "vjp", "jvp", "count")

    @property
    def name(self) -> str:
        return "derivative"


def derivative_call(fn=None, vjp=None, jvp=None, count=None, **_) -> DerivativeCall:
    return DerivativeCall(fn, vjp, jvp, count)


def _vjps(active, g, args, out, p) -> str:
    """One call: the adjoints of the operands at positions `active`, a tuple in that order."""
    return f"{p['vjp']}({p['fn']}, {tuple(active)!r}, {g}, {pieces(args)})"


def _jvps(dots, args, out, p) -> str:
    """The output's tangent from every operand's tangent (None: a constant operand)."""
    return f"{p['jvp']}({p['fn']}, {pieces(args)}, {pieces([d or 'None' for d in dots])})"


def _vjp(i, g, args, out, p) -> str:
    return f"{_vjps((i,), g, args, out, p)}[0]"


def _jvp(i, t, args, out, p) -> str:
    return _jvps([t if j == i else None for j in range(len(args))], args, out, p)


def _outputs(p: dict) -> int | None:
    count = p.get("count")
    return None if count is None else int(count.value)


PRIMS = [
    Prim("derivative", derivative_call, _vjp, form="syntax", result="plain",
         forward=lambda args, p: f"{p['fn']}({', '.join(args)})", jvp=_jvp, vjps=_vjps, jvps=_jvps,
         outputs=_outputs),
]
