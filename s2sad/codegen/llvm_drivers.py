"""Drivers: the loops that apply a kernel module's entry over the index space.

`lower_module` renders a module's scalar functions (`llvm_lower`) and one driver with
the C ABI of kernel.py, chosen by the type of the spec:

- `LoopSpec` (`_emit_loop_driver`): every element independently, row-major; sums are
  carried in registers with `reassoc nsz` adds so that the loop vectorises.
- `ScanSpec` (`llvm_scan_driver`): the elements in order (flat index),
  in blocks of BLOCK; the state-free part of the entry (`passes/scansplit.py`) runs over
  a block as a vectorised loop into stack buffers, then the block's serial chain with
  the k states (and lambda, the adjoint of the state) in phis. With a tape, the forward
  sweep stores the state before each element and the reverse sweep walks the blocks
  backwards calling the dual at (params(e), tape[e]); without one (no partial depends
  on the state), one serial loop runs the forward chain on a block and the reverse
  chain on its mirror block.

Both are built from `llvm_driver_body.DriverBody`: arguments by layout, element addressing, gradient
updates, `nest` (the loop driver's two counted loops, o outer and i inner) and `loop`
(one counted loop whose body may hold loops).

Sums (the value's and each scalar param's gradient, kernel.py's `acc` and GRAD(scalar))
are carried and stored as double whatever the dtype (`ACC`): a float32 term is widened
before it is added, so that 10^7 float32 terms sum with float64's error, not float32's
(a float32 sum of 2e7 x 0.1 is 0.3% off). The caller rounds the total to the dtype.
Likewise a float32 column's gradient (a param broadcast along the inner axis) is summed
over each row in a double, added into its float cell once per row (`nest`'s row sums).
For float64 nothing is widened: the float64 drivers are what they were. A float32 loop
with double sums would be vectorised at double's width (half the lanes, and libmvec's
float variants not called): its inner loop is given float32's width (`LOOP_HINT`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from ..kernel import KernelModule, LoopSpec, ScanSpec
from ..passes.scansplit import scan_plan
from .llvm_driver_body import ACC, DriverBody, active_indices
from .llvm_lower import ALL_VECTOR_ISAS, LoweringError, ModuleWriter, driver_name
from .llvm_scan_driver import emit_scan_driver

__all__ = ["lower_module", "driver_name", "ACC"]


def lower_module(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, *,
                 vector_isas: Iterable[str] = ALL_VECTOR_ISAS,
                 available: Callable[[str], bool] | None = None, own_math: bool = True,
                 vector_bits: int | None = None) -> str:
    """LLVM IR text of the module for (kmod, spec, dtype); see `llvm_lower`'s docstring.

    `vector_isas` are the libmvec ISAs (of "b", "d", "e") whose variants calls may name
    (each function calls the widest); `available(symbol)` filters the variants (the JIT
    passes what this host can run). `own_math`: s2sad's own vector math (`vecmath`) for
    the functions without a variant; else those call libm. `vector_bits`: the host's
    vector width, for s2sad's own vector functions where no libmvec ISA gives it.
    """
    plan = extra = None
    if isinstance(spec, ScanSpec):
        emit = emit_scan_driver
        plan = scan_plan(kmod, spec.n_state, spec.grads)
        extra = {f.name: f for part in (plan.primal, plan.dual) if part is not None and part.pre is not None
                 for f in (part.pre, part.rest)}
        kmod = dataclasses.replace(kmod, functions={**kmod.functions, **extra})
    elif isinstance(spec, LoopSpec):
        emit = _emit_loop_driver
    else:
        raise TypeError(f"a driver is made from a LoopSpec or a ScanSpec, not {type(spec).__name__}")
    m = ModuleWriter(kmod, spec, dtype, vector_isas, available, own_math, vector_bits)
    if plan is not None:
        m.scan_plan = plan
        m.extra_roots = tuple(extra)
    return m.render(emit)


# ---------------------------------------------------------------------------------
# LoopSpec: every element independently

def _emit_loop_driver(m: ModuleWriter) -> str:
    kmod, spec = m.kmod, m.spec
    T = m.ty.name
    d = DriverBody(m)

    if len(spec.layouts) != len(kmod.params):
        raise LoweringError(f"spec has {len(spec.layouts)} layouts for {len(kmod.params)} parameters")
    n_outer = d.arg("i64", "n_outer")
    n_inner = d.arg("i64", "n_inner")
    params = [d.layout_args(p, lay) for p, lay in zip(kmod.params, spec.layouts)]
    out = d.arg("ptr noalias", "out") if spec.value == "store" else None
    acc = d.arg("ptr noalias", "acc") if spec.value == "sum" else None
    seed = d.seed_arg(spec.seed) if spec.partials else None
    active_idx = active_indices(kmod, kmod.active if spec.needs_dual else (), kmod.params)
    grads = ([d.grad_args(kmod.params[k] + "_bar", spec.layouts[k]) for k in active_idx]
             if spec.partials else [])
    tangents = ([d.layout_args(kmod.params[k] + "_dot", spec.layouts[k]) for k in active_idx]
                if spec.tangents else [])
    out_dot = d.arg("ptr noalias", "out_dot") if spec.tangents else None

    callee = kmod.dual_entry if spec.needs_dual else kmod.entry
    arity = m.arity(callee)
    if spec.needs_dual and arity != 1 + len(active_idx):
        raise LoweringError(f"{callee} returns {arity} values; the value and {len(active_idx)} partials are due")
    if not spec.needs_dual and arity != 1:
        raise LoweringError(f"{callee} returns {arity} values where one is due")

    # sums carried in registers and added into memory once, at the end: (base name, pointer)
    accs: list[tuple[str, str]] = []
    if acc:
        accs.append(("value", acc))
    accs.extend((g[2], g[1]) for g in grads if g[0] == "sum")
    acc_names = {ptr: d.fresh(name + ".sum") for name, ptr in accs}
    # a float32 column's gradient: a double sum per row (`nest`)
    row_sums = [(g[2] + ".col", g) for g in grads if g[0] == "column"] if d.T != d.A else []
    if (accs or row_sums) and d.T != d.A:     # double sums in a float32 loop: vectorise at float32's width
        d.lanes = d.dtype_lanes()

    d.start(d.new_block("entry"))

    def element(cs: list[Carried]) -> None:
        sums = {ptr: c for (_, ptr), c in zip(accs, cs)}
        args = [d.read(g, p) for g, p in zip(params, kmod.params)]
        if arity == 1:
            _, value = d.call(callee, args, "value")
            partials = []
        else:
            rtype, res = d.call(callee, args, "dual")
            value = d.inst("value", f"extractvalue {rtype} {res}, 0")
            partials = [d.inst(kmod.params[k] + ".partial", f"extractvalue {rtype} {res}, {n + 1}")
                        for n, k in enumerate(active_idx)]
        if out:
            d.emit(f"store {T} {value}, ptr {d.flat_ptr(out, 'out')}")
        if acc:
            c = sums[acc]
            d.accumulate(c.nxt, c.cur, value, "value")
        if spec.partials:
            s = d.seed_value(seed, spec.seed)
            for k, g, dv in zip(active_idx, grads, partials):
                base = kmod.params[k] + "_bar"
                d.add_to_grad(g, base, d.inst(base + ".c", f"fmul {T} {dv}, {s}"), sums)
        if spec.tangents:
            total = "0.0"
            for k, t, dv in zip(active_idx, tangents, partials):
                tv = d.read(t, kmod.params[k] + "_dot")
                prod = d.inst(kmod.params[k] + ".jvp", f"fmul {T} {dv}, {tv}")
                total = d.inst("out_dot.sum", f"fadd {T} {total}, {prod}")
            d.emit(f"store {T} {total}, ptr {d.flat_ptr(out_dot, 'out_dot')}")

    cs = d.nest(n_outer, n_inner, params + grads + tangents,
                [(acc_names[ptr], "0.0") for _, ptr in accs], element, row_sums=row_sums)
    for (name, ptr), c in zip(accs, cs):
        d.flush_sum(name, ptr, c.outer)
    d.terminate("ret void")
    return d.render_driver()
