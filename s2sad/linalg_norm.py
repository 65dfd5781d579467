"""The derivative of np.linalg.norm: vector orders (None/2, 1, inf, -inf, 0, any p) over
one axis or all, matrix orders ('fro', 'nuc', 2, -2, 1, -1, inf, -inf) over two axes,
`keepdims` (`NORM_HELPERS`).

As JAX: at x = 0 the 2-norm's (and 'fro''s) derivative is NaN (0/0, as sqrt's at 0
times 0); ord 0 counts nonzeros (zero derivative); where a max or min is attained by
several entries (or singular values) the adjoint is shared equally among them; |x|
has derivative sign(x), 0 at 0. The JVP is the VJP's gradient (the same choices) dotted
with the tangent, reduced as the norm reduces.

Layer: runtime.
"""
from __future__ import annotations

import numpy as np

from .linalg_base import back, f64


def _axes(x, ord, axis):
    """(the reduced axes, whether it is a matrix norm), numpy's reading of ord and axis."""
    nd = x.ndim
    if axis is None:
        if ord is None or nd == 1:
            return tuple(range(nd)), False
        return (0, 1), True
    if isinstance(axis, (int, np.integer)):
        return (int(axis) % nd,), False
    axes = tuple(int(a) % nd for a in axis)
    return axes, len(axes) == 2


def _expand(y, x, axes, keepdims):
    """A reduced value back with size-1 reduced axes (keepdims' shape)."""
    y = f64(y)
    if keepdims:
        return y
    for a in sorted(axes):
        y = np.expand_dims(y, a)
    return y


def _shared(v, axes, largest):
    """Equal shares of 1 among the entries of `v` that attain its max (min) along
    `axes` (found in float64 from `v`, not from numpy's value in the operand's dtype)."""
    best = np.max(v, axis=axes, keepdims=True) if largest else np.min(v, axis=axes, keepdims=True)
    hit = v == best
    return hit / np.sum(hit, axis=axes, keepdims=True)


def _vector_grad(x, N, ord, axes):
    """d norm / d x along `axes`, N the norm with keepdims."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if ord is None or ord == 2:
            return x / N
        if ord == 0:
            return np.zeros(x.shape)
        if ord == 1:
            return np.sign(x)
        if ord in (np.inf, -np.inf):
            return np.sign(x) * _shared(np.abs(x), axes, ord > 0)
        p = float(ord)
        return np.sign(x) * np.abs(x) ** (p - 1) * N ** (1 - p)


def _matrix_grad(x, N, ord, axes):
    """The same for a matrix norm over `axes` (rows, columns)."""
    xm = np.moveaxis(x, axes, (-2, -1))
    Nm = np.moveaxis(N, axes, (-2, -1))
    if ord in (None, "fro"):
        with np.errstate(divide="ignore", invalid="ignore"):
            gm = xm / Nm
    elif ord in ("nuc", 2, -2):
        U, s, Vt = np.linalg.svd(xm, full_matrices=False)
        w = np.ones(s.shape) if ord == "nuc" else _shared(s, (-1,), ord == 2)
        gm = (U * w[..., None, :]) @ Vt
    elif ord in (1, -1):       # the largest (smallest) column sum of |x|
        gm = np.sign(xm) * _shared(np.sum(np.abs(xm), axis=-2), (-1,), ord == 1)[..., None, :]
    elif ord in (np.inf, -np.inf):   # the largest (smallest) row sum
        gm = np.sign(xm) * _shared(np.sum(np.abs(xm), axis=-1), (-1,), ord > 0)[..., :, None]
    else:
        raise ValueError(f"invalid norm order {ord!r} for matrices")
    return np.moveaxis(gm, (-2, -1), axes)


def _grad(x, out, ord, axis, keepdims):
    axes, matrix = _axes(x, ord, axis)
    N = _expand(out, x, axes, keepdims)
    return (_matrix_grad if matrix else _vector_grad)(x, N, ord, axes), axes


def norm_bar(g, x, out, ord=None, axis=None, keepdims=False):
    x64 = f64(x)
    grad, axes = _grad(x64, out, ord, axis, keepdims)
    return back(grad * _expand(g, x64, axes, keepdims), x)


def norm_jvp(t, x, out, ord=None, axis=None, keepdims=False):
    x64 = f64(x)
    grad, axes = _grad(x64, out, ord, axis, keepdims)
    return back(np.sum(grad * f64(t), axis=axes, keepdims=keepdims), out)


NORM_HELPERS = {"norm_bar": norm_bar, "norm_jvp": norm_jvp}
