"""grad of a softmax cross-entropy runs no forward pass over the rows (issue 17): the
loss's mean (or sum) over the row values reads only their shape (array_prims
Prim.shape_reads), so the reverse sweep gives it the row op's stand-in
(`rowsoftmax.row_dot_like`, Prim.like) and the grad variant's liveness drops the
forward `row_dot_log_softmax` line. value_and_grad still computes it.

Checked: the gradients are value_and_grad's bit for bit (the same adjoint calls), agree
with central differences and with the unfused program (S2SAD_ROW_FUSION=0); the
stand-in's shape and dtype are the value's, and where it cannot know them cheaply it is
the value itself (so errors are the forward line's); a value read elsewhere keeps its
forward line.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import rowsoftmax as R
from s2sad.errors import S2SADError

from conftest import central_fd, no_value_join


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def xent_sum(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.sum(logp * Y, axis=-1, keepdims=True).sum() * 0.5


def xent_method(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    rows = np.sum(Y * logp, axis=1)
    return -rows.mean()


def xent_rows_read(W, b, X, Y):
    """The row values read by another statement: their forward line stays."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    rows = np.sum(Y * logp, axis=1)
    return -np.mean(rows) + 0.1 * np.sum(rows ** 2)


SHAPE_ONLY = [xent, xent_sum, xent_method]


def _args(n, k, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + 7 * n + k)
    W = (rng.normal(size=(3, k)) * 0.7).astype(dtype)
    b = (rng.normal(size=(1, k)) * 0.1).astype(dtype)
    X = rng.normal(size=(n, 3)).astype(dtype)
    Y = np.eye(k, dtype=dtype)[rng.integers(0, k, n)] if n else np.zeros((0, k), dtype)
    return W, b, X, Y


def _grad_source(f, args):
    g = s2sad.grad(f, argnums=(0, 1))
    g(*args)
    return s2sad.source(g)


@pytest.mark.parametrize("f", SHAPE_ONLY)
def test_grad_runs_no_forward_row_pass(f):
    src = _grad_source(f, _args(6, 4))
    assert "row_dot_log_softmax(" not in src and "row_dot_like(" in src
    # (z's adjoint: row_dot_log_softmax_bar, or inside xent_head_bars where the dense
    # logits are joined with it: passes/xentheads)
    assert "row_dot_log_softmax_bar(0," in src or "xent_head_bars(" in src
    with no_value_join():       # (else its rows' values come from the joined pass: passes/xentvalues)
        vsrc = s2sad.source(s2sad.value_and_grad(f, argnums=(0, 1)))
    assert "row_dot_log_softmax(" in vsrc


def test_rows_read_elsewhere_keep_their_forward_line():
    args = _args(6, 4)
    src = _grad_source(xent_rows_read, args)
    assert "row_dot_log_softmax(" in src
    got = s2sad.grad(xent_rows_read, argnums=(0, 1))(*args)
    for j in (0, 1):
        np.testing.assert_allclose(got[j], central_fd(xent_rows_read, args, j), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", SHAPE_ONLY)
@pytest.mark.parametrize("n,k", [(1, 1), (7, 3), (130, 10), (300, 17), (0, 5)])
def test_grad_is_value_and_grads_bits_and_matches_differences(f, n, k):
    args = _args(n, k)
    got = s2sad.grad(f, argnums=(0, 1, 2))(*args)
    value, full = s2sad.value_and_grad(f, argnums=(0, 1, 2))(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-14)
    for a, b in zip(got, full):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    if n:
        for j in (0, 1, 2):
            np.testing.assert_allclose(got[j], central_fd(f, args, j), rtol=1e-6, atol=1e-6)
    else:
        assert all(not np.any(g) for g in got)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_grad_matches_the_unfused_program(monkeypatch, dtype, tol):
    args = _args(257, 10, dtype)
    fused = s2sad.grad(xent, argnums=(0, 1))(*args)
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")

    def xent_again(W, b, X, Y):      # a new function: a plan built with fusion off
        z = X @ W + b
        z = z - np.max(z, axis=1, keepdims=True)
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(np.sum(Y * logp, axis=1))

    g = s2sad.grad(xent_again, argnums=(0, 1))
    plain = g(*args)
    assert "row_dot" not in s2sad.source(g)
    for a, b in zip(fused, plain):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 1e-2)


def test_nan_and_inf_rows_give_value_and_grads_gradient():
    W, b, X, Y = _args(5, 4)
    X = X.copy()
    X[1, 0], X[3, 2] = np.nan, np.inf
    got = s2sad.grad(xent, argnums=(0, 1))(W, b, X, Y)
    _, full = s2sad.value_and_grad(xent, argnums=(0, 1))(W, b, X, Y)
    for a, c in zip(got, full):
        np.testing.assert_array_equal(a, c)


def test_labels_of_another_width_are_still_a_located_error():
    W, b, X, Y = _args(5, 4)
    with pytest.raises(S2SADError):
        s2sad.grad(xent, argnums=(0, 1))(W, b, X, Y[:, :3])


def test_inputs_are_not_changed():
    args = _args(40, 6)
    before = [a.copy() for a in args]
    s2sad.grad(xent, argnums=(0, 1))(*args)
    for a, c in zip(args, before):
        np.testing.assert_array_equal(a, c)


# ---------------------------------------------------------------- the stand-in itself

@pytest.mark.parametrize("axis,keepdims,shape", [(1, False, (5,)), (-1, True, (5, 1)), ((1,), False, (5,)),
                                                 (0, False, (4,)), (0, True, (1, 4))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_like_has_the_values_shape_and_dtype_without_their_pass(axis, keepdims, shape, dtype):
    rng = np.random.default_rng(3)
    z, y = rng.normal(size=(5, 4)).astype(dtype), rng.random((5, 4)).astype(dtype)
    like = R.row_dot_like(z, y, axis=axis, keepdims=keepdims)
    value = R.row_dot_log_softmax(z, y, axis=axis, keepdims=keepdims)
    assert like.shape == value.shape == shape and like.dtype == value.dtype
    assert like.strides == (0,) * len(shape) and not like.flags.writeable


@pytest.mark.parametrize("z,y,axis", [
    (np.ones((3, 4)), np.ones(4), 1),                            # y broadcast along the rows
    (np.ones((3, 4)), np.ones((3, 4), dtype=np.int64), 1),       # integer labels
    (np.ones((3, 4), dtype=np.float32), np.ones((3, 4)), 1),     # mixed dtypes
    (np.ones((2, 3, 4)), np.ones((2, 3, 4)), None),              # every axis
])
def test_like_is_the_value_where_it_cannot_know_it_cheaply(z, y, axis):
    like = R.row_dot_like(z, y, axis=axis)
    value = R.row_dot_log_softmax(z, y, axis=axis)
    assert like.shape == value.shape and like.dtype == value.dtype
    np.testing.assert_array_equal(like, value)


def test_like_of_empty_rows_raises_as_the_value_does():
    z = np.ones((3, 0))
    with pytest.raises(ValueError):
        R.row_dot_log_softmax(z, z, axis=1)
    with pytest.raises(ValueError):
        R.row_dot_like(z, z, axis=1)


def xent_names_rebound(W, b, X, Y):
    """The operands' names bound again after the row values: the stand-in reads the values
    the row op read."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    rows = np.sum(Y * logp, axis=1)
    Y = Y[:2] * W[0, 0]
    z = X[:1] @ W * 3.0
    return -np.mean(rows) + 0.01 * np.sum(z * z) + np.sum(Y)


def test_names_bound_again_after_the_row_values():
    args = _args(6, 4)
    g = s2sad.grad(xent_names_rebound, argnums=(0, 1))
    got = g(*args)
    assert "row_dot_like(" in s2sad.source(g)
    for j in (0, 1):
        np.testing.assert_allclose(got[j], central_fd(xent_names_rebound, args, j), rtol=1e-6, atol=1e-7)
