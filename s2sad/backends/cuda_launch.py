"""Launching the cuda backend's drivers: the launch configuration, the partials buffer,
the finish step, and the call through cupy.RawKernel (`CupyLauncher`) or g++'s host
emulation (`cuda_host`).

`execute` owns what is common to every launch (`launch_config`: block 256, enough
blocks for one element per thread, at most a full device's worth; the partials of the
block sums and the `<driver>__finish` kernel; for a `ScanSpec` the one-thread launch
and the tape, see codegen/cuda.py, "Scan drivers"); only the way a kernel is called
differs between launchers. `codegen/cuda.py` writes the source; nothing here writes C.

cupy is imported lazily (an optional heavy library): only when a launch on the device
is asked for, or `available()` checks for it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..codegen.cuda import (DEFAULT_BLOCK, MAX_BLOCK, Arg, driver_args, driver_name, dtype_tag, finish_args,
                            lower, reduced)
from ..errors import BackendUnavailableError
from ..kernel import KernelModule, LoopSpec, ScanSpec, active_indices



def launch_config(n: int, block: int = DEFAULT_BLOCK, max_grid: int = 1024) -> tuple[int, int]:
    """(grid, block) for n elements: enough blocks for one element per thread, at most
    max_grid (the grid-stride loop covers the rest), at least one."""
    grid = max(1, min(max_grid, -(-n // block)))
    return grid, block


def _flat(p: Any) -> tuple[Any, int, int]:
    if isinstance(p, tuple):
        arr, so, si = p
        return arr, int(so), int(si)
    return p, 0, 0


def _values(args: list[Arg], get: Callable[[Arg], Any]) -> list[tuple[Arg, Any]]:
    return [(a, get(a)) for a in args]


def execute(launcher: Any, kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any, n_outer: int,
            n_inner: int, params: Sequence[Any], out: Any = None, acc: Any = None,
            seed: Any = None, grads: Sequence[Any] | None = None,
            tangents: Sequence[Any] | None = None, out_dot: Any = None,
            grid: int | None = None, block: int | None = None, state: Any = None,
            state_bar: Any = None, source: str | None = None) -> None:
    """Run a driver and its finish step through `launcher`, which provides
    `max_grid(block)`, `empty(n, tag)`, `check(array, tag, what)` and
    `call(source, kernel_name, tag, grid, block, [(Arg, value), ...])`; argument conventions
    are those of `python.run_driver`, and for a `ScanSpec` those of `python.run_scan`
    (`state`, `state_bar`; the tape is allocated here). A scan runs as one thread: grid
    and block default to 1 (any other shape computes the same: only thread 0 of block 0
    works). `source` is `lower(kmod, spec, dtype)` when the caller has it already."""
    tag = dtype_tag(dtype)
    if source is None:
        source = lower(kmod, spec, tag)
    name = driver_name(kmod, spec, tag)
    n_outer, n_inner = int(n_outer), int(n_inner)
    n = n_outer * n_inner
    scan = isinstance(spec, ScanSpec)
    red = reduced(kmod, spec)
    if scan:
        grid, block = int(grid or 1), int(block or 1)
    else:
        block = int(block or DEFAULT_BLOCK)
        if grid is None:
            grid, block = launch_config(n, block, launcher.max_grid(block))
    grid = int(grid)
    if grid < 1 or block < 1:
        raise ValueError(f"bad launch shape grid={grid} block={block}")
    if red and block > MAX_BLOCK:
        raise ValueError(f"a reducing driver takes at most {MAX_BLOCK} threads per block, not {block}")
    active = active_indices(kmod, spec)
    act_pos = {j: m for m, j in enumerate(active)}
    partials = launcher.empty(len(red) * grid, "f64") if red else None     # ACC
    tape = launcher.empty(max(1, n * spec.n_state), tag) if scan and spec.grads else None

    def get(a: Arg) -> Any:
        if a.role == "n_outer":
            return n_outer
        if a.role == "n_inner":
            return n_inner
        if a.role == "partials":
            return partials
        if a.role == "tape":
            return tape
        if a.role in ("out", "acc", "out_dot", "state", "state_bar"):
            arr = {"out": out, "acc": acc, "out_dot": out_dot, "state": state,
                   "state_bar": state_bar}[a.role]
            if arr is None:
                raise ValueError(f"{a.name}: needed for {spec}")
            launcher.check(arr, tag, a.role)
            if a.role in ("state", "state_bar") and arr.size < spec.n_state:
                raise ValueError(f"{a.role}: {spec.n_state} values needed, got {arr.size}")
            return arr
        if a.role == "seed":
            if a.kind == "value":
                return float(seed)
            launcher.check(seed, tag, "seed")
            return seed
        src = {"param": params, "grad": grads, "tangent": tangents}[a.role]
        if src is None:
            raise ValueError(f"{a.name}: {a.role}s are needed for {spec}")
        item = src[a.index] if a.role == "param" else src[act_pos[a.index]]
        if a.kind == "value":
            return float(item)
        arr, so, si = _flat(item)
        if a.part == "so":
            return so
        if a.part == "si":
            return si
        launcher.check(arr, tag, a.name)
        return arr

    launcher.call(source, name, tag, grid, block, _values(driver_args(kmod, spec), get))
    if red:
        def fget(a: Arg) -> Any:
            if a.role == "n_parts":
                return grid
            if a.role == "partials":
                return partials
            return get(a)

        launcher.call(source, name + "__finish", tag, 1, 1, _values(finish_args(kmod, spec), fget))


_RAW_KERNELS: dict[tuple[str, str], Any] = {}
_MAX_GRID: dict[tuple, int] = {}


class CupyLauncher:
    """Calls a driver with cupy.RawKernel on the current device."""

    def __init__(self) -> None:
        import cupy   # lazy: an optional heavy library

        self.cp = cupy

    def max_grid(self, block: int) -> int:
        dev = self.cp.cuda.Device()
        key = (self.cp, getattr(dev, "id", 0), block)
        grid = _MAX_GRID.get(key)
        if grid is None:   # Device.attributes queries every attribute: once per device
            sms = dev.attributes.get("MultiProcessorCount", 80)
            grid = _MAX_GRID[key] = sms * max(1, 2048 // block)
        return grid

    def empty(self, n: int, tag: str) -> Any:
        return self.cp.empty(n, dtype=np.float64 if tag == "f64" else np.float32)

    def check(self, arr: Any, tag: str, what: str) -> None:
        want = np.float64 if tag == "f64" else np.float32
        if not isinstance(arr, self.cp.ndarray):
            raise TypeError(f"{what}: expected a cupy array, got {type(arr).__name__}")
        if arr.dtype != want or not arr.flags.c_contiguous:
            raise TypeError(f"{what}: expected a contiguous {np.dtype(want)} cupy array, "
                            f"got {arr.dtype} with strides {arr.strides}")

    def call(self, source: str, name: str, tag: str, grid: int, block: int,
             args: list[tuple[Arg, Any]]) -> None:
        key = (source, name)
        kern = _RAW_KERNELS.get(key)
        if kern is None:
            kern = _RAW_KERNELS[key] = self.cp.RawKernel(source, name, options=("--std=c++17",))
        ftype = np.float64 if tag == "f64" else np.float32
        conv = []
        for a, v in args:
            if a.kind == "index":
                conv.append(np.int64(v))
            elif a.kind == "value":
                conv.append(ftype(v))
            else:
                conv.append(v)
        kern((grid,), (block,), tuple(conv))


def launch(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any, n_outer: int, n_inner: int,
           params: Sequence[Any], out: Any = None, acc: Any = None, seed: Any = None,
           grads: Sequence[Any] | None = None, tangents: Sequence[Any] | None = None,
           out_dot: Any = None, grid: int | None = None, block: int | None = None,
           state: Any = None, state_bar: Any = None, source: str | None = None) -> None:
    """Run the driver on cupy arrays (same conventions as `python.run_driver`; for a
    `ScanSpec`, as `python.run_scan`, in one GPU thread), then its finish kernel;
    asynchronous on the current stream, like any cupy kernel."""
    msg = available()
    if msg is not None:
        raise BackendUnavailableError(msg)
    execute(CupyLauncher(), kmod, spec, dtype, n_outer, n_inner, params, out=out, acc=acc,
            seed=seed, grads=grads, tangents=tangents, out_dot=out_dot, grid=grid, block=block,
            state=state, state_bar=state_bar, source=source)


def available() -> str | None:
    """None when cupy imports and a CUDA device exists; otherwise what is missing."""
    try:
        import cupy   # lazy: an optional heavy library
    except Exception:  # ImportError, or a broken CUDA install
        return "cupy is not installed: pip install s2sad[cuda]"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no CUDA device ({exc})"
    if count < 1:
        return "no CUDA device"
    return None
