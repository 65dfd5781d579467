"""The linear-algebra helpers of the decompositions and the rest: svd, qr, pinv, lstsq,
expm, matrix_power, multi_dot, trace, and the split family (`MORE_HELPERS`, merged
into linalg_rules.HELPERS). Norms are linalg_norm's.

Where a derivative is undefined this follows JAX (README "Linear algebra"): svd's
terms for repeated or zero singular values are 0; the extra columns of a full svd or
a complete qr are not unique, so they must get no adjoint (else refused); pinv and
lstsq assume the rank does not change nearby.

Layer: runtime. scipy (expm) is imported inside the helper that needs it (optional).
"""
from __future__ import annotations

import numpy as np

from .errors import SourceLocation, UnsupportedOperationError
from .linalg_base import Parts, back, entry, f64, mT, parts
from .linalg_norm import NORM_HELPERS


# ------------------------------------------------------------------ svd

def _svd_gaps(s):
    """F[i, j] = 1 / (s[j]^2 - s[i]^2), 0 where that is 0 (JAX's choice)."""
    row, col = s[..., None, :], s[..., :, None]
    diffs = (row + col) * (row - col)
    zero = diffs == 0
    return np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, diffs))


def _svd_core_bar(U, s, Vt, Ubar, sbar, Vtbar):
    """The adjoint of a from those of its reduced svd (U: m x k, s: k, Vt: k x n);
    Ubar or Vtbar None when no adjoint reached them."""
    k = s.shape[-1]
    row, col = s[..., None, :], s[..., :, None]
    F = _svd_gaps(s)
    inner = sbar[..., :, None] * np.eye(k)
    V = mT(Vt)
    if Ubar is not None:
        X = F * (mT(U) @ Ubar)
        inner = inner + (X + mT(X)) * row
    if Vtbar is not None:
        Vbar = mT(Vtbar)
        Z = F * (mT(V) @ Vbar)
        inner = inner + col * (Z + mT(Z))
    abar = U @ inner @ Vt
    with np.errstate(divide="ignore", invalid="ignore"):
        if Ubar is not None and U.shape[-2] > k:
            abar = abar + ((Ubar - U @ (mT(U) @ Ubar)) / row) @ Vt
        if Vtbar is not None and V.shape[-2] > k:
            abar = abar + U @ (mT(Vbar - V @ (mT(V) @ Vbar)) / col)
    return abar


def _at(where):
    """The call's location from the (file, line, column) the VJP text passes."""
    return SourceLocation(*where) if where is not None else None


def _extra_free(bar, k, axis, what, where=None):
    """The adjoint of a full factor's first k columns (rows); its other ones must have
    none: they are any orthonormal completion, with no derivative."""
    if bar is None:
        return None
    idx = [slice(None)] * bar.ndim
    idx[axis] = slice(k, None)
    if np.any(bar[tuple(idx)] != 0):
        raise UnsupportedOperationError(
            f"the derivative of the {what} is not defined: they are any orthonormal completion", _at(where),
            hint="Use full_matrices=False (np.linalg.svd) or mode='reduced' (np.linalg.qr), or use only the "
                 "first min(m, n) columns.")
    idx[axis] = slice(None, k)
    return bar[tuple(idx)]


def svd_bar(g, a, out, full_matrices=True, compute_uv=True, where=None):
    if not compute_uv:
        U, _, Vt = np.linalg.svd(f64(a), full_matrices=False)
        return back((U * f64(g)[..., None, :]) @ Vt, a)
    U, s, Vt = (f64(o) for o in out)
    k = s.shape[-1]
    Ubar = None if g[0] is None else entry(g, 0, U)
    Vtbar = None if g[2] is None else entry(g, 2, Vt)
    Ubar = _extra_free(Ubar, k, -1, "extra columns of U of a full svd", where)
    Vtbar = _extra_free(Vtbar, k, -2, "extra rows of Vt of a full svd", where)
    return back(_svd_core_bar(U[..., :, :k], s, Vt[..., :k, :], Ubar, entry(g, 1, s), Vtbar), a)


def svd_jvp(t, a, out, full_matrices=True, compute_uv=True, where=None):
    a, t = f64(a), f64(t)
    m, n = a.shape[-2:]
    U, s, Vt = np.linalg.svd(a, full_matrices=False)
    V = mT(Vt)
    dS = mT(U) @ t @ V
    ds = np.diagonal(dS, axis1=-2, axis2=-1)
    if not compute_uv:
        return back(ds, out)
    if full_matrices and m != n:
        raise UnsupportedOperationError("the tangent of a full svd of a non-square matrix is not defined (its extra "
                                        "columns are any orthonormal completion)", _at(where),
                                        hint="Use full_matrices=False.")
    F = _svd_gaps(s)
    row, col = s[..., None, :], s[..., :, None]
    dU = U @ (F * (dS * row + mT(dS * row)))
    dV = V @ (F * (col * dS + mT(col * dS)))
    with np.errstate(divide="ignore", invalid="ignore"):
        if m > n:
            dAV = t @ V
            dU = dU + (dAV - U @ (mT(U) @ dAV)) / row
        if n > m:
            dAU = mT(t) @ U
            dV = dV + (dAU - V @ (mT(V) @ dAU)) / row
    return Parts((back(dU, out[0]), back(ds, out[1]), back(mT(dV), out[2])))


# ------------------------------------------------------------------ qr

def _qr_core_bar(Q, R, Qbar, Rbar):
    """m >= n, reduced: the adjoint of a = Q R (the transpose of JAX's qr_jvp)."""
    M = mT(Q) @ Qbar - Rbar @ mT(R)
    Bbar = Qbar + Q @ (np.tril(M - mT(M), -1) - M)
    return mT(np.linalg.solve(R, mT(Bbar)))


def _qr_core_jvp(Q, R, t):
    B = mT(np.linalg.solve(mT(R), mT(t)))
    C = mT(Q) @ B
    low = np.tril(C, -1)
    do = low - mT(low)
    return Q @ (do - C) + B, (C - do) @ R


def _qr_factors(a, out, g, mode, where=None):
    """(Q, R, Qbar, Rbar) of the qr's square or tall part; a complete Q's extra columns
    must have no adjoint."""
    if mode == "r":
        Q, R = np.linalg.qr(a)
        return Q, R, np.zeros(Q.shape), f64(g)
    Q, R = f64(out[0]), f64(out[1])
    Qbar, Rbar = entry(g, 0, Q), entry(g, 1, R)
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        Qbar = _extra_free(Qbar if g[0] is not None else None, n, -1, "extra columns of Q of a complete qr", where)
        Qbar = np.zeros(Q[..., :, :n].shape) if Qbar is None else Qbar
        Q, R, Rbar = Q[..., :, :n], R[..., :n, :], Rbar[..., :n, :]
    return Q, R, Qbar, Rbar


def qr_bar(g, a, out, mode="reduced", where=None):
    """A wide matrix (m < n): a = [a1 a2], Q R1 = a1 and R2 = Q^T a2."""
    a64 = f64(a)
    m, n = a64.shape[-2:]
    Q, R, Qbar, Rbar = _qr_factors(a64, out, g, mode, where)
    if m >= n:
        return back(_qr_core_bar(Q, R, Qbar, Rbar), a)
    a2, R1, R2bar = a64[..., :, m:], R[..., :, :m], Rbar[..., :, m:]
    a1bar = _qr_core_bar(Q, R1, Qbar + a2 @ mT(R2bar), Rbar[..., :, :m])
    return back(np.concatenate([a1bar, Q @ R2bar], axis=-1), a)


def qr_jvp(t, a, out, mode="reduced", where=None):
    a64, t = f64(a), f64(t)
    m, n = a64.shape[-2:]
    if mode == "complete" and m > n:
        raise UnsupportedOperationError("the tangent of a complete qr of a tall matrix is not defined (Q's extra "
                                        "columns are any orthonormal completion)", _at(where), hint="Use mode='reduced'.")
    Q, R = np.linalg.qr(a64)
    if m >= n:
        dQ, dR = _qr_core_jvp(Q, R, t)
    else:
        dQ, dR1 = _qr_core_jvp(Q, R[..., :, :m], t[..., :, :m])
        dR = np.concatenate([dR1, mT(dQ) @ a64[..., :, m:] + mT(Q) @ t[..., :, m:]], axis=-1)
    if mode == "r":
        return back(dR, out)
    return Parts((back(dQ, out[0]), back(dR, out[1])))


# ------------------------------------------------------------------ pinv, lstsq

def _pinv_bar(G, a, p):
    """The adjoint of a from that of p = pinv(a), the rank held (Golub and Pereyra)."""
    eye_m, eye_n = np.eye(a.shape[-2]), np.eye(a.shape[-1])
    return (-mT(p) @ G @ mT(p) + (eye_m - a @ p) @ mT(G) @ p @ mT(p)
            + mT(p) @ p @ mT(G) @ (eye_n - p @ a))


def pinv_bar(g, a, out, **_):
    return back(_pinv_bar(f64(g), f64(a), f64(out)), a)


def pinv_jvp(t, a, out, **_):
    a, p, t = f64(a), f64(out), f64(t)
    eye_m, eye_n = np.eye(a.shape[-2]), np.eye(a.shape[-1])
    return back(-p @ t @ p + p @ mT(p) @ mT(t) @ (eye_m - a @ p) + (eye_n - p @ a) @ mT(t) @ mT(p) @ p, out)


def _lstsq_pinv(a, rcond, dtype):
    """lstsq's pseudo-inverse: singular values at most rcond * the largest are zero."""
    U, s, Vt = np.linalg.svd(a, full_matrices=False)
    rc = np.finfo(dtype).eps * max(a.shape) if rcond is None else rcond
    keep = s > rc * (s[0] if s.size else 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return (mT(Vt) * inv) @ mT(U), U, Vt


def lstsq_bar(i, g, a, b, out, rcond=None):
    """(x, residuals, rank, s): x = pinv(a) b; residuals |b - a x|^2 per column (their
    derivative at the optimum: 2 r and -2 r x^T); s a's singular values."""
    if i == 1 and np.ndim(b) == 0:
        return 0.0
    a64, vec = f64(a), np.ndim(b) == 1
    B = f64(b)[:, None] if vec else f64(b)
    X = f64(out[0])[:, None] if vec else f64(out[0])
    Xbar = entry(g, 0, out[0])
    Xbar = Xbar[:, None] if vec else Xbar
    P, U, Vt = _lstsq_pinv(a64, rcond, np.asarray(a).dtype if np.asarray(a).dtype.kind == "f" else np.float64)
    rbar = entry(g, 1, out[1])
    r = (B - a64 @ X) * rbar[None, :] if rbar.size else np.zeros(B.shape)
    if i == 1:
        bbar = mT(P) @ Xbar + 2 * r
        return back(bbar[:, 0] if vec else bbar, b)
    sbar = entry(g, 3, out[3])
    return back(_pinv_bar(Xbar @ mT(B), a64, P) - 2 * r @ mT(X) + (U * sbar[None, :]) @ Vt, a)


def lstsq_jvp(i, t, a, b, out, rcond=None):
    a64, t = f64(a), f64(t)
    vec = np.ndim(b) == 1
    B = f64(b)[:, None] if vec else f64(b)
    X = f64(out[0])[:, None] if vec else f64(out[0])
    P, U, Vt = _lstsq_pinv(a64, rcond, np.asarray(a).dtype if np.asarray(a).dtype.kind == "f" else np.float64)
    r = B - a64 @ X
    if i == 1:
        T = t[:, None] if vec else t
        dX, dr, ds = P @ T, 2 * np.sum(r * T, axis=0), np.zeros(np.shape(out[3]))
    else:
        dX = pinv_jvp(t, a64, P) @ B
        dr = -2 * np.sum(r * (t @ X), axis=0)
        ds = np.diagonal(mT(U) @ t @ mT(Vt), axis1=-2, axis2=-1)
    dres = dr if np.size(out[1]) else np.zeros(np.shape(out[1]))
    return Parts((back(dX[:, 0] if vec else dX, out[0]), back(dres, out[1]), 0.0, back(ds, out[3])))


# ------------------------------------------------------------------ expm, matrix_power, multi_dot, trace

def _expm_frechet(a, e):
    """The derivative of expm at a along e: the corner of expm([[a, e], [0, a]])."""
    from scipy.linalg import expm     # optional dependency: only where expm is differentiated
    n = a.shape[-1]
    big = np.zeros(a.shape[:-2] + (2 * n, 2 * n))
    big[..., :n, :n] = a
    big[..., n:, n:] = a
    big[..., :n, n:] = e
    return expm(big)[..., :n, n:]


def expm_bar(g, a, out):
    return back(_expm_frechet(mT(f64(a)), f64(g)), a)


def expm_jvp(t, a, out):
    return back(_expm_frechet(f64(a), f64(t)), out)


def _powers(b, m):
    """[b^0, b^1, ..., b^m]."""
    out = [np.broadcast_to(np.eye(b.shape[-1]), b.shape)]
    for _ in range(m):
        out.append(out[-1] @ b)
    return out


def _power_base(a, n):
    a = f64(a)
    return (a if n > 0 else np.linalg.inv(a)), abs(int(n))


def matrix_power_bar(g, a, out, n):
    if int(n) == 0:
        return back(np.zeros(np.shape(a)), a)
    b, m = _power_base(a, n)
    P = _powers(b, m - 1)
    G = f64(g)
    bbar = sum(mT(P[k]) @ G @ mT(P[m - 1 - k]) for k in range(m))
    return back(bbar if n > 0 else -mT(b) @ bbar @ mT(b), a)


def matrix_power_jvp(t, a, out, n):
    if int(n) == 0:
        return back(np.zeros(np.shape(out)), out)
    b, m = _power_base(a, n)
    db = f64(t) if n > 0 else -b @ f64(t) @ b
    P = _powers(b, m - 1)
    return back(sum(P[k] @ db @ P[m - 1 - k] for k in range(m)), out)


def _as_chain(arrays):
    """multi_dot's operands as matrices: a first vector a row, a last one a column."""
    mats = [f64(x) for x in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    return mats


def _chain(mats, size):
    out = np.eye(size)
    for m in mats:
        out = out @ m
    return out


def multi_dot_bar(g, i, arrays):
    mats = _as_chain(arrays)
    G = f64(g).reshape(mats[0].shape[0], mats[-1].shape[1])
    left = _chain(mats[:i], mats[0].shape[0])
    right = _chain(mats[i + 1:], mats[i].shape[1])
    return back((mT(left) @ G @ mT(right)).reshape(np.shape(arrays[i])), arrays[i])


def multi_dot_jvp(t, i, arrays):
    arrays = list(arrays)
    arrays[i] = t
    return np.linalg.multi_dot([f64(x) for x in arrays])


def trace_bar(g, a, offset=0, axis1=0, axis2=1):
    a = np.asarray(a)
    nd = a.ndim
    ax1, ax2 = axis1 % nd, axis2 % nd
    diag = f64(g)[..., None, None] * np.eye(a.shape[ax1], a.shape[ax2], k=offset)
    return back(np.moveaxis(diag, (-2, -1), (ax1, ax2)), a)


# ------------------------------------------------------------------ the split family

def _split_axis(kind, x, axis):
    if kind == "hsplit":
        return 1 if np.ndim(x) > 1 else 0
    return {"vsplit": 0, "dsplit": 2}.get(kind, axis)


def split_bar(g, x, out, kind, axis=0):
    """The pieces' adjoints (zeros where none) joined back along the split axis."""
    pieces = [entry(g, k, out[k]) for k in range(len(out))]
    return back(np.concatenate(pieces, axis=_split_axis(kind, x, axis)), x)


def split_jvp(t, kind, indices_or_sections, axis=0):
    fn = getattr(np, kind)
    return parts(fn(t, indices_or_sections, axis=axis) if kind in ("split", "array_split")
                 else fn(t, indices_or_sections))


MORE_HELPERS = {
    "svd_bar": svd_bar, "svd_jvp": svd_jvp, "qr_bar": qr_bar, "qr_jvp": qr_jvp, "pinv_bar": pinv_bar,
    "pinv_jvp": pinv_jvp, "lstsq_bar": lstsq_bar, "lstsq_jvp": lstsq_jvp, "expm_bar": expm_bar,
    "expm_jvp": expm_jvp, "matrix_power_bar": matrix_power_bar, "matrix_power_jvp": matrix_power_jvp,
    "multi_dot_bar": multi_dot_bar, "multi_dot_jvp": multi_dot_jvp, "trace_bar": trace_bar,
    "split_bar": split_bar, "split_jvp": split_jvp, **NORM_HELPERS,
}
