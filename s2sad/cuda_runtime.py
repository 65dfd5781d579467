"""The runtime's cuda side: cupy arrays in, CUDA kernels (`codegen/cuda.py`), cupy arrays out.

`runtime.py` keeps the orchestration (broadcasting, layouts, the index space, which
driver); when the backend is "cuda" it asks this module for the pieces that touch
cupy:

    require()                           cupy, or BackendUnavailableError saying what is missing
    prepare(args, names, dtype)         runtime.Prepared with the non-scalar inputs as
                                        C-contiguous cupy arrays of the compute dtype
    xp()                                the cupy module (outputs are allocated with it)
    loop_driver(kmod, spec, dtype)      a driver in runtime.launch's calling convention
    scan_driver(kmod, spec, dtype)      a driver in runtime._scan_driver's convention:
                                        the scan runs sequentially in ONE GPU thread
    like_inputs(args, result)           results stay where the inputs were

cupy is imported lazily: only when a cupy array reaches the runtime (then it is already
imported) or `backend="cuda"` is asked for; `is_cupy` looks in `sys.modules` and never
imports it.

Where results live: with a cupy array among the inputs, every array the runtime returns
is a cupy array allocated on the current device (reduced values, such as the loss of
`sum_dual`, are Python floats, as on the CPU: reading one waits for the kernel). With
`backend="cuda"` and only numpy arrays or numbers, the inputs are copied to the device
and the results copied back: numpy in, numpy out.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np

from .errors import BackendUnavailableError
from .kernel import KernelModule, LoopSpec, ScanSpec, active_indices


def is_cupy(a: Any) -> bool:
    """Whether `a` is a cupy array (without importing cupy: none exists before it is)."""
    cp = sys.modules.get("cupy")
    if cp is None:
        return False
    nd = getattr(cp, "ndarray", None)
    return isinstance(nd, type) and nd is not np.ndarray and isinstance(a, nd)


def any_cupy(args: Sequence[Any]) -> bool:
    return any(is_cupy(a) for a in args)


def require():
    """The cupy module, once `cuda.available()` says cupy imports and a device exists."""
    from .codegen import cuda

    msg = cuda.available()
    if msg is not None:
        raise BackendUnavailableError(
            f"backend='cuda' is unavailable: {msg}",
            hint="Install cupy (pip install 's2sad[cuda]') on a machine with a CUDA device, "
                 "or use backend='llvm' with numpy arrays.")
    import cupy

    return cupy


def xp():
    import cupy

    return cupy


# ------------------------------------------------------------------ inputs

def _dtype_of(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") and not isinstance(a, (float, int)) else np.asarray(a).dtype


def compute_dtype(arrays: Sequence[Any]) -> np.dtype:
    """As runtime.compute_dtype: float32 when every floating input is float32, else float64."""
    floats = [_dtype_of(a) for a in arrays if _dtype_of(a).kind == "f"]
    if floats and all(d == np.float32 for d in floats):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def prepare(args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None):
    """runtime.prepare for the device: one-element inputs become scalars (read back to
    the host), the others C-contiguous cupy arrays of the compute dtype (no copy when
    they already are; numpy arrays are copied to the device)."""
    from .runtime import Prepared, broadcast_shape

    cp = xp()
    arrays = []
    for a in args:
        if is_cupy(a):
            arrays.append(a)
            continue
        h = np.asarray(a)
        arrays.append(h if h.size == 1 else cp.asarray(h))
    dtype = np.dtype(dtype) if dtype is not None else compute_dtype(arrays)
    shape = broadcast_shape(arrays, names)
    layouts, values = [], []
    for a in arrays:
        if a.size == 1:
            layouts.append("scalar")
            v = a.reshape(())
            values.append((v.astype(dtype) if v.dtype != dtype else v).item())
        else:
            c = cp.ascontiguousarray(a, dtype=dtype)  # no copy when already so
            layouts.append("contig" if tuple(c.shape) == shape else "strided")
            values.append(c)
    return Prepared(shape, dtype, tuple(layouts), values, [tuple(a.shape) for a in arrays])


# ------------------------------------------------------------------ drivers

def _from(arr: Any, off: int) -> Any:
    """The flat device array from element `off` on (a view: the kernel gets its pointer)."""
    return arr if off == 0 else arr[off:]


def loop_driver(kmod: KernelModule, spec: LoopSpec, dtype: Any) -> Callable:
    """A driver for runtime.launch: arrays come as (flat array, offset, so, si)."""
    from .codegen import cuda

    tag = cuda.dtype_tag(dtype)
    source = cuda.lower(kmod, spec, tag)   # once: runtime caches the driver per spec and dtype

    def flat(p):
        if isinstance(p, tuple):
            arr, off, so, si = p
            return (_from(arr, off), so, si)
        return p

    def call(spec, active_idx, n_outer, n_inner, params, out, acc, seed, grads, tangents, out_dot):
        cuda.launch(kmod, spec, tag, n_outer, n_inner, [flat(p) for p in params],
                    out=None if out is None else _from(out[0], out[1]), acc=acc,
                    seed=_from(seed[0], seed[1]) if isinstance(seed, tuple) else seed,
                    grads=None if grads is None else [flat(g) for g in grads],
                    tangents=None if tangents is None else [flat(t) for t in tangents],
                    out_dot=None if out_dot is None else _from(out_dot[0], out_dot[1]),
                    source=source)
    return call


def scan_driver(kmod: KernelModule, spec: ScanSpec, dtype: Any) -> Callable:
    """A driver for runtime._scan_driver: contig params are flat arrays of n elements;
    the scan runs in one GPU thread (`cuda` module docstring, "Scan drivers")."""
    from .codegen import cuda

    tag = cuda.dtype_tag(dtype)
    source = cuda.lower(kmod, spec, tag)
    active_idx = active_indices(kmod, spec)

    def d(n, params, state, out=None, acc=None, seed=None, grads=None, state_bar=None):
        p = [v if lay == "scalar" else (v, n, 1) for v, lay in zip(params, spec.layouts)]
        g = None if grads is None else [gr if spec.layouts[i] == "scalar" else (gr, n, 1)
                                        for i, gr in zip(active_idx, grads)]
        cuda.launch(kmod, spec, tag, 1, n, p, out=out, acc=acc, seed=seed, grads=g, state=state,
                    state_bar=state_bar, source=source)
    return d


# ------------------------------------------------------------------ results

def to_host(obj: Any) -> Any:
    """cupy arrays (also inside lists and tuples) as numpy arrays."""
    if is_cupy(obj):
        return xp().asnumpy(obj)
    if isinstance(obj, list):
        return [to_host(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_host(o) for o in obj)
    return obj


def like_inputs(args: Sequence[Any], result: Any) -> Any:
    """`result` as is when a cupy array is among the inputs, else copied back to numpy."""
    return result if any_cupy(args) else to_host(result)
