"""What the adjoints and tangents of the statistics and scans run: var, std, the
quantiles (median, percentile, quantile: linear interpolation), nansum, nanmean,
cumsum, cumprod, sort and partition values, diff, gradient, convolve, correlate,
interp.

Conventions (JAX's, where mathematics leaves a choice): a sort's adjoint flows through
the stable sorting permutation (ties: the earlier element takes the earlier place);
std's derivative at
zero variance is NaN (as jax.grad(jnp.std) gives: it does not exist); cumprod's
adjoint is exact with zeros (no division by a zero element); a quantile's derivative
in q at an exact order statistic is the slope towards the next one.

Each `*_bar` returns a new array of its operand's shape and float dtype; each `*_jvp`
one of the output's shape. Layer: runtime (array_rules.HELPERS takes these in).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import SourceLocation, UnsupportedOperationError
from .reduce import float_dtype


_float_dtype = float_dtype   # (reduce's: the one there is)


def _as(x, like):
    """`x` as a new array of `like`'s shape and float dtype (a Python number for a number)."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return float(np.reshape(x, ()))
    x = np.asarray(x)
    shaped = x.reshape(np.shape(like)) if x.size == np.size(like) else np.broadcast_to(x, np.shape(like))
    return np.array(shaped, dtype=_float_dtype(like))


def _axes(axis, ndim) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(int(a) % max(ndim, 1) for a in axes))


def _expand(g, ndim, axis, keepdims):
    """A reduction's output adjoint with the reduced axes back as size 1."""
    g = np.asarray(g)
    if keepdims or ndim == 0:
        return g
    for a in _axes(axis, ndim):
        g = np.expand_dims(g, a)
    return g


def _count(x, axis) -> int:
    shape = np.shape(x)
    return int(np.prod([shape[a] for a in _axes(axis, len(shape))], dtype=np.int64))


# ------------------------------------------------------------------ var, std


def _centered(x, axis):
    x = np.asarray(x, dtype=_float_dtype(x))
    return x - np.mean(x, axis=axis, keepdims=True)


def var_bar(g, x, axis=None, ddof=0, keepdims=False):
    c = _centered(x, axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as(_expand(g, c.ndim, axis, keepdims) * (2.0 / (_count(x, axis) - ddof)) * c, x)


def std_bar(g, x, out, axis=None, ddof=0, keepdims=False):
    """At zero variance: NaN (0/0), as JAX's; the derivative does not exist there."""
    c = _centered(x, axis)
    d = _count(x, axis) - ddof
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as(_expand(g, c.ndim, axis, keepdims) * c / (d * _expand(out, c.ndim, axis, keepdims)), x)


def var_jvp(t, x, axis=None, ddof=0, keepdims=False):
    c = _centered(x, axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(c * t, axis=axis, keepdims=keepdims) * (2.0 / (_count(x, axis) - ddof))


def std_jvp(t, x, out, axis=None, ddof=0, keepdims=False):
    with np.errstate(divide="ignore", invalid="ignore"):
        return var_jvp(t, x, axis, ddof, keepdims) / (2.0 * np.asarray(out))


# ------------------------------------------------------------------ nansum, nanmean


def nan_bar(g, x, axis=None, keepdims=False, mean=False):
    """The adjoint of nansum (mean=False) or nanmean: zero at the NaNs."""
    x = np.asarray(x)
    ok = ~np.isnan(x)
    ge = _expand(g, x.ndim, axis, keepdims)
    if mean:
        with np.errstate(divide="ignore", invalid="ignore"):
            ge = ge / np.sum(ok, axis=axis, keepdims=True)
    return _as(np.where(ok, ge, 0.0), x)


def nan_jvp(t, x, axis=None, keepdims=False, mean=False):
    x = np.asarray(x)
    ok = ~np.isnan(x)
    s = np.sum(np.where(ok, t, 0.0), axis=axis, keepdims=keepdims)
    if mean:
        with np.errstate(divide="ignore", invalid="ignore"):
            s = s / np.sum(ok, axis=axis, keepdims=keepdims)
    return s


# ------------------------------------------------------------------ quantiles


@dataclass(frozen=True)
class _Quantile:
    """x's reduced axes as the last of (lanes, n), sorted (stably: `perm`), and each q's
    two order statistics lo, hi with weights 1 - frac, frac."""
    lanes: np.ndarray
    perm: np.ndarray
    xs: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    frac: np.ndarray
    order: list
    moved_shape: tuple


def _quantile(x, q, axis, per) -> _Quantile:
    x = np.asarray(x)
    axes = _axes(axis, x.ndim)
    rest = [a for a in range(x.ndim) if a not in axes]
    order = rest + list(axes)
    moved = np.transpose(x, order)
    lanes = moved.reshape(int(np.prod(moved.shape[:len(rest)], dtype=np.int64)), -1)
    n = lanes.shape[1]
    perm = np.argsort(lanes, axis=-1, kind="stable")
    xs = np.take_along_axis(lanes, perm, axis=-1)
    pos = np.ravel(np.asarray(q, dtype=np.float64)) / per * (n - 1)
    lo = np.clip(np.floor(pos), 0, n - 1).astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    return _Quantile(lanes, perm, xs, lo, hi, pos - lo, order, moved.shape)


def quantile_bar(i, g, x, q, axis=None, keepdims=False, per=1):
    """The adjoint of np.quantile(x, q) (per 1) / np.percentile (per 100), linear:
    of x (i = 0) through the sorting permutation, of q (i = 1) the slope between the
    two order statistics."""
    Q = _quantile(x, q, axis, per)
    g2 = np.reshape(np.asarray(g, dtype=np.float64), (Q.lo.size, Q.lanes.shape[0]))
    if i == 1:
        n = Q.lanes.shape[1]
        slope = (Q.xs[:, Q.hi] - Q.xs[:, Q.lo]) * ((n - 1) / per)
        return _as(np.sum(g2.T * slope, axis=0), q)
    gs = np.zeros(Q.lanes.shape)
    np.add.at(gs, (slice(None), Q.lo), (g2 * (1.0 - Q.frac)[:, None]).T)
    np.add.at(gs, (slice(None), Q.hi), (g2 * Q.frac[:, None]).T)
    gl = np.zeros(Q.lanes.shape)
    np.put_along_axis(gl, Q.perm, gs, axis=-1)
    return _as(np.transpose(gl.reshape(Q.moved_shape), np.argsort(Q.order)), x)


def quantile_jvp(i, t, x, q, out, axis=None, keepdims=False, per=1):
    Q = _quantile(x, q, axis, per)
    if i == 1:
        n = Q.lanes.shape[1]
        slope = (Q.xs[:, Q.hi] - Q.xs[:, Q.lo]) * ((n - 1) / per)
        res = (slope * np.ravel(t)).T
    else:
        tl = np.transpose(np.broadcast_to(t, np.shape(x)), Q.order).reshape(Q.lanes.shape)
        ts = np.take_along_axis(tl, Q.perm, axis=-1)
        res = (ts[:, Q.lo] * (1.0 - Q.frac) + ts[:, Q.hi] * Q.frac).T
    return np.reshape(res, np.shape(out)).astype(_float_dtype(out), copy=False)


def median_bar(g, x, axis=None, keepdims=False):
    return quantile_bar(0, g, x, 0.5, axis, keepdims)


def median_jvp(t, x, out, axis=None, keepdims=False):
    return quantile_jvp(0, t, x, 0.5, out, axis, keepdims)


# ------------------------------------------------------------------ scans


def cumsum_bar(g, x, axis=None):
    g = np.asarray(g)
    if axis is None:
        return _as(np.cumsum(g[::-1])[::-1].reshape(np.shape(x)), x)
    return _as(np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis), x)


def _lanes_last(x, axis):
    """(x as (..., n) with the scanned axis last, a function putting such an array back)."""
    x = np.asarray(x, dtype=_float_dtype(x))
    if axis is None:
        shape = x.shape
        return x.reshape(-1), lambda a: a.reshape(shape)
    return np.moveaxis(x, axis, -1), lambda a: np.moveaxis(a, -1, axis)


def _first_zero(x):
    """Per lane: the index of its first zero (n where it has none), and x with that one
    zero replaced by 1 (whose cumprod is then the products skipping it)."""
    n = x.shape[-1]
    zero = x == 0
    z1 = np.where(zero.any(axis=-1), np.argmax(zero, axis=-1), n) if n else np.zeros(x.shape[:-1], np.intp)
    k = np.arange(n)
    x1 = np.where(k == z1[..., None], 1.0, x).astype(x.dtype, copy=False)
    return z1[..., None], k, x1


def cumprod_bar(g, x, axis=None):
    """d/dx_k of sum_j g_j c_j: sum_{j>=k} g_j prod_{m<=j, m!=k} x_m. Before a lane's
    first zero z, that is sum_{j>=k} g_j c_j / x_k (x_k is not zero); at z, the
    products skipping z (cumprod with x_z = 1); after z, zero (each term holds x_z)."""
    xl, back = _lanes_last(x, axis)
    gl = np.broadcast_to(np.ravel(g), xl.shape) if axis is None else \
        np.moveaxis(np.broadcast_to(g, np.shape(x)), axis, -1)
    z1, k, x1 = _first_zero(xl)
    c1 = np.cumprod(x1, axis=-1)
    before = k < z1
    tail = np.cumsum((gl * c1)[..., ::-1], axis=-1)[..., ::-1]
    head = np.cumsum(np.where(before, gl * c1, 0.0)[..., ::-1], axis=-1)[..., ::-1]
    res = np.where(before, head / np.where(before, xl, 1.0), np.where(k == z1, tail, 0.0))
    return _as(back(res), x)


def cumprod_jvp(t, x, axis=None):
    """sum_{k<=j} t_k prod_{m<=j, m!=k} x_m: c_j * cumsum(t / x)_j before the first zero,
    then t_z times the products skipping z."""
    xl, back = _lanes_last(x, axis)
    tl, _ = _lanes_last(np.broadcast_to(t, np.shape(x)), axis)
    back = back if axis is not None else (lambda a: a)     # np.cumprod(x) is flat
    z1, k, x1 = _first_zero(xl)
    c1 = np.cumprod(x1, axis=-1)
    before = k < z1
    head = c1 * np.cumsum(np.where(before, tl / np.where(before, xl, 1.0), 0.0), axis=-1)
    t_z = np.take_along_axis(tl, np.minimum(z1, xl.shape[-1] - 1), axis=-1) if xl.shape[-1] else tl
    res = np.where(before, head, c1 * t_z)
    return back(res)


# ------------------------------------------------------------------ sort, partition


def _sort_perm(x, axis):
    x = np.asarray(x)
    if axis is None:
        return np.argsort(x.reshape(-1), kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def _matching_perm(x, out, axis):
    """A permutation p with out = x[p] along `axis` (ties: in order): out's ranks mapped
    onto x's stable sorting permutation."""
    sx = _sort_perm(x, axis)
    so = _sort_perm(out, axis)
    ax = -1 if axis is None else axis
    return np.take_along_axis(sx, np.argsort(so, axis=ax, kind="stable"), axis=ax)


def _scatter(g, x, perm, axis):
    """g (values in permuted order) put back where they came from in x."""
    if axis is None:
        res = np.zeros(np.size(x))
        res[perm] = np.ravel(g)
        return _as(res.reshape(np.shape(x)), x)
    res = np.zeros(np.shape(x))
    np.put_along_axis(res, perm, np.asarray(g, dtype=np.float64), axis=axis)
    return _as(res, x)


def _gather(t, x, perm, axis):
    t = np.broadcast_to(t, np.shape(x))
    return np.ravel(t)[perm] if axis is None else np.take_along_axis(t, perm, axis=axis)


def sort_bar(g, x, axis=-1):
    return _scatter(g, x, _sort_perm(x, axis), axis)


def sort_jvp(t, x, axis=-1):
    return _gather(t, x, _sort_perm(x, axis), axis)


def partition_bar(g, x, out, axis=-1):
    return _scatter(g, x, _matching_perm(x, out, axis), axis)


def partition_jvp(t, x, out, axis=-1):
    return _gather(t, x, _matching_perm(x, out, axis), axis)


# ------------------------------------------------------------------ diff


def _diff_pieces(x, prepend, append, axis):
    """The arrays np.diff joins along `axis` (a number broadcast to one slice)."""
    x = np.asarray(x)
    ax = axis % x.ndim

    def piece(v):
        if v is None:
            return None
        v = np.asarray(v)
        if v.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            v = np.broadcast_to(v, shape)
        return v
    return piece(prepend), x, piece(append), ax


_PIECE = (1, 0, 2)   # operand i (x, prepend, append) -> its place in the joined array


def diff_bar(i, g, x, prepend=None, append=None, n=1, axis=-1):
    """The adjoint of operand i (0: x, 1: prepend, 2: append) of np.diff: n times the
    adjoint of one difference (g shifted against itself), then the joined array's
    adjoint cut back into its pieces."""
    mine = (x, prepend, append)[i]
    if int(n) == 0:         # numpy returns x itself, prepend and append unread
        return _as(g if i == 0 else np.zeros(np.shape(mine)), mine)
    pre, xx, app, ax = _diff_pieces(x, prepend, append, axis)
    y = np.moveaxis(np.asarray(g, dtype=np.float64), ax, -1)
    for _ in range(int(n)):
        pad = np.zeros(y.shape[:-1] + (1,))
        y = np.concatenate([pad, y], axis=-1) - np.concatenate([y, pad], axis=-1)
    y = np.moveaxis(y, -1, ax)
    sizes = [p.shape[ax] if p is not None else 0 for p in (pre, xx, app)]
    k = _PIECE[i]
    start = sum(sizes[:k])
    part = np.take(y, np.arange(start, start + sizes[k]), axis=ax)
    if np.ndim(mine) == 0:
        return _as(np.sum(part), mine)
    return _as(part, mine)


def diff_jvp(i, t, x, prepend=None, append=None, n=1, axis=-1):
    if int(n) == 0:
        return np.array(np.broadcast_to(t, np.shape(x)) if i == 0 else np.zeros(np.shape(x)))
    pre, xx, app, ax = _diff_pieces(x, prepend, append, axis)
    pieces = [np.zeros(p.shape) if p is not None else None for p in (pre, xx, app)]
    k = _PIECE[i]
    pieces[k] = np.broadcast_to(t, (pre, xx, app)[k].shape)
    joined = np.concatenate([p for p in pieces if p is not None], axis=ax)
    return np.diff(joined, n=int(n), axis=ax)


# ------------------------------------------------------------------ gradient


def _at(where):
    """The call's location from the (file, line, column) the derivative text passes."""
    return SourceLocation(*where) if where is not None else None


def _gradient_axis(f, axis, where=None):
    f = np.asarray(f)
    if axis is None and f.ndim == 1:
        return 0
    if axis is not None and np.ndim(axis) == 1 and len(axis) == 1:
        axis = axis[0]
    if axis is None or np.ndim(axis) != 0:
        raise UnsupportedOperationError(
            "np.gradient of an array of several dimensions along several axes gives a list: "
            "s2sad differentiates it along one axis", _at(where), hint="Pass axis=k (one call per axis).")
    return int(axis) % f.ndim


def _spacing(spacing):
    return () if spacing is None else (spacing,)


def _stencil_map(n, spacing, edge_order):
    """np.gradient along one axis of length n is out = C f with C banded (each row reads
    3 consecutive elements at most): three probes, f = 1 where index % 3 = r, read each
    row's coefficient on its element of that residue. -> [(rows, cols, coef)]."""
    start = np.clip(np.arange(n) - 1, 0, max(n - 3, 0))
    out = []
    for r in range(3):
        probe = (np.arange(n) % 3 == r).astype(np.float64)
        coef = np.gradient(probe, *_spacing(spacing), edge_order=edge_order)
        cols = start + (r - start) % 3
        ok = cols < n
        out.append((np.arange(n)[ok], cols[ok], coef[ok]))
    return out


def _scalar_spacing(spacing, where) -> None:
    """The derivative w.r.t. np.gradient's spacing exists for one scalar spacing only."""
    if np.ndim(spacing) != 0:
        raise UnsupportedOperationError(
            "the derivative of np.gradient with respect to its coordinates is not supported", _at(where),
            hint="Pass the coordinates as a constant (not computed from the differentiated arguments).")


def gradient_bar(i, g, f, spacing=None, axis=None, edge_order=1, out=None, where=None):
    ax = _gradient_axis(f, axis, where)
    if i == 1:
        _scalar_spacing(spacing, where)
        # out = D f / h: d out / dh = -out / h
        return _as(-np.sum(np.asarray(g) * np.asarray(out)) / spacing, spacing)
    gm = np.moveaxis(np.asarray(g, dtype=np.float64), ax, -1)
    res = np.zeros(gm.shape)
    for rows, cols, coef in _stencil_map(gm.shape[-1], spacing, int(edge_order)):
        np.add.at(res, (Ellipsis, cols), coef * gm[..., rows])
    return _as(np.moveaxis(res, -1, ax), f)


def gradient_jvp(i, t, f, spacing=None, axis=None, edge_order=1, out=None, where=None):
    ax = _gradient_axis(f, axis, where)
    if i == 1:
        _scalar_spacing(spacing, where)
        return -np.asarray(out) * (np.asarray(t) / spacing)
    return np.gradient(np.broadcast_to(t, np.shape(f)), *_spacing(spacing), axis=ax, edge_order=int(edge_order))


# ------------------------------------------------------------------ convolve, correlate


def _window(n, m, mode, corr):
    """Where np.convolve / np.correlate's `mode` output starts in the full one."""
    short = min(n, m)
    if mode == "full":
        return 0
    if mode == "valid":
        return short - 1
    if mode == "same":
        return n // 2 if corr and n < m else (short - 1) // 2
    raise UnsupportedOperationError(f"np.convolve/np.correlate mode {mode!r}",
                                    hint="Use mode 'full', 'same' or 'valid'.")


def _full_adjoint(g, n, m, mode, corr):
    G = np.zeros(n + m - 1)
    start = _window(n, m, mode, corr)
    G[start:start + np.size(g)] = np.ravel(g)
    return G


def convolve_bar(i, g, a, v, mode="full", corr=False):
    """The adjoint of np.convolve(a, v, mode) (corr: of np.correlate, the convolution
    with v reversed): g placed in the full output, correlated with the other operand."""
    a1, v1 = np.ravel(a), np.ravel(v)
    w = v1[::-1] if corr else v1
    G = _full_adjoint(g, a1.size, v1.size, mode, corr)
    if i == 0:
        return _as(np.correlate(G, w, "valid"), a)
    gw = np.correlate(G, a1, "valid")
    return _as(gw[::-1] if corr else gw, v)


def correlate_bar(i, g, a, v, mode="valid"):
    return convolve_bar(i, g, a, v, mode, corr=True)


# ------------------------------------------------------------------ interp


@dataclass(frozen=True)
class _Interp:
    j: np.ndarray        # each x's segment [xp_j, xp_j+1]
    t: np.ndarray        # its position in that segment, 0..1
    s: np.ndarray        # the segment's slope
    inside: np.ndarray
    below: np.ndarray
    above: np.ndarray


def _interp(x, xp, fp) -> _Interp:
    xf = np.ravel(np.asarray(x, dtype=np.float64))
    xp = np.asarray(xp, dtype=np.float64)
    fp = np.asarray(fp, dtype=np.float64)
    below, above = xf < xp[0], xf > xp[-1]
    inside = ~below & ~above & ~np.isnan(xf)
    if xp.size == 1:
        z = np.zeros(xf.shape)
        return _Interp(np.zeros(xf.shape, np.intp), z, z, inside, below, above)
    j = np.clip(np.searchsorted(xp, xf, side="right") - 1, 0, xp.size - 2)
    dx = xp[j + 1] - xp[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        return _Interp(j, (xf - xp[j]) / dx, (fp[j + 1] - fp[j]) / dx, inside, below, above)


def interp_bar(i, g, x, xp, fp, left=None, right=None):
    """The adjoint of operand i of np.interp(x, xp, fp, left, right): 0 x, 1 xp, 2 fp,
    3 left, 4 right (inside a segment y = fp_j (1 - t) + fp_j+1 t)."""
    w = _interp(x, xp, fp)
    gf = np.ravel(np.broadcast_to(np.asarray(g, dtype=np.float64), np.shape(x)))
    gi = np.where(w.inside, gf, 0.0)
    if i == 0:
        return _as(np.reshape(gi * w.s, np.shape(x)), x)
    if i in (3, 4):
        return _as(np.sum(gf[w.below if i == 3 else w.above]), (x, xp, fp, left, right)[i])
    res = np.zeros(np.size(xp))
    if np.size(xp) == 1:
        if i == 2:
            res[0] = np.sum(gi) + np.sum(gf[w.below]) * (left is None) + np.sum(gf[w.above]) * (right is None)
        return _as(res, (xp, fp)[i - 1])
    if i == 1:
        np.add.at(res, w.j, gi * w.s * (w.t - 1.0))
        np.add.at(res, w.j + 1, -gi * w.s * w.t)
        return _as(res, xp)
    np.add.at(res, w.j, gi * (1.0 - w.t))
    np.add.at(res, w.j + 1, gi * w.t)
    if left is None:
        res[0] += np.sum(gf[w.below])
    if right is None:
        res[-1] += np.sum(gf[w.above])
    return _as(res, fp)


def interp_jvp(i, t, x, xp, fp, left=None, right=None):
    w = _interp(x, xp, fp)
    t = np.asarray(t, dtype=np.float64)
    if i == 0:
        res = np.where(w.inside, w.s * np.ravel(np.broadcast_to(t, np.shape(x))), 0.0)
    elif i in (3, 4):
        res = np.where(w.below if i == 3 else w.above, float(t), 0.0)
    else:
        tv = np.ravel(t)
        if np.size(xp) == 1:
            res = np.where(w.inside, tv[0] if i == 2 else 0.0, 0.0)
        elif i == 1:
            res = np.where(w.inside, w.s * ((w.t - 1.0) * tv[w.j] - w.t * tv[w.j + 1]), 0.0)
        else:
            res = np.where(w.inside, tv[w.j] * (1.0 - w.t) + tv[w.j + 1] * w.t, 0.0)
        if i == 2:
            res = res + np.where(w.below, tv[0] if left is None else 0.0, 0.0) \
                + np.where(w.above, tv[-1] if right is None else 0.0, 0.0)
    return np.reshape(res, np.shape(x))


HELPERS = {
    "var_bar": var_bar, "std_bar": std_bar, "var_jvp": var_jvp, "std_jvp": std_jvp,
    "nan_bar": nan_bar, "nan_jvp": nan_jvp, "quantile_bar": quantile_bar, "quantile_jvp": quantile_jvp,
    "median_bar": median_bar, "median_jvp": median_jvp, "cumsum_bar": cumsum_bar, "cumprod_bar": cumprod_bar,
    "cumprod_jvp": cumprod_jvp, "sort_bar": sort_bar, "sort_jvp": sort_jvp, "partition_bar": partition_bar,
    "partition_jvp": partition_jvp, "diff_bar": diff_bar, "diff_jvp": diff_jvp, "gradient_bar": gradient_bar,
    "gradient_jvp": gradient_jvp, "convolve_bar": convolve_bar, "correlate_bar": correlate_bar,
    "interp_bar": interp_bar, "interp_jvp": interp_jvp,
}
