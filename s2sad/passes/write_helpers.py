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

Each returns a new array, never a view of its input, except where the array given is
provably the generated code's own and dead after the call (below).

Writes one element at a time (`y[i] = ...` in a loop of n) would copy y each time
(O(n^2)); two helpers write in place instead, each only when both hold:
- `in_place_setter(where, holders)`, bound by passes/arraywrites.py for a write whose
  array no other statement reads before it, or in its loop (`mark_in_place`: the old
  contents are then needed by nothing, the tape included); and at run time the array is
  an exact ndarray owning its memory, held by at most `holders` names of the generated
  code (sys.getrefcount against `ONE_LOCAL_SETTER`, measured at import through the same
  call chain): a view, an argument or anything else that holds it makes it copy;
- `set_items_base_bar(g, index)` zeroes g's elements in place when g is held by one
  name of the generated code only (the reverse sweep computes the value's adjoint from
  g first, and drops the other name a loop's adjoint gives g before the call).
The results are those of the copying versions, bit for bit.
"""
from __future__ import annotations

import sys

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
    refs = sys.getrefcount(g)
    if refs <= ONE_LOCAL and _own_array(g) and g.dtype.kind == "f":     # only the caller's name holds it
        g[index] = 0
        return g
    return zeroed_copy(g, index)


def zeroed_copy(g, index):
    """g with the elements at index zeroed, in a new float array."""
    out = np.array(g, dtype=np.result_type(np.asarray(g).dtype, np.float32), copy=True)
    out[index] = 0
    return out


def _own_array(a) -> bool:
    return type(a) is np.ndarray and a.flags.owndata and a.flags.writeable


def in_place_setter(where, holders: int, probe: bool = False):
    """set_items for a write `mark_in_place` proved may reuse its array (see the module
    doc): y written in place and returned when it is the generated code's own, held by
    at most `holders` of its names; else set_items' copy."""
    def setter(y, index, value, differentiated=False):
        return _in_place(y, index, value, differentiated, where, holders, probe)
    return setter


def _in_place(y, index, value, differentiated, where, holders, probe):
    refs = sys.getrefcount(y)
    if probe:
        return refs
    if refs <= ONE_LOCAL_SETTER + holders - 1 and _own_array(y) and (y.dtype.kind in "fc" or not differentiated):
        y[index] = value
        return y
    return set_items(y, index, value, differentiated, where)


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


def _one_local(probe) -> int:
    x = np.empty(1)
    return probe(x, None, None, differentiated=True)


def _one_local_direct(g, index) -> int:
    return sys.getrefcount(g)


def _direct() -> int:
    x = np.empty(1)
    return _one_local_direct(x, None)


# sys.getrefcount inside each helper of an array one local of its caller holds, measured
# through the same call chain (a direct call; the setter's closure)
ONE_LOCAL = _direct()
ONE_LOCAL_SETTER = _one_local(in_place_setter(None, 1, probe=True))
