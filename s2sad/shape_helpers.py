"""What the adjoints and tangents of the shape primitives run (array_prims: moves,
stacking, padding, selecting): helpers generated code calls by name.

`HELPERS` is merged into array_rules.HELPERS; its names are the shape modules'
`HELPER_NAMES` (array_prims/__init__ joins them), which the passes keep user names off.
Each adjoint helper returns a new array of the operand's shape, in the operand's float
dtype (float64 for a Python number), never a view of its input. Elements a primitive
copies to several places (edge padding, repeated indices) have their adjoints summed.

Layer: runtime (beside array_rules); imports numpy and reduce's float_dtype.
"""
from __future__ import annotations

import numpy as np

from .errors import ShapeError, SourceLocation
from .reduce import float_dtype


_float_dtype = float_dtype   # (reduce's: the one there is)


def _as(res, x):
    """`res` as a new array of x's shape and float dtype (a number for a Python number)."""
    out = np.array(res, dtype=_float_dtype(x)).reshape(np.shape(x))
    return float(out) if isinstance(x, (float, int)) else out


def cast_like(v, like):
    """`v` in the float dtype of `like` (the adjoint of x.astype(np.float32) taken back to
    float64 x); unchanged where `like` is no float array."""
    dt = getattr(like, "dtype", None)
    if dt is None or dt.kind != "f" or getattr(v, "dtype", dt) == dt:
        return v
    return np.asarray(v).astype(dt)


# ------------------------------------------------------------------ moves


def rollaxis_axes(ndim, axis, start=0):
    """np.rollaxis(x, axis, start) as np.moveaxis(x, source, destination)."""
    axis = axis % ndim if ndim else 0
    start = start + ndim if start < 0 else start
    dest = start - 1 if axis < start else start
    return axis, dest


def rollaxis_bar(g, x, axis, start=0):
    src, dst = rollaxis_axes(np.ndim(x), axis, start)
    return np.array(np.moveaxis(g, dst, src))


def rollaxis_jvp(t, axis, start=0):
    src, dst = rollaxis_axes(np.ndim(t), axis, start)
    return np.moveaxis(t, src, dst)


# ------------------------------------------------------------------ stacking

def _promoted(kind, a):
    """Piece `a` as the join `kind` makes it before concatenating, and that axis."""
    a = np.asarray(a)
    if kind == "hstack":
        a = np.atleast_1d(a)
        return a, 0 if a.ndim == 1 else 1
    if kind in ("vstack", "row_stack"):
        return np.atleast_2d(a), 0
    if kind == "dstack":
        return np.atleast_3d(a), 2
    if kind == "column_stack":
        return (np.array(a, ndmin=2).T if a.ndim < 2 else a), 1
    raise ValueError(kind)


def join_bar(kind, g, i, arrays):
    """The adjoint of piece i of np.hstack/vstack/dstack/column_stack(arrays)."""
    pieces = [_promoted(kind, a) for a in arrays]
    axis = pieces[0][1]
    start = sum(p.shape[axis] for p, _ in pieces[:i])
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(start, start + pieces[i][0].shape[axis])
    return _as(np.asarray(g)[tuple(index)], arrays[i])


def join_jvp(kind, t, i, arrays):
    """The tangent of np.hstack(...)(arrays) from piece i's tangent `t` alone."""
    join = np.vstack if kind == "row_stack" else getattr(np, kind)
    parts = [np.zeros(np.shape(a), _float_dtype(t)) for a in arrays]
    parts[i] = t
    return join(parts)


def with_piece(t, i, arrays):
    """Zeros shaped as each of `arrays` (numbers as 0-d), `t` in place i: what a join's
    tangent from piece i joins."""
    parts = [np.zeros(np.shape(a), _float_dtype(t)) for a in arrays]
    parts[i] = np.asarray(t, dtype=_float_dtype(t))
    return parts


def append_bar(g, i, arr, values, axis=None):
    """The adjoint of operand i (0: arr, 1: values) of np.append(arr, values, axis)."""
    g = np.asarray(g)
    n = np.size(arr) if axis is None else np.shape(arr)[axis]
    if axis is None:
        part = g[:n] if i == 0 else g[n:]
    else:
        index = [slice(None)] * g.ndim
        index[axis] = slice(0, n) if i == 0 else slice(n, None)
        part = g[tuple(index)]
    return _as(part, arr if i == 0 else values)


def append_jvp(t, i, arr, values, axis=None):
    z = [np.zeros(np.shape(arr), _float_dtype(t)), np.zeros(np.shape(values), _float_dtype(t))]
    z[i] = t
    return np.append(z[0], z[1], axis=axis)


# ------------------------------------------------------------------ padding

def pad_sources(shape, pad_width, mode, **kw):
    """For each element of np.pad's output, the flat index of the operand's element it
    copies, or -1 where it is the constant: the pad of an index array (np.pad moves
    elements; it computes nothing for these modes)."""
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    if mode == "constant":
        return np.pad(idx, pad_width, mode="constant", constant_values=-1)
    return np.pad(idx, pad_width, mode=mode, **kw)


def pad_bar(g, x, pad_width, mode="constant", constant_values=0, **kw):
    """The adjoint of np.pad(x, pad_width, mode): each output element's adjoint added to
    the element it copies."""
    src = pad_sources(np.shape(x), pad_width, mode, **kw).reshape(-1)
    g = np.asarray(g, dtype=np.float64).reshape(-1)
    keep = src >= 0
    res = np.bincount(src[keep], weights=g[keep], minlength=np.size(x))
    return _as(res, x)


def pad_jvp(t, pad_width, mode="constant", constant_values=0, **kw):
    if mode == "constant":
        return np.pad(t, pad_width)
    return np.pad(t, pad_width, mode=mode, **kw)


# ------------------------------------------------------------------ selecting

def tri_bar(g, x, k=0, lower=True):
    """The adjoint of np.tril(x, k) (lower) or np.triu(x, k): the same mask; a vector,
    which tril makes a matrix of copied rows, gets its column sums."""
    kept = np.tril(g, k) if lower else np.triu(g, k)
    if np.ndim(x) == 1:
        kept = np.sum(kept, axis=0)
    return _as(kept, x)


def diag_bar(g, x, k=0):
    """The adjoint of np.diag(x, k): a vector's from the k-th diagonal of g, a matrix's
    the k-th diagonal scattered into zeros."""
    if np.ndim(x) == 1:
        return _as(np.diagonal(g, k), x)
    z = np.zeros(np.shape(x), _float_dtype(x))
    n = np.size(g)
    rows = np.arange(n) + max(-k, 0)
    cols = np.arange(n) + max(k, 0)
    z[rows, cols] = g
    return z


def diagonal_bar(g, x, offset=0, axis1=0, axis2=1):
    """The adjoint of np.diagonal(x, offset, axis1, axis2) (the diagonal is g's last axis)."""
    z = np.zeros(np.shape(x), _float_dtype(x))
    view = np.moveaxis(z, (axis1, axis2), (-2, -1))
    n = np.shape(g)[-1]
    rows = np.arange(n) + max(-offset, 0)
    cols = np.arange(n) + max(offset, 0)
    view[..., rows, cols] = g
    return z


def _take_indices(indices, n, mode):
    indices = np.asarray(indices)
    if mode == "wrap":
        return np.mod(indices, n) if n else indices
    if mode == "clip":
        return np.clip(indices, 0, max(n - 1, 0))
    return indices


def take_bar(g, x, indices, axis=None, mode="raise"):
    """The adjoint of np.take(x, indices, axis, mode=mode): g added at the indices taken
    (repeated indices accumulate)."""
    z = np.zeros(np.shape(x), _float_dtype(x))
    if axis is None:
        flat = z.reshape(-1)
        np.add.at(flat, _take_indices(indices, flat.size, mode), g)
        return z
    axis = axis % max(z.ndim, 1)
    index = (slice(None),) * axis + (_take_indices(indices, z.shape[axis], mode),)
    np.add.at(z, index, g)
    return z


def take_along_axis_bar(g, x, indices, axis):
    """The adjoint of np.take_along_axis(x, indices, axis): g added where taken."""
    z = np.zeros(np.shape(x), _float_dtype(x))
    indices = np.asarray(indices)
    if axis is None:
        np.add.at(z.reshape(-1), indices, g)
        return z
    axis = axis % z.ndim
    index = []
    for d in range(z.ndim):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * z.ndim
            shape[d] = z.shape[d]
            index.append(np.arange(z.shape[d]).reshape(shape))
    np.add.at(z, tuple(index), np.broadcast_to(g, np.broadcast_shapes(*[np.shape(i) for i in index])))
    return z


def shape_items(shape: tuple, count: int, k: int, where: tuple):
    """Item k of `shape` unpacked into `count` names (`n, d = x.shape`), as Python's
    unpacking: a shape of another length is a ShapeError located at the statement
    (`where`: file, line, column, the unpacked expression), not a raw ValueError."""
    if len(shape) != count:
        filename, line, col, text = where
        raise ShapeError(f"{text} has {len(shape)} dimension(s) {tuple(shape)}, unpacked into {count} names",
                         SourceLocation(filename, line, col),
                         hint=f"Pass an array of {count} dimensions, or read the dimensions you need by "
                              f"position ({text}[0], {text}[-1]).")
    return shape[k]


HELPERS = {
    "shape_items": shape_items, "cast_like": cast_like, "rollaxis_bar": rollaxis_bar, "rollaxis_jvp": rollaxis_jvp, "join_bar": join_bar,
    "join_jvp": join_jvp, "append_bar": append_bar, "append_jvp": append_jvp, "pad_bar": pad_bar,
    "pad_jvp": pad_jvp, "tri_bar": tri_bar, "diag_bar": diag_bar, "diagonal_bar": diagonal_bar,
    "take_bar": take_bar, "take_along_axis_bar": take_along_axis_bar, "with_piece": with_piece,
}
