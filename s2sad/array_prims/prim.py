"""`Prim`: what the table knows of one array primitive.

Texts, never values: a primitive's forward line and its VJP are Python source over the
names of the generated code (`args`: its operands, `out`: its output, `g`: the adjoint
of its output, `p`: the source text of each static parameter present, by name). The
helpers that source calls (`sum_bar`, `matmul`, `reduce_sum`, `unbroadcast`...) are
bound by name in the generated code's namespace (array_rules.HELPERS, whose names are
HELPER_NAMES, and derivative_runtime.runtime_names), so the table imports none of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# the names of array_rules.HELPERS (what VJP source calls; tests/test_layers.py checks the two agree):
# passes/arrayprog.RESERVED keeps user names off them
HELPER_NAMES = frozenset({
    "np", "zeros_bar", "unbroadcast", "sum_bar", "mean_bar", "maxmin_bar", "prod_bar", "matmul_lhs_bar",
    "matmul_rhs_bar", "matmul_factors", "dot_factors", "dot_lhs_bar", "dot_rhs_bar", "repeat_bar", "tile_bar",
    "concatenate_bar", "index_bar", "index_add", "r_bar", "c_bar", "seed_factors", "prod_bar_dot"})


@dataclass(frozen=True)
class Prim:
    name: str
    # the typed op from the call's static parameters (gast expressions, by the names
    # of `statics` / `method_statics`, and any keyword the call passes)
    op: Callable[..., Any]
    # rule.vjp(i, g, args, out, p) -> source of d loss / d args[i], of args[i]'s shape
    vjp: Callable[..., str]
    # how a call reads: "unary" (one array, then static parameters), "binary" (two
    # arrays), "sequence" (a literal list of arrays, then static parameters), "copy"
    # (one array alone); "syntax": no call, only syntax builds it (x[i], np.r_[...]);
    # "signature": `statics` names every positional parameter, `operands` those that are
    # arrays (an absent one is the operand None), `keywords` the keywords taken;
    # "einsum": a subscripts string (or numpy's interleaved sublists), then the arrays
    form: str = "unary"
    statics: tuple[str, ...] = ()               # positional static parameters after the array(s)
    operands: tuple[str, ...] = ()              # "signature": the parameters that are arrays
    method_statics: tuple[str, ...] | None = None   # the same for the method spelling (default: statics)
    keywords: tuple[str, ...] | None = None     # keywords taken (None: any, passed on as written)
    funcs: tuple = ()                           # numpy/Python callables it stands for, by identity
    # callables of optional modules, (module, name): found by identity once the process
    # has imported the module (s2sad never imports scipy itself)
    module_funcs: tuple[tuple[str, str], ...] = ()
    # callables that stand for it only when given one literal list alone: np.array([a, b])
    literal_funcs: tuple = ()
    methods: tuple[str, ...] = ()               # ndarray methods it stands for
    # the result: "fresh" (new memory: may be updated in place), "view" (may share its
    # operand's memory), "plain" (neither is known); per spelling in `results`
    result: str = "fresh"
    results: dict[str, str] = field(default_factory=dict)
    # forward(args, p) -> the forward line's right-hand side, or None: the user's
    # expression as written (renamed)
    forward: Callable[..., str | None] | None = None
    # the VJP for a consumer that only multiplies it elementwise (a kernel's pullback):
    # text that may give a `runtime.SeedProduct` instead of an array
    factors: Callable[..., str] | None = None
    # jvp(i, t, args, out, p) -> source of the output's tangent from args[i]'s tangent `t`
    jvp: Callable[..., str] | None = None
    # a tuple-valued primitive: outputs(p) -> how many values it returns (an `item`
    # statement each), None when this call returns one array, or a str: why that is not
    # known from the call (refused)
    outputs: Callable[[dict], int | str | None] | None = None
    # operands given as one (array, flag) pair, e.g. cho_solve((c, lower), b): positions
    packed: tuple[int, ...] = ()
    # forward over reverse (passes/hvp_sweep, kind "own"): second(i, g, args, arg_dots,
    # out, out_dot, p) -> source of the VJP's tangent with the seed g held fixed
    second: Callable[..., str] | None = None
    # one call for all the operands, where a VJP or JVP per operand would repeat its work
    # (array_prims/derivcall.py): vjps(active, g, args, out, p) -> source of a tuple of the
    # adjoints of the operands at positions `active`; jvps(dots, args, out, p) -> source of
    # the output's tangent from the operands' tangents (None: constant). The writers take
    # these before `vjp` / `jvp` (reverse_sweep, tangent_sweep)
    vjps: Callable[..., str] | None = None
    jvps: Callable[..., str] | None = None
    # the operand positions its VJP reads for their shape and dtype only (sum's and mean's
    # operand): the reverse sweep may give it its producer's `like` there instead
    shape_reads: tuple[int, ...] = ()
    # like(args, p) -> source of an array of the output's shape and dtype whose values
    # are never read (cheap: no pass over the operands), or the output itself where that
    # is not known; given to a `shape_reads` position, it lets the grad variant drop a
    # forward line only a shape was read from
    like: Callable[..., str] | None = None

    def result_of(self, spelling: str) -> str:
        return self.results.get(spelling, self.result)


class StaticRefusal(Exception):
    """Raised by an entry's op builder for static parameters it cannot differentiate
    through (order='A', mode='mean', a keyword it does not know): passes/primcalls makes
    it a located UnsupportedOperationError naming the call. `what` continues the
    sentence "'np.pad' ..."; `hint` says what to do."""

    def __init__(self, what: str, hint: str = ""):
        super().__init__(what)
        self.what = what
        self.hint = hint


def kw(p: dict, *names: str) -> str:
    """`, axis=1, keepdims=True`: the static parameters present among `names`."""
    return "".join(f", {n}={p[n]}" for n in names if n in p)


def pieces(args) -> str:
    """The operands as a tuple literal."""
    return f"({', '.join(args)}{',' if len(args) == 1 else ''})"
