"""Second derivatives of an unrolled program (passes/unroll_small.py): forward mode
with sparse gradients and Hessians, in the same graph.

Each node u = f(a[, b]) that depends on the active inputs carries its gradient (a dict
active index -> node) and the upper triangle of its Hessian (a dict (i, j), i <= j ->
node), from its operands' by the chain rule of second order:

    g_u = f_a g_a + f_b g_b
    H_u = f_a H_a + f_b H_b + f_aa g_a g_a' + f_ab (g_a g_b' + g_b g_a') + f_bb g_b g_b'

with the partials f_a ... f_bb of `partials` as nodes. An entry absent is a structural
zero (the function does not depend on it), as JAX's symbolic zeros: no term is made for
it, so a sum of n terms that each read two elements gives a banded Hessian in O(n)
nodes. The graph's folding makes f_a = 1 (an addition's) cost nothing.

    second_order(unrolled, active) -> (gradient: dict, hessian: dict)

`active`: the parameters differentiated, in order; index i of the gradient is the i-th
element of their elements laid end to end (each C order). Where the graph would pass
MAX_NODES the pass raises NotSmall (the caller takes its general path).
"""
from __future__ import annotations

import math
from typing import Callable

from .unroll_small import Graph, Node, Unrolled, needed_nodes

CMP = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})
LN2 = 0.6931471805599453
LN10 = 2.302585092994046


def active_offsets(u: Unrolled, active: tuple[int, ...]) -> tuple[dict, int]:
    """({parameter: index of its first element}, element count) of the active
    parameters' elements laid end to end, each C order."""
    offsets, at = {}, 0
    for p in active:
        offsets[p] = at
        at += math.prod(u.kinds[p] or ())
    return offsets, at


def second_order(u: Unrolled, active: tuple[int, ...]) -> tuple[dict, dict]:
    g = u.graph
    hess: dict[int, dict] = {}
    grads = forward_sweep(u, active, {u.loss.id},
                          lambda k, name, args, const, grads: _chain(g, k, name, args, const, grads, hess))
    return grads.get(u.loss.id, {}), hess.get(u.loss.id, {})


def forward_sweep(u: Unrolled, active: tuple[int, ...], roots: set[int], step: Callable) -> dict[int, dict]:
    """The sparse forward sweep both orders run: over the nodes `roots` depend on, in
    order, each active input's element seeded with its index (the active parameters'
    elements laid end to end, each C order) and `step(k, name, args, const, grads)`
    called for every other node reading a node with a gradient (it sets grads[k]).
    Returns the gradient dicts (node -> {index: node}); absent entries are zeros."""
    g = u.graph
    offsets, _ = active_offsets(u, active)
    grads: dict[int, dict] = {}
    for k in sorted(needed_nodes(g.ops, roots)):
        name, args, const = g.ops[k]
        if name == "input":
            p, off = const
            if p in offsets:
                grads[k] = {offsets[p] + off: g.const(1.0)}
            continue
        if name == "const" or not any(a in grads for a in args):
            continue
        step(k, name, args, const, grads)
    return grads


def _acc(d: dict, key, term: Node, g: Graph) -> None:
    d[key] = g.op("add", d[key], term) if key in d else term


def _chain(g: Graph, k: int, name: str, args: tuple, const, grads: dict, hess: dict) -> None:
    nodes = [g.nodes[a] for a in args]
    first, second = partials(g, name, nodes, g.nodes[k], const)
    gk: dict = {}
    hk: dict = {}
    ga = [grads.get(a, {}) for a in args]
    for f, gi, a in zip(first, ga, args):
        if f is None or not gi:
            continue
        for i, d in gi.items():
            _acc(gk, i, g.op("mul", f, d), g)
        for p, h in hess.get(a, {}).items():
            _acc(hk, p, g.op("mul", f, h), g)
    for (s, t), f in second.items():
        if f is None or not ga[s] or not ga[t]:
            continue
        _outer(g, hk, f, ga[s], ga[t], both=s != t)
    if gk:
        grads[k] = gk
    if hk:
        hess[k] = hk


def _outer(g: Graph, hk: dict, f: Node, ga: dict, gb: dict, both: bool) -> None:
    """hk += f (ga gb' + gb ga') (both) or f ga ga' (ga is gb), upper triangle."""
    for i, di in ga.items():
        for j, dj in gb.items():
            if i > j and not both:
                continue
            key = (i, j) if i <= j else (j, i)
            term = g.op("mul", f, g.op("mul", di, dj))
            if both and i == j:
                term = g.op("add", term, term)
            _acc(hk, key, term, g)


def partials(g: Graph, name: str, a: list[Node], u: Node, const) -> tuple[list, dict]:
    """([f_a, f_b], {(0, 0): f_aa, (0, 1): f_ab, (1, 1): f_bb}) of node u = name(a...);
    None (or absent) for a structural zero."""
    one = g.const(1.0)
    if name == "add":
        return [one, one], {}
    if name == "sub":
        return [one, g.const(-1.0)], {}
    if name == "neg":
        return [g.const(-1.0)], {}
    if name == "mul":
        return [a[1], a[0]], {(0, 1): one}
    if name == "div":
        r = g.op("div", 1.0, a[1])                  # 1/b
        return [r, g.op("neg", g.op("mul", u, r))], {(0, 1): g.op("neg", g.op("mul", r, r)),
                                                      (1, 1): g.op("mul", 2.0, g.op("mul", u, g.op("mul", r, r)))}
    if name == "powc":
        c = const
        f1 = g.op("mul", c, g.op("powc", a[0], const=c - 1.0)) if c != 0.0 else None
        f2 = g.op("mul", c * (c - 1.0), g.op("powc", a[0], const=c - 2.0)) if c not in (0.0, 1.0) else None
        return [f1], {(0, 0): f2}
    if name in CMP:
        return [None, None], {}
    if name == "select":        # the taken branch's slopes (a[0], the test, has none)
        return [None, g.select(a[0], 1.0, 0.0), g.select(a[0], 0.0, 1.0)], {}
    if name == "abs":           # the rules table's abs: slope 1 at +-0 (finite values: the entry checks)
        return [g.select(g.op("ge", a[0], 0.0), 1.0, -1.0)], {}
    if name in ("maximum", "minimum"):      # a tie splits the slope 0.5 / 0.5, as the rules table (and JAX)
        wins = "gt" if name == "maximum" else "lt"
        tie = g.op("eq", a[0], a[1])
        return [g.select(tie, 0.5, g.select(g.op(wins, a[0], a[1]), 1.0, 0.0)),
                g.select(tie, 0.5, g.select(g.op(wins, a[1], a[0]), 1.0, 0.0))], {}
    return _unary(g, name, a[0], u)


def _unary(g: Graph, name: str, x: Node, u: Node) -> tuple[list, dict]:
    op = g.op
    if name == "exp":
        return [u], {(0, 0): u}
    if name in ("sinh", "cosh"):
        return [op("cosh" if name == "sinh" else "sinh", x)], {(0, 0): u}
    if name == "expm1":
        e = op("add", u, 1.0)
        return [e], {(0, 0): e}
    if name == "exp2":
        return [op("mul", u, LN2)], {(0, 0): op("mul", u, LN2 * LN2)}
    if name in ("log", "log2", "log10", "log1p"):
        base = op("add", 1.0, x) if name == "log1p" else x
        scale = {"log2": LN2, "log10": LN10}.get(name, 1.0)
        r = op("div", 1.0, op("mul", base, scale))          # 1 / (x ln b)
        return [r], {(0, 0): op("neg", op("mul", r, op("div", 1.0, base)))}
    if name == "sin":
        return [op("cos", x)], {(0, 0): op("neg", u)}
    if name == "cos":
        return [op("neg", op("sin", x))], {(0, 0): op("neg", u)}
    if name in ("tan", "tanh"):
        sign = 1.0 if name == "tan" else -1.0
        f1 = op("add", 1.0, op("mul", sign, op("mul", u, u)))          # 1 +- u^2
        return [f1], {(0, 0): op("mul", 2.0 * sign, op("mul", u, f1))}
    if name == "sqrt":
        f1 = op("div", 0.5, u)
        return [f1], {(0, 0): op("neg", op("div", op("mul", 0.5, f1), x))}
    if name == "cbrt":
        f1 = op("div", 1.0, op("mul", 3.0, op("mul", u, u)))
        return [f1], {(0, 0): op("mul", f1, op("div", -2.0 / 3.0, x))}
    if name == "atan":
        f1 = op("div", 1.0, op("add", 1.0, op("mul", x, x)))
        return [f1], {(0, 0): op("mul", -2.0, op("mul", x, op("mul", f1, f1)))}
    if name == "square":
        return [op("mul", 2.0, x)], {(0, 0): g.const(2.0)}
    if name == "reciprocal":
        return [op("neg", op("mul", u, u))], {(0, 0): op("mul", 2.0, op("mul", u, op("mul", u, u)))}
    raise AssertionError(name)      # (unroll_small.UNARY lists exactly these)
