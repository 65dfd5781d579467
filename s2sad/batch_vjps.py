"""What a batched pullback calls (passes/batched_reverse.py) beyond batch_rules' helpers:
adjoints with a leading batch axis of K rows, next to primals and stored partials
without one.

Each helper gives, row by row, what the unbatched pullback's line gives for that row's
seed alone (every line is linear in its seed), so row b of a batched pullback's result
is the unbatched pullback's for the seed's row b:
- `bscaled(d, g)`: a kernel sum's gradient `d` times each row's seed (g: (K,));
- `bunbroadcast(s, x)`: a kernel's stored partials times the batched seed, (K,) + the
  kernel's shape, summed row by row back to the shape of input `x`;
- `bmatmul_bar(i, g, a, b, kind)`: the adjoint of operand i of `a @ b` (or np.dot) for
  each row of g, one product for all rows where a and b have one or two dimensions,
  else row by row.
- `bconcatenate_bar(g, i, arrays, axis)`: piece i of np.concatenate's adjoint, the
  batch axis kept in front.
Nothing here writes an argument.
"""
from __future__ import annotations

import numpy as np

from .array_rules import dot_lhs_bar, dot_rhs_bar, matmul_lhs_bar, matmul_rhs_bar
from .batch_rules import brows


def bscaled(d, g):
    """Row b: d * g[b] (d: an input's gradient of a kernel's sum, g: that sum's seeds)."""
    g = np.asarray(g)
    if isinstance(d, np.ndarray):
        return g.reshape(g.shape + (1,) * d.ndim) * d
    return g * d


def bunbroadcast(s, x):
    """Row b: s[b] summed back to the shape of `x` over the axes broadcasting added or
    stretched (reduce.unbroadcast's, each row on its own); a number x: one per row."""
    shape = np.shape(x)
    s = np.asarray(s)
    if s.shape[1:] == shape:
        return s
    lead = s.ndim - 1 - len(shape)
    axes = tuple(range(1, 1 + lead)) + tuple(1 + lead + k for k, n in enumerate(shape)
                                               if n == 1 and s.shape[1 + lead + k] != 1)
    r = s.sum(axis=axes, keepdims=True) if axes else s
    return r.reshape(s.shape[:1] + shape)


def bmatmul_bar(i: int, g, a, b, kind: str = "matmul"):
    """Row by row the adjoint of operand i of `a @ b` (kind "matmul") or np.dot(a, b)
    (kind "dot", the same product for one and two dimensions)."""
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        bar = (matmul_lhs_bar if i == 0 else matmul_rhs_bar) if kind == "matmul" else \
            (dot_lhs_bar if i == 0 else dot_rhs_bar)
        return brows(lambda r: bar(r, a, b), g)
    if i == 0:
        if b.ndim == 1:         # row b: outer(g[b], b), or g[b] * b for a vector a
            return g[..., None] * b
        return np.matmul(g if a.ndim == 2 else g[:, None, :], b.T).reshape(g.shape[:1] + a.shape)
    if a.ndim == 1:             # row b: outer(a, g[b]), or g[b] * a for a vector b
        return a[:, None] * g[:, None, :] if b.ndim == 2 else g[:, None] * a
    if b.ndim == 1:             # row b: a.T @ g[b]
        return g @ a
    return np.matmul(a.T, g)


def bconcatenate_bar(g, i: int, arrays, axis=0):
    """Row by row concatenate_bar(g[b], i, arrays, axis): piece i's slice of each row."""
    g = np.asarray(g)
    shape = np.shape(arrays[i])
    if axis is None:
        start = sum(np.size(a) for a in arrays[:i])
        return np.array(g.reshape(g.shape[0], -1)[:, start:start + int(np.prod(shape, dtype=np.int64))]).reshape(
            g.shape[:1] + shape)
    ax = axis % (g.ndim - 1)
    start = sum(np.shape(a)[ax] for a in arrays[:i])
    index = [slice(None)] * g.ndim
    index[1 + ax] = slice(start, start + shape[ax])
    return np.array(g[tuple(index)])
