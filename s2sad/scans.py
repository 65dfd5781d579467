"""Scans: state-passing kernels (stateful functions) applied over arrays, elements in order.

A state-passing kernel (see kernel.py, "Scan drivers") runs its elements in order.
Inputs are materialized at the broadcast shape (one row-major run); gradients of
broadcast inputs are summed back to their shapes afterwards (reduce.unbroadcast, as
every adjoint is). `scan_apply` runs the
primal, `scan_grads` its forward and reverse sweeps; for float scalars and
C-contiguous arrays of one shape on the llvm backend, `scan_grads` takes the lean path
(`_fast_scan_grads`: the pointers straight from the arrays, a cached driver).

Invariants: as runtime's (the user's arrays never written; each gradient of its
argument's shape; sums in `acc_dtype`, rounded once); a scan driver is made once per
(backend, active, ScanSpec, dtype) and kept on the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import backends
from .backends import LLVM, Backend
from .backends.host import ACC_DTYPE, rounded
from .backends.llvm import ptr
from .fastpath import entry_of, fast_layouts
from .kernel import ScanSpec
from .reduce import unbroadcast
from .runkernel import Kernel

def _scan_inputs(kernel: Kernel, args: Sequence[Any], n_state: int, backend: Backend):
    names = kernel.params[: len(kernel.params) - n_state]
    xp, prep = backend.xp, backend.prepare(args, names)
    values, layouts = [], []
    for v, l in zip(prep.values, prep.layouts):
        if l == "scalar":
            values.append(v)
            layouts.append("scalar")
        else:
            values.append(xp.ascontiguousarray(xp.broadcast_to(v, prep.shape)).reshape(-1))
            layouts.append("contig")
    return xp, prep, values, tuple(layouts)


def _scan_driver(kernel: Kernel, backend: Backend, active: tuple[str, ...], spec: ScanSpec, dtype: np.dtype):
    """The backend's scan driver for the kernel's dual w.r.t. `active` and the state
    (primal only without grads), made once per (backend, active, spec, dtype)."""
    def make():
        kmod = kernel.module(active + kernel.params[len(kernel.params) - spec.n_state:]) if spec.grads \
            else kernel.module(())
        return backend.compile_scan(kernel, kmod, active, spec, dtype)
    return kernel.cached(("scan", backend.name, active, spec, dtype), make)


def scan_apply(kernel: Kernel, args: Sequence[Any], state: Sequence[float],
               backend: str | backends.Choice = "auto", value: str = "store"):
    """The primal of a state-passing kernel, elements in order: (values, final state)."""
    n_state = len(state)
    backend = backends.backend_for(backend, args)
    xp, prep, values, layouts = _scan_inputs(kernel, args, n_state, backend)
    spec = ScanSpec(layouts, n_state, value=value)
    st = xp.array(state, dtype=prep.dtype)
    n = int(np.prod(prep.shape, dtype=np.int64))
    out = xp.empty(prep.shape, prep.dtype) if value == "store" else None
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype))
    _scan_driver(kernel, backend, (), spec, prep.dtype)(n, values, st, out=None if out is None else out.reshape(-1),
                                                         acc=acc)
    return ((backend.results(args, out) if value == "store" else rounded(acc[0], prep.dtype)),
            [float(v) for v in st.tolist()])


def scan_grads(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], state: Sequence[float],
               seed: Any = 1.0, value: str = "sum", backend: str | backends.Choice = "auto"):
    """Forward sweep and reverse sweep of a state-passing kernel: (values or their sum,
    grads of sum(seed * values) w.r.t. the active params, final state)."""
    n_state = len(state)
    choice = backends.choose(backend)
    if choice.fast_path and type(seed) is float and value == "sum":
        fast = fast_layouts(args)
        if fast is not None:
            return _fast_scan_grads(kernel, args, active, state, seed, fast)
    inputs = list(args) + [seed]
    backend = choice.resolve(inputs)
    xp, prep, values, layouts = _scan_inputs(kernel, args, n_state, backend)
    seed_kind = "scalar" if np.ndim(seed) == 0 else "array"
    spec = ScanSpec(layouts, n_state, value=value, grads=True, seed=seed_kind)
    n = int(np.prod(prep.shape, dtype=np.int64))
    st = xp.array(state, dtype=prep.dtype)
    st_bar = xp.zeros(n_state, prep.dtype)
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype))
    out = xp.empty(n, prep.dtype) if value == "store" else None
    grads = [xp.zeros(1, backend.acc_dtype(prep.dtype)) if layouts[kernel.params.index(a)] == "scalar"
             else xp.empty(n, prep.dtype)
             for a in active]
    s = float(seed) if seed_kind == "scalar" else xp.ascontiguousarray(
        xp.broadcast_to(xp.asarray(seed, dtype=prep.dtype), prep.shape)).reshape(-1)
    _scan_driver(kernel, backend, active, spec, prep.dtype)(n, values, st, out=out, acc=acc, seed=s, grads=grads,
                                                            state_bar=st_bar)
    shaped = []
    for a, g in zip(active, grads):
        i = kernel.params.index(a)
        if layouts[i] == "scalar":
            g = g.astype(prep.dtype, copy=False)     # a sum in float64: rounded once
            shaped.append(g.reshape(prep.shapes[i]) if prep.shapes[i] != () else g.reshape(()))
        else:
            shaped.append(unbroadcast(g.reshape(prep.shape), args[i]))
    vals = backend.results(inputs, out.reshape(prep.shape)) if value == "store" else rounded(acc[0], prep.dtype)
    return vals, backend.results(inputs, shaped), [float(v) for v in st.tolist()]


@dataclass
class _FastScan:
    """What a fast scan call needs, made once per (active, layouts, dtype, k)."""

    cfunc: Any
    needs_tape: bool
    no_tape: np.ndarray
    contig: list[bool]         # per param: an array (else a scalar)
    contig_grads: list[bool]   # per active param
    compiled: Any = None
    # the driver's Python entry (llvm_entry), for scans that need no tape: as _FastPlan's
    entry: Any = None
    called: bool = False


def _fast_scan_grads(kernel: Kernel, args, active, state, seed: float, fast):
    """scan_grads for float scalars and C-contiguous arrays of one shape on the llvm
    backend: the pointers straight from the arrays, no broadcasting, a cached driver."""
    layouts, shape, dtype = fast
    k = len(state)

    def make() -> _FastScan:
        spec = ScanSpec(layouts, k, value="sum", grads=True, seed="scalar")
        d = _scan_driver(kernel, LLVM, active, spec, dtype)
        idx = [kernel.params.index(a) for a in active]
        return _FastScan(d.cfunc, d.needs_tape, d.no_tape, [l == "contig" for l in layouts],
                         [layouts[i] == "contig" for i in idx], d.compiled, False if d.needs_tape else None)

    fs = kernel.cached(("scanfast", active, layouts, dtype, k), make)
    entry = fs.entry if fs.entry is not None else entry_of(fs, fs.compiled)
    if entry:   # one call into machine code, up to llvm_entry.ENTRY_MAX elements
        res = entry(*args, *state, seed, False)
        if res is not NotImplemented:
            kernel.entries[("scan", active)] = entry     # the signature in use, for derivative's hot path
            return res[0], list(res[1:1 + len(active)]), list(res[1 + len(active):])
    n = 1
    for m in shape:
        n *= m
    st = np.array(state, dtype)
    st_bar = np.zeros(k, dtype)
    acc = np.zeros(1, ACC_DTYPE)
    grads = [np.empty(shape, dtype) if c else np.zeros(1, ACC_DTYPE) for c in fs.contig_grads]
    tape = np.empty(n * k, dtype) if fs.needs_tape else fs.no_tape
    argv = [1, n] + [ptr(a) if c else a for a, c in zip(args, fs.contig)]
    argv += [ptr(st), ptr(acc), seed] + [ptr(g) for g in grads] + [ptr(st_bar), ptr(tape)]
    fs.cfunc(*argv)
    return (rounded(acc[0], dtype), [g if c else g.astype(dtype).reshape(()) for g, c in zip(grads, fs.contig_grads)],
            [float(v) for v in st.tolist()])
