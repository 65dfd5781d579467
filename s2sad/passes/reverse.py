"""Array program -> its adjoint program, as Python source that runs.

Input: an `ArrayProgram` (passes/arrayprog.py), the differentiated arguments and the
pullback mode of elementwise kernels. Output: generated Python source (what
`s2sad.source(g)` prints and what runs, exec'd with the namespace `namespace()` gives):

    def loss__value_and_grad(w, b, X, y):     # free data arrays are keyword arguments
        <forward sweep: the user's statements in ANF, kernels called through the runtime>
        loss_bar = 1.0
        <reverse sweep, statements in reverse order, each under `# Grad of: <user line>`>
        return loss, (w_bar, b_bar)

followed by the source of every kernel it calls (as comments name them).

(A fused plan's derivative is written by fused_adjoint.py in the same frame, through
adjoint_text.) `Generator` coordinates: one AdjointContext per generation (adjoint_context.py: names,
the namespace, kernel modes) on its own copy of the program whose statements carry the
analyses (adjoint_analysis.annotated), the forward
sweep's writer (forward_sweep.py), the reverse sweep's writer (reverse_sweep.py), then
the liveness of the grad variant and the rendering (adjoint_text.py). The plan that
caches and runs what it writes is ArrayCompiled (array_compiled.py).

- `x_bar` is the adjoint of `x`; adjoints are only ever rebound (`x_bar = x_bar + g`),
  never updated in place, so no adjoint aliases another.
- Adjoints of elementwise kernels: `KernelSum` statements got the gradients of their
  inputs in the forward pass (`runtime.sum_dual`) and scale them by their output's
  adjoint; `RunKernel` statements either store per-element partials in the forward pass
  (`runtime.store_partials`, mode "store") or recompute them from the inputs in the
  reverse pass (`runtime.vjp`, mode "recompute"). Both multiply the same partial by the
  same seed and sum back to each input's shape with the same `unbroadcast`, so they
  give identical results. Kernels whose inputs are all known scalars run as plain
  Python calls of the kernel's python form (its dual gives the partials).
- Other primitives print their forward line and take their adjoint text from their
  `array_prims` entry.
- `for` loops push what their reverse needs (found by reading the reverse body's
  source) on a Python list, the tape, one tuple per iteration; the reverse loop walks
  the tape backwards. `if` statements branch on the same (saved) condition.
- For s2sad.grad, `loss__grad` returns the gradients only, and its forward sweep
  computes only what the reverse sweep reads (`adjoint_analysis.live_before`): a kernel sum whose
  value is not read runs as `runtime.sum_grads` (no value in the kernel), a scalar
  kernel whose value is not read gives its partials only (inputs they do not read
  passed as `not_needed`), and other pure statements nobody reads are left out.
"""
from __future__ import annotations

from ..frontend import location_of, shown_location as _short, source_line as _line
from ..parsing import ast_parse
from .adjoint_analysis import annotated, deferrable_sums, forward_lines, live_before, pushed
from .adjoint_context import AdjointContext
from .adjoint_text import def_line, grad_of_line, names_read, render, text_of, tuple_text
from .arrayir import ArrayProgram, ArrayStmt, walk_stmts
from .forward_sweep import ForwardSweep
from .linemap import LocatedLine, located_lines
from .reverse_sweep import ReverseSweep
from . import xentheads, xentvalues
from .valuesplit import Sweeps


class Generator:
    """One derivative program's source, for one (argnums, mode, defer); `generate` once."""

    def __init__(self, prog: ArrayProgram, argnums: tuple[int, ...], mode: str = "auto",
                 defer: frozenset = frozenset(), join_heads: bool = True):
        self.p = prog = annotated(prog)     # this generation's own statements, annotated
        self.argnums = argnums
        self.mode = mode
        self.join_heads = join_heads     # (grad: dense logits joined with the cross-entropy's adjoint)
        self.ctx = AdjointContext(prog, argnums, mode)
        self.fwd = ForwardSweep(self.ctx)
        self.rev = ReverseSweep(self.ctx, defer)
        self.namer, self.ns = self.ctx.namer, self.ctx.ns
        self.is_active, self.bar = self.ctx.is_active, self.ctx.bar

    # what ArrayCompiled.explain reads
    @property
    def kernel_modes(self) -> dict[str, tuple[str, str]]:
        return self.ctx.kernel_modes

    @property
    def kernel_names(self) -> dict[int, str]:
        return self.ctx.kernel_names

    def seeds_pullback_only(self, name: str, st: ArrayStmt) -> bool:
        return self.rev.seeds_pullback_only(name, st)

    def deferrable_sums(self) -> frozenset:
        """After generating the grad variant: adjoint_analysis.deferrable_sums."""
        return deferrable_sums(self.p)

    def generate(self, variant: str = "value_and_grad") -> str:
        """variant "value_and_grad": one function returning (value, grads) for the seed
        1.0; "grad": `<name>__grad(...) -> grads`, its forward sweep only what the
        reverse sweep reads (liveness: `adjoint_analysis.live_before`); "vjp": `<name>__forward(...) -> (value, residuals)` and
        `<name>__pullback(residuals, <result>_bar) -> grads`."""
        p = self.p
        fwd: list = []
        defined: list = list(p.params) + list(p.free)
        self.fwd.forward(p.body, "    ", fwd, defined)
        res = p.result
        rtext = text_of(res)
        rev: list = []
        init: set = set()
        seed = self.bar(res) if isinstance(res, str) else None
        if isinstance(res, str) and self.is_active(res):
            if variant in ("value_and_grad", "grad"):
                rev.append(f"    {seed} = 1.0")
                self.rev.unit.add(res)
            init.add(res)
            self.rev.reverse(p.body, "    ", rev, init)
        gnames = []
        for i in self.argnums:
            x = p.params[i]
            if x in init:
                gnames.append(self.bar(x))
            else:
                gnames.append(self.bar(x))
                rev.append(f"    {self.bar(x)} = zeros_bar({x})  # the result does not depend on it")
        if variant == "value_and_grad" and isinstance(res, str) and any(res in names for names in
                                                                        pushed(p)):
            # the reverse sweep restores loop values from the tape: keep the result aside
            keep = self.namer.fresh("value")
            fwd.append(f"    {keep} = {rtext}")
            rtext = keep
        rev_text = "\n".join(rev)
        check = "" if (not isinstance(res, str) or res in p.known_scalar) else f"    check_scalar_loss({rtext})\n"
        if variant == "grad":
            # the forward sweep computes what the reverse sweep reads (and the result only
            # to check that it is a scalar); the rest is not computed
            live_before(p.body, names_read(rev_text + "\n" + check))
        rendered = render(fwd, names_read(rev_text), forward_lines)
        if variant == "grad" and self.join_heads and xentheads.join(rendered, rev, set(p.params) | set(p.free)):
            rev_text = "\n".join(rev)      # (a dense layer's logits joined with the cross-entropy's adjoint)
        value: list = []
        if variant == "value_and_grad" and self.join_heads and isinstance(res, str) and rtext == res:
            joined = self._joined_value(fwd, rev, rendered, res, gnames)
            if joined is not None:        # (the grad's forward and joined heads, the value after them)
                rendered, rev, value = joined
                rev_text = "\n".join(rev + value)
        fwd_text = "\n".join(rendered)
        ret = location_of(p.pf.filename, p.return_node)
        head = grad_of_line(_line(p.pf.filename, p.return_node), _short(ret))
        # what linemap ties each generated line to: the return, then each statement's comment
        self.located = [LocatedLine("    " + head, ret)] + located_lines(rendered) + located_lines(rev + value)
        self.sweeps = Sweeps(p.name, tuple(p.params), tuple(p.free), head, list(rendered), list(rev), check, rtext,
                             list(gnames), list(self.located))
        if variant == "value_and_grad" and value:
            text = (f"{def_line(p.name, variant, p.params, p.free)}\n    {head}\n{fwd_text}\n"
                    f"    # reverse sweep\n{rev_text}\n{check}    return {rtext}, {tuple_text(gnames)}\n")
        elif variant == "value_and_grad":
            text = (f"{def_line(p.name, variant, p.params, p.free)}\n    {head}\n{fwd_text}\n{check}"
                    f"    # reverse sweep\n{rev_text}\n    return {rtext}, {tuple_text(gnames)}\n")
        elif variant == "grad":
            text = (f"{def_line(p.name, variant, p.params, p.free)}\n    {head}\n{fwd_text}\n{check}"
                    f"    # reverse sweep\n{rev_text}\n    return {tuple_text(gnames)}\n")
        else:
            fwd_names = set(defined)
            residuals = sorted(names_read(rev_text) & fwd_names)
            ob = seed or "_out_bar"
            text = (f"{def_line(p.name, 'forward', p.params, p.free)}\n    {head}\n{fwd_text}\n"
                    f"    return {rtext}, {tuple_text(residuals)}\n\n\n"
                    f"def {p.name}__pullback(_residuals, {ob}):\n"
                    f"    {tuple_text(residuals)} = _residuals\n{rev_text}\n    return {tuple_text(gnames)}\n")
        ast_parse(text)  # the generated code is Python (a failure here is a bug of s2sad)
        return text

    def _joined_value(self, fwd: list, rev: list, rendered: list, res: str, gnames: list):
        """(the grad variant's forward lines, the reverse sweep with the heads joined, the
        value's lines) of value_and_grad (passes/xentvalues), or None where no head joins
        or the value cannot be made after them (the lines given stay as they are)."""
        p, read = self.p, names_read("\n".join(rev))
        live_before(p.body, read)                            # (the grad variant's liveness)
        fwd_g = render(fwd, read, forward_lines)
        for st in walk_stmts(p.body):
            if isinstance(st, ArrayStmt):
                st.adjoint.live_after = None                   # (value_and_grad renders all)
        rev_j, heads = list(rev), []
        if not xentheads.join(fwd_g, rev_j, set(p.params) | set(p.free), heads):
            return None
        value = xentvalues.value_lines(fwd_g, rev_j, rendered, heads, res, gnames)
        return None if value is None else (fwd_g, rev_j, value)

    def kernels_text(self) -> str:
        return "\n\n".join(self.fwd.kernel_sources)

    def namespace(self, helpers: dict, runtime_names: dict, check_scalar) -> dict:
        """What the generated source runs with: `helpers` (array_rules.HELPERS), the
        program's bound values and kernels, `runtime_names` (derivative_runtime.runtime_names:
        apply, vjp, ... for one backend) and the check of a scalar loss."""
        ns = dict(helpers)
        ns.update(self.p.bound)
        ns.update(self.ns)
        ns.update(runtime_names)
        ns["check_scalar_loss"] = check_scalar
        return ns


# ------------------------------------------------------------------ text helpers
