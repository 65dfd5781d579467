"""The gradient of an unrolled program's scalar result (passes/unroll_small.py) by
reverse mode, in the same graph: the first-order program grad runs for small fixed
shapes (small_grad.py).

Each node the loss reads and that depends on an active input gets an adjoint node
(bar_u = d loss / d u); sweeping the nodes in reverse creation order (a reverse
topological order), bar_a += f_a * bar_u for each operand a of u = f(a[, b]), with the
partials f_a of small_second.partials (the same slopes the Hessian uses). An adjoint
never made is a structural zero. Reverse mode costs O(nodes) whatever the number of
inputs, where the forward sweep (small_first.py) costs O(nodes x inputs read).

    gradient(unrolled, active) -> [node id of d loss / d x_i, or None for a zero]

`active`: the parameters differentiated, in order; index i is the i-th element of their
elements laid end to end (each C order). Past MAX_NODES the graph raises NotSmall.
"""
from __future__ import annotations

from .small_second import active_offsets, partials
from .unroll_small import Unrolled, needed_nodes


def gradient(u: Unrolled, active: tuple[int, ...]) -> list:
    g = u.graph
    offsets, at = active_offsets(u, active)
    order = sorted(needed_nodes(g.ops, [u.loss.id]))
    live = _depends(g.ops, order, offsets)
    bars = {u.loss.id: g.const(1.0)} if u.loss.id in live else {}
    out: list = [None] * at
    for k in reversed(order):
        bar = bars.pop(k, None)
        if bar is None:
            continue
        name, args, const = g.ops[k]
        if name == "input":
            p, off = const
            out[offsets[p] + off] = bar.id
            continue
        first, _ = partials(g, name, [g.nodes[a] for a in args], g.nodes[k], const)
        for f, a in zip(first, args):
            if f is None or a not in live:
                continue
            term = g.op("mul", bar, f)
            bars[a] = g.op("add", bars[a], term) if a in bars else term
    return out


def _depends(ops: list, order: list[int], offsets: dict) -> set[int]:
    """The nodes of `order` (a topological order) that depend on an active input."""
    live: set[int] = set()
    for k in order:
        name, args, const = ops[k]
        if name == "input":
            if const[0] in offsets:
                live.add(k)
        elif any(a in live for a in args):
            live.add(k)
    return live
