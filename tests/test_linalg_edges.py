"""Linear algebra and tuple-valued results at their edges: undefined derivatives
(JAX's choices), refusals a hostile user meets, tuple handling in the builder, inputs
left as they were, dtypes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import s2sad
from conftest import central_fd


# ------------------------------------------------------------------ undefined derivatives

def det_of(a):
    return np.linalg.det(a)


def test_det_of_a_singular_matrix_has_the_cofactor_gradient():
    """d det / dA = cofactor matrix, defined (and right) at singular A too (JAX's choice)."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    g = s2sad.grad(det_of)(a)
    cof = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
                    for i in range(3)])
    np.testing.assert_allclose(g, cof, atol=1e-12)
    np.testing.assert_allclose(g, central_fd(det_of, [a], 0), atol=1e-8)


def eigenvalues_only(a):
    w, V = np.linalg.eigh(a)
    return np.sum(w ** 2)


def eigenvectors(a):
    w, V = np.linalg.eigh(a)
    return np.sum(V[:, 0] ** 2 * np.arange(3.0))


def test_repeated_eigenvalues_values_fine_vectors_not_finite():
    """At a repeated eigenvalue the eigenvalues' derivative exists; the eigenvectors'
    does not, and is not finite (JAX's choice), never a finite wrong number."""
    a = np.eye(3)
    np.testing.assert_allclose(s2sad.grad(eigenvalues_only)(a), 2 * np.tril(np.eye(3)), atol=1e-12)
    assert not np.all(np.isfinite(s2sad.grad(eigenvectors)(a)))


def two_norm(x):
    return np.linalg.norm(x)


def inf_norm(x):
    return np.linalg.norm(x, np.inf)


def test_norm_at_zero_follows_jax():
    assert np.all(np.isnan(s2sad.grad(two_norm)(np.zeros(3))))
    np.testing.assert_array_equal(s2sad.grad(inf_norm)(np.zeros(3)), np.zeros(3))


def test_norm_ties_share_the_adjoint():
    np.testing.assert_allclose(s2sad.grad(inf_norm)(np.array([2.0, -2.0, 1.0])), [0.5, -0.5, 0.0])


def logdet(a):
    s, ld = np.linalg.slogdet(a)
    return ld


def test_slogdet_of_a_singular_matrix_is_not_finite():
    assert not np.all(np.isfinite(s2sad.grad(logdet)(np.ones((2, 2)))))


def full_u(a):
    U, S, Vt = np.linalg.svd(a)
    return np.sum(U ** 2 * np.arange(16.0).reshape(4, 4))


def full_u_first_columns(a):
    U, S, Vt = np.linalg.svd(a)
    return np.sum(U[:, :3] ** 2 * np.arange(12.0).reshape(4, 3))


def test_full_svd_extra_columns_refused_first_columns_fine():
    a = np.random.default_rng(0).normal(size=(4, 3))
    with pytest.raises(s2sad.UnsupportedOperationError, match="orthonormal completion") as e:
        s2sad.grad(full_u)(a)
    assert "full_matrices=False" in e.value.hint
    assert e.value.location.lineno == full_u.__code__.co_firstlineno + 1    # the svd's line
    np.testing.assert_allclose(s2sad.grad(full_u_first_columns)(a), central_fd(full_u_first_columns, [a], 0),
                               rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ refusals at build time

def split_by_variable(x, n):
    return np.sum(np.split(x, n)[0])


def svd_flag_variable(a, uv):
    return np.sum(np.linalg.svd(a, compute_uv=uv))


def qr_raw(a):
    return np.sum(np.linalg.qr(a, mode="raw")[0])


def cholesky_overwrite(a):
    return np.sum(scipy.linalg.cholesky(a, overwrite_a=True))


def tuple_index_variable(a, k):
    res = np.linalg.eigh(a)
    return np.sum(res[k])


def tuple_index_out_of_range(a):
    res = np.linalg.slogdet(a)
    return res[2]


def wrong_unpack(a):
    w, V, X = np.linalg.eigh(a)
    return np.sum(w)


def returns_the_tuple(a):
    return np.linalg.slogdet(a)


def solve_keyword_arrays(a, b):
    return np.sum(np.linalg.lstsq(a, b=b)[0])


def cho_solve_unpaired(a, b):
    return np.sum(scipy.linalg.cho_solve(a, b))


REFUSED = [
    (split_by_variable, (np.ones(4), 2), "literal"),
    (svd_flag_variable, (np.eye(2), False), "compute_uv= as a literal"),
    (qr_raw, (np.eye(2),), "mode='raw'"),
    (cholesky_overwrite, (np.eye(2),), "overwrite_a="),
    (tuple_index_variable, (np.eye(2), 0), "Index with a constant"),
    (tuple_index_out_of_range, (np.eye(2),), "within its 2 items"),
    (wrong_unpack, (np.eye(2),), "same length"),
    (returns_the_tuple, (np.eye(2),), "one value"),
    (solve_keyword_arrays, (np.eye(2), np.ones(2)), "by position"),
    (cho_solve_unpaired, (np.eye(2), np.ones(2)), "pair"),
]


@pytest.mark.parametrize("fn,args,words", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refused_with_a_location(fn, args, words):
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(fn)(*args)
    assert words in str(e.value)
    assert e.value.location is not None and e.value.location.filename.endswith("test_linalg_edges.py")
    assert e.value.hint


# ------------------------------------------------------------------ tuples in the builder

def pieces_in_a_loop(x):
    total = 0.0
    pieces = np.split(x, 3)
    for p in pieces:
        total = total + np.sum(p ** 2)
    return total


def slices_of_pieces(x):
    a = np.array_split(x, 4)[1:3]
    return np.sum(a[0] * a[1][:1])


def tuple_piece_reused(a):
    res = np.linalg.eigh(a)
    w = res[0]
    return np.sum(w * res[0]) + np.sum(res[-1][:, 0] ** 2)


def piece_updated_in_place(x):
    a, b = np.split(x, 2)
    a += 1.0
    return np.sum(a)


def eigvals_updated_in_place(a):
    w, V = np.linalg.eigh(a)
    w += 1.0
    return np.sum(w ** 2)


def test_tuples_work_in_loops_slices_and_reuse():
    x = np.linspace(0.5, 2.0, 6)
    np.testing.assert_allclose(s2sad.grad(pieces_in_a_loop)(x), 2 * x)
    y = np.arange(1.0, 9.0)
    np.testing.assert_allclose(s2sad.grad(slices_of_pieces)(y), [0, 0, 5, 5, 7, 0, 0, 0])
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(s2sad.grad(tuple_piece_reused)(a), central_fd(tuple_piece_reused, [a], 0),
                               rtol=1e-6, atol=1e-8)


def test_in_place_update_of_a_piece_is_refused_of_a_fresh_output_allowed():
    """A split piece is a view of x (a += 1 would write into x); eigh's outputs are new."""
    with pytest.raises(s2sad.UnsupportedOperationError, match="in place"):
        s2sad.grad(piece_updated_in_place)(np.ones(4))
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(s2sad.grad(eigvals_updated_in_place)(a),
                               central_fd(eigvals_updated_in_place, [a], 0), rtol=1e-6, atol=1e-8)


def gp_like(a, b):
    c = scipy.linalg.cho_factor(a)
    return np.sum(scipy.linalg.cho_solve(c, b) * b)


def test_inputs_are_left_as_they_were_and_dtypes_kept():
    rng = np.random.default_rng(1)
    m = rng.normal(size=(3, 3))
    a = (m @ m.T + 3 * np.eye(3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    a0, b0 = a.copy(), b.copy()
    ga, gb = s2sad.grad(gp_like, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    want = central_fd(gp_like, [a.astype(float), b.astype(float)], 0)
    np.testing.assert_allclose(ga, want, rtol=2e-3, atol=2e-3)


def inv_sum(a):
    return np.sum(np.linalg.inv(a))


def test_empty_and_one_by_one():
    np.testing.assert_allclose(s2sad.grad(inv_sum)(np.array([[2.0]])), [[-0.25]])
    assert s2sad.grad(inv_sum)(np.zeros((0, 0))).shape == (0, 0)
    np.testing.assert_allclose(s2sad.grad(det_of)(np.zeros((0, 0))), np.zeros((0, 0)))


def test_value_and_vjp_through_a_tuple():
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    value, pullback = s2sad.vjp(tuple_piece_reused, a)
    assert value == pytest.approx(tuple_piece_reused(a))
    np.testing.assert_allclose(pullback(2.0)[0], 2 * central_fd(tuple_piece_reused, [a], 0), rtol=1e-6, atol=1e-8)


def inf_spellings(x):
    from_numpy = np.inf
    return np.linalg.norm(x, ord=from_numpy) + np.linalg.norm(x, -np.inf)


def svd_sum(a):
    U, S, Vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(S) + np.sum(U ** 2)


def halves(x):
    a, b = np.split(x, 2)
    return np.sum(a) + 2.0 * np.sum(b)


@pytest.mark.parametrize("fn,shape", [(logdet, (0, 0)), (eigenvalues_only, (0, 0)), (svd_sum, (0, 3)),
                                      (svd_sum, (2, 0)), (halves, (0,)), (two_norm, (0,))])
def test_empty_operands_give_empty_gradients(fn, shape):
    g = s2sad.grad(fn)(np.zeros(shape))
    assert g.shape == shape


def test_norm_orders_spelled_as_names():
    np.testing.assert_allclose(s2sad.grad(inf_spellings)(np.array([1.0, -3.0, 2.0])), [1.0, -1.0, 0.0])


def qr_item_updated(a):
    res = np.linalg.qr(a)
    Q = res[0]
    Q += 1.0
    return np.sum(res[0])


def tuple_display_item_updated(x):
    a = x * 2.0
    t = (a, x)
    a += 1.0
    total = 0.0
    for v in t:
        total = total + np.sum(v ** 2)
    return total


@pytest.mark.parametrize("fn,arg", [(qr_item_updated, np.eye(2)), (tuple_display_item_updated, np.ones(2))])
def test_an_item_of_a_held_tuple_is_not_updated_in_place(fn, arg):
    """numpy would change the tuple's item too (the same object): refused, never the old value."""
    with pytest.raises(s2sad.UnsupportedOperationError, match="in place"):
        s2sad.grad(fn)(arg)
