"""What the runtime needs from a backend: the `Backend` protocol.

A backend runs kernels (`kernel.py`'s KernelModule with a LoopSpec or ScanSpec) over
arrays. Its four steps, in the order the runtime takes them:

    resolve(arrays)         the backend that runs a call with these arguments (itself,
                            after checking it can: BackendUnavailableError if not)
    prepare(args, names)    the inputs laid out for a launch (`arrays.Prepared`), in
                            the backend's memory; `xp` allocates outputs there
    compile_loop(...)       the compiled (lowered by `codegen`) driver of one kernel,
    compile_scan(...)       LoopSpec or ScanSpec and dtype
    plan_launch(...)        a call `run(values, out, acc, seed, grads, tangents, out_dot,
                            offs=None)` that runs a loop driver over one index space

and, around them, `acc_dtype` (the dtype of a driver's sums) and `results` (where the
arrays it returns live). Two flags say what the runtime may do beyond the protocol:
`fast_path` (numpy calls of a plain signature may go straight to the llvm backend's
machine code, fastpath.py) and `ordered_sums` (host memory, sums in element
order: the seeded pullbacks and the row passes of `column_products` apply).

Invariant: one object per backend (the registry's); the runtime compares none of them
by name. A backend caches what it compiles on the kernel (`kernel.cached`), never in
itself, so that nothing outlives the kernel that made it.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Sequence

import numpy as np

from ..kernel import LoopSpec, ScanSpec
from .arrays import Prepared

# run(values, out, acc, seed, grads, tangents, out_dot, offs=None): one launch of a loop
# driver; `offs` (each index-space column's offset, in elements) where the index space
# has leading dims (runtime.launch calls it once per run of them)
Run = Callable[..., None]


class Backend(abc.ABC):
    """One place kernels run: python (the reference), llvm (host machine code), cuda."""

    name: str
    fast_path: bool = False
    ordered_sums: bool = False

    def __repr__(self) -> str:
        return f"<s2sad backend {self.name!r}>"

    @abc.abstractmethod
    def resolve(self, arrays: Sequence[Any]) -> "Backend":
        """This backend, for a call with `arrays`; BackendUnavailableError where it cannot run it."""

    @property
    @abc.abstractmethod
    def xp(self) -> Any:
        """The array module of the backend's memory (numpy or cupy)."""

    @abc.abstractmethod
    def prepare(self, args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None) -> Prepared:
        """The inputs broadcast and laid out for a launch, in the backend's memory."""

    @abc.abstractmethod
    def acc_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype of a driver's sums (kernel.py's `acc` and scalar GRAD)."""

    def results(self, inputs: Sequence[Any], result: Any) -> Any:
        """`result` in the memory the caller's `inputs` were in (the host's: as is)."""
        return result

    @abc.abstractmethod
    def compile_loop(self, kernel: Any, active: tuple[str, ...], spec: LoopSpec, dtype: np.dtype) -> Any:
        """The driver of `kernel.module(active)` for `spec` (cached on the kernel)."""

    @abc.abstractmethod
    def compile_scan(self, kernel: Any, kmod: Any, active: tuple[str, ...], spec: ScanSpec,
                     dtype: np.dtype) -> Callable:
        """A scan driver `d(n, params, state, out, acc, seed, grads, state_bar)` of `kmod`
        (kernel.py, "Scan drivers"): params are scalars or flat arrays of n elements."""

    def plan_launch(self, kernel: Any, spec: LoopSpec, active: tuple[str, ...], dtype: np.dtype,
                    dims: list) -> tuple[LoopSpec, Run]:
        """(the spec the driver was compiled for, the call that runs it over `dims`,
        runtime's merged index space): made once per launch signature."""
        active_idx = tuple(kernel.params.index(a) for a in active)
        return spec, strided_run(self.compile_loop(kernel, active, spec, dtype), spec, active_idx, dims)


def strided_run(driver: Callable, spec: LoopSpec, active_idx: tuple[int, ...], dims: list) -> Run:
    """A `Run` for a driver in the generic convention of `python.run_driver` (and the
    cuda loop driver): each array argument as (flat array, offset, outer stride, inner
    stride) of its index-space column (0: the full shape; 1 + i: input i's own shape)."""
    (n_outer, outer), (n_inner, inner) = dims[-2], dims[-1]
    layouts = spec.layouts
    no_offsets = [0] * len(outer)

    def run(values, out, acc, seed, grads, tangents, out_dot, offs=None):
        offs = offs or no_offsets

        def view(arr, col):
            return (arr.reshape(-1), offs[col], outer[col], inner[col])

        def per_param(vals, idx):
            """Arguments laid out like params `idx` (inputs, grads or tangents)."""
            return [v if layouts[i] == "scalar" else view(v, 0 if layouts[i] == "contig" else 1 + i)
                    for i, v in zip(idx, vals)]

        driver(spec, active_idx, n_outer, n_inner, per_param(values, range(len(values))),
               None if out is None else view(out, 0), acc,
               view(seed, 0) if spec.seed == "array" else seed,
               None if grads is None else per_param(grads, active_idx),
               None if tangents is None else per_param(tangents, active_idx),
               None if out_dot is None else view(out_dot, 0))
    return run
