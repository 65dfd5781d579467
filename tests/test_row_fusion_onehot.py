"""The softmax cross-entropy's one-hot product in the log-softmax's pass
(passes/rowdot.py, rowsoftmax.row_dot_log_softmax, codegen/llvm_rows' xent kinds):
`np.sum(Y * logp, axis=1)` of a fused max-shifted log-softmax becomes one statement,
one compiled pass per row forward (one value a row written) and one backward
(g (Y - softmax sum(Y))). Checked against central differences, the unfused program
(S2SAD_ROW_FUSION=0) on both backends, and the numpy formula.

Tolerance against the unfused program: 1e-12 (float64) / 1e-4 (float32) relative, as
tests/test_row_fusion_idioms.py (the sums with Y are vectorised partial sums).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import rowsoftmax as R
from s2sad.plans import PLANS

from conftest import central_fd, no_value_join


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def xent_keepdims(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return np.sum(np.sin(np.sum(logp * Y, axis=-1, keepdims=True)))


FUSED = [xent, xent_keepdims]


def logp_read_twice(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1)) + np.sum(logp ** 2) * 1e-3


def product_read_twice(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    t = Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))
    return -np.mean(np.sum(t, axis=1)) + np.sum(t)


def column_sum(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return np.sum(np.sin(np.sum(Y * logp, axis=0)))


NOT_FUSED = [logp_read_twice, product_read_twice, column_sum]


def _args(n, k, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + 31 * n + k)
    W = (rng.normal(size=(3, k)) * 0.7).astype(dtype)
    b = (rng.normal(size=(1, k)) * 0.1).astype(dtype)
    X = rng.normal(size=(n, 3)).astype(dtype)
    Y = np.eye(k, dtype=dtype)[rng.integers(0, k, n)] if n else np.zeros((0, k), dtype)
    return W, b, X, Y


def _source(f, args, argnums=(0, 1), make=s2sad.value_and_grad):
    # value_and_grad: grad runs no forward row pass whose values only a mean's or sum's
    # shape reads (written without the cross-entropy's value join: passes/xentvalues)
    with no_value_join():
        g = make(f, argnums=argnums)
        g(*args)
        return s2sad.source(g)


def test_the_full_sum_spelling_is_fused():
    """np.sum(all of it) of the product: the sum of the fused row values."""
    args = _args(5, 4)
    assert "row_dot_log_softmax(" in _source(full_sum, args)
    got = s2sad.grad(full_sum, argnums=(0, 1, 3))(*args)
    for j, i in enumerate((0, 1, 3)):
        np.testing.assert_allclose(got[j], central_fd(full_sum, args, i), rtol=1e-6, atol=1e-8)


def full_sum(W, b, X, Y):
    z = X @ W + b
    t = z - np.max(z, axis=-1, keepdims=True)
    return -np.sum((t - np.log(np.sum(np.exp(t), axis=-1, keepdims=True))) * Y)


@pytest.mark.parametrize("f", FUSED + [full_sum])
def test_the_product_and_row_sum_are_in_the_fused_statement(f):
    src = _source(f, _args(4, 5))
    assert "row_dot_log_softmax(" in src and "row_dot_log_softmax_bar(0," in src
    assert "kernel_rowsum" not in src and "row_log_softmax" not in src and "reduce_max" not in src
    assert "one pass per row forward and one backward" in str(s2sad.explain(f, (0, 1)))


@pytest.mark.parametrize("f", NOT_FUSED)
def test_chains_read_elsewhere_or_summed_down_columns_are_not(f):
    args = _args(4, 5)
    assert "row_dot_log_softmax" not in _source(f, args)
    got = s2sad.grad(f, argnums=(0, 1))(*args)
    for i in range(2):
        np.testing.assert_allclose(got[i], central_fd(f, args, i), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", FUSED + [full_sum])
@pytest.mark.parametrize("n,k", [(1, 1), (3, 10), (2, 300)])
def test_gradients_against_central_differences_including_y(f, n, k):
    args = _args(n, k)
    got = s2sad.grad(f, argnums=(0, 1, 3))(*args)
    for j, i in enumerate((0, 1, 3)):
        fd = central_fd(f, args, i)
        np.testing.assert_allclose(got[j], fd, rtol=1e-5, atol=2e-6 * (1 + np.abs(fd).max()))


def _value_and_grad(f, args, fused, monkeypatch, backend="auto", argnums=(0, 1, 3)):
    monkeypatch.setenv("S2SAD_ROW_FUSION", "1" if fused else "0")
    PLANS.clear()
    try:
        return s2sad.value_and_grad(f, argnums=argnums, backend=backend)(*args)
    finally:
        PLANS.clear()


def _agree(a, b, dtype):
    tol = {np.float64: 1e-12, np.float32: 1e-4}[dtype]
    assert np.shape(a) == np.shape(b) and np.result_type(a) == np.result_type(b)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * (1 + np.abs(b).max(initial=0)))


@pytest.mark.parametrize("backend", ["auto", "python"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 10), (1, 1), (10_000, 10), (10, 1000)])
@pytest.mark.parametrize("f", [xent, full_sum])
def test_fused_and_unfused_programs_agree(f, n, k, dtype, backend, monkeypatch):
    if backend == "python":
        n = min(n, 300)
    args = _args(n, k, dtype)
    v1, g1 = _value_and_grad(f, args, True, monkeypatch, backend)
    v2, g2 = _value_and_grad(f, args, False, monkeypatch, backend)
    _agree(v1, v2, dtype)
    for a, b in zip(g1, g2):
        assert a.dtype == dtype
        _agree(a, b, dtype)


def test_weights_broadcast_along_rows_and_integer_labels_take_the_numpy_formula(monkeypatch):
    W, b, X, Y = _args(6, 4)
    w = np.array([[0.5, 1.0, 2.0, -1.0]])                 # (1, k): the product broadcasts
    labels = Y.astype(np.int64)                           # integers: another dtype than z
    for y in (w, labels):
        v1, g1 = _value_and_grad(xent, (W, b, X, y), True, monkeypatch, argnums=(0, 1))
        v2, g2 = _value_and_grad(xent, (W, b, X, y), False, monkeypatch, argnums=(0, 1))
        _agree(v1, v2, np.float64)
        for a, c in zip(g1, g2):
            _agree(a, c, np.float64)
    got = s2sad.grad(xent, argnums=3)(W, b, X, w)
    np.testing.assert_allclose(got, central_fd(xent, (W, b, X, w), 3), rtol=1e-6, atol=1e-9)


def test_nan_and_inf_rows_give_what_the_numpy_statements_give(monkeypatch):
    W, b, X, Y = _args(5, 3)
    X[1, 0] = np.nan
    X[3, 2] = np.inf
    with np.errstate(all="ignore"):
        v1, g1 = _value_and_grad(xent, (W, b, X, Y), True, monkeypatch, argnums=(0, 1))
        v2, g2 = _value_and_grad(xent, (W, b, X, Y), False, monkeypatch, argnums=(0, 1))
    assert np.isnan(v1) and np.isnan(v2)
    for a, c in zip(g1, g2):
        assert np.array_equal(np.isnan(a), np.isnan(c))


def test_inputs_are_not_mutated():
    args = _args(30, 10)
    keep = [a.copy() for a in args]
    s2sad.value_and_grad(xent, argnums=(0, 1, 3))(*args)
    for a, k in zip(args, keep):
        np.testing.assert_array_equal(a, k)


def test_forward_mode_and_forward_over_reverse():
    W, b, X, Y = _args(4, 5)
    rng = np.random.default_rng(3)
    tW, tY = rng.normal(size=W.shape), rng.normal(size=Y.shape)
    h = 1e-6
    zb = np.zeros_like(b)
    _, tangent = s2sad.jvp(xent, (W, b, X, Y), (tW, zb, np.zeros_like(X), tY))
    fd = (xent(W + h * tW, b, X, Y + h * tY) - xent(W - h * tW, b, X, Y - h * tY)) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)
    grad = s2sad.grad(xent, argnums=(0, 3))
    _, hv = s2sad.jvp(grad, (W, b, X, Y), (tW, zb, np.zeros_like(X), tY))
    up, down = grad(W + h * tW, b, X, Y + h * tY), grad(W - h * tW, b, X, Y - h * tY)
    for got, u, d in zip(hv, up, down):
        fd = (u - d) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6 * (1 + np.abs(fd).max()))


# ---------------------------------------------------------------- the runtime entries


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 10), (1, 1), (10, 1), (1, 1000), (10_000, 10), (3, 7)])
def test_compiled_rows_match_the_numpy_formula(n, k, dtype):
    rng = np.random.default_rng(n + k)
    z = (rng.normal(size=(n, k)) * 4).astype(dtype)
    y = rng.random(size=(n, k)).astype(dtype)
    g = rng.normal(size=n).astype(dtype)
    tol = {np.float64: 1e-13, np.float32: 2e-5}[dtype]
    for keepdims in (False, True):
        got = R.row_dot_log_softmax(z, y, axis=1, keepdims=keepdims)
        ref = R.reference_dot_log_softmax(z, y, axis=1, keepdims=keepdims)
        assert got.dtype == dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol * 10, atol=tol * 10 * k)
    for i in (0, 1):
        fast = R.row_dot_log_softmax_bar(i, g, z, y, axis=1)
        slow = R.row_dot_log_softmax_bar(i, g, z, y, axis=1, backend="python")
        assert fast.dtype == dtype and fast.shape == z.shape
        np.testing.assert_allclose(fast, slow, rtol=tol * 10, atol=tol * 10 * (1 + k))


def test_strided_rows_and_other_layouts():
    big = np.random.default_rng(2).normal(size=(8, 12))
    z, y = big[::2, 1:9], np.abs(big[1::2, 2:10])
    np.testing.assert_allclose(R.row_dot_log_softmax(z, y, axis=-1), R.reference_dot_log_softmax(z, y, axis=-1),
                               rtol=1e-13)
    z3 = big.reshape(2, 4, 12)
    np.testing.assert_array_equal(R.row_dot_log_softmax(z3, z3, axis=-1), R.reference_dot_log_softmax(z3, z3, axis=-1))


def summed_in_a_loop(W, b, X, Y):
    """The log-softmax outside a loop, its product inside: across blocks, kept."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    acc = 0.0
    for i in range(2):
        acc = acc + np.sum(np.sum(Y * logp, axis=1) ** 2)
    return acc


def test_a_product_in_a_loop_is_kept():
    args = _args(5, 4)
    assert "row_dot_log_softmax" not in _source(summed_in_a_loop, args)
    got = s2sad.grad(summed_in_a_loop, argnums=(0, 1))(*args)
    for i in range(2):
        np.testing.assert_allclose(got[i], central_fd(summed_in_a_loop, args, i), rtol=1e-6, atol=1e-8)


def test_dask_splits_the_fused_cross_entropy_over_rows():
    da = pytest.importorskip("dask.array")
    W, b, X, Y = _args(40, 5)
    want = s2sad.grad(xent, argnums=(0, 1))(W, b, X, Y)
    got = s2sad.grad(xent, argnums=(0, 1))(W, b, da.from_array(X, chunks=(10, 3)), da.from_array(Y, chunks=(10, 5)))
    for a, c in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), c, rtol=1e-12, atol=1e-14)
