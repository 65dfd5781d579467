"""Reductions along one axis of a 2-D float array (np.sum / np.mean / np.max / np.min
with axis=), with numpy's bits, in s2sad's compiled loops where numpy's are slow; and
`unbroadcast`, the one sum of a gradient back to its operand's shape (generated adjoints,
scans and vjp all call it).

numpy pays about 20 ns a row (or a column) in its reduction machinery, which for short
rows dwarfs the arithmetic: the row sums of a 10,000 x 10 array (a 10-class softmax)
take 200 us, a copy of the array 17. `codegen/llvm_reduce` does the same additions in
the same order (see there) in 30. `reduce(op, x, axis, keepdims)` takes that path when

- x is a 2-D numpy array of float64 or float32 whose rows are contiguous, and axis is
  one axis (0 or 1, or -1 / -2);
- op is sum or mean (any row length; along axis 0 with more than one column: a single
  column is contiguous, and numpy sums it pairwise), or max or min along axis 1 with at
  most MAX_EXTREME_ROW elements (longer rows go to numpy's SIMD loop, faster there);

and is numpy's reduction otherwise. The bits are numpy's either way (the mean is the
sum divided by the count, as numpy divides), which tests/test_reduce.py checks against
numpy itself.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .backends import choose
from .backends.llvm import ptr
from .codegen import llvm_jit, llvm_launch, llvm_reduce

MAX_EXTREME_ROW = 16
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ARGTYPES = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_FUNCS: dict = {}


def _function(kind: str, op: str, dtype: np.dtype):
    f = _FUNCS.get((kind, op, dtype))
    if f is None:
        addresses, keep = llvm_jit.reduce_code(dtype)
        for (k, o) in [("rows", o) for o in llvm_reduce.ROW_OPS] + [("cols", "sum")]:
            _FUNCS[(k, o, dtype)] = llvm_jit.callable_at(addresses[llvm_reduce.symbol(k, o, dtype)], _ARGTYPES, keep)
        f = _FUNCS[(kind, op, dtype)]
    return f


def _axis(x: np.ndarray, axis: Any) -> int | None:
    if isinstance(axis, tuple):
        if len(axis) != 1:
            return None
        axis = axis[0]
    if type(axis) is not int or not -2 <= axis <= 1:
        return None
    return axis % 2


def _compiled(op: str, x: Any, axis: Any):
    """The reduction in s2sad's loop, without keepdims, or None where numpy's is taken."""
    if type(x) is not np.ndarray or x.ndim != 2 or (x.dtype != _F64 and x.dtype != _F32):
        return None
    ax = _axis(x, axis)
    n, k = x.shape
    size = x.dtype.itemsize
    s0, s1 = x.strides
    if ax is None or n == 0 or k == 0 or s1 != size or s0 < 0 or s0 % size or not x.flags.aligned:
        return None
    summed = op in ("sum", "mean")
    if ax == 1:
        if not summed and k > MAX_EXTREME_ROW:
            return None
        out = np.empty(n, x.dtype)
        _function("rows", "sum" if summed else op, x.dtype)(ptr(x), n, k, s0 // size, ptr(out))
        count = k
    else:
        if not summed or k == 1:
            return None
        out = np.empty(k, x.dtype)
        _function("cols", "sum", x.dtype)(ptr(x), n, k, s0 // size, ptr(out))
        count = n
    if op == "mean":
        np.true_divide(out, count, out=out)
    return out, ax


def reduce(op: str, x: Any, axis: Any = None, keepdims: bool = False, backend: str = "auto"):
    """np.<op>(x, axis=axis, keepdims=keepdims) for op in sum, mean, max, min; numpy's
    own on a backend other than llvm ("auto" with numpy arrays)."""
    got = _compiled(op, x, axis) if axis is not None and choose(backend).fast_path else None
    if got is None:
        return getattr(np, op)(x, axis=axis, keepdims=keepdims)
    out, ax = got
    if keepdims:
        return out.reshape((x.shape[0], 1) if ax == 1 else (1, x.shape[1]))
    return out


def reduce_sum(x, axis=None, keepdims=False, backend="auto"):
    return reduce("sum", x, axis, keepdims, backend)


def reduce_mean(x, axis=None, keepdims=False, backend="auto"):
    return reduce("mean", x, axis, keepdims, backend)


def reduce_max(x, axis=None, keepdims=False, backend="auto"):
    return reduce("max", x, axis, keepdims, backend)


def reduce_min(x, axis=None, keepdims=False, backend="auto"):
    return reduce("min", x, axis, keepdims, backend)


def float_dtype(x) -> np.dtype:
    """The dtype of an adjoint of `x`: its own if a float, else float64."""
    dt = np.asarray(x).dtype
    return dt if dt.kind == "f" else np.dtype(np.float64)


def unbroadcast(g, x):
    """`g` (the shape numpy broadcasting gave) summed back to the shape of `x`, over the
    axes broadcasting added or stretched, with numpy's bits (`reduce`); a new array
    unless `g` already has that shape; a Python float for a number `x`."""
    shape = np.shape(x)
    gs = np.shape(g)
    if gs == shape:
        return g
    if gs == ():
        return np.full(shape, g, float_dtype(x)) if shape != () else g
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and gs[lead + k] != 1)
    r = reduce("sum", g, axes, keepdims=True) if axes else g
    if lead:
        r = r.reshape(r.shape[lead:])
    if shape == () and not isinstance(x, np.ndarray):
        return float(r.reshape(()))
    return r.reshape(shape)


def kept_unbroadcast(g: Any, x: Any, short_max: int):
    """unbroadcast(g, x) made once for operands of g's and x's shapes, strides and dtypes
    (array_special binds it in a copy specialised to a signature): `g` itself where it has
    x's shape; the compiled column sum (`_compiled`'s loop, so numpy's bits) where x is a
    row of 2-D g's columns, called through a compiled launcher where g has at most
    `short_max` elements; else None (the full call). The call it returns checks what a
    signature does not fix (g's alignment) and takes the full path without it."""
    if np.shape(g) == np.shape(x):
        return _as_given
    if type(g) is not np.ndarray or type(x) is not np.ndarray or g.ndim != 2 or x.shape != (1, g.shape[1]):
        return None
    n, k = g.shape
    dt, size = g.dtype, g.dtype.itemsize
    s0, s1 = g.strides
    if (dt != _F64 and dt != _F32) or n < 2 or k < 2 or s1 != size or s0 < 0 or s0 % size or not g.flags.aligned:
        return None
    sums = llvm_launch.array_call(_function("cols", "sum", dt), [("array", 0), n, k, s0 // size, ("array", 1)], 2,
                                  g.size <= short_max)
    shape = x.shape

    def unbroadcast_columns(g, x):
        if not g.flags.aligned:
            return unbroadcast(g, x)
        out = np.empty(k, dt)
        sums(g, out)
        return out.reshape(shape)
    unbroadcast_columns.parts = ("array_call", sums, (0,), ((k,), dt, shape), None)   # (array_program lowers it:
    # the call on the site's argument 0, then the new (k,) array, returned as shape)
    return unbroadcast_columns


def _as_given(g, x):
    return g


_as_given.parts = ("same", 0)
