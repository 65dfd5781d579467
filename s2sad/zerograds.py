"""Gradients that are zero by the rules, made as zeros: no derivative kernel runs.

A kernel whose dual's partials are all the constant +0 on every path
(`KernelPlan.zero_partials`, a proof from the dual's text: comparisons, floor, sign,
round, a `where` between constants; `sum(x > 0.1)`) has gradients that are zeros
whatever its inputs (NaN and inf included: a constant partial does not read them).
`runtime.sum_dual` then makes them here instead of running the kernel's partials over
the inputs: at 1M elements that saves reading 8 MB and the arithmetic, on the lean path
(`zero_sum_fast`) and on the general one (`zero_seed`, `zero_buffers`); the value, when
asked, still runs the kernel, without partials.

Invariants: the results are the kernel's, bit for bit, the sign of zero included: a
stored partial times the seed has the seed's sign; a scalar param's sum starts at +0,
so stays +0; a broadcast param's sum starts at -0.0 and takes its terms' sign. The
shortcut is not taken for a seed that is not a finite number (0 * inf is NaN: the
kernel's answer), another array module than numpy, an empty broadcast shape, or a lean
call of at most ENTRY_MAX elements (the hot path calls the driver's one-call entry
there, cheaper than Python making zeros), nor on a kernel's first call (`proven_zero`:
the first result does not wait for the proof). The zeros are real, zeroed memory: numpy's
calloc (a fresh large block is the OS's zero pages, faulted in by whoever first touches
them, as for any np.zeros) or, inside an s2sad call, a warm block of s2sad's pool
cleared by memset (mempool): nothing is deferred to the caller that np.zeros would not
defer; what is saved is the kernel's pass, not the memory.

What is left at 1M elements is the 8 MB fill, on one thread (bench/mem_rows.py runs the
table's conditions). Measured and not done: the fill on two threads (the pool's block
cleared by chunks on threads.run_chunks, chosen by a ThreadChooser) was slower here at
every load (idle: 120-140 us against one memset's 80-95 warm; a pool thread's wake-up
costs ~100 us on this 2-vCPU machine; under load 4-5, 2-5 ms), and its one-thread path
cost 5-20 us over calloc's memset; non-temporal stores (no read for ownership) clear a
cold block in 0.65-0.75x memset's time but a warm one in 1.2-1.45x, and the caller's
first read of the result then misses the cache: fill plus one read measured the same.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .backends.arrays import Prepared
from .fastpath import fast_sum_dual
from .runkernel import Kernel


# codegen/llvm_entry.ENTRY_MAX (tests/test_zero_grads.py holds them equal), not imported:
# that module brings the IR lowering with it, which a warm start must not import
ENTRY_MAX = 1 << 15


def zero_worth(shape: tuple[int, ...]) -> bool:
    """Is a lean call of this shape past the driver's one-call entry (ENTRY_MAX)?"""
    return math.prod(shape) > ENTRY_MAX


def proven_zero(kernel: Kernel, active: tuple[str, ...], who: str = "sum") -> bool:
    """kernel.zero_partials(active), from the second time `who` asks on (per kernel and
    `active`; "sum": sum_dual, "pullback" / "jvp": jvp_vjp's): the proof makes the
    kernel's dual, which a process that found the compiled driver in the disk cache does
    not otherwise make, and a first result does not wait for it (the first call runs
    the kernel)."""
    asked = kernel.cached(("zero partials asked", active, who), lambda: [False])
    if not asked[0]:
        asked[0] = True
        return False
    return kernel.zero_partials(active)


def seed_times_zero(scale) -> float | None:
    """+0 times the seed (signed as the seed) for a finite real seed; None otherwise."""
    if isinstance(scale, bool) or not isinstance(scale, (float, int, np.floating, np.integer)):
        return None
    try:
        s = float(scale)
    except OverflowError:
        return None
    return math.copysign(0.0, s) if math.isfinite(s) else None


def times_seed(grads: list, seed) -> list:
    """[g * seed for g in grads] for gradients that are +0 everywhere (made by sum_dual
    with seed 1 for a kernel with zero partials), bit for bit, without the multiply's
    pass where the product is +0 (a positive finite seed: the gradients themselves, each
    sum_dual's own new array) and negated in place where it is -0 (a negative one); a NaN
    or infinite seed multiplies (0 * inf is NaN: the product's answer)."""
    zero = seed_times_zero(seed)
    if zero is None:
        return [g * seed for g in grads]
    positive = math.copysign(1.0, zero) > 0
    out = []
    for g in grads:
        if type(g) is np.ndarray and g.dtype.kind == "f":
            out.append(g if positive else np.negative(g, out=g))
        else:
            out.append(g * seed)
    return out


def finite_tangents(tangents: Sequence[Any], primals: Sequence[Any]) -> bool:
    """Is each tangent a real number, or a numpy float array of its primal's shape, every
    element finite? Then a kernel whose partials are the constant +0 has the tangent
    +0 at every element: both drivers start each element's tangent at +0.0 and add
    0 * t, which is +-0 for finite t (codegen/python.py, llvm_drivers.py); a NaN or an
    inf tangent gives NaN there. One pass a tangent: a sum is finite only if each term
    is (an overflowing sum says no, which only costs the shortcut)."""
    for t, p in zip(tangents, primals):
        if isinstance(t, (float, int, np.floating, np.integer)) and not isinstance(t, (bool, np.bool_)):
            if not math.isfinite(t) or np.ndim(p) != 0:
                return False
        elif type(t) is np.ndarray and t.dtype.kind == "f" and t.shape == np.shape(p):
            if not math.isfinite(np.add.reduce(t, axis=None)):
                return False
        else:
            return False
    return True


def signed_zeros(shape, dtype, zero: float) -> np.ndarray:
    """Zeros of `shape` and `dtype`, each `zero` (+0 from calloc, -0.0 filled)."""
    if math.copysign(1.0, zero) > 0:
        return np.zeros(shape, dtype)
    return np.full(shape, zero, dtype)


def zero_sum_fast(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], scale, fast, value: bool):
    """sum_dual's (value, grads) on the lean path's arguments (`fast_layouts`: contiguous
    arrays of one shape, and scalars, whose gradient is the lean path's Python float), or
    None where the seed is not finite."""
    zero = seed_times_zero(scale)
    if zero is None:
        return None
    layouts, shape, dtype = fast
    total = fast_sum_dual(kernel, args, (), scale, fast, "sum")[0] if value else None
    return total, [signed_zeros(shape, dtype, zero) if layouts[kernel.params.index(a)] == "contig" else 0.0
                   for a in active]


def zero_seed(kernel: Kernel, active: tuple[str, ...], scale, xp, prep: Prepared) -> float | None:
    """On the general path: the signed zero every gradient element gets when the
    shortcut applies (numpy arrays, a non-empty shape, zero partials, a finite seed),
    else None (the kernel runs)."""
    if not active or xp is not np or math.prod(prep.shape) == 0 or not proven_zero(kernel, active):
        return None
    return seed_times_zero(scale)


def zero_buffers(prep: Prepared, kernel: Kernel, active: tuple[str, ...], *, acc_dtype, zero: float) -> list:
    """The gradient buffers the kernel would have filled (runtime's `_grad_buffers`): a
    scalar param's sum in `acc_dtype` (+0), others of their own shape, each `zero`."""
    out = []
    for a in active:
        i = kernel.params.index(a)
        if prep.layouts[i] == "scalar":
            out.append(np.zeros(1, acc_dtype))
        else:
            out.append(signed_zeros(prep.shape if prep.layouts[i] == "contig" else prep.shapes[i], prep.dtype, zero))
    return out
