"""The python backend: kernels run as plain Python over smath numbers (the reference).

Its drivers are `codegen/python.py`'s `run_driver` and `run_scan`, the semantics every
compiled driver is tested against; slow, and exact about IEEE results. Host memory
(numpy), sums in float64 in element order.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..codegen import python as pycode
from ..kernel import LoopSpec, ScanSpec
from .host import HostBackend


class PythonBackend(HostBackend):
    name = "python"

    def compile_loop(self, kernel: Any, active: tuple[str, ...], spec: LoopSpec, dtype: np.dtype) -> Any:
        def make():
            kmod = kernel.module(active)
            fns = kernel.python_functions(kmod.active)
            return _loop_driver(fns[kmod.dual_entry if spec.needs_dual else kmod.entry])
        return kernel.cached(("launch", self.name, active, spec, dtype), make)

    def compile_scan(self, kernel: Any, kmod: Any, active: tuple[str, ...], spec: ScanSpec,
                     dtype: np.dtype) -> Callable:
        fns = kernel.python_functions(kmod.active)
        primal, dual = fns[kmod.entry], fns.get(kmod.dual_entry) if kmod.dual_entry else None
        active_idx = tuple(kernel.params.index(a) for a in active)

        def d(n, params, state, out=None, acc=None, seed=None, grads=None, state_bar=None):
            p = [v if l == "scalar" else (v, n, 1) for v, l in zip(params, spec.layouts)]
            g = None if grads is None else [gr if spec.layouts[i] == "scalar" else (gr, n, 1)
                                           for i, gr in zip(active_idx, grads)]
            pycode.run_scan(primal, dual, spec, active_idx, 1, n, p, state, out=out, acc=acc, seed=seed,
                            grads=g, state_bar=state_bar)
        return d


def _loop_driver(fn: Callable) -> Callable:
    """`run_driver` of `fn` in the generic convention (`base.strided_run`): (array,
    offset, so, si) becomes (the array from offset on, so, si)."""
    def call(spec, active_idx, n_outer, n_inner, params, out, acc, seed, grads, tangents, out_dot):
        def flat(p):
            if isinstance(p, tuple):
                arr, off, so, si = p
                return (arr[off:], so, si)
            return p
        pycode.run_driver(
            fn, spec, active_idx, n_outer, n_inner, [flat(p) for p in params],
            out=None if out is None else out[0][out[1]:], acc=acc,
            seed=seed[0][seed[1]:] if isinstance(seed, tuple) else seed,
            grads=None if grads is None else [flat(g) if isinstance(g, tuple) else g for g in grads],
            tangents=None if tangents is None else [flat(t) for t in tangents],
            out_dot=None if out_dot is None else out_dot[0][out_dot[1]:])
    return call


PYTHON = PythonBackend()
