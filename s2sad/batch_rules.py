"""What a batched tangent program calls (passes/batched_sweep.py): tangents with a leading
batch axis of K columns, next to primals and adjoints without one.

A batched tangent of a value of shape s has shape (K,) + s; row b is the tangent along
the b-th direction. Every helper here gives, row by row, what the unbatched program's
line gives for that row's tangent alone (a linear map of it), so a batched program's
rows are the columns the per-column program would give:
- `brows(fn, *ts)`: any linear text, one row at a time (np.stack of fn over the rows);
- `bindex`, `bindex_bar`, `breduce`, `breduce_bar`: indexing and sum/mean with the batch
  axis kept in front, vectorized where numpy can (a basic index; an axis shifted by one),
  else row by row;
- `bkernel_tangent`, `bkernel_sum_tangent`: an elementwise kernel's tangent kernel over
  the primals and the batched tangents, each tangent padded to the kernel's rank so it
  broadcasts as its row would;
- `bscalar_tangents`: a kernel on known scalars, its second partials from its tangent
  dual once per active input, times the batched tangents;
- `bseeded_grads`: one `sum_grads` pass of a kernel's seeded tangent kernel (hvp_sweep)
  with the active inputs and their copies given a batch axis (so no pullback sums over
  the batch): the adjoints' tangents, row by row, and the adjoints (row 0; every row is
  the same, the seed of the adjoint has no batch axis).
Nothing here writes an argument.
"""
from __future__ import annotations

import numpy as np

from .array_rules import index_bar


def brows(fn, *ts):
    """np.stack([fn(t1[b], t2[b], ...) for each row b])."""
    k = np.shape(ts[0])[0]
    return np.stack([np.asarray(fn(*(t[b] for t in ts))) for b in range(k)])


def _basic(index) -> bool:
    if type(index) is slice:
        return True
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer)) for i in items)


def _shifted(index) -> tuple:
    return (_ALL,) + (index if type(index) is tuple else (index,))


_ALL = slice(None)


def bindex(t, index):
    """Row by row t[b][index], as a new array."""
    if _basic(index):
        return np.array(t[_shifted(index)])
    return brows(lambda r: np.asarray(r)[index], t)


def bindex_bar(g, x, index):
    """Row by row index_bar(g[b], x, index)."""
    if _basic(index):
        z = np.zeros((g.shape[0],) + _shape(x), np.result_type(g, np.float32))
        z[_shifted(index)] = g
        return z
    return brows(lambda r: index_bar(r, x, index), g)


def _axes(axis, nd: int) -> tuple:
    if axis is None:
        return tuple(range(1, nd + 1))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(1 + a % nd for a in axes)


def breduce(kind: str, t, nd: int, axis=None, keepdims=False):
    """Row by row np.sum / np.mean(t[b], axis, keepdims) of a value of rank `nd`."""
    return getattr(np, kind)(t, axis=_axes(axis, nd), keepdims=bool(keepdims))


def breduce_bar(kind: str, g, x, axis=None, keepdims=False):
    """Row by row sum_bar / mean_bar(g[b], x, axis, keepdims): g spread over x's shape."""
    nd = np.ndim(x)
    g = np.asarray(g)
    axes = _axes(axis, nd)
    if not keepdims:
        g = g.reshape(_kept_shape(g.shape, axes, nd))
    if kind == "mean":      # (mean_bar's division: g by the count, an int)
        g = g / int(np.prod([np.shape(x)[d - 1] for d in axes], dtype=np.int64))
    dtype = x.dtype if isinstance(x, np.ndarray) and x.dtype.kind == "f" else np.dtype(np.float64)
    return np.array(np.broadcast_to(g, (g.shape[0],) + np.shape(x)), dtype=dtype)


def _kept_shape(gshape: tuple, axes: tuple, nd: int) -> tuple:
    """A reduction's batched output shape with the reduced axes back as size 1."""
    rest = iter(gshape[1:])
    return gshape[:1] + tuple(1 if d in axes else next(rest) for d in range(1, nd + 1))


def _pad(t, nd: int):
    """A batched tangent (K,) + s as (K,) + (1,)*(nd - len(s)) + s."""
    t = np.asarray(t)
    return t.reshape(t.shape[:1] + (1,) * (nd - t.ndim + 1) + t.shape[1:])


def _shape(a) -> tuple:
    return a.shape if type(a) is np.ndarray else np.shape(a)


def _full_shape(args, dots, extra=()) -> tuple:
    """(K,) + the kernel's broadcast shape over the primals, the seeds and the rows."""
    out: tuple = ()
    for shape in [_shape(a) for a in tuple(args) + tuple(extra)] + [_shape(d)[1:] for d in dots]:
        if shape != out:
            out = _broadcast2(out, shape)
    return (_shape(dots[0])[0],) + out


def _broadcast2(a: tuple, b: tuple) -> tuple:
    """numpy's broadcast of two shapes (they do broadcast: the unbatched program ran)."""
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + b
    return tuple(x if y == 1 else y for x, y in zip(a, b))


def _full(a, shape: tuple, batched: bool = False, dtype=None):
    """`a` at the full batched shape, contiguous (the runtime's lean path takes arrays of
    one shape, and a pullback then sums over nothing but what the row's own would); a
    Python number stays one unless `dtype` is given (an active input: its pullback must
    not sum over the rows)."""
    if type(a) is float or type(a) is int:
        if dtype is None:
            return a
        return np.full(shape, a, dtype)
    if type(a) is np.ndarray and a.shape == shape and a.flags.c_contiguous:
        return a
    a = _pad(a, len(shape) - 1) if batched else np.asarray(a)
    out = np.empty(shape, a.dtype)
    out[...] = a
    return out


def _unbatched_sum(s, shape: tuple):
    """A batched gradient (K,) + B summed, row by row, back to an operand's `shape`."""
    s = np.asarray(s)
    lead = s.ndim - 1 - len(shape)
    axes = tuple(range(1, 1 + lead)) + tuple(1 + lead + k for k, n in enumerate(shape)
                                               if n == 1 and s.shape[1 + lead + k] != 1)
    if axes:
        s = s.sum(axis=axes, keepdims=True)
    return s.reshape(s.shape[:1] + tuple(shape))


def bkernel_tangent(apply, kernel, args: tuple, dots: tuple):
    """The kernel's tangent (its tangent kernel's values) for batched `dots`: (K,) + B."""
    shape = _full_shape(args, dots)
    return apply(kernel, tuple(_full(a, shape) for a in args) + tuple(_full(d, shape, True) for d in dots))


def bkernel_sum_tangent(apply, kernel, args: tuple, dots: tuple):
    """The tangent of a kernel's sum: the tangent kernel's values summed per row: (K,)."""
    t = bkernel_tangent(apply, kernel, args, dots)
    return t.reshape(t.shape[0], -1).sum(axis=1)


def bseeded_grads(sum_grads, kernel, args: tuple, active: tuple, dots: tuple, g, g_dot, wrt: tuple):
    """(the adjoints' tangents, batched, then the adjoints) of the active inputs (their
    positions among `args`) of one kernel from a pass of its seeded tangent kernel."""
    shape = _full_shape(args, dots, (g,))
    dtype = np.result_type(*[a for a in tuple(args) + tuple(dots) if isinstance(a, np.ndarray)])
    margs = [_full(a, shape, dtype=dtype if j in active else None) for j, a in enumerate(args)]
    gd = np.asarray(g_dot)
    gd = _full(gd if gd.ndim else np.broadcast_to(gd, shape[:1]), shape, True)
    grads = sum_grads(kernel, tuple(margs) + tuple(_full(d, shape, True) for d in dots)
                      + (_full(g, shape), gd) + tuple(margs[j] for j in active), wrt)
    n = len(active)
    seconds = [_unbatched_sum(s, _shape(args[j])) for s, j in zip(grads[:n], active)]
    firsts = [np.asarray(f)[0] if np.ndim(f) else f for f in grads[n:]]
    return seconds, firsts


def bscalar_tangents(tangent_dual, args: tuple, dots: tuple) -> tuple:
    """(the value's batched tangent, each partial's batched tangent) of a kernel on known
    scalars: its tangent dual along each active input's unit tangent gives that input's
    column of second partials; both are linear in the tangents (rows of K)."""
    m = len(dots)
    columns = [tangent_dual(*args, *(1.0 if b == c else 0.0 for c in range(m))) for b in range(m)]
    return tuple(sum(columns[b][r] * np.asarray(dots[b]) for b in range(m)) for r in range(1 + m))
