"""The plan of a function differentiated at the array level: its array program
(passes/arrayprog.py) and its generated derivatives (passes/reverse.py), one per
(argnums, mode, variant), each compiled once per backend and kept.

It is handed what the generated code calls by the layer above (plans): the helpers
(array_rules.HELPERS) and, per backend, derivative_runtime.runtime_names; the passes
import no runtime. The user's function is never held: it is read through the parsed
function's resolver.
"""
from __future__ import annotations

import re

from typing import Any

import numpy as np

from .. import array_prims
from ..array_prims import PrimOp, Product
from ..array_prims.derivcall import DerivativeCall
from ..array_prims.rowfused import RowFused
from ..errors import non_scalar_loss
from ..frontend import location_of, shown_location as _short
from ..kernel_text import unparse
from .adjoint_text import text_of
from .arrayir import ArrayProgram, ArrayStmt, ForStmt, IfStmt, KernelSum, Py, walk_stmts
from .derivcalls import derivative_call_text
from .freelists import user_forward
from .kernelpairs import choose_mode, row_reduction
from .linemap import compile_located
from .reverse import Generator
from .valuesplit import split_text

# scipy.special's entries whose forward runs in s2sad.rowsoftmax's row-fused loop
ROW_FUSED = ("logsumexp", "softmax", "log_softmax")


class ArrayCompiled:
    """A differentiated function planned at the array level: its program, and its
    generated derivatives per (argnums, mode), compiled once each. It is a plans.Plan
    (the protocol derivative.py, jvp_vjp.py and api call), as plans.Compiled is."""

    fused = False       # no one kernel whose entry takes the user's arguments
    route = None        # passes/routes.Route, set by plans

    def __init__(self, fun, pf, program: ArrayProgram, helpers: dict, runtime_names):
        self.pf = pf  # (its function is read through pf's resolver: never held)
        self.program = program
        # what the generated code calls, given by the caller (the runtime is a layer above
        # the passes): array_rules.HELPERS, and backend -> derivative_runtime.runtime_names
        self.helpers = helpers
        self.runtime_names = runtime_names
        self.params = [a.id for a in pf.node.args.args]
        self.resolver = pf.resolver
        self._gens: dict = {}
        self._impls: dict = {}
        # the small planners' verdicts for this program (small_hessian.SmallHessian.shared_plan):
        # every grad object of this plan (a new closure per training step) shares them
        self.small_plans: dict = {}

    # what code written for the fused planner's `Compiled` reads (cli, golden)
    @property
    def fun(self):
        return self.pf.fn

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def kernel(self):
        ks = self.program.kernels
        return ks[-1].kernel if ks else None

    @property
    def plan(self):
        return self

    @property
    def sites(self):
        return self.program.sites

    def free_values(self) -> dict[str, Any]:
        """The free data arrays, read now (at call time), as Python reads globals."""
        return {g: r.lookup(n) for g, (r, n) in self.program.free.items()}

    def _generator(self, argnums: tuple[int, ...], mode: str, variant: str):
        """(text, generator) of `variant`: "value_and_grad", "grad", "vjp", or "grad unjoined"
        and "value_and_grad unjoined" (the program with no dense logits joined with the
        cross-entropy's adjoint: passes/xentheads; what array_special specialises where
        those heads run unfused)."""
        key = (argnums, mode, variant)
        got = self._gens.get(key)
        if got is None and variant == "value_and_grad split":
            got = self._gens[key] = self._split(argnums, mode)
        if got is None:
            joined = not variant.endswith(" unjoined")
            variant = variant.split()[0]
            gen = Generator(self.program, argnums, mode, join_heads=joined)
            text = gen.generate(variant)
            defer = gen.deferrable_sums() if variant == "grad" else frozenset()
            if defer:     # again, those sums in the reverse sweep (their value is not needed)
                gen = Generator(self.program, argnums, mode, defer, join_heads=joined)
                text = gen.generate(variant)
            got = self._gens[key] = (text, gen)
        return got

    def _split(self, argnums: tuple[int, ...], mode: str):
        """(text, generator) of value_and_grad as grad's program then the value
        (passes/valuesplit), or (None, None) where that does not apply. Its grad is not
        deferred and joins no head: its reverse sweep is value_and_grad's, line for line."""
        grad = Generator(self.program, argnums, mode, join_heads=False)
        grad.generate("grad")
        _, value = self._generator(argnums, mode, "value_and_grad unjoined")
        made = split_text(grad.sweeps, value.sweeps)
        if made is None:
            return None, None
        grad.located = made[1]
        grad.ns.update({k: v for k, v in value.ns.items() if k not in grad.ns})   # (what the value's lines call)
        return made[0], grad

    def source(self, argnums: tuple[int, ...], mode: str = "auto", variant: str = "value_and_grad") -> str:
        text, gen = self._generator(argnums, mode, variant)
        if text is None:
            return None     # (a split that does not apply)
        kt = gen.kernels_text()
        return text + ("\n\n" + kt if kt else "")

    def implementation(self, argnums: tuple[int, ...], mode: str, backend: str, variant: str = "value_and_grad"):
        key = (argnums, mode, backend, variant)
        fn = self._impls.get(key)
        if fn is None:
            text, gen = self._generator(argnums, mode, variant)
            if text is None:
                return None     # (a split that does not apply)
            ns = gen.namespace(self.helpers, self.runtime_names(backend), self._check_scalar)
            exec(compile_located(text, f"<s2sad derivative of {self.program.name}>", getattr(gen, "located", ()), program=self.program), ns)
            if variant in ("value_and_grad", "grad", "grad unjoined", "value_and_grad unjoined",
                           "value_and_grad split"):
                fn = ns[f"{self.program.name}__{variant.split()[0]}"]
            else:
                fn = (ns[f"{self.program.name}__forward"], ns[f"{self.program.name}__pullback"])
            self._impls[key] = fn
        return fn

    def _check_scalar(self, value) -> None:
        if np.ndim(value) != 0:
            raise non_scalar_loss(self.fun.__name__, np.shape(value),
                                  location_of(self.pf.filename, self.program.return_node))

    def value_and_grad(self, args, argnums: tuple[int, ...], mode: str, backend: str):
        fn = self.implementation(argnums, mode, backend)
        free = self.free_values()
        return fn(*args, **free) if free else fn(*args)

    def grad(self, args, argnums: tuple[int, ...], mode: str, backend: str):
        """The gradients alone: the loss's value is computed only where they need it."""
        fn = self.implementation(argnums, mode, backend, "grad")
        free = self.free_values()
        return fn(*args, **free) if free else fn(*args)

    def vjp(self, primals, argnums: tuple[int, ...], mode: str, backend: str):
        fwd, pull = self.implementation(argnums, mode, backend, "vjp")
        free = self.free_values()
        out, res = fwd(*primals, **free) if free else fwd(*primals)
        return out, (lambda out_bar: pull(res, out_bar))

    # -------------------------------------------------------------- explain

    def explain(self, argnums: tuple[int, ...], mode: str = "auto") -> list[str]:
        text, gen = self._generator(argnums, mode, "value_and_grad")
        prog = gen.p
        lines = []
        stmts = [s for s in walk_stmts(prog.body)]
        nloops = sum(isinstance(s, ForStmt) for s in stmts)
        nifs = sum(isinstance(s, IfStmt) for s in stmts)
        lines.append(f"  array program: {sum(isinstance(s, ArrayStmt) for s in stmts)} operation(s)"
                     + (f", {nloops} loop(s) (taped for the reverse pass)" if nloops else "")
                     + (f", {nifs} branch(es)" if nifs else "")
                     + f"; differentiated w.r.t. {', '.join(prog.params[i] for i in argnums)}")
        for st in stmts:
            if isinstance(st, ArrayStmt) and isinstance(st.op, PrimOp):
                loc = _short(location_of(st.ctx.filename, st.node))
                what = "no adjoint needed (not differentiated)" if not gen.is_active(st.target) else \
                    f"rule {st.op.name} (s2sad.array_prims)"
                if st.partner is not None and row_reduction(st) is not None:
                    what = (f"taken with {st.args[0]}'s kernel (kernel_rowsum: {st.args[0]} is not formed "
                            f"where the rows are summed in its pass); its adjoint and that kernel's in one call")
                elif st.partner is not None:
                    what = (f"taken in the pass of {st.args[0]}'s kernel (column_products.kernel_matmul: {st.args[0]} is not "
                            f"formed where {text_of(st.args[1])} is one column); its adjoint and that kernel's in one "
                            f"pass")
                rule = array_prims.of(st.op)
                seeds = [a for a in st.args if gen.is_active(a) and gen.is_active(st.target)
                         and rule is not None and rule.factors is not None and gen.seeds_pullback_only(a, st)]
                if seeds:
                    what += (f"; the adjoint of {', '.join(seeds)} seeds its kernel's pullback only, as two factors "
                             f"where it is an outer product")
                if isinstance(st.op, Product) and st.op.kind in ("matmul", "dot") and st.partner is None:
                    what += "; the product by s2sad.gemm (its own loop where the right operand is thin, else numpy's)"
                if rule is not None and rule.name in ROW_FUSED and "axis" in st.params \
                        and rule.forward([text_of(a) for a in st.args], {}) is not None:
                    what += ("; fused along the last axis: max, shift, exp, sum, log (and divide) in one pass per "
                             "row (s2sad.rowsoftmax, 2-D float arrays; elsewhere scipy's own)")
                if isinstance(st.op, DerivativeCall):
                    what = derivative_call_text(st.op, self.program.free)
                elif isinstance(st.op, RowFused) and st.op.kind == "row_layer_norm":
                    what = (f"row fusion (passes/layernorm): the layer normalisation of {st.args[0]} along axis "
                            f"{unparse(st.op.axis)} written with numpy (mean, centre, variance, sqrt, divide), as one "
                            f"pass per row forward and one backward (s2sad.rowlayernorm: float arrays whose rows are "
                            f"contiguous; elsewhere the numpy formula)")
                elif isinstance(st.op, RowFused) and st.op.kind == "row_dot_log_softmax":
                    what = (f"row fusion (passes/rowfusion, passes/rowdot): the sum along axis {unparse(st.op.axis)} "
                            f"of {st.args[1]} times the max-shifted log_softmax of {st.args[0]} written with numpy, "
                            f"as one pass per row forward and one backward (s2sad.rowsoftmax: 2-D float arrays of "
                            f"one shape and dtype; elsewhere the numpy formula)")
                elif isinstance(st.op, RowFused):
                    what = (f"row fusion (passes/rowfusion): the max-shifted {rule.name[4:]} of {st.args[0]} along "
                            f"axis {unparse(st.op.axis)} written with numpy (max, shift, exp, sum, log/divide), "
                            f"as one pass per row forward and one backward (s2sad.rowsoftmax: 2-D float arrays; "
                            f"elsewhere the numpy formula)")
                lines.append(f"  {loc}: {unparse(user_forward(st, prog.bound))} -> {what}")
            elif isinstance(st, ArrayStmt) and isinstance(st.op, Py):
                loc = _short(location_of(st.ctx.filename, st.node))
                lines.append(f"  {loc}: {unparse(user_forward(st, prog.bound))} -> evaluated as is (no derivative "
                             f"flows through it)")
        for info in prog.kernels:
            st = info.stmt
            k = info.kernel
            inputs = ", ".join(text_of(a) for a in st.args)
            n = len(info.lines)
            if isinstance(st.op, KernelSum):
                how = (f"fused with its np.{st.op.reduction}: one pass (runtime.sum_dual), the gradients of "
                       f"its inputs computed in the same pass")
            elif st.op.scalar:
                how = "on scalars: called as plain Python, its dual gives the partials"
            elif st.partner is not None:
                m = st.partner
                where = f"{unparse(m.forward)} ({_short(location_of(m.ctx.filename, m.node))})"
                if row_reduction(m) is not None:
                    mode_, _ = gen.kernel_modes.get(gen.kernel_names.get(id(k), k.name), choose_mode(k, mode))
                    how = (f"with the row reduction that alone reads it, {where}, its rows summed in the kernel's "
                           f"pass where they are long enough (or it is cheap); pullback: one seeded pass with it "
                           f"there, else {mode_}")
                else:
                    how = (f"with the matmul that alone reads it, {where}; pullback: recomputed with it, in every "
                           f"mode (cheap to evaluate)")
            elif not gen.is_active(st.target):
                how = "applied elementwise (not differentiated)"
            else:
                mode_, why = gen.kernel_modes.get(gen.kernel_names.get(id(k), k.name), choose_mode(k, mode))
                how = f"applied elementwise; pullback: {mode_} ({why})"
            lines.append(f"  fused: {n} line(s) into one kernel {k.name}({inputs}), {how}")
            for loc, src in info.lines:
                lines.append(f"      {_short(loc)}: {src}")
            for s in info.sites:
                lines.append(f"    {_short(s.location)}: {s.applied} -> {s.path}: {s.reason}")
        return lines + self._derivatives_explained(argnums, mode)

    def _derivatives_explained(self, argnums: tuple[int, ...], mode: str) -> list[str]:
        """explain's lines on how grad and value_and_grad are written: heads joined with the
        cross-entropy's adjoint (passes/xentheads, xentvalues), the small batch's split."""
        lines: list[str] = []
        grad_text, _ = self._generator(argnums, mode, "grad")
        both_text, _ = self._generator(argnums, mode, "value_and_grad")
        for head in re.findall(r"(\w+), (\w+) = head_logits\((\w+), (\w+), ", grad_text):
            which = "grad and value_and_grad" if f"{head[0]}, {head[1]} = head_logits(" in both_text else "grad alone"
            lines.append(f"  {which}: {head[1]} = {head[2]} @ {head[3]} + a row, joined with the cross-entropy's "
                         f"adjoint (passes/xentheads): {head[1]} and its adjoint a block of rows at a time in one pass "
                         f"(s2sad.xent_head), {head[2]} read once, where its work is enough for threads and the "
                         f"operands are float rows s2sad's product takes; elsewhere the separate calls")
            if which != "grad alone":
                lines.append("    value_and_grad: the rows' values made in the same pass, the loss's value after "
                             "the reverse sweep (passes/xentvalues)")
        if self._generator(argnums, mode, "value_and_grad split")[0] is not None:
            lines.append("  value_and_grad, specialised to a small batch: grad's program, then the value's lines "
                         "(passes/valuesplit): one compiled call where grad's is")
        return lines
