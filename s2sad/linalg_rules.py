"""What the derivatives of linear algebra run: the helpers the `array_prims.linalg` entries'
VJP and JVP texts call by name (`HELPERS`, merged into array_rules.HELPERS).

Conventions (JAX's, where a derivative is undefined; README "Linear algebra"):
- A tuple-valued primitive's adjoint (or tangent) is a `Parts`: one entry per output,
  None where no adjoint reached that output. `item_bar` makes the one-entry adjoint of
  `t[k]`; `Parts` add entry by entry, so the reverse sweep sums them like arrays.
- Functions that read one triangle of their operand (cholesky, eigh, eigvalsh,
  solve_triangular, cho_solve) get the derivative of the function numpy computes: the
  other triangle's adjoint is zero. For a symmetric direction this is JAX's symmetrised
  gradient; through a symmetric matrix built from parameters both are the same.
- Every helper returns a new array of its operand's shape and float dtype; the math runs
  in float64 (float32 operands are promoted, the result cast back).

Layer: runtime (beside array_rules, which merges HELPERS; this module imports no s2sad
module but errors, so array_rules may import it). scipy is imported only inside the
helpers of scipy's functions (optional dependency).
"""
from __future__ import annotations

import numpy as np

from .linalg_base import (Parts, back, entry, f64, from_triangle, inv_or_nan, item_bar, mT, onto_triangle, other_products,
                          parts, sum_to, tri)
from .linalg_more import MORE_HELPERS


# ------------------------------------------------------------------ inv, solve, det, slogdet

def inv_bar(g, a, out):
    out = f64(out)
    return back(-mT(out) @ f64(g) @ mT(out), a)


def inv_jvp(t, a, out):
    out = f64(out)
    return back(-out @ f64(t) @ out, out)


def _solve_vec(b):
    return np.ndim(b) == 1       # numpy 2: b is a vector exactly when it is 1-D


def solve_bar(i, g, a, b, out):
    a, g, x = f64(a), f64(g), f64(out)
    vec = _solve_vec(b)
    gb = np.linalg.solve(mT(a), g[..., None] if vec else g)
    if i == 1:
        return back(sum_to(gb[..., 0] if vec else gb, np.shape(b)), b)
    xx = x[..., None] if vec else x
    return back(sum_to(-gb @ mT(xx), np.shape(a)), a)


def solve_jvp(i, t, a, b, out):
    a, t, x = f64(a), f64(t), f64(out)
    if i == 1:
        return back(np.linalg.solve(a, t[..., None] if _solve_vec(b) else t)[..., 0] if _solve_vec(b)
                     else np.linalg.solve(a, t), out)
    xx = x[..., None] if _solve_vec(b) else x
    r = -np.linalg.solve(a, t @ xx)
    return back(r[..., 0] if _solve_vec(b) else r, out)


def _cofactors(a):
    """The cofactor matrix adj(a)^T, exact for singular matrices too (JAX's choice for
    det's derivative): from a = U S V^T, adj(a)^T = det(U) det(V) U diag(prod of the
    other singular values) V^T."""
    if a.shape[-1] == 0:
        return np.zeros(a.shape)
    u, s, vt = np.linalg.svd(a)
    sign = np.linalg.det(u) * np.linalg.det(vt)
    return sign[..., None, None] * ((u * other_products(s)[..., None, :]) @ vt)


def det_bar(g, a, out):
    return back(f64(g)[..., None, None] * _cofactors(f64(a)), a)


def det_jvp(t, a, out):
    return back(np.sum(_cofactors(f64(a)) * f64(t), axis=(-2, -1)), out)


def slogdet_bar(g, a, out):
    """The sign is piecewise constant (no adjoint); log|det a| has adjoint inv(a)^T (NaN
    where a is singular, where log|det| is -inf)."""
    gl = entry(g, 1, out[1])
    return back(gl[..., None, None] * mT(inv_or_nan(f64(a))), a)


def slogdet_jvp(t, a, out):
    dl = np.sum(mT(inv_or_nan(f64(a))) * f64(t), axis=(-2, -1))
    return Parts((back(np.zeros(np.shape(out[0])), out[0]), back(dl, out[1])))


# ------------------------------------------------------------------ cholesky

def _phi(x):
    """The lower triangle with half its diagonal."""
    return np.tril(x) - x * np.eye(x.shape[-1]) / 2


def _chol_sym_bar(L, Lbar):
    """The symmetric adjoint of A = L L^T from that of its factor L."""
    Linv = inv_or_nan(L)
    x = mT(Linv) @ _phi(mT(L) @ Lbar) @ Linv
    return (x + mT(x)) / 2


def _chol_lower_jvp(L, d):
    """The tangent of L = cholesky(A) along the symmetric direction d."""
    Linv = inv_or_nan(L)
    return L @ _phi(Linv @ d @ mT(Linv))


def cholesky_bar(g, a, out, lower=True):
    """numpy's (upper=False: L, the lower triangle read) and scipy's (lower=False: U)."""
    L = f64(out) if lower else mT(f64(out))
    Lbar = f64(g) if lower else mT(f64(g))
    return back(onto_triangle(_chol_sym_bar(L, Lbar), lower), a)


def cholesky_jvp(t, a, out, lower=True):
    L = f64(out) if lower else mT(f64(out))
    dL = _chol_lower_jvp(L, from_triangle(t, lower))
    return back(dL if lower else mT(dL), out)


def cho_factor_bar(g, a, out):
    """c holds the factor in one triangle and a's entries, as given, in the other."""
    lower = _flag(out[1])
    c = f64(out[0])
    gc = entry(g, 0, c)
    factor = tri(c, lower)
    res = cholesky_bar(tri(gc, lower), a, factor, lower) + tri(gc, not lower, -1)
    return back(res, a)


def cho_factor_jvp(t, a, out):
    lower = _flag(out[1])
    c = f64(out[0])
    dc = cholesky_jvp(t, a, tri(c, lower), lower) + tri(f64(t), not lower, -1)
    return Parts((back(dc, c), 0.0))   # lower is a flag: no tangent


def _flag(lower):
    """cho_factor's `lower`: a bool, or one per matrix of a stack (all the same)."""
    return bool(np.reshape(lower, -1)[0]) if np.size(lower) else False


def _cho_matrix(c, lower):
    f = tri(f64(c), lower)
    return (f @ mT(f)) if lower else (mT(f) @ f)


def cho_solve_bar(i, g, c, lower, b, out):
    if i == 1:
        return 0.0
    lower = _flag(lower)
    vec = np.ndim(b) == 1
    A = _cho_matrix(c, lower)
    gb = np.linalg.solve(A, f64(g)[..., None] if vec else f64(g))
    if i == 2:
        return back(gb[..., 0] if vec else gb, b)
    xx = f64(out)[..., None] if vec else f64(out)
    abar = -gb @ mT(xx)
    sym = abar + mT(abar)
    f = tri(f64(c), lower)
    return back(tri(sym @ f if lower else f @ sym, lower), c)


def cho_solve_jvp(i, t, c, lower, b, out):
    if i == 1:
        return back(np.zeros(np.shape(out)), out)
    lower = _flag(lower)
    vec = np.ndim(b) == 1
    A = _cho_matrix(c, lower)
    if i == 2:
        return back(np.linalg.solve(A, f64(t)[..., None])[..., 0] if vec else np.linalg.solve(A, f64(t)), out)
    f, df = tri(f64(c), lower), tri(f64(t), lower)
    dA = (df @ mT(f) + f @ mT(df)) if lower else (mT(df) @ f + mT(f) @ df)
    xx = f64(out)[..., None] if vec else f64(out)
    r = -np.linalg.solve(A, dA @ xx)
    return back(r[..., 0] if vec else r, out)


def _trans(trans):
    return {0: False, 1: True, 2: True, "N": False, "T": True, "C": True}[trans]


def _triangular(a, lower, unit_diagonal):
    t = tri(f64(a), lower)
    return t - t * np.eye(t.shape[-1]) + np.eye(t.shape[-1]) if unit_diagonal else t


def solve_triangular_bar(i, g, a, b, out, trans=0, lower=False, unit_diagonal=False):
    """x = op(T)^-1 b, T the triangle of a read (unit diagonal: ones), op per `trans`."""
    T = _triangular(a, lower, unit_diagonal)
    op = mT(T) if _trans(trans) else T
    vec = np.ndim(b) == 1
    gb = np.linalg.solve(mT(op), f64(g)[..., None] if vec else f64(g))
    if i == 1:
        return back(gb[..., 0] if vec else gb, b)
    xx = f64(out)[..., None] if vec else f64(out)
    opbar = -gb @ mT(xx)
    abar = mT(opbar) if _trans(trans) else opbar
    return back(tri(abar, lower, -1 if unit_diagonal else 0), a)


def solve_triangular_jvp(i, t, a, b, out, trans=0, lower=False, unit_diagonal=False):
    T = _triangular(a, lower, unit_diagonal)
    op = mT(T) if _trans(trans) else T
    vec = np.ndim(b) == 1
    if i == 1:
        rhs = f64(t)
    else:
        dT = tri(f64(t), lower, -1 if unit_diagonal else 0)
        dop = mT(dT) if _trans(trans) else dT
        xx = f64(out)[..., None] if vec else f64(out)
        rhs = -(dop @ xx)
        rhs = rhs[..., 0] if vec else rhs
    r = np.linalg.solve(op, rhs[..., None] if vec else rhs)
    return back(r[..., 0] if vec else r, out)


# ------------------------------------------------------------------ eigh, eigvalsh

def _eig_gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it; inf for repeated
    eigenvalues (JAX's choice: the eigenvectors' derivative does not exist there)."""
    eye = np.eye(w.shape[-1])
    with np.errstate(divide="ignore"):
        return 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye


def eigh_bar(g, a, out, UPLO="L"):
    w, V = f64(out[0]), f64(out[1])
    inner = entry(g, 0, w)[..., :, None] * np.eye(w.shape[-1])
    if g is not None and g[1] is not None:
        with np.errstate(invalid="ignore"):
            inner = inner + _eig_gaps(w) * (mT(V) @ entry(g, 1, V))
    return back(onto_triangle(V @ inner @ mT(V), UPLO == "L"), a)


def eigh_jvp(t, a, out, UPLO="L"):
    w, V = f64(out[0]), f64(out[1])
    m = mT(V) @ from_triangle(t, UPLO == "L") @ V
    with np.errstate(invalid="ignore"):
        dV = V @ (_eig_gaps(w) * m)
    return Parts((back(np.diagonal(m, axis1=-2, axis2=-1), out[0]), back(dV, out[1])))


def eigvalsh_bar(g, a, out, UPLO="L"):
    _, V = np.linalg.eigh(f64(a), UPLO=UPLO)
    return back(onto_triangle((V * f64(g)[..., None, :]) @ mT(V), UPLO == "L"), a)


def eigvalsh_jvp(t, a, out, UPLO="L"):
    _, V = np.linalg.eigh(f64(a), UPLO=UPLO)
    return back(np.einsum("...ji,...jk,...ki->...i", V, from_triangle(t, UPLO == "L"), V), out)


HELPERS = {
    "parts": parts, "item_bar": item_bar, "inv_bar": inv_bar, "inv_jvp": inv_jvp, "solve_bar": solve_bar,
    "solve_jvp": solve_jvp, "det_bar": det_bar, "det_jvp": det_jvp, "slogdet_bar": slogdet_bar,
    "slogdet_jvp": slogdet_jvp, "cholesky_bar": cholesky_bar, "cholesky_jvp": cholesky_jvp,
    "cho_factor_bar": cho_factor_bar, "cho_factor_jvp": cho_factor_jvp, "cho_solve_bar": cho_solve_bar,
    "cho_solve_jvp": cho_solve_jvp, "solve_triangular_bar": solve_triangular_bar,
    "solve_triangular_jvp": solve_triangular_jvp, "eigh_bar": eigh_bar, "eigh_jvp": eigh_jvp,
    "eigvalsh_bar": eigvalsh_bar, "eigvalsh_jvp": eigvalsh_jvp, **MORE_HELPERS,
}
