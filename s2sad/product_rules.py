"""What the adjoints of the contractions run: einsum and what reduces to it
(tensordot, inner, N-D dot), kron, cross, vdot.

Every contraction is one einsum with explicit labels (`Spec`): the ellipsis expanded to
labels of its own (an operand with fewer broadcast dimensions takes the last ones), the
implicit output made explicit (numpy's rule: the broadcast dimensions first, then the
labels seen once, in label order), and each size-1 dimension that numpy broadcasts
against a longer one given a label of its own (summed over one value: the same
product). The adjoint of operand i is then one einsum of the output's adjoint and the
other operands onto operand i's labels (`einsum_operand_bar`): the labels no other
operand nor the output has are broadcast back, a label repeated in operand i (a
diagonal, a trace) is written back onto that diagonal (zeros elsewhere).

Each helper returns a new array of its operand's shape and dtype. Layer: runtime
(array_rules.HELPERS takes these in).
"""
from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from .errors import UnsupportedOperationError
from .reduce import float_dtype

_LABELS = string.ascii_uppercase + string.ascii_lowercase   # numpy's order of labels


_float_dtype = float_dtype   # (reduce's: the one there is)


def _as(x, like):
    """`x` as a new array of `like`'s shape and float dtype."""
    return np.array(np.reshape(x, np.shape(like)), dtype=_float_dtype(like))


@dataclass(frozen=True)
class Spec:
    """An einsum with explicit labels: one string per operand, and the output's."""
    ins: tuple
    out: str

    def text(self) -> str:
        return ",".join(self.ins) + "->" + self.out


def _split(subscripts: str, n: int):
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    parts = ins.split(",")
    if len(parts) != n:
        raise UnsupportedOperationError(
            f"einsum subscripts '{subscripts}' name {len(parts)} operand(s) but {n} were given",
            hint="Give one comma-separated subscript per operand.")
    return parts, (out if arrow else None)


def _expand_ellipsis(parts, out, shapes):
    """Each '...' replaced by labels unused elsewhere; the implicit output made explicit."""
    used = set("".join(parts) + (out or ""))
    free = [c for c in _LABELS if c not in used]
    n_ell = [len(s) - (len(p) - 3) if "..." in p else 0 for p, s in zip(parts, shapes)]
    e = max(n_ell, default=0)
    if e > len(free):
        raise UnsupportedOperationError("einsum with more broadcast dimensions than free labels",
                                        hint="Name the dimensions with labels.")
    ell = "".join(free[:e])
    parts = [p.replace("...", ell[e - k:] if k else "") for p, k in zip(parts, n_ell)]
    if out is None:
        counts = {c: "".join(parts).count(c) for c in set("".join(parts)) if c not in ell}
        out = ell + "".join(sorted((c for c, k in counts.items() if k == 1), key=_LABELS.index))
    else:
        out = out.replace("...", ell)
    return parts, out, free[e:]


def _own_broadcast_labels(parts, out, shapes, free):
    """A size-1 dimension broadcast against a longer one of the same label gets a label
    of its own: einsum then sums it over its one value (the same result), and its
    adjoint is summed over the broadcast."""
    size = {}
    for p, s in zip(parts, shapes):
        for c, n in zip(p, s):
            if n != 1:
                size[c] = n
    free = list(free)
    new = []
    for p, s in zip(parts, shapes):
        q = list(p)
        for k, (c, n) in enumerate(zip(p, s)):
            if n == 1 and size.get(c, 1) != 1:
                q[k] = free.pop(0)
        new.append("".join(q))
    return new, out


def einsum_spec(subscripts: str, shapes) -> Spec:
    parts, out = _split(subscripts, len(shapes))
    parts, out, free = _expand_ellipsis(parts, out, shapes)
    parts, out = _own_broadcast_labels(parts, out, shapes, free)
    return Spec(tuple(parts), out)


def _unique(labels: str) -> str:
    return "".join(dict.fromkeys(labels))


def einsum_operand_bar(spec: Spec, i: int, g, operands):
    """The adjoint of operand i of the einsum `spec` given the output's adjoint `g`."""
    x = np.asarray(operands[i])
    mine = spec.ins[i]
    others = [(s, o) for k, (s, o) in enumerate(zip(spec.ins, operands)) if k != i]
    seen = set(spec.out).union(*(set(s) for s, _ in others))
    labels = _unique(mine)
    size = dict(zip(mine, x.shape))
    kept = "".join(c for c in labels if c in seen)
    text = ",".join([spec.out] + [s for s, _ in others]) + "->" + kept
    ops = [np.asarray(g)] + [np.asarray(o) for _, o in others]
    part = np.einsum(text, *ops, optimize=len(ops) > 2)
    # the labels only operand i has: its adjoint is constant along them
    part = np.reshape(part, [size[c] if c in seen else 1 for c in labels])
    full = np.broadcast_to(part, [size[c] for c in labels])
    if len(labels) == len(mine):
        return np.array(full, dtype=_float_dtype(x))
    # a repeated label: the adjoint lies on that diagonal, zero elsewhere
    res = np.zeros(x.shape, _float_dtype(x))
    grid = [np.arange(size[c]).reshape([-1 if d == labels.index(c) else 1 for d in range(len(labels))])
            for c in mine]
    res[tuple(grid)] = full
    return res


def einsum_bar(i, g, subscripts, *operands):
    """The adjoint of operand i of np.einsum(subscripts, *operands)."""
    spec = einsum_spec(subscripts, [np.shape(o) for o in operands])
    return einsum_operand_bar(spec, i, g, operands)


def einsum_jvp(i, t, subscripts, *operands):
    """The tangent of np.einsum(subscripts, *operands) from operand i's tangent `t`."""
    ops = list(operands)
    ops[i] = t
    return np.einsum(subscripts, *ops, optimize=len(ops) > 2)


# ------------------------------------------------------------------ what reduces to einsum


def _axes_list(axes, ndim):
    axes = [axes] if np.ndim(axes) == 0 else list(axes)
    return [int(a) % ndim if ndim else int(a) for a in axes]


def tensordot_spec(a_shape, b_shape, axes=2) -> Spec:
    na, nb = len(a_shape), len(b_shape)
    if np.ndim(axes) == 0:
        k = int(axes)
        ax_a, ax_b = list(range(na - k, na)), list(range(k))
    else:
        ax_a, ax_b = _axes_list(axes[0], na), _axes_list(axes[1], nb)
    la = _LABELS[:na]
    lb = list(_LABELS[na:na + nb])
    for p, q in zip(ax_a, ax_b):
        lb[q] = la[p]
    lb = "".join(lb)
    out = "".join(c for k, c in enumerate(la) if k not in ax_a) + "".join(c for k, c in enumerate(lb) if k not in ax_b)
    return Spec((la, lb), out)


def tensordot_bar(i, g, a, b, axes=2):
    return einsum_operand_bar(tensordot_spec(np.shape(a), np.shape(b), axes), i, g, (a, b))


def tensordot_jvp(i, t, a, b, axes=2):
    return np.tensordot(t, b, axes) if i == 0 else np.tensordot(a, t, axes)


def inner_spec(a_shape, b_shape) -> Spec:
    if not a_shape or not b_shape:      # a number: a product
        return Spec((_LABELS[:len(a_shape)], _LABELS[:len(b_shape)]), _LABELS[:max(len(a_shape), len(b_shape))])
    la = _LABELS[:len(a_shape)]
    lb = _LABELS[len(a_shape):len(a_shape) + len(b_shape) - 1] + la[-1]
    return Spec((la, lb), la[:-1] + lb[:-1])


def inner_bar(i, g, a, b):
    return einsum_operand_bar(inner_spec(np.shape(a), np.shape(b)), i, g, (a, b))


def dot_spec(a_shape, b_shape) -> Spec:
    """np.dot: a product with a number; else the last axis of a against b's
    second-to-last (its only one for a vector)."""
    if not a_shape or not b_shape:
        return inner_spec(a_shape, b_shape)
    return tensordot_spec(a_shape, b_shape, ([-1], [max(len(b_shape) - 2, 0)]))


def dot_nd_bar(i, g, a, b):
    return einsum_operand_bar(dot_spec(np.shape(a), np.shape(b)), i, g, (a, b))


def vdot_bar(i, g, a, b):
    """np.vdot of real arrays: the sum of the flattened products."""
    other = b if i == 0 else a
    mine = a if i == 0 else b
    return _as(np.asarray(g) * np.ravel(other), mine)


def kron_bar(i, g, a, b):
    """np.kron(a, b)[i*nb + j] = a[i] b[j] in each dimension (the shorter shape padded
    with leading 1s): the adjoint viewed as (a0, b0, a1, b1, ...) and contracted with
    the other operand."""
    a, b = np.asarray(a), np.asarray(b)
    d = max(a.ndim, b.ndim)
    sa = (1,) * (d - a.ndim) + a.shape
    sb = (1,) * (d - b.ndim) + b.shape
    g4 = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    la, lb = _LABELS[:d], _LABELS[d:2 * d]
    pairs = "".join(p + q for p, q in zip(la, lb))
    if i == 0:
        part = np.einsum(f"{pairs},{lb}->{la}", g4, b.reshape(sb))
        return _as(part, a)
    return _as(np.einsum(f"{pairs},{la}->{lb}", g4, a.reshape(sa)), b)


# ------------------------------------------------------------------ cross


def _cross_axes(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    return axisa, axisb, axisc


def _as3(v):
    """Vectors of 2 components as 3 (z = 0), along the last axis."""
    if v.shape[-1] == 3:
        return v
    if v.shape[-1] != 2:
        raise UnsupportedOperationError("np.cross of vectors of other than 2 or 3 components",
                                        hint="np.cross takes vectors of 2 or 3 components.")
    return np.concatenate([v, np.zeros(v.shape[:-1] + (1,), v.dtype)], axis=-1)


def cross_bar(i, g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The adjoint of np.cross: of a, b x g; of b, g x a (3-vectors; 2-vectors as 3 with
    z = 0, whose cross product is the z component alone)."""
    axisa, axisb, axisc = _cross_axes(a, b, axisa, axisb, axisc, axis)
    a0, b0 = np.asarray(a), np.asarray(b)
    am, bm = np.moveaxis(a0, axisa, -1), np.moveaxis(b0, axisb, -1)
    a3, b3 = _as3(am), _as3(bm)
    g = np.asarray(g)
    if am.shape[-1] == 2 and bm.shape[-1] == 2:     # the result is the z component
        g3 = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    mine, moved, axis_i = (a0, am, axisa) if i == 0 else (b0, bm, axisb)
    full = np.cross(b3, g3) if i == 0 else np.cross(g3, a3)
    full = full[..., :moved.shape[-1]]
    lead = full.ndim - moved.ndim
    full = full.sum(axis=tuple(range(lead))) if lead else full
    keep = tuple(k for k in range(moved.ndim - 1) if moved.shape[k] == 1 and full.shape[k] != 1)
    if keep:
        full = full.sum(axis=keep, keepdims=True)
    return _as(np.moveaxis(full, -1, axis_i), mine)


def cross_jvp(i, t, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    kw = dict(axisa=axisa, axisb=axisb, axisc=axisc) if axis is None else dict(axis=axis)
    return np.cross(t, b, **kw) if i == 0 else np.cross(a, t, **kw)


HELPERS = {
    "einsum_bar": einsum_bar, "einsum_jvp": einsum_jvp, "tensordot_bar": tensordot_bar,
    "tensordot_jvp": tensordot_jvp, "inner_bar": inner_bar, "dot_nd_bar": dot_nd_bar, "vdot_bar": vdot_bar,
    "kron_bar": kron_bar, "cross_bar": cross_bar, "cross_jvp": cross_jvp,
}
