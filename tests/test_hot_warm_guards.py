"""The array hot path's guards between warm calls (issue 17, small batches): once a
signature has its specialised copy (array_special.py), which array_hot.py runs without
`bound`, from a one-entry signature cache and without the per-call Python the
full path pays, every change the full path would see still changes the result: a
rebound global or closure cell that was compiled in, a second closure of the same code,
a swapped `__code__`, a changed dtype, shape or layout, free data written in place.
Each result is checked against the gradient written by hand (numpy), not only against
s2sad's other paths.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad

K = 2.0
FREE = np.linspace(0.5, 1.5, 4)


def global_scaled(W, X):
    return K * np.sum(np.tanh(X @ W))


def make_closure(k):
    def closure_scaled(W, X):
        return k * np.sum(np.tanh(X @ W))
    return closure_scaled


def other_code(W, X):
    return np.sum((X @ W) ** 2)


def free_scaled(W, X):
    return np.sum(np.tanh(X @ W) * FREE)


def tanh_grad(W, X, k=1.0, weights=1.0):
    """d/dW of sum(k * weights * tanh(X @ W)), by hand."""
    t = np.tanh(X @ W)
    return X.T @ (k * weights * (1.0 - t * t))


def args_of(n=32, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(6, 4)).astype(dtype), rng.normal(size=(n, 6)).astype(dtype)


def warm(g, args, calls=4):
    """Calls enough for the hot path and the signature's specialised copy."""
    for _ in range(calls):
        got = g(*args)
    return got


def special(g):
    return getattr(g.__s2sad__.leaf_hot, "special", None)


def close(got, want, dtype=np.float64):
    assert type(got) is np.ndarray and got.dtype == dtype and got.shape == np.shape(want)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_specialised_copy_is_what_answers():
    W, X = args_of()
    g = s2sad.grad(global_scaled)
    close(warm(g, (W, X)), tanh_grad(W, X, K))
    sp = special(g)
    assert sp is not None and sp.specialised((W, X))


def test_a_rebound_global_between_warm_calls():
    global K
    W, X = args_of()
    g = s2sad.grad(global_scaled)
    warm(g, (W, X))
    old = K
    try:
        for k in (3.0, -0.5, 3.0):
            K = k
            close(g(W, X), tanh_grad(W, X, k))
            close(g(W, X), tanh_grad(W, X, k))
    finally:
        K = old
    close(g(W, X), tanh_grad(W, X, old))


def test_a_rebound_closure_cell_between_warm_calls():
    W, X = args_of()
    loss = make_closure(2.0)
    g = s2sad.grad(loss)
    close(warm(g, (W, X)), tanh_grad(W, X, 2.0))
    assert special(g).specialised((W, X))
    loss.__closure__[0].cell_contents = 5.0
    close(g(W, X), tanh_grad(W, X, 5.0))
    close(g(W, X), tanh_grad(W, X, 5.0))


def test_two_closures_of_one_code_interleaved():
    W, X = args_of()
    ga, gb = s2sad.grad(make_closure(2.0)), s2sad.grad(make_closure(-3.0))
    warm(ga, (W, X)), warm(gb, (W, X))
    for _ in range(3):
        close(ga(W, X), tanh_grad(W, X, 2.0))
        close(gb(W, X), tanh_grad(W, X, -3.0))


def test_a_swapped_code_between_warm_calls():
    W, X = args_of()

    def loss(W, X):
        return np.sum(np.tanh(X @ W))
    g = s2sad.grad(loss)
    close(warm(g, (W, X)), tanh_grad(W, X))
    loss.__code__ = other_code.__code__
    close(g(W, X), 2.0 * X.T @ (X @ W))
    close(g(W, X), 2.0 * X.T @ (X @ W))


@pytest.mark.parametrize("change", ["float32", "shape", "fortran", "strided", "float32 W only"])
def test_a_changed_signature_between_warm_calls(change):
    W, X = args_of()
    g = s2sad.grad(global_scaled)
    warm(g, (W, X))
    if change == "float32":
        W2, X2 = W.astype(np.float32), X.astype(np.float32)
    elif change == "shape":
        W2, X2 = W, X[:7].copy()
    elif change == "fortran":
        W2, X2 = np.asfortranarray(W), np.asfortranarray(X)
    elif change == "strided":
        W2, X2 = W, np.repeat(X, 2, axis=1)[:, ::2]
    else:
        W2, X2 = W.astype(np.float32), X
    dtype = W2.dtype        # (a gradient takes its argument's dtype)
    for _ in range(3):      # each new signature warm too; then back to the first one
        close(g(W2, X2), tanh_grad(W2.astype(float), X2.astype(float), K), dtype)
        close(g(W, X), tanh_grad(W, X, K))


def test_an_array_reshaped_in_place_between_warm_calls():
    W, X = args_of(n=32)
    g = s2sad.grad(global_scaled)
    warm(g, (W, X))
    X.shape = (16, 12)     # the same object, another shape: the product is refused, located
    with pytest.raises(s2sad.S2SADError):
        g(W, X)
    X.shape = (32, 6)
    close(g(W, X), tanh_grad(W, X, K))


def test_free_data_written_between_warm_calls():
    W, X = args_of()
    g = s2sad.grad(free_scaled)
    close(warm(g, (W, X)), tanh_grad(W, X, weights=FREE))
    FREE[:] *= 2.0
    try:
        close(g(W, X), tanh_grad(W, X, weights=FREE))
    finally:
        FREE[:] /= 2.0
    close(g(W, X), tanh_grad(W, X, weights=FREE))


def test_inputs_are_left_alone_and_results_are_fresh():
    W, X = args_of()
    g = s2sad.grad(global_scaled)
    keep = W.copy(), X.copy()
    a = warm(g, (W, X))
    b = g(W, X)
    assert a is not b and not np.shares_memory(a, b) and not np.shares_memory(b, W)
    assert np.array_equal(W, keep[0]) and np.array_equal(X, keep[1])
