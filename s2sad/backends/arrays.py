"""Inputs laid out for one launch: the broadcast shape, the compute dtype, each input's layout.

`prepare` is the host's (numpy) version; the cuda backend has its own (cupy arrays) that
gives the same `Prepared`. Invariants: the user's arrays are never written (a
contiguous copy is made where the layout needs one); each input is "scalar" (one
element, passed by value), "contig" (C-contiguous with the broadcast shape, read in
place) or "strided" (a contiguous copy of its own shape, read through broadcast strides).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import NonDifferentiableInputError, ShapeError


@dataclass
class Prepared:
    """Inputs broadcast and laid out for one launch."""

    shape: tuple[int, ...]
    dtype: np.dtype
    layouts: tuple[str, ...]
    values: list[Any]          # scalar: python float; else a C-contiguous array of its own shape
    shapes: list[tuple[int, ...]]


def compute_dtype(args: Sequence[Any]) -> np.dtype:
    """float32 when every floating input is float32 (in either byte order: numpy's
    result for a '>f4' array is native float32, so is s2sad's), else float64. A Python
    float or int is weak, as in numpy 2 (NEP 50): float32 with 0.5 is float32, as the
    fast path (fastpath.fast_layouts) always gave; this path gave float64 before session
    13 (a non-contiguous float32 array with a Python float)."""
    dtypes = [a.dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype for a in args
              if type(a) not in (float, int, bool)]
    floats = [d for d in dtypes if d.kind == "f"]
    if floats and all(d.itemsize == 4 for d in floats):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """np.broadcast_shapes, in Python: numpy's makes an empty array per shape, which
    costs more than a small kernel's whole launch. ValueError where they do not broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for k, n in enumerate(s, nd - len(s)):
            if n != 1:
                if out[k] != 1 and out[k] != n:
                    raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape ({shapes})")
                out[k] = n
    return tuple(out)


def broadcast_shape(arrays: Sequence[Any], names: Sequence[str]) -> tuple[int, ...]:
    """The shape the arguments broadcast to; a ShapeError naming each one's if none."""
    try:
        return broadcast_shapes(*(tuple(a.shape) for a in arrays))
    except ValueError:
        desc = ", ".join(f"{n}: {tuple(a.shape)}" for n, a in zip(names, arrays))
        raise ShapeError(f"the arguments' shapes do not broadcast together ({desc})",
                         hint="Make the shapes compatible under numpy broadcasting rules.") from None


def _refuse_non_numbers(a: np.ndarray, name: str) -> None:
    """An operand numpy's arithmetic refuses (None, a string, an object, a date): the
    kernel would read it converted to floats (None as NaN, "2" as 2.0), another function's
    numbers. An unlocated NonDifferentiableInputError: the derivative's caller locates it
    at the statement (arguments.shape_refusal)."""
    what = "None" if a.dtype.kind == "O" and a.ndim == 0 and a[()] is None else f"dtype {a.dtype}"
    raise NonDifferentiableInputError(
        f"an operand holds {what}, not numbers ({name}: {a.shape})",
        hint="Pass numbers or arrays of numbers (numpy's arithmetic refuses this value too).")


def prepare(args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None) -> Prepared:
    arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in args]
    for a, n in zip(arrays, names):
        if a.dtype.kind not in "biufc":
            _refuse_non_numbers(a, n)
    dtype = dtype or compute_dtype(args)     # (Python numbers weak, as numpy 2)
    shape = broadcast_shape(arrays, names)
    layouts, values = [], []
    for a in arrays:
        if a.size == 1:
            layouts.append("scalar")
            values.append(a.reshape(()).astype(dtype).item() if a.dtype != dtype else a.reshape(()).item())
        else:
            c = np.ascontiguousarray(a, dtype=dtype)  # no copy when already so
            layouts.append("contig" if c.shape == shape else "strided")
            values.append(c)
    return Prepared(shape, dtype, tuple(layouts), values, [a.shape for a in arrays])
