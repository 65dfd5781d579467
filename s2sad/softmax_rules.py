"""What the adjoints and tangents of scipy.special's logsumexp, softmax and
log_softmax run (array primitives: array_prims/softmaxes.py).

logsumexp(a, axis, b, keepdims) = log sum b e^a over `axis` of a and b broadcast
together (scipy's semantics): its partials are b e^(a - out) in a and e^(a - out) in
b, summed back to each operand's shape. Each `*_bar` returns a new array of its
operand's shape and float dtype. Layer: runtime (array_rules.HELPERS takes these in).
"""
from __future__ import annotations

import numpy as np

from .reduce import float_dtype


_float_dtype = float_dtype   # (reduce's: the one there is)


def _axes(axis, ndim) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(int(a) % max(ndim, 1) for a in axes))


def _expand(v, ndim, axis, keepdims):
    """A reduction's output (or its adjoint) with the reduced axes back as size 1."""
    v = np.asarray(v)
    if keepdims or ndim == 0:
        return v
    for a in _axes(axis, ndim):
        v = np.expand_dims(v, a)
    return v


def _sum_to(v, like):
    """`v` summed over the axes numpy broadcast `like` along, as a new array of like's
    shape and float dtype (a Python number for a number)."""
    shape = np.shape(like)
    lead = v.ndim - len(shape)
    if lead:
        v = v.sum(axis=tuple(range(lead)))
    keep = tuple(k for k, n in enumerate(shape) if n == 1 and v.shape[k] != 1)
    if keep:
        v = v.sum(axis=keep, keepdims=True)
    if not isinstance(like, np.ndarray) and np.ndim(like) == 0:
        return float(v)
    return np.array(np.reshape(v, shape), dtype=_float_dtype(like))


def _weights(a, b, out, axis, keepdims):
    """e^(a - out) over a and b broadcast, and b there (1 without b)."""
    a = np.asarray(a)
    bb = np.asarray(1.0 if b is None else b)
    nd = np.broadcast(a, bb).ndim
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(a - _expand(out, nd, axis, keepdims)), bb, nd


def logsumexp_bar(i, g, a, b, out, axis=None, keepdims=False):
    """The adjoint of operand i (0: a, 1: b) of logsumexp(a, axis, b, keepdims)."""
    w, bb, nd = _weights(a, b, out, axis, keepdims)
    ge = _expand(g, nd, axis, keepdims)
    return _sum_to(ge * w * bb if i == 0 else ge * w, (a, b)[i])


def logsumexp_jvp(i, t, a, b, out, axis=None, keepdims=False):
    w, bb, _ = _weights(a, b, out, axis, keepdims)
    part = t * bb * w if i == 0 else t * w
    return np.sum(np.broadcast_to(part, np.broadcast(w, bb).shape), axis=axis, keepdims=keepdims)


def softmax_bar(g, out, axis=None):
    """softmax's adjoint: s (g - sum(g s)) along `axis`."""
    gs = np.asarray(g) * out
    return np.array(gs - out * np.sum(gs, axis=axis, keepdims=True), dtype=_float_dtype(out))


def softmax_jvp(t, out, axis=None):
    return softmax_bar(t, out, axis)     # the Jacobian diag(s) - s s^T is symmetric


def log_softmax_bar(g, out, axis=None):
    """log_softmax's adjoint: g - e^out sum(g) along `axis`."""
    g = np.broadcast_to(g, np.shape(out))
    return np.array(g - np.exp(out) * np.sum(g, axis=axis, keepdims=True), dtype=_float_dtype(out))


def log_softmax_jvp(t, out, axis=None):
    t = np.broadcast_to(t, np.shape(out))
    return t - np.sum(np.exp(out) * t, axis=axis, keepdims=True)


HELPERS = {"logsumexp_bar": logsumexp_bar, "logsumexp_jvp": logsumexp_jvp, "softmax_bar": softmax_bar,
           "softmax_jvp": softmax_jvp, "log_softmax_bar": log_softmax_bar, "log_softmax_jvp": log_softmax_jvp}
