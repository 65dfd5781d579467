"""The small-batch hot path (array_hot.py, array_special.py) as a hostile user feeds it
(session 8, trust): between calls of one grad object the arguments change dtype, shape,
strides and contiguity (a view, a Fortran-ordered array, negative strides, a read-only
array, int data), and the answer follows, each call against central differences, the
arguments never written; then the original signature again. Containers and in-place
writes in loops likewise."""
import math
from collections import namedtuple

import numpy as np
import pytest

import s2sad
from conftest import central_fd


def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.mean((out[:, 0] - y) ** 2)


def softmax_loss(W, X, Y):
    z = X @ W
    z = z - np.max(z, axis=1, keepdims=True)
    lp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * lp, axis=1))


RNG = np.random.default_rng(0)
N, D, K = 32, 5, 4
BASE = [RNG.normal(size=(D, K)), RNG.normal(size=K), RNG.normal(size=(K, 2)), RNG.normal(size=(N, D)),
        RNG.normal(size=N)]


def _readonly(arrays):
    out = [a.copy() for a in arrays]
    for a in out:
        a.setflags(write=False)
    return out


def _variants():
    W1, b1, W2, X, y = BASE
    return {
        "fortran W1": [np.asfortranarray(W1), b1, W2, X, y],
        "fortran X": [W1, b1, W2, np.asfortranarray(X), y],
        "row view X": [W1, b1, W2, np.repeat(X, 2, axis=0)[::2], y],
        "transposed view W1": [np.ascontiguousarray(W1.T).T, b1, W2, X, y],
        "strided b1": [W1, np.repeat(b1, 2)[::2], W2, X, y],
        "negative strides": [W1, b1, W2, X[::-1], y[::-1]],
        "column view X": [W1, b1, W2, np.repeat(X, 2, axis=1)[:, ::2], y],
        "read-only": _readonly(BASE),
        "float32": [a.astype(np.float32) for a in BASE],
        "float32 W1 only": [W1.astype(np.float32), b1, W2, X, y],
        "33 rows": [W1, b1, W2, RNG.normal(size=(33, D)), RNG.normal(size=33)],
        "one row": [W1, b1, W2, X[:1], y[:1]],
        "int X": [W1, b1, W2, (X * 3).astype(np.int64), y],
    }


def _check(g, f, args, argnums, tol):
    before = [np.array(a, copy=True) for a in args]
    got = g(*args)
    wide = [np.asarray(a, dtype=np.float64) for a in args]
    for k, i in enumerate(argnums):
        assert got[k].shape == np.shape(args[i]) and got[k].dtype == np.asarray(args[i]).dtype
        np.testing.assert_allclose(got[k], central_fd(f, wide, i), rtol=tol, atol=tol)
    for a, b in zip(args, before):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("name", list(_variants()))
def test_the_hot_path_follows_the_arguments(name):
    g = s2sad.grad(mlp, argnums=(0, 1, 2))
    for _ in range(3):      # the full path, the hot path, its specialised copy
        _check(g, mlp, BASE, (0, 1, 2), 1e-6)
    args = _variants()[name]
    tol = 2e-3 if "float32" in name else 1e-6
    for _ in range(3):
        _check(g, mlp, args, (0, 1, 2), tol)
    _check(g, mlp, BASE, (0, 1, 2), 1e-6)


def test_no_rows_give_zero_gradients_as_jax():
    W1, b1, W2, X, y = BASE
    with np.errstate(all="ignore"):
        grads = s2sad.grad(mlp, argnums=(0, 1, 2))(W1, b1, W2, X[:0], y[:0])
    for gr, a in zip(grads, (W1, b1, W2)):
        assert gr.shape == a.shape and not np.any(gr)


@pytest.mark.parametrize("layout", ["C", "F", "view", "negative", "float32"])
def test_a_row_softmax_follows_the_arguments(layout):
    W = RNG.normal(size=(D, K))
    X = BASE[3]
    Y = np.eye(K)[RNG.integers(0, K, N)]
    args = {"C": [W, X, Y], "F": [np.asfortranarray(W), np.asfortranarray(X), np.asfortranarray(Y)],
            "view": [W, np.repeat(X, 2, axis=0)[::2], Y], "negative": [W[::-1], X[:, ::-1], Y[::-1]],
            "float32": [W.astype(np.float32), X.astype(np.float32), Y.astype(np.float32)]}[layout]
    g = s2sad.grad(softmax_loss, argnums=(0,))
    for _ in range(2):
        _check(g, softmax_loss, [W, X, Y], (0,), 1e-6)
    for _ in range(3):
        _check(g, softmax_loss, args, (0,), 2e-3 if layout == "float32" else 1e-6)


P = namedtuple("P", "W b")


def nested(p, X):
    h = X
    for layer in p["layers"]:
        h = np.tanh(h @ layer["W"])
    return np.sum(h ** 2) * p["scale"]


def by_fields(p, X):
    return np.sum((X @ p.W + p.b) ** 2)


def recurrence(x):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] * 0.5 + x[i] ** 2
    return np.sum(y ** 2)


def appended(x):
    hs = []
    h = 1.0
    for i in range(len(x)):
        h = np.tanh(h * x[i] + 0.1)
        hs.append(h)
    return np.sum(np.array(hs) ** 2)


def test_containers_and_writes_in_loops():
    X = RNG.normal(size=(4, 3))
    p = {"layers": [{"W": RNG.normal(size=(3, 3))}, {"W": RNG.normal(size=(3, 2))}], "scale": 1.5}
    g = s2sad.grad(nested)(p, X)
    for k in range(2):
        f = lambda W, k=k: nested({**p, "layers": [dict(l, W=W) if j == k else l for j, l in enumerate(p["layers"])]}, X)  # noqa: E731
        np.testing.assert_allclose(g["layers"][k]["W"], central_fd(f, [p["layers"][k]["W"]], 0), rtol=1e-6, atol=1e-8)
    assert g["scale"] == pytest.approx(nested(p, X) / 1.5, rel=1e-12)
    assert s2sad.grad(nested)({"layers": [], "scale": 2.0}, X)["scale"] == pytest.approx(np.sum(X ** 2))
    q = P(RNG.normal(size=(3, 2)), RNG.normal(size=2))
    gq = s2sad.grad(by_fields)(q, X)
    assert type(gq) is P
    np.testing.assert_allclose(gq.W, central_fd(lambda W: by_fields(P(W, q.b), X), [q.W], 0), rtol=1e-6)
    x = RNG.normal(size=6)
    for f in (recurrence, appended):
        for a in (x, x[:1], x[::-1]):
            np.testing.assert_allclose(s2sad.grad(f)(a), central_fd(f, [a], 0), rtol=1e-6, atol=1e-8)
        g32 = s2sad.grad(f)(x.astype(np.float32))
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, s2sad.grad(f)(x.astype(np.float32).astype(np.float64)), rtol=1e-5)
    assert s2sad.grad(appended)(x[:0]).shape == (0,)


def while_and_stack(W, b, v, c, X):
    """A random program (test_higher_rr_random) whose gradient in the float `c` comes
    back from the generated code as a 0-d ndarray: the hot path read `c.dtype` of the
    float (a raw AttributeError from the second call on)."""
    t0 = X @ W
    t2 = np.sin(X) * c
    k3 = [t2 * w for w in (0.5, -1.0, 2.0)]
    t3 = np.sum(np.stack(k3) ** 2, axis=0) + sum(k3)     # noqa: F841 (unused, as drawn)
    t4 = t0 * 1.0
    k4 = 0
    while np.sum(t4 * t4) > 0.5 and k4 < 12:
        t4 = t4 * 0.7 + 0.01 * np.tanh(t4)
        k4 += 1
    t6 = s2sad.broadcast(softplus, t4)
    t7 = t6 @ v
    return np.mean(t7 * t7) * c


def softplus(z):
    return math.log(1.0 + math.exp(-abs(z))) + max(z, 0.0)


def test_a_float_arguments_gradient_through_the_hot_path():
    W, b, v, X = RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=4), RNG.normal(size=(5, 3))
    g = s2sad.grad(while_and_stack, argnums=(0, 1, 2, 3))
    for k in range(4):      # the full path, then the hot path
        c = 0.8 + 0.01 * k
        gW, _, _, gc = g(W, b, v, c, X)
        assert type(gc) is float
        assert gc == pytest.approx(float(central_fd(while_and_stack, [W, b, v, c, X], 3)), rel=1e-6)
        np.testing.assert_allclose(gW, central_fd(while_and_stack, [W, b, v, c, X], 0), rtol=1e-6, atol=1e-9)
