"""The cuda backend: cupy arrays in, CUDA kernels (codegen/cuda.py, launched by
`cuda_launch`), cupy arrays out.

The runtime keeps the orchestration (broadcasting, layouts, the index space); this
backend gives it the pieces that touch cupy: `resolve` (cupy and a device, or
BackendUnavailableError saying what is missing), `prepare` (the non-scalar inputs as
C-contiguous cupy arrays of the compute dtype), the loop and scan drivers (a scan runs
sequentially in ONE GPU thread), and `results` (results stay where the inputs were).

cupy is imported lazily (an optional heavy library): only when a cupy array reaches
the runtime (then it is already imported) or `backend="cuda"` is asked for;
`arraymodule.is_cupy` looks in `sys.modules` and never imports it.

Where results live: with a cupy array among the inputs, every array the runtime returns
is a cupy array allocated on the current device (reduced values, such as the loss of
`sum_dual`, are Python floats, as on the CPU: reading one waits for the kernel). With
`backend="cuda"` and only numpy arrays or numbers, the inputs are copied to the device
and the results copied back: numpy in, numpy out. Sums are in the dtype (the block
sums are a tree already).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..codegen import cuda as cudagen
from ..errors import BackendUnavailableError
from ..kernel import KernelModule, LoopSpec, ScanSpec, active_indices
from . import cuda_launch
from .arraymodule import any_cupy, is_cupy
from .arrays import Prepared, broadcast_shape
from .base import Backend


def require():
    """The cupy module, once `cuda_launch.available()` says cupy imports and a device exists."""
    msg = cuda_launch.available()
    if msg is not None:
        raise BackendUnavailableError(
            f"backend='cuda' is unavailable: {msg}",
            hint="Install cupy (pip install 's2sad[cuda]') on a machine with a CUDA device, "
                 "or use backend='llvm' with numpy arrays.")
    return cupy_module()


def cupy_module():
    import cupy   # lazy: an optional heavy library

    return cupy


# ------------------------------------------------------------------ inputs

def _dtype_of(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") and not isinstance(a, (float, int)) else np.asarray(a).dtype


def compute_dtype(arrays: Sequence[Any]) -> np.dtype:
    """As arrays.compute_dtype, for cupy arrays too: float32 when every floating input
    is float32, else float64."""
    floats = [_dtype_of(a) for a in arrays if type(a) not in (float, int, bool) and _dtype_of(a).kind == "f"]
    if floats and all(d.itemsize == 4 for d in floats):     # (either byte order)
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def prepare(args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None) -> Prepared:
    """arrays.prepare for the device: one-element inputs become scalars (read back to
    the host), the others C-contiguous cupy arrays of the compute dtype (no copy when
    they already are; numpy arrays are copied to the device)."""
    cp = cupy_module()
    arrays = []
    for a in args:
        if is_cupy(a):
            arrays.append(a)
            continue
        h = np.asarray(a)
        arrays.append(h if h.size == 1 else cp.asarray(h))
    dtype = np.dtype(dtype) if dtype is not None else compute_dtype(args)     # (Python numbers weak, as numpy 2)
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
    """A driver in the generic convention (`base.strided_run`): arrays come as (flat
    array, offset, so, si)."""
    tag = cudagen.dtype_tag(dtype)
    source = cudagen.lower(kmod, spec, tag)   # once: the driver is cached per spec and dtype

    def flat(p):
        if isinstance(p, tuple):
            arr, off, so, si = p
            return (_from(arr, off), so, si)
        return p

    def call(spec, active_idx, n_outer, n_inner, params, out, acc, seed, grads, tangents, out_dot):
        cuda_launch.launch(kmod, spec, tag, n_outer, n_inner, [flat(p) for p in params],
                           out=None if out is None else _from(out[0], out[1]), acc=acc,
                           seed=_from(seed[0], seed[1]) if isinstance(seed, tuple) else seed,
                           grads=None if grads is None else [flat(g) for g in grads],
                           tangents=None if tangents is None else [flat(t) for t in tangents],
                           out_dot=None if out_dot is None else _from(out_dot[0], out_dot[1]),
                           source=source)
    return call


def scan_driver(kmod: KernelModule, spec: ScanSpec, dtype: Any) -> Callable:
    """A scan driver (`Backend.compile_scan`): contig params are flat arrays of n
    elements; the scan runs in one GPU thread (codegen/cuda.py, "Scan drivers")."""
    tag = cudagen.dtype_tag(dtype)
    source = cudagen.lower(kmod, spec, tag)
    active_idx = active_indices(kmod, spec)

    def d(n, params, state, out=None, acc=None, seed=None, grads=None, state_bar=None):
        p = [v if lay == "scalar" else (v, n, 1) for v, lay in zip(params, spec.layouts)]
        g = None if grads is None else [gr if spec.layouts[i] == "scalar" else (gr, n, 1)
                                        for i, gr in zip(active_idx, grads)]
        cuda_launch.launch(kmod, spec, tag, 1, n, p, out=out, acc=acc, seed=seed, grads=g, state=state,
                           state_bar=state_bar, source=source)
    return d


# ------------------------------------------------------------------ results

def to_host(obj: Any) -> Any:
    """cupy arrays (also inside lists and tuples) as numpy arrays."""
    if is_cupy(obj):
        return cupy_module().asnumpy(obj)
    if isinstance(obj, list):
        return [to_host(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_host(o) for o in obj)
    return obj


def like_inputs(args: Sequence[Any], result: Any) -> Any:
    """`result` as is when a cupy array is among the inputs, else copied back to numpy."""
    return result if any_cupy(args) else to_host(result)


class CudaBackend(Backend):
    name = "cuda"

    def resolve(self, arrays: Sequence[Any]) -> Backend:
        require()
        return self

    @property
    def xp(self) -> Any:
        return cupy_module()

    def prepare(self, args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None) -> Prepared:
        return prepare(args, names, dtype)

    def acc_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype

    def results(self, inputs: Sequence[Any], result: Any) -> Any:
        return like_inputs(inputs, result)

    def compile_loop(self, kernel: Any, active: tuple[str, ...], spec: LoopSpec, dtype: np.dtype) -> Any:
        return kernel.cached(("launch", self.name, active, spec, dtype),
                             lambda: loop_driver(kernel.module(active), spec, dtype))

    def compile_scan(self, kernel: Any, kmod: Any, active: tuple[str, ...], spec: ScanSpec,
                     dtype: np.dtype) -> Callable:
        return scan_driver(kmod, spec, dtype)


CUDA = CudaBackend()
