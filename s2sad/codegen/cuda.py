"""Kernel -> CUDA C source: the ABI stated here, `lower` assembling the translation unit.

`lower(kmod, spec, dtype)` prints a `KernelModule` as one CUDA C++ translation unit:
every scalar function of the module becomes a `__device__` function (one whose
returns are tuples returns a small struct `<fn>_ret { T r0, r1, ...; }`), followed by
an `extern "C" __global__` driver named `driver_name(kmod, spec, dtype)` and, when the
driver reduces anything, a second kernel `<driver>__finish`. The text is
deterministic and has no `#include`: NVRTC compiles it as is, and so does g++ with
the shim header `cuda_host.SHIM` in front (see `cuda_host`).

Per-element semantics are exactly those of the `LoopSpec` contract in `kernel.py`
(the python backend's `run_driver` is the reference). What is specific to the GPU:

The CUDA driver ABI
-------------------
    driver(<the C ABI of kernel.py, parameter for parameter>, [T* partials])

with `int64` spelled `long long` and input arrays `const T*`. The index space
k = o * n_inner + i, 0 <= k < n_outer * n_inner, is walked with a grid-stride loop
over 64-bit indices; any 1-D grid and block shape computes the same result.

- contig grads are plain stores: `g[k] = partial * seed`.
- strided grads (broadcast rows, stride 0 included) are `atomicAdd`ed:
  `atomicAdd(&g[o*so + i*si], partial * seed)` (double atomicAdd needs sm_60+).
- "sum" values and scalar-layout grads are the *reduced quantities*, numbered
  q = 0, 1, ...: the value sum first (if value == "sum"), then each scalar-layout
  active param in `kmod.active` order (if partials). Each thread sums its elements;
  each block sums its threads in shared memory (any blockDim.x up to
  `MAX_BLOCK` = 256) and thread 0 writes one partial per block:
      partials[q * gridDim.x + blockIdx.x]        (partials has n_red * gridDim.x double)
  Every one of these sums is a double for float32 too (`ACC`), so that a float32 sum
  of 10^7 terms is rounded to float once, when the finish step adds it into T* dest.
  The driver never touches acc or the scalar grads. The argument `partials` is
  present exactly when n_red > 0.
- Then `<driver>__finish(long long n_parts, const double* partials, <dest_0>, <dest_1>, ...)`
  is launched with one block of one thread, n_parts being the driver's gridDim.x; it
  adds sum_b partials[q * n_parts + b] into dest_q[0] (dest_q is acc or the grad),
  so that `acc[0] += sum` and `g[0] += sum` hold as in the contract. These sums are
  deterministic for a fixed launch shape (atomicAdd'ed strided grads are not); they
  differ from the serial order of the reference by rounding only.

Scan drivers (`ScanSpec`, stateful functions)
---------------------------------------------
    driver(<the scan ABI of kernel.py, parameter for parameter>)      (no finish kernel)

A scan is sequential: the driver is launched as ONE thread (grid 1, block 1; in any
other shape, every thread but thread 0 of block 0 returns at once) and does exactly
what `python.run_scan` does: the forward sweep over k = 0..n-1 (row-major, o outer)
with the state in locals, storing the state before each element at tape[k * n_state + j]
when there are grads; then the reverse sweep over k = n-1..0 with the adjoint of the
state in locals, summing `seed * d value/d w + sum_j lambda_j * d s_j'/d w` in that
order. Contig grads are stored, strided grads added (no atomics: one thread), scalar
grads and the value sum are summed in a double local and added to g[0] / acc[0] at the end.
The tape (n * n_state values) is allocated by the launcher (`backends/cuda_launch.py`'s
`execute`). Correct, but one thread of a GPU is slow: `explain` says so for scan sites.

This package of modules writes text only: `backends/cuda_launch.py` launches it (cupy, or
the g++ host emulation of `backends/cuda_host.py`), with the launch configuration, the
partials buffer and the finish step. By job:
    cuda.py          the ABI (this docstring) and `lower`, which puts the pieces together
    cuda_abi.py      the drivers' C parameters (`driver_args`, `finish_args`), the reduced
                     quantities, kernel names, C names mangled clear of C++ and CUDA's own
    cuda_c.py        the core scalar language -> `__device__` functions, s2sad_ helpers
    cuda_drivers.py  the `__global__` loop driver (+ finish kernel) and scan driver
    cuda_check.py    NVRTC and ptxas checks of the text (`compile_ptx`, `check_ptxas`)

Math: CUDA's double functions (`tanh`, `cbrt`, `log1p`, `erf`, `hypot`...) and their
`f`-suffixed float twins; `sign` is built with `copysign`; `//`, `%`, `min`, `max`,
`round` (`rint`, half to even) and `int` (`trunc`) have Python's semantics (`x // 0.0`
is `x / 0.0`, as numpy has it, where Python raises), `maximum`/`minimum` numpy's (NaN
if either is); `and`/`or`
return an operand; `IfExp` and the right operand of `and`/`or` are evaluated only when
chosen (as C ternaries, or as if-statements when they need statements of their own).
"""
from __future__ import annotations

from typing import Any

from ..kernel import KernelModule, LoopSpec, ScanSpec
from .cuda_abi import (ACC, CTYPES, DEFAULT_BLOCK, MAX_BLOCK, Arg, arities, check_spec, driver_args, driver_name,
                       dtype_tag, finish_args, finish_name, function_cnames, reduced)
from .cuda_c import HELPERS, call_order, function_text, helper_text
from .cuda_check import CudaCompileError, check_ptxas, compile_ptx, ptxas_path
from .cuda_drivers import BLOCK_SUM, loop_driver_text, scan_driver_text

__all__ = [
    "lower", "driver_name", "finish_name", "compile_ptx", "check_ptxas", "ptxas_path", "driver_args",
    "finish_args", "reduced", "dtype_tag", "CudaCompileError", "Arg", "ACC", "MAX_BLOCK", "DEFAULT_BLOCK",
]


def lower(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any) -> str:
    """CUDA C++ source of the module's functions, the driver and its finish kernel (a
    scan driver has none)."""
    tag = dtype_tag(dtype)
    T, sfx = CTYPES[tag]
    check_spec(kmod, spec)
    if isinstance(spec, ScanSpec):   # the forward sweep calls the entry, the reverse its dual
        roots = [kmod.entry] + ([kmod.dual_entry] if spec.grads else [])
    else:
        roots = [kmod.dual_entry if spec.needs_dual else kmod.entry]
    order = call_order(kmod, roots)   # before the names: a recursive call is named as it always was

    fnames = function_cnames(kmod, spec)
    arity = arities(kmod)
    tuple_fns = {fnames[n]: arity[n] for n in kmod.functions if arity[n]}
    helpers: set[str] = set()
    chunks = [function_text(kmod, n, fnames, tuple_fns, helpers, T, sfx) for n in order]

    if isinstance(spec, ScanSpec):
        driver = scan_driver_text(kmod, spec, tag, fnames, tuple_fns)
    else:
        driver = loop_driver_text(kmod, spec, tag, fnames, tuple_fns)
    red = reduced(kmod, spec)
    pre = [f"// s2sad kernel module {kmod.name!r}: {spec.tag()}, "
           f"{'float64' if tag == 'f64' else 'float32'} (generated; see s2sad/codegen/cuda.py for the ABI)"]
    for h in sorted(helpers):
        pre.append(helper_text(HELPERS[h], T, sfx))
    if red:
        pre.append(helper_text(BLOCK_SUM, T, sfx))
    parts = pre + chunks + driver
    return "\n\n".join(parts) + "\n"
