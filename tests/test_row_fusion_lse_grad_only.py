"""The max-shifted row log-sum-exp's adjoint computed from z alone (issue 17's log-sum-exp
row): `rowsoftmax.row_logsumexp_max_bar` (g softmax(z) in one pass per row, kernels
lsezbar / lsezbarshort) and the forward's shape stand-in `row_logsumexp_like`, so that a
loss's sum of the rows' log-sum-exps runs no forward row pass in grad. Checked against
numpy's softmax, against the forward-then-adjoint path it replaces (row_logsumexp_bar
on the forward's value), on rows of every length around the short kernels' limits and
the blocks of FLUSH_ROWS rows, on non-finite rows, seeds of any sign, float32, and on
one thread against two (bit for bit)."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import rowsoftmax
from s2sad.codegen import llvm_rows


def lse_loss(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def lse_flat_loss(z):
    m = np.max(z, axis=-1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=-1)) + m[..., 0])


def weighted_lse_loss(z, w):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(w * (np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m))


def softmax(z):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def source(fun, *args, api=s2sad.grad, **kw):
    g = api(fun, **kw)
    g(*args)
    return s2sad.api.source(g)


def old_path(g, z, keepdims=True):
    """The adjoint as it was: the forward's value, then g exp(z - value)."""
    out = rowsoftmax.row_logsumexp(z, axis=1, keepdims=keepdims, shift="max")
    return rowsoftmax.row_logsumexp_bar(0, g, z, None, out, axis=1, keepdims=keepdims)


TOL = {np.float64: 1e-13, np.float32: 2e-6}
SHORT = llvm_rows.SHORT_K
ROWS = llvm_rows.FLUSH_ROWS


def test_grad_runs_no_forward_row_pass_and_value_and_grad_keeps_it():
    z = np.random.default_rng(0).normal(size=(8, 5))
    src = source(lse_loss, z)
    assert "row_logsumexp(" not in src and "row_logsumexp_like(" in src and "row_logsumexp_max_bar(" in src
    vsrc = source(lse_loss, z, api=s2sad.value_and_grad)
    assert "row_logsumexp(" in vsrc and "row_logsumexp_max_bar(" in vsrc


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("k", [1, 2, 9, 10, SHORT, SHORT + 1, 40])
@pytest.mark.parametrize("n", [1, ROWS - 1, ROWS, ROWS + 1, 3 * ROWS + 5])
def test_gradient_is_the_rows_softmax(n, k, dtype):
    z = (np.random.default_rng(n * 100 + k).normal(size=(n, k)) * 4).astype(dtype)
    for fun in (lse_loss, lse_flat_loss):
        g = s2sad.grad(fun)(z)
        assert type(g) is np.ndarray and g.dtype == dtype and g.shape == z.shape and g.flags.writeable
        np.testing.assert_allclose(g, softmax(z.astype(np.float64)), rtol=TOL[dtype], atol=TOL[dtype])
    v, g = s2sad.value_and_grad(lse_loss)(z)
    np.testing.assert_allclose(g, softmax(z.astype(np.float64)), rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(v, lse_loss(z.astype(np.float64)), rtol=TOL[dtype] * k)


@pytest.mark.parametrize("k", [3, SHORT, SHORT + 1, 33])
def test_seeds_of_any_sign_and_size(k):
    rng = np.random.default_rng(k)
    z = rng.normal(size=(2 * ROWS + 3, k))
    w = rng.normal(size=(z.shape[0], 1)) * 10
    w[:3] = [[0.0], [-0.0], [1e300]]
    gz, gw = s2sad.grad(weighted_lse_loss, argnums=(0, 1))(z, w)
    np.testing.assert_allclose(gz, w * softmax(z), rtol=1e-13, atol=1e-300)
    assert not np.signbit(gz[0]).any() and np.signbit(gz[1]).all()     # the seed's sign of zero, as g exp(.) had
    m = z.max(1, keepdims=True)
    np.testing.assert_allclose(gw, np.log(np.sum(np.exp(z - m), 1, keepdims=True)) + m, rtol=1e-13)


@pytest.mark.parametrize("k", [4, SHORT, SHORT + 1, 30])
def test_non_finite_and_huge_rows_give_numpys_softmax(k):
    rng = np.random.default_rng(7)
    z = rng.normal(size=(ROWS + 9, k))
    z[1, 0] = np.inf
    z[2, :] = -np.inf
    z[3, k // 2] = np.nan
    z[4, :] = np.inf
    z[5, -1] = -np.inf
    z[6, :] = 1e308
    z[7, 0] = -1e308
    z[8] = 1e16 + 2.0 * np.arange(k)     # the value's log(sum) is lost in its rounding here
    g = np.ones((z.shape[0], 1))
    with np.errstate(all="ignore"):
        new = rowsoftmax.row_logsumexp_max_bar(g, z, axis=1, keepdims=True)
        old = old_path(g, z)
        got = s2sad.grad(lse_loss)(z)
        want = softmax(z)
    np.testing.assert_array_equal(np.isnan(new), np.isnan(want))
    np.testing.assert_allclose(new, want, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(got, new)
    # row_logsumexp_bar read g exp(z - value) from the forward's value, wrong on such rows
    # (all ones for a row of 1e308); it now agrees (tests/test_trust_s11_lse.py) but on
    # rows holding +inf, where the idiom's value is NaN and scipy's shift a NaN at the inf
    fine = ~np.isposinf(z).any(axis=1)
    np.testing.assert_allclose(new[fine], old[fine], rtol=1e-13)
    np.testing.assert_allclose(old[6], want[6], rtol=1e-15)


@pytest.mark.parametrize("k", [10, 40])
def test_one_thread_and_two_give_the_same_bits(k, monkeypatch):
    z = np.random.default_rng(k).normal(size=(40_000, k))     # past the row kernels' THREAD_MIN
    g = np.random.default_rng(1).normal(size=(40_000, 1))
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    one = rowsoftmax.row_logsumexp_max_bar(g, z, axis=1, keepdims=True)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    two = rowsoftmax.row_logsumexp_max_bar(g, z, axis=1, keepdims=True)
    assert one.tobytes() == two.tobytes()
    np.testing.assert_allclose(one, g * softmax(z), rtol=1e-13)


def test_layouts_the_loop_does_not_take_give_the_formulas_answer():
    rng = np.random.default_rng(3)
    for z in (rng.normal(size=(50, 20))[:, ::2], rng.normal(size=(20, 50)).T):
        np.testing.assert_allclose(s2sad.grad(lse_loss)(z), softmax(z), rtol=1e-13)
    z3 = rng.normal(size=(3, 4, 6))

    def lse3(z):
        m = np.max(z, axis=-1, keepdims=True)
        return np.sum(np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)) + m)
    np.testing.assert_allclose(s2sad.grad(lse3)(z3), softmax(z3), rtol=1e-13)
    # a seed the loop does not take (another dtype): the forward's value and the formula
    z = rng.normal(size=(5, 4))
    g = np.ones((5, 1), np.float32)
    np.testing.assert_allclose(rowsoftmax.row_logsumexp_max_bar(g, z, axis=1, keepdims=True), softmax(z), rtol=1e-6)


def test_the_stand_in_has_the_values_shape_and_dtype_and_keeps_nothing():
    z = np.random.default_rng(4).normal(size=(6, 3)).astype(np.float32)
    for axis, keepdims in ((1, True), (-1, False), ((1,), True), (0, False)):
        like = rowsoftmax.row_logsumexp_like(z, axis=axis, keepdims=keepdims)
        value = rowsoftmax.row_logsumexp(z, axis=axis, keepdims=keepdims, shift="max")
        assert like.shape == value.shape and like.dtype == value.dtype
        assert not like.flags.writeable and like.base is not z
    # where the shape is not known without the pass (no element along the axis, not a
    # float array, an axis out of range): the forward itself, its error included
    with pytest.raises(ValueError):
        rowsoftmax.row_logsumexp_like(np.zeros((3, 0)), axis=1, keepdims=True)
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_allclose(rowsoftmax.row_logsumexp_like(ints, axis=1),
                               rowsoftmax.row_logsumexp(ints, axis=1, shift="max"))
    with pytest.raises(Exception) as err:
        rowsoftmax.row_logsumexp_like(z, axis=2)
    with pytest.raises(type(err.value)):
        rowsoftmax.row_logsumexp(z, axis=2, shift="max")


def test_input_untouched_and_result_owned():
    z = np.random.default_rng(5).normal(size=(300, 10))
    before = z.copy()
    g1 = s2sad.grad(lse_loss)(z)
    g2 = s2sad.grad(lse_loss)(z)
    np.testing.assert_array_equal(z, before)
    assert not np.shares_memory(g1, g2) and not np.shares_memory(g1, z)
    g1[:] = 0.0
    np.testing.assert_allclose(g2, softmax(z), rtol=1e-13)
