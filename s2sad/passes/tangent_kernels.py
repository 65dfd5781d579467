"""A kernel's tangent kernel: the directional derivative of its value, as a kernel of
its own (what forward mode over array programs applies, and what forward over reverse
differentiates once more for the tangents of a kernel's partials).

For a kernel `k(p1, ..., pn)` and active params `a1..am`, the tangent kernel is

    def k__tangent(p1, ..., pn, t_a1, ..., t_am):
        _v, _d1, ..., _dm = <k's dual for a1..am>(p1, ..., pn)
        return _d1 * t_a1 + ... + _dm * t_am

made from k's scalar program and its dual (forward.make_dual), so its own partials
w.r.t. p (the tangents held fixed) are k's second partials times the tangents: the
tangent of `d k / d a` along the tangents. Its seeded form (`seeded=True`) takes more
params, the adjoint `g` of k's value, its tangent `g_dot`, and a copy `q_a` of each
active param (the caller passes the same arrays), and returns

        g * (_d1 * t_a1 + ... + _dm * t_am) + g_dot * _v + g * k(p, a -> q_a)

whose partial w.r.t. each active p is the tangent of k's adjoint contribution
`g * dk/dp`, and w.r.t. its copy that contribution itself: forward over reverse through
a kernel is one pass of this kernel's pullback. Each is
a plan of the kernel's own class (a runtime kernel's tangent kernel is launched as
one), made once per (kernel, active, seeded) by `TangentKernels`, which the generation
that uses it holds. The "pair" form (`seeded="pair"`) is `g * k_dot + g_dot * k`, no
copies: for a kernel paired with a one-column matmul, its rows summed give
`h_dot @ w + h @ w_dot` and `h_dot.T @ out_bar + h.T @ out_bar_dot` (hvp_columns).
The "rows" form (`seeded="rows"`) takes the pair form's params and two more,
columns `a` and `a_dot`, and returns `a * (g * k) + a_dot * (g * k_dot + g_dot * k)`:
called with columns of ones, its partials w.r.t. them (each row summed in the pass) are
`h @ w` and `h_dot @ w + h @ w_dot` for the rows g, g_dot = w.T, w_dot.T: a product and
its tangent in ONE pass that reads h's operands and their tangents once (hvp_columns).
The seeded form "with column sums" (`seeded=("sums", s)`, s as `seeded` above) takes
three more params before the copies, a row `c`, columns `u` and `u_dot`, and adds

        + c * (u * (_d1 * t_a1 + ...) + u_dot * _v)

called with c a row of zeros: the term is zero and adds nothing to the other partials,
while its partial w.r.t. c, summed over the rows, is `h_dot.T @ u + h.T @ u_dot`: with
u, u_dot = out_bar, out_bar_dot, the tangent of w's adjoint in `out = h @ w` (w one
column) from the pass that gives h's adjoints' tangents (hvp_columns.ColumnSums).
"""
from __future__ import annotations

import gast

from ..kernel import fresh_name
from ..parsing import gast_parse
from .forward import make_dual
from .normalize import ScalarProgram


def tangent_kernel(kernel, active: tuple[str, ...], seeded: bool | int | str | tuple = False):
    """The tangent kernel of `kernel` for its `active` params, or its seeded form (see
    the module docstring); `seeded` an int k: g given as two factors and g_dot as k
    products of two factors (an adjoint a matmul gives as an outer product, never formed);
    ("sums", seeded): the seeded form with column sums."""
    sums = isinstance(seeded, tuple)
    if sums:
        seeded = seeded[1]
    prog = kernel.program
    if prog.state:
        raise ValueError("a kernel that writes state has no tangent kernel")   # callers refuse first
    dual_entry, duals = make_dual(prog.functions, prog.entry, active, prog.custom_rules)
    functions = {**prog.functions, **duals}
    taken = set(prog.params) | set(functions) | {n for f in functions.values() for n in _names(f)}
    tans = [fresh_name(f"t_{a}", taken) for a in active]
    value = fresh_name("_v", taken)
    parts = [fresh_name(f"_d_{a}", taken) for a in active]
    rows = seeded == "rows"
    pair = seeded == "pair" or rows
    kind = "rows_" if rows else "pair_" if pair else "seeded_sums_" if sums else "seeded_" if seeded is not False else ""
    name = fresh_name(f"{prog.entry}__{kind}tangent", taken)
    total = " + ".join(f"{d} * {t}" for d, t in zip(parts, tans))
    seeds, g, g_dot = _seeds(True if pair else seeded, taken)
    copies = [fresh_name(f"q_{a}", taken) for a in active] if seeded is not False and not pair else []
    summed = [fresh_name(n, taken) for n in ("c_sum", "u", "u_dot")] if sums else []
    summed += [fresh_name(n, taken) for n in ("a", "a_dot")] if rows else []
    seeds = seeds + summed
    params = ", ".join(list(prog.params) + tans + seeds + copies)
    body = f"    {value}, {', '.join(parts)} = {dual_entry}({', '.join(prog.params)})\n"
    if pair:      # g * k_dot + g_dot * k: a row of it summed gives h_dot @ g.T + h @ g_dot.T
        total = f"{g} * ({total}) + {g_dot} * {value}"
        if rows:      # (a, a_dot columns of ones: see the module docstring)
            total = f"{summed[0]} * ({g} * {value}) + {summed[1]} * ({total})"
    elif seeded is not False:
        # + g * k(the active params' copies): its partials w.r.t. the copies are the adjoints
        w = fresh_name("_w", taken)
        by = dict(zip(active, copies))
        body += f"    {w} = {prog.entry}({', '.join(by.get(p, p) for p in prog.params)})\n"
        tangent = total
        total = f"{g} * ({total}) + {g_dot} * {value} + {g} * {w}"
        if sums:    # (c a row of zeros: see the module docstring)
            c, u, u_dot = summed
            total += f" + {c} * ({u} * ({tangent}) + {u_dot} * {value})"
    text = f"def {name}({params}):\n{body}    return {total}\n"
    fn = gast_parse(text).body[0]
    what = (f"a * g * {prog.entry} + a_dot * (g * {prog.entry}'s tangent + g_dot * {prog.entry}) (hvp_columns' "
            f"product and its tangent, one pass)" if rows else
            f"g * {prog.entry}'s tangent + g_dot * {prog.entry} (hvp_columns' products)" if pair else
            f"the tangent of {prog.entry}'s adjoint g * d{prog.entry}/dp (its params' tangents, g and g_dot "
            f"given{'; c * (u * its tangent + u_dot * it): column sums by c' if sums else ''})" if seeded is not False else f"the tangent of {prog.entry} along its active params' tangents")
    origins = {**prog.origins, name: what}
    program = ScalarProgram({**functions, name: fn}, name,
                            tuple(prog.params) + tuple(tans) + tuple(seeds) + tuple(copies), origins, prog.custom_rules)
    return type(kernel)(program, f"{kernel.name}__{kind}tangent")


def _seeds(seeded: bool | int, taken: set) -> tuple[list[str], str, str]:
    """The seed params and the texts of g and g_dot over them."""
    if seeded is False:
        return [], "", ""
    if seeded is True:
        seeds = [fresh_name("g", taken), fresh_name("g_dot", taken)]
        return seeds, seeds[0], seeds[1]
    seeds = [fresh_name(f"g_{side}", taken) for side in "lr"]
    terms = []
    for k in range(seeded):
        pair = [fresh_name(f"g_dot{k}_{side}", taken) for side in "lr"]
        seeds += pair
        terms.append(f"{pair[0]} * {pair[1]}")
    return seeds, f"({seeds[0]} * {seeds[1]})", f"({' + '.join(terms)})"


def _names(fn) -> set[str]:
    return {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}


class TangentKernels:
    """Tangent kernels made for one generation, once per (kernel, active)."""

    def __init__(self):
        self._made: dict[tuple, object] = {}
        self._keep: list = []     # the kernels keyed by id, kept alive with their tangents

    def of(self, kernel, active: tuple[str, ...], seeded: bool | int | str | tuple = False):
        key = (id(kernel), active, repr(seeded))     # (True == 1: told apart)
        got = self._made.get(key)
        if got is None:
            got = self._made[key] = tangent_kernel(kernel, active, seeded)
            self._keep.append(kernel)
        return got

    def made(self) -> list:
        """The tangent kernels made, in order (their sources follow the program's)."""
        return list(self._made.values())
