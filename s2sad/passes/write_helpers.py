"""What generated code calls for an in-place write into a local array (`y[index] = v`,
lowered as a functional update, arrayir.SetItem; passes/arraywrites.py binds these by
name in the program's bound values).

- `set_items(y, index, v)`: a new array, y with y[index] = v (y is not changed), with
  numpy's semantics (broadcasting, repeated fancy indices not accumulated). A
  differentiated value written into an integer or bool array (numpy truncates it: no
  derivative) is a located refusal; the forward sweep passes `differentiated`.
- `set_items_base_bar(g, index)`: the adjoint of y: g with the overwritten elements
  zeroed (PyTorch's semantics: what was overwritten no longer reaches the loss).
- `set_items_value_bar(g, index, v)`: the adjoint of v: g's elements at index, only
  those that landed (of repeated fancy indices, the one numpy kept), summed back over
  the axes v was broadcast along, in v's shape.

Each returns a new array, never a view of its input.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperationError


def set_items(y, index, value, differentiated=False, where=None):
    out = y.copy() if isinstance(y, np.ndarray) else np.array(y)
    if differentiated and out.dtype.kind not in "fc":
        raise UnsupportedOperationError(
            f"a float value is written into an array of {out.dtype}: numpy truncates it, which has no derivative",
            where, hint="Make the array float (np.zeros(n), x.astype(float)) before writing into it.")
    out[index] = value
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer)) for i in items)


def _is_mask(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i in items if not (i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer)))]
    return len(arrays) == 1 and np.asarray(arrays[0]).dtype == bool


def set_items_base_bar(g, index):
    out = np.array(g, dtype=np.result_type(np.asarray(g).dtype, np.float32), copy=True)
    out[index] = 0
    return out


def set_items_value_bar(g, index, value):
    g = np.asarray(g)
    if isinstance(index, list):
        index = np.asarray(index)
    sel = np.array(g[index])
    if not _is_basic(index) and not _is_mask(index) and sel.size:
        # repeated indices: only the element numpy kept reaches the result
        order = np.arange(sel.size).reshape(sel.shape)
        marker = np.full(g.shape, -1, np.intp)
        marker[index] = order
        sel = np.where(marker[index] == order, sel, 0.0)
    return _sum_to(sel, value)


def _sum_to(sel, value):
    """`sel` (the shape of y[index]) summed back to the shape of `value`, which numpy
    broadcast to it."""
    vshape = np.shape(value)
    if sel.shape != vshape:
        vs = vshape
        while len(vs) > sel.ndim and vs[0] == 1:     # leading ones numpy drops
            vs = vs[1:]
        lead = sel.ndim - len(vs)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(vs) if n == 1 and sel.shape[lead + k] != 1)
        if axes:
            sel = sel.sum(axis=axes, keepdims=True)
        sel = sel.reshape(vshape)
    if vshape == () and not isinstance(value, np.ndarray):
        return float(sel)
    return sel
