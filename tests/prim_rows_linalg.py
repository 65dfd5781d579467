"""Spec-table rows of the linear-algebra family (s2sad/array_prims/linalg.py): np.linalg,
scipy.linalg, the split family and `item` (a tuple-valued result's element).

Losses that read eigenvectors or singular vectors read them through sign-free values
(squares, products u_i v_i^T), which LAPACK's sign choice leaves unchanged. Argument
makers give the conditioning each function needs (SPD for cholesky, separated
eigenvalues for eigh, full rank for pinv and lstsq).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg import cho_factor, cho_solve, expm, solve_triangular

from prim_rows import Row


def wrap(y):
    return np.sin(1.3 * y + 0.2)


def weights(shape):
    return np.cos(np.arange(np.zeros(shape).size).reshape(shape) * 1.0)


# ------------------------------------------------------------------ argument makers

def _rng(shape, seed):
    return np.random.default_rng(100 + seed + 7 * len(shape))


def well_conditioned(shape, dtype, seed):
    """A square matrix (stack) far from singular; other shapes uniform in [-1, 1)."""
    rng = _rng(shape, seed)
    x = rng.uniform(-1.0, 1.0, shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        x = x + 3.0 * np.eye(shape[-1])
    return x.astype(dtype)


def spd(shape, dtype, seed):
    """A symmetric positive definite matrix (stack); other shapes uniform in [-1, 1)."""
    rng = _rng(shape, seed)
    x = rng.uniform(-1.0, 1.0, shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        x = x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])
    return x.astype(dtype)


def separated(shape, dtype, seed):
    """A symmetric matrix (stack) with eigenvalues 1, 2.5, 4, ... (far apart)."""
    rng = _rng(shape, seed)
    q, _ = np.linalg.qr(rng.normal(size=shape))
    w = 1.0 + 1.5 * np.arange(shape[-1])
    return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(dtype)


def distinct_sv(shape, dtype, seed):
    """A matrix (stack) with singular values 1, 2, 3, ... (distinct, none zero)."""
    rng = _rng(shape, seed)
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(rng.normal(size=shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(rng.normal(size=shape[:-2] + (n, k)))
    s = 1.0 + np.arange(k)
    return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2)).astype(dtype)


def signed(shape, dtype, seed):
    """Uniform in [-1, 1) (norms of mixed signs)."""
    return _rng(shape, seed).uniform(-1.0, 1.0, shape).astype(dtype)


# ------------------------------------------------------------------ the losses

def item_unpacked(a):
    w, V = np.linalg.eigh(a)
    return np.sum(wrap(w)) + np.sum(wrap(V * V) * weights(V.shape))


def item_indexed(a):
    res = np.linalg.qr(a)
    return np.sum(wrap(res[0]) * weights(res[0].shape)) + np.sum(wrap(res[-1]) * weights(res[1].shape))


def inv_loss(a):
    return np.sum(wrap(np.linalg.inv(a)) * weights(a.shape))


def det_loss(a):
    return np.sum(wrap(np.linalg.det(a)))


def slogdet_loss(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.sum(wrap(sign * logdet))


def cholesky_loss(a):
    return np.sum(wrap(np.linalg.cholesky(a)) * weights(a.shape))


def cholesky_upper(a):
    return np.sum(wrap(np.linalg.cholesky(a, upper=True)) * weights(a.shape))


def eigh_loss(a):
    w, V = np.linalg.eigh(a)
    return np.sum(wrap(w) * weights(w.shape)) + np.sum(wrap(V * V) * weights(V.shape))


def eigh_upper(a):
    w, V = np.linalg.eigh(a, UPLO="U")
    return np.sum(wrap(w)) + np.sum(wrap(V[..., 0:1] * V) * weights(V.shape))


def eigvalsh_loss(a):
    return np.sum(wrap(np.linalg.eigvalsh(a)) * weights(a.shape[:-1]))


def svd_reduced(a):
    U, S, Vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(wrap(U * U) * weights(U.shape)) + np.sum(wrap(S)) + np.sum(wrap(Vt * Vt) * weights(Vt.shape))


def svd_full_square(a):
    U, S, Vt = np.linalg.svd(a)
    return np.sum(wrap((U * S[..., None, :]) @ Vt) * weights(a.shape)) + np.sum(wrap(U[..., :, :1] * Vt[..., :1, :]))


def svd_full_first_columns(a):
    U, S, Vt = np.linalg.svd(a)
    return np.sum(wrap(U[:, :3] ** 2) * weights((4, 3))) + np.sum(wrap(S))


def svd_values(a):
    return np.sum(wrap(np.linalg.svd(a, compute_uv=False)))


def qr_reduced(a):
    Q, R = np.linalg.qr(a)
    return np.sum(wrap(Q) * weights(Q.shape)) + np.sum(wrap(R) * weights(R.shape))


def qr_r(a):
    return np.sum(wrap(np.linalg.qr(a, mode="r")) * weights(a.shape[-1:]))


def qr_complete(a):
    Q, R = np.linalg.qr(a, mode="complete")
    return np.sum(wrap(Q[:, :3]) * weights((4, 3))) + np.sum(wrap(R) * weights(R.shape))


def pinv_loss(a):
    p = np.linalg.pinv(a)
    return np.sum(wrap(p) * weights(p.shape))


def lstsq_vector(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(wrap(x) * weights(x.shape)) + np.sum(wrap(res)) + np.sum(wrap(s))


def lstsq_matrix(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(wrap(x) * weights(x.shape)) + np.sum(wrap(res) * weights(res.shape))


def matrix_power_pos(a):
    return np.sum(wrap(np.linalg.matrix_power(a, 3)) * weights(a.shape))


def matrix_power_neg(a):
    return np.sum(wrap(np.linalg.matrix_power(a, -2)) * weights(a.shape))


def multi_dot_loss(a, b, c):
    return np.sum(wrap(np.linalg.multi_dot([a, b, c])) * weights((3, 2)))


def multi_dot_vectors(a, b, c):
    return wrap(np.linalg.multi_dot([a, b, c]))


def norm_default(x):
    return wrap(np.linalg.norm(x))


def norm_orders(x):
    return (wrap(np.linalg.norm(x, 1)) + wrap(np.linalg.norm(x, np.inf)) + wrap(np.linalg.norm(x, -np.inf))
            + wrap(np.linalg.norm(x, 3)) + wrap(np.linalg.norm(x, ord=0.5)) + np.linalg.norm(x, 0))


def norm_axis(x):
    return np.sum(wrap(np.linalg.norm(x, axis=1, keepdims=True)) * weights((x.shape[0], 1)))


def norm_matrix(x):
    return (wrap(np.linalg.norm(x, "fro")) + wrap(np.linalg.norm(x, "nuc")) + wrap(np.linalg.norm(x, 2))
            + wrap(np.linalg.norm(x, -2)) + wrap(np.linalg.norm(x, 1)) + wrap(np.linalg.norm(x, np.inf)))


def norm_matrix_axes(x):
    return np.sum(wrap(np.linalg.norm(x, ord=-1, axis=(2, 0))) * weights((x.shape[1],)))


def trace_fn(a):
    return wrap(np.trace(a)) + wrap(np.trace(a, 1))


def trace_method(a):
    return np.sum(wrap(a.trace(axis1=1, axis2=2)) * weights(a.shape[:1]))


def solve_loss(a, b):
    return np.sum(wrap(np.linalg.solve(a, b)) * weights(b.shape[-1:]))


def solve_triangular_lower(a, b):
    return np.sum(wrap(solve_triangular(a, b, lower=True)) * weights(b.shape))


def solve_triangular_trans(a, b):
    x = scipy.linalg.solve_triangular(a, b, trans=1, unit_diagonal=True)
    return np.sum(wrap(x) * weights(b.shape))


def cho_factor_loss(a):
    c, low = cho_factor(a)
    return np.sum(wrap(c) * weights(a.shape))


def cho_solve_loss(a, b):
    return np.sum(wrap(cho_solve(cho_factor(a, lower=True), b)) * weights(b.shape))


def cho_solve_pair(c, b):
    return np.sum(wrap(cho_solve((c, False), b)) * weights(b.shape))


def scipy_cholesky_loss(a):
    return np.sum(wrap(scipy.linalg.cholesky(a)) * weights(a.shape)) + \
        np.sum(wrap(scipy.linalg.cholesky(a, lower=True)) * weights(a.shape))


def expm_loss(a):
    return np.sum(wrap(expm(a)) * weights(a.shape))


def split_sections(x):
    a, b, c = np.split(x, 3)
    return np.sum(wrap(a) * weights(a.shape)) + np.sum(wrap(c * b))


def split_points(x):
    pieces = np.split(x, [1, 3], axis=1)
    total = 0.0
    for p in pieces:
        total = total + np.sum(wrap(p) * weights(p.shape))
    return total + np.sum(np.split(x, [1, 3], axis=1)[2])


def array_split_loss(x):
    a, b, c = np.array_split(x, 3)
    return np.sum(wrap(a)) + np.sum(wrap(b) * weights(b.shape)) + np.sum(c)


def hsplit_loss(x):
    a, b = np.hsplit(x, 2)
    return np.sum(wrap(a - b) * weights(a.shape))


def vsplit_loss(x):
    a, b = np.vsplit(x, [1])
    return np.sum(wrap(a)) + np.sum(wrap(b) * weights(b.shape))


def dsplit_loss(x):
    a, b = np.dsplit(x, 2)
    return np.sum(wrap(a * b) * weights(a.shape))


LOOSE = dict(rtol=1e-5, atol=1e-5)

ROWS = [
    Row("item", item_unpacked, (((3, 3),),), make=separated),
    Row("item", item_indexed, (((4, 3),),), make=well_conditioned),
    Row("inv", inv_loss, (((3, 3),), ((2, 3, 3),)), make=well_conditioned),
    Row("det", det_loss, (((3, 3),), ((2, 3, 3),), ((1, 1),)), make=well_conditioned),
    Row("slogdet", slogdet_loss, (((3, 3),), ((2, 3, 3),)), make=well_conditioned),
    Row("cholesky", cholesky_loss, (((3, 3),), ((2, 3, 3),)), make=spd),
    Row("cholesky", cholesky_upper, (((3, 3),),), make=spd),
    Row("eigh", eigh_loss, (((3, 3),), ((2, 3, 3),)), make=separated),
    Row("eigh", eigh_upper, (((3, 3),),), make=separated),
    Row("eigvalsh", eigvalsh_loss, (((3, 3),), ((2, 4, 4),)), make=separated),
    Row("svd", svd_reduced, (((4, 3),), ((3, 4),), ((2, 3, 3),)), make=distinct_sv),
    Row("svd", svd_full_square, (((3, 3),),), make=distinct_sv),
    Row("svd", svd_full_first_columns, (((4, 3),),), make=distinct_sv, jvp_refused="full svd of a non-square"),
    Row("svd", svd_values, (((4, 3),), ((2, 3, 4),)), make=distinct_sv),
    Row("qr", qr_reduced, (((4, 3),), ((3, 3),), ((3, 5),), ((2, 4, 3),)), make=well_conditioned),
    Row("qr", qr_r, (((4, 3),), ((2, 5),)), make=well_conditioned),
    Row("qr", qr_complete, (((4, 3),),), make=well_conditioned, jvp_refused="complete qr of a tall"),
    Row("pinv", pinv_loss, (((4, 3),), ((3, 4),), ((2, 3, 3),)), make=distinct_sv),
    Row("lstsq", lstsq_vector, (((5, 3), (5,)),), make=signed),
    Row("lstsq", lstsq_matrix, (((5, 3), (5, 2)), ((3, 4), (3, 2))), make=signed),
    Row("matrix_power", matrix_power_pos, (((3, 3),), ((2, 3, 3),)), make=signed),
    Row("matrix_power", matrix_power_neg, (((3, 3),),), make=well_conditioned),
    Row("multi_dot", multi_dot_loss, (((3, 4), (4, 2), (2, 2)),), make=signed),
    Row("multi_dot", multi_dot_vectors, (((4,), (4, 3), (3,)),), make=signed),
    Row("norm", norm_default, (((5,),), ((3, 4),), ((2, 2, 3),)), make=signed),
    Row("norm", norm_orders, (((5,),),), make=signed),
    Row("norm", norm_axis, (((3, 4),),), make=signed),
    Row("norm", norm_matrix, (((3, 4),),), make=distinct_sv),
    Row("norm", norm_matrix_axes, (((3, 2, 4),),), make=signed),
    Row("trace", trace_fn, (((3, 3),), ((3, 4),)), make=signed),
    Row("trace", trace_method, (((2, 3, 3),),), make=signed),
    Row("solve", solve_loss, (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (3,))),
        make=well_conditioned),
    Row("solve_triangular", solve_triangular_lower, (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2))),
        make=well_conditioned),
    Row("solve_triangular", solve_triangular_trans, (((3, 3), (3, 2)),), make=well_conditioned),
    Row("cho_factor", cho_factor_loss, (((3, 3),), ((2, 3, 3),)), make=spd),
    Row("cho_solve", cho_solve_loss, (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))), make=spd),
    Row("cho_solve", cho_solve_pair, (((3, 3), (3, 2)),), make=well_conditioned),
    Row("scipy_cholesky", scipy_cholesky_loss, (((3, 3),), ((2, 3, 3),)), make=spd),
    Row("expm", expm_loss, (((3, 3),), ((2, 2, 2),)), make=signed, tol64=LOOSE),
    Row("split", split_sections, (((6,),), ((6, 2),))),
    Row("split", split_points, (((2, 5),),)),
    Row("array_split", array_split_loss, (((7,),), ((5, 2),))),
    Row("hsplit", hsplit_loss, (((2, 4),), ((4,),))),
    Row("vsplit", vsplit_loss, (((3, 2),),)),
    Row("dsplit", dsplit_loss, (((2, 2, 4),),)),
]
