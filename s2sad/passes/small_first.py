"""First derivatives of an unrolled program (passes/unroll_small.py) with an array
result: forward mode with sparse gradients, in the same graph (small_second.py's
first-order half: the same partials, no Hessian terms).

Each node u = f(a[, b]) that depends on the active inputs carries its gradient (a dict
active index -> node): g_u = f_a g_a + f_b g_b. An entry absent is a structural zero
(no term is made for it), so a map whose elements read two inputs each has a banded
Jacobian of O(n) nodes.

    first_order(unrolled, active) -> [gradient dict of each result element, C order]

`active`: the parameters differentiated, in order; index i is the i-th element of their
elements laid end to end (each C order). Past MAX_NODES the graph raises NotSmall.
"""
from __future__ import annotations

from .small_second import forward_sweep, partials
from .unroll_small import Unrolled


def first_order(u: Unrolled, active: tuple[int, ...]) -> list[dict]:
    g = u.graph

    def step(k: int, name: str, args: tuple, const, grads: dict) -> None:
        first, _ = partials(g, name, [g.nodes[a] for a in args], g.nodes[k], const)
        gk: dict = {}
        for f, a in zip(first, args):
            if f is None:
                continue
            for i, d in grads.get(a, {}).items():
                term = g.op("mul", f, d)
                gk[i] = g.op("add", gk[i], term) if i in gk else term
        if gk:
            grads[k] = gk
    grads = forward_sweep(u, active, {r.id for r in u.results}, step)
    return [grads.get(r.id, {}) for r in u.results]
