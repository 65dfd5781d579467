"""What the adjoints and tangents of scipy.special's logsumexp, softmax and
log_softmax run (array primitives: array_prims/softmaxes.py).

logsumexp(a, axis, b, keepdims) = log sum b e^a over `axis` of a and b broadcast
together (scipy's semantics): its partials are b e^a / S in a and e^a / S in b (S =
sum b e^a, both shifted by a's max: never e^(a - out), which rounds wrong), summed back to each operand's shape. Each `*_bar` returns a new array of its
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
    """(b e^a / S, e^a / S, ndim), S = sum b e^a along `axis`, over a and b broadcast
    (b: 1 without b): the partials of logsumexp in a and in b. The exponentials are
    shifted by a's max (0 where that is not finite, scipy's shift) and divided by their
    own sum, not taken as e^(a - out): where the value's log(sum) is lost in rounding (a
    row of 1e308: out == a) e^(a - out) gives 1 each instead of 1/4. Entries where b == 0
    count as -inf in the shift and in a's partial (scipy masks them so, and 0 e^inf is
    no number), not in b's (e^a / S there, however small b is). Both are NaN where the
    value is (a negative sum without return_sign)."""
    a = np.asarray(a)
    bb = np.asarray(1.0 if b is None else b)
    shape = np.broadcast_shapes(a.shape, bb.shape)
    nd, axes = len(shape), _axes(axis, len(shape))
    ab = np.broadcast_to(a, shape)
    masked = np.where(bb == 0, -np.inf, ab) if b is not None and np.any(bb == 0) else ab
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m = np.max(masked, axis=axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, np.zeros((), m.dtype))
        ex = np.exp(ab - m)
        e = (ex if masked is ab else np.exp(masked - m)) * bb
        s = np.sum(e, axis=axes, keepdims=True)
        wa, wb = e / s, ex / s
        oe = _expand(out, nd, axis, keepdims)
        if np.isnan(oe).any():
            wa, wb = (np.where(np.isnan(oe), np.nan, w) for w in (wa, wb))
    return wa, wb, nd


def logsumexp_weights(a, out, axis=None, keepdims=False):
    """e^a / sum e^a along `axis` without b (rowsoftmax's forward-over-reverse reads it)."""
    return _weights(a, None, out, axis, keepdims)[0]


def logsumexp_bar(i, g, a, b, out, axis=None, keepdims=False):
    """The adjoint of operand i (0: a, 1: b) of logsumexp(a, axis, b, keepdims)."""
    wa, wb, nd = _weights(a, b, out, axis, keepdims)
    return _sum_to(_expand(g, nd, axis, keepdims) * (wa if i == 0 else wb), (a, b)[i])


def logsumexp_jvp(i, t, a, b, out, axis=None, keepdims=False):
    wa, wb, _ = _weights(a, b, out, axis, keepdims)
    part = t * (wa if i == 0 else wb)
    return np.sum(np.broadcast_to(part, np.broadcast_shapes(np.shape(part), wa.shape)), axis=axis,
                  keepdims=keepdims)


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
