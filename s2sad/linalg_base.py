"""The pieces the linear-algebra helpers share (linalg_rules, linalg_more): the adjoint
of a tuple of outputs (`Parts`), float64 arithmetic cast back to the operand's dtype,
batched transposes, triangles.

Layer: runtime; imports no s2sad module but errors.
"""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedOperationError
from .reduce import float_dtype as reduce_float_dtype


# ------------------------------------------------------------------ tuples of outputs

class Parts:
    """The adjoint or tangent of a tuple of outputs: entries add one by one (None: zero)."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = tuple(items)

    def __add__(self, other):
        if not isinstance(other, Parts) or len(other.items) != len(self.items):
            return NotImplemented
        return Parts(b if a is None else a if b is None else a + b for a, b in zip(self.items, other.items))

    def __radd__(self, other):
        # a sum started from the number 0 (sum(), a zero tangent)
        if isinstance(other, (int, float)) and other == 0:
            return self
        return NotImplemented

    def __getitem__(self, k):
        return self.items[k]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __repr__(self):
        return f"Parts({list(self.items)!r})"


def item_bar(g, t, k):
    """The adjoint of `t` from that of its item `t[k]`."""
    return Parts(g if j == k else None for j in range(len(t)))


def parts(values):
    """A tuple of outputs as a tangent (the JVP of a tuple-valued primitive)."""
    return Parts(values)


# ------------------------------------------------------------------ small pieces

float_dtype = reduce_float_dtype   # (reduce's: the one there is)


def f64(x):
    return np.asarray(x, dtype=np.float64)


def back(r, like):
    """`r` as an adjoint of `like`: its shape and float dtype, a new array."""
    return np.array(np.broadcast_to(r, np.shape(like)), dtype=float_dtype(like))


def mT(x):
    return np.swapaxes(x, -1, -2)


def sum_to(g, shape):
    """`g` summed over the axes broadcasting added to `shape`."""
    g = np.asarray(g)
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and g.shape[lead + k] != 1)
    return np.sum(g, axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


def entry(g, k, like):
    """Entry k of a tuple adjoint as an array of `like`'s shape (zeros when None)."""
    e = None if g is None else g[k]
    return np.zeros(np.shape(like)) if e is None else np.broadcast_to(f64(e), np.shape(like))


def inv_or_nan(a):
    """inv(a), NaN where a matrix is singular (a derivative that does not exist)."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        flat = a.reshape((-1,) + a.shape[-2:])
        out = np.empty_like(flat)
        for k, m in enumerate(flat):
            try:
                out[k] = np.linalg.inv(m)
            except np.linalg.LinAlgError:
                out[k] = np.nan
        return out.reshape(a.shape)


def other_products(s):
    """For each entry along the last axis, the product of the others (exact with zeros)."""
    ones = np.ones(s.shape[:-1] + (1,))
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return left * right


def refuse(msg, hint):
    return UnsupportedOperationError(msg, hint=hint)


# ------------------------------------------------------------------ triangles

def tri(x, lower, k=0):
    return np.tril(x, k) if lower else np.triu(x, -k)


def from_triangle(t, lower):
    """The symmetric matrix a function reading one triangle of `t` sees."""
    t = f64(t)
    strict = tri(t, lower, -1)
    return strict + mT(strict) + t * np.eye(t.shape[-1])


def onto_triangle(s, lower):
    """The adjoint of the triangle read, from the (symmetric) adjoint `s` of the
    symmetric matrix it stands for: off-diagonal entries count twice."""
    s = (s + mT(s)) / 2
    return 2 * tri(s, lower, -1) + s * np.eye(s.shape[-1])

