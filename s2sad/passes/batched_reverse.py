"""Batched cotangents: the pullback of an array program with every adjoint carrying a
leading batch axis of K directions, so that one reverse sweep seeded with K rows of the
identity gives K rows of a Jacobian (higher.jacrev of an array program) instead of K
pullbacks.

    def f__forward(x, *, A):                # as the vjp's: values and residuals, no batch axis
        _1 = matmul(A, x)
        loss, (dloss_d1,) = store_partials(f__loss, (_1,), ('_1',))
        return loss, (A, _1, dloss_d1, x)

    def f__pullback(_residuals, loss_bar):  # loss_bar: (K,) + loss.shape
        (A, _1, dloss_d1, x) = _residuals
        _1_bar = bunbroadcast(dloss_d1 * loss_bar, _1)
        x_bar = bmatmul_bar(1, _1_bar, A, x)
        return (x_bar,)                     # (K,) + x.shape, or an unbatched zero

What each statement's adjoint becomes (batch_rules.py and batch_vjps.py give the
helpers; primals and partials have no batch axis, adjoints have one):
- an elementwise kernel: its partials stored in the forward pass (mode "store", which
  gives the bits "recompute" gives), times the batched seed (the partials broadcast
  against its trailing axes), summed back row by row to each input's shape; a kernel
  sum's gradients times each row's seed; a kernel on known scalars' partials (numbers)
  times the rows;
- indexing, sum and mean, concatenation, matmul and dot of 1-D and 2-D operands:
  vectorized over the batch axis; every other primitive's VJP text (linear in its seed) row by row (brows).
A statement with none of these forms (a loop or an `if` that carries a derivative, an
in-place write or append, a primitive with no reverse rule or with one call for all
its operands) raises batched_sweep.NotBatched at generation time, with the line; the
caller then runs the unbatched pullback once per row, which refuses, located, what it
cannot take. Kernels are not paired with their matmul (kernelpairs): each statement's
adjoint on its own, so row b of every adjoint is what the unbatched pullback gives for
row b of the seed.
"""
from __future__ import annotations

import weakref

from .. import array_prims
from ..array_prims.prim import kw
from .adjoint_text import param_texts, text_of
from .arrayir import ArrayStmt, KernelSum, ListAppend, RunKernel, SetItem, walk_stmts
from .batched_sweep import NotBatched, BatchedForward
from .linemap import compile_located
from .reverse import Generator
from .reverse_sweep import ReverseSweep

PRODUCTS = ("matmul", "dot")    # a product's VJP vectorized over the batch (bmatmul_bar)


class BatchedReverseSweep(ReverseSweep):
    """The reverse sweep with batched adjoints (see the module doc)."""

    not_batched = BatchedForward.not_batched

    def reverse_for(self, st, ind: str, out: list, init: set) -> None:
        if st.adjoint.tape is not None:     # (None: nothing in it carries a derivative)
            self.not_batched(st, "a loop")

    def reverse_if(self, st, ind: str, out: list, init: set) -> None:
        if any(isinstance(s, ArrayStmt) and s.target and self.is_active(s.target) and s.target in init
               for s in walk_stmts(st.body + st.orelse)) or any(self.is_active(ph.name) and ph.name in init
                                                                for ph in st.phis):
            self.not_batched(st, "an if")

    def reverse_stmt(self, st: ArrayStmt, ind: str, out: list, init: set) -> None:
        g = self.bar(st.target)
        if isinstance(st.op, KernelSum):      # its gradients, times each row's seed
            for (_, _, a), d in zip(self.kernel_active(st), st.adjoint.partials):
                self.contribute(a, f"bscaled({d}, {g})", ind, out, init)
            return
        if isinstance(st.op, RunKernel) and st.op.scalar:   # numbers times the rows
            for (_, _, a), d in zip(self.kernel_active(st), st.adjoint.partials):
                self.contribute(a, f"{d} * {g}", ind, out, init)
            return
        if isinstance(st.op, RunKernel):    # stored partials (mode "store") times the rows
            for (_, _, a), d in zip(self.kernel_active(st), st.adjoint.partials):
                self.contribute(a, f"bunbroadcast({d} * {g}, {a})", ind, out, init)
            return
        if isinstance(st.op, (SetItem, ListAppend)):
            self.not_batched(st, "an in-place write or append")
        rule = array_prims.of(st.op)
        if rule is None or rule.vjp is None or rule.vjps is not None:
            what = rule.name if rule is not None else getattr(st.op, "name", type(st.op).__name__)
            self.not_batched(st, f"'{what}', with no batched reverse rule")
        args = [text_of(a) for a in st.args]
        params = param_texts(st)
        for i, a in enumerate(st.args):
            if self.is_active(a):
                self.contribute(a, self.batched_vjp(rule, i, g, args, st, params), ind, out, init)

    def batched_vjp(self, rule, i: int, g: str, args: list, st: ArrayStmt, params: dict) -> str:
        """The VJP's text applied to the batched seed `g`, vectorized where a helper is."""
        if rule.name == "index":
            return f"bindex_bar({g}, {args[0]}, {params['index']})"
        if rule.name in ("sum", "mean") and len(args) == 1:
            return f"breduce_bar({rule.name!r}, {g}, {args[0]}{kw(params, 'axis', 'keepdims')})"
        if rule.name in PRODUCTS and len(args) == 2 and not params:
            return f"bmatmul_bar({i}, {g}, {args[0]}, {args[1]}, {rule.name!r})"
        text = rule.vjp(i, g, args, st.target, params)
        if rule.name == "concatenate" and text.startswith("concatenate_bar("):
            return f"b{text}"
        r = self.namer.fresh("_row")
        return f"brows(lambda {r}: {rule.vjp(i, r, args, st.target, params)}, {g})"


class BatchedReverse(Generator):
    """The batched pullback of one (plan, argnums): `generate("vjp")` once."""

    def __init__(self, prog, argnums: tuple[int, ...]):
        # every kernel's partials stored (the same bits as recomputed: runtime.store_partials),
        # each statement on its own (no kernel paired with its matmul or row reduction)
        super().__init__(prog, argnums, "store")
        for st in walk_stmts(self.p.body):
            if isinstance(st, ArrayStmt):
                st.partner = None
        self.rev = BatchedReverseSweep(self.ctx)

    def generate(self, variant: str = "vjp") -> str:
        """The forward and the batched pullback (the vjp variant's two functions)."""
        return super().generate("vjp")


# ---------------------------------------------------------------- compiled, once per plan

_PROGRAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # plan -> {key: (text, fns) or why not}


def batched_pullback(plan, argnums: tuple[int, ...], backend: str, names):
    """(forward, pullback) of an array plan with a batched pullback (see the module
    doc), compiled once per (argnums, backend), or the NotBatched that says why there is
    none (kept: decided once). `names(backend)`: the runtime names it calls beyond the
    plan's (the batched helpers)."""
    per_plan = _PROGRAMS.get(plan)
    if per_plan is None:
        per_plan = _PROGRAMS[plan] = {}
    key = (argnums, backend)
    got = per_plan.get(key)
    if got is None:
        got = per_plan[key] = _compiled(plan, argnums, backend, names)
    if isinstance(got, str):
        raise NotBatched(got)
    return got[1]


def batched_pullback_source(plan, argnums: tuple[int, ...]) -> str:
    """The batched pullback's source, then its kernels' (NotBatched where there is none)."""
    gen = BatchedReverse(plan.program, argnums)
    text = gen.generate()
    kernels = gen.kernels_text()
    return text + ("\n\n" + kernels if kernels else "")


def _compiled(plan, argnums: tuple[int, ...], backend: str, names):
    try:
        gen = BatchedReverse(plan.program, argnums)
        text = gen.generate()
    except NotBatched as e:
        return e.reason
    ns = gen.namespace(plan.helpers, {**plan.runtime_names(backend), **names(backend)}, None)
    exec(compile_located(text, f"<s2sad batched pullback of {plan.program.name}>", getattr(gen, "located", ()), program=plan.program), ns)
    name = plan.program.name
    return text, (ns[f"{name}__forward"], ns[f"{name}__pullback"])
