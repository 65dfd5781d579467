"""A dense layer's partial recomputed from its output instead of stored (issue 17's MLP):
`h = act(X @ W + b)` whose partial w.r.t. the product is a function F of h
(passes/outpartials.py: tanh's `1 - out * out`, exp's `out`, relu's `1.0 if out > 0.0
else 0.0`) stores h alone in the forward; the adjoint's pass (lhs_bar_sums) computes
F(h) * (G @ W.T) a block at a time. At n = 10,000 and 64 units that is one 5 MB array
a layer not written, and not allocated.

Two kernels are derived from the layer's kernel K and F, once per (K, param), each with
a dual written here rather than by forward mode:

- the check `K__outchk(params..., chk)`: its value is K's, and its partial w.r.t. the
  scalar `chk`, summed over a block, counts the elements where K's true partial (K's
  dual) and F(value) differ in any bit (sign of zero included; two NaNs agree).
  The forward (`out_partials`) runs it over each block of the product, storing h only;
  where any block counts one (relu on a tie: 0.5 against 0), the whole layer runs again
  the stored way (gemm_epilogue): a right answer at the old cost, never a guess;
- the adjoint `K__outrev(out, g, bias)` = F(out) * g, whose partial w.r.t. the bias row
  is the same value: the driver stores it (the product's adjoint) and sums it down the
  rows in row order into the block's sums (the bias's adjoint).

Invariants: an `OutputPartial` is made only where every element's F(h) equals the
partial the stored way would have stored, bit for bit, so every adjoint has the bits of
the stored path (the products F(h) * g are the same IEEE products, and each block's
sums the same chain from 0 in row order); it is read only by `lhs_bar_sums` (the
adjoint program passes it nowhere else: passes/epilogues.py), which turns it into the
stored array (`array`) where its own fused pass does not run.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import gast
import numpy as np

from . import runtime
from .blockloop import Decline, call_stub, recording
from .kernel_text import unparse
from .kernel import KernelModule, LoopSpec, fresh_name
from .parsing import gast_parse
from .passes.normalize import ScalarProgram
from .passes.outpartials import output_partial
from .runkernel import Kernel


@dataclasses.dataclass
class HandDual(Kernel):
    """A derived kernel whose dual is written by hand (`dual_name`), differentiating its
    last parameter only; its signature's digest covers every function, the dual's too."""

    dual_name: str = ""

    def module(self, active: tuple[str, ...] = ()) -> KernelModule:
        got = self._modules.get(active)
        if got is None:
            assert active in ((), self.params[-1:]), active
            prog = self.program
            got = self._modules[active] = KernelModule(
                name=self.name, functions=dict(prog.functions), entry=prog.entry, params=prog.params,
                result_kind="float", dual_entry=self.dual_name if active else None, active=active,
                origins=dict(prog.origins))
        return got


@dataclasses.dataclass(frozen=True)
class OutKernels:
    """F's text, and the check and adjoint kernels derived from K (module docstring)."""

    partial: str
    check: HandDual
    adjoint: HandDual


def out_kernels(kernel, param: str) -> OutKernels | None:
    """K's derived kernels for the partial w.r.t. `param`, or None where that partial is
    not a function of K's output (made once per kernel and param)."""
    got = kernel.cached(("out partials", param), lambda: _make(kernel, param) or _NONE)
    return None if got is _NONE else got


_NONE = object()          # cached: no derived kernels (Kernel.cached makes None again)


def _parse(text: str):
    return gast_parse(text).body[0]


def _make(kernel, param: str) -> OutKernels | None:
    kmod = kernel.module((param,))
    f = output_partial(kmod, param)
    if f is None or kernel.program.state or kernel.program.captures:
        return None
    return OutKernels(f, _check_kernel(kernel, kmod, param, f), _adjoint_kernel(kernel, f))


def _check_kernel(kernel, kmod, param: str, f: str) -> HandDual:
    """K's value, and as its partial w.r.t. a last scalar parameter 0.0 where K's partial
    w.r.t. `param` is F(value) bit for bit (two NaNs agree), else 1.0."""
    taken = set(kmod.params) | set(kmod.functions)
    chk, v, p, fv = (fresh_name(b, taken) for b in ("chk", "_v", "_p", "_f"))
    entry, dual = fresh_name(f"{kmod.entry}__outchk", taken), fresh_name(f"{kmod.entry}__outchk__dual", taken)
    ps = ", ".join(kmod.params)
    same = (f"0.0 if {p} == {fv} and math.copysign(1.0, {p}) == math.copysign(1.0, {fv}) "
            f"else (0.0 if {p} != {p} and {fv} != {fv} else 1.0)")
    functions = dict(kmod.functions)
    functions[entry] = _parse(f"def {entry}({ps}, {chk}):\n    return {kmod.entry}({ps})\n")
    functions[dual] = _parse(f"def {dual}({ps}, {chk}):\n    {v}, {p} = {kmod.dual_entry}({ps})\n"
                             f"    {fv} = {_rename_out(f, v)}\n    return ({v}, {same})\n")
    origins = {**kmod.origins, entry: f"{kmod.entry}, its partial w.r.t. {param} checked against {f}",
               dual: f"{kmod.entry}'s dual, its partial w.r.t. {param} checked against {f}"}
    return HandDual(ScalarProgram(functions, entry, kmod.params + (chk,), origins), f"{kernel.name}__outchk",
                    dual_name=dual)


def _adjoint_kernel(kernel, f: str) -> HandDual:
    """F(out) * g, and as its partial w.r.t. a last parameter (a bias row) the same value."""
    adj = f"{kernel.program.entry}__outrev"
    fns = {adj: _parse(f"def {adj}(out, g, bias):\n    return ({f}) * g\n"),
           f"{adj}__dual": _parse(f"def {adj}__dual(out, g, bias):\n    _v = ({f}) * g\n    return (_v, _v)\n")}
    return HandDual(ScalarProgram(fns, adj, ("out", "g", "bias"), {adj: f"({f}) * g, for {kernel.name}'s adjoint"}),
                    f"{kernel.name}__outrev", dual_name=f"{adj}__dual")


def _rename_out(f: str, name: str) -> str:
    """F's text with `out` read as `name`."""
    tree = gast_parse(f, mode="eval").body
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and n.id == "out":
            n.id = name
    return unparse(tree)


class OutputPartial:
    """A kernel's partial w.r.t. its product, not stored: `h` (the kernel's values) and
    the adjoint kernel that multiplies F(h) by a seed (module docstring)."""

    __slots__ = ("h", "kernels", "backend")

    def __init__(self, h: np.ndarray, kernels: OutKernels, backend):
        self.h, self.kernels, self.backend = h, kernels, backend

    def array(self) -> np.ndarray:
        """The partial the stored way would have stored: F(h), the same bits."""
        prep = runtime.prepare((self.h, 1.0, 0.0), self.kernels.adjoint.params, self.h.dtype)
        out = np.empty(self.h.shape, self.h.dtype)
        runtime.launch(self.kernels.adjoint, self.backend, LoopSpec(prep.layouts), (), prep, out=out)
        return out


# ---------------------------------------------------------------- a kernel's launch per block

def block_launch(kernel, backend, spec: LoopSpec, active: tuple, template, m: int, shapes_of):
    """launch(values, rows, out, grads): runtime.launch of `kernel` over one block of `rows`
    rows of m columns, with `template`'s layouts and dtype (the block's shapes:
    shapes_of(rows)), seed 1.0. Each block height's plan is found once (runtime.launch_plan)
    and its driver's call made directly: runtime.launch's work per block (a Prepared,
    its key) is Python the blocks of a pass on two threads ran one at a time."""
    runs: dict = {}

    def launch(values: list, rows: int, out, grads) -> None:
        run = runs.get(rows)
        if run is None:
            prep = dataclasses.replace(template, shape=(rows, m), values=values, shapes=shapes_of(rows))
            dims, _, run, _ = runtime.launch_plan(kernel, backend, spec, active, prep)
            if len(dims) != 2:          # (a block is 2-D: never; runtime.launch walks leading dims)
                if recording():
                    raise Decline("a block launched over leading dims")
                runtime.launch(kernel, backend, spec, active, prep, out=out, seed=1.0, grads=grads)
                return
            runs[rows] = run
        call_stub(run, values, out, grads)
    return launch


# ---------------------------------------------------------------- forward: h alone, checked

def out_partials(rows, kernels: OutKernels, chosen, args: tuple, at: int, shape: tuple, dtype, blocks: int,
                 in_blocks) -> tuple | None:
    """(h, OutputPartial) of the layer's kernel over the product `rows` makes (at
    position `at` of `args`), in `blocks` blocks through `in_blocks(run_block)`; None
    where some element's partial is not F(h) (the caller stores it)."""
    m = shape[1]
    full = args[:at] + (np.empty((2, m), dtype),) + args[at + 1:] + (0.0,)
    template = runtime.prepare(full, kernels.check.params, dtype)
    spec = LoopSpec(template.layouts, value="store", partials=True, seed="scalar")
    active = kernels.check.params[-1:]
    h = np.empty(shape, dtype)
    counts = np.zeros(blocks, np.float64)

    launch = block_launch(kernels.check, chosen, spec, active, template, m, lambda r: [
        (r, m) if j == at else s for j, s in enumerate(template.shapes)])

    def run_block(lo: int, hi: int, scratch: np.ndarray, i: int) -> None:
        rows(lo, hi, scratch)
        values = list(template.values)
        values[at] = scratch
        launch(values, hi - lo, h[lo:hi], [counts[i:i + 1]])
    in_blocks(run_block)
    if np.count_nonzero(counts):      # (counts.any() goes through Python: numpy's _methods)
        return None
    return h, OutputPartial(h, kernels, chosen)


# ---------------------------------------------------------------- reverse: F(h) * (G @ W.T), summed

def out_sums(rows, d: OutputPartial, out_at, block_sums: np.ndarray, in_blocks) -> None:
    """out_at(lo, hi) = F(h) * (the product `rows` makes), a block at a time (out_at:
    the array each block's rows are written to), and each block's column sums into its
    row of block_sums (zeros on entry)."""
    h, adjoint = d.h, d.kernels.adjoint
    m, dtype = h.shape[1], h.dtype
    template = runtime.prepare((np.empty((2, m), dtype), np.empty((2, m), dtype), np.zeros((1, m), dtype)),
                               adjoint.params, dtype)
    spec = LoopSpec(template.layouts, value="store", partials=True, seed="scalar")
    bias = template.values[2]
    launch = block_launch(adjoint, d.backend, spec, ("bias",), template, m, lambda r: [(r, m), (r, m), (1, m)])

    def run_block(lo: int, hi: int, scratch: np.ndarray, i: int) -> None:
        rows(lo, hi, scratch)
        launch([h[lo:hi], scratch, bias], hi - lo, out_at(lo, hi), [block_sums[i:i + 1]])
    in_blocks(run_block)
