"""Forward over reverse through a kernel paired with its one-column matmul
(`h = kernel(...); out = h @ w`, hvp_columns.py): h and its tangent are not formed,
the products run in the kernels' passes. Checked against central differences of
s2sad.grad along the direction and a hand-written product, on the python and llvm
backends, on the fused path (w one column or a vector) and the formed one (w of
several columns, another dtype), with some arguments not differentiated.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from conftest import assert_close_each, directional_fd
from s2sad import array_higher, hvp_columns

BACKENDS = ("python", "llvm")


def leaky(z):
    return z if z > 0 else 0.01 * z


def soft(z):
    return z / (1.0 + z * z) + 0.5 * z


def mlp_leaky(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def mlp_soft(W1, b1, W2, X, y):
    h = s2sad.broadcast(soft, X @ W1 + b1)
    out = h @ W2
    return np.sum((out - y) ** 2) * 0.5


def _problem(n, d=5, k=7, cols=1, seed=0, vector=False):
    rng = np.random.default_rng(seed)
    W2 = rng.normal(size=(k,) if vector else (k, cols))
    y = rng.normal(size=(n,) if vector else (n, cols))
    args = (rng.normal(size=(d, k)), rng.normal(size=(1, k)) * 0.1, W2, rng.normal(size=(n, d)), y)
    tans = tuple(rng.normal(size=a.shape) for a in args[:3]) + (np.zeros((n, d)), np.zeros_like(y))
    return args, tans


def test_the_pair_is_fused_in_the_source():
    args, tans = _problem(6)
    s2sad.jvp(s2sad.grad(mlp_leaky, argnums=(0, 1, 2)), args, tans)
    src = array_higher.hvp_source(mlp_leaky, (0, 1, 2))
    assert "kernel_matmul_jvp(" in src and "kernel_matmul_hvp_bars(" in src
    assert " = jvp(mlp_leaky__h" not in src           # h and its tangent are not formed in one pass first


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [dict(cols=1), dict(vector=True), dict(cols=3)])
def test_hvp_matches_central_differences(backend, shape):
    args, tans = _problem(9, **shape)
    G = s2sad.grad(mlp_soft, argnums=(0, 1, 2), backend=backend)
    got = s2sad.jvp(G, args, tans)[1]
    assert_close_each(got, directional_fd(G, args, tans), 1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_leaky_mlp_matches_the_hand_product(backend):
    args, tans = _problem(50, d=4, k=6)
    W1, b1, W2, X, y = args
    # the hand product (bench/hvp.py's mlp_hvp_hand, written out: the bench's modules are not a package)
    n = y.size
    z = X @ W1 + b1
    s = np.where(z > 0, 1.0, 0.01)
    V1, Vb, V2 = tans[:3]
    h, h_dot = s * z, s * (X @ V1 + Vb)
    r, r_dot = h @ W2 - y, h_dot @ W2 + h @ V2
    ob, obd = 2.0 * r / n, 2.0 * r_dot / n
    zbd = s * (obd @ W2.T + ob @ V2.T)
    want = (X.T @ zbd, np.sum(zbd, axis=0, keepdims=True), h_dot.T @ ob + h.T @ obd)
    got = s2sad.jvp(s2sad.grad(mlp_leaky, argnums=(0, 1, 2), backend=backend), args, tans)[1]
    assert_close_each(got, want, 1e-12)


def test_fused_and_formed_agree():
    """The same problem with w one column (fused) and as the first of two columns whose
    second has zero weight and zero tangent (formed): the same numbers up to rounding."""
    args, tans = _problem(40, cols=1, seed=3)
    W1, b1, W2, X, y = args
    G = s2sad.grad(mlp_soft, argnums=(0, 1, 2))
    one = s2sad.jvp(G, args, tans)[1]
    W2b = np.concatenate([W2, np.zeros_like(W2)], axis=1)
    yb = np.concatenate([y, np.zeros_like(y)], axis=1)
    two = s2sad.jvp(G, (W1, b1, W2b, X, yb),
                    tans[:2] + (np.concatenate([tans[2], np.zeros_like(W2)], axis=1), tans[3],
                                np.zeros_like(yb)))[1]
    assert_close_each(one[:2], two[:2], 1e-12)
    assert_close_each((one[2],), (two[2][:, :1],), 1e-12)


@pytest.mark.parametrize("argnums", [(0,), (0, 1), (2,), (0, 1, 2, 3)])
def test_some_arguments_not_differentiated(argnums):
    args, tans = _problem(8, seed=5)
    G = s2sad.grad(mlp_soft, argnums=argnums)
    tans = tuple(t if i in argnums else np.zeros_like(t) for i, t in enumerate(tans))
    if 3 in argnums:
        tans = tans[:3] + (np.random.default_rng(9).normal(size=args[3].shape),) + tans[4:]
    got = s2sad.jvp(G, args, tans)[1]
    got = got if isinstance(got, tuple) else (got,)
    want = directional_fd(lambda *a: (lambda g: g if isinstance(g, tuple) else (g,))(G(*a)), args, tans)
    assert_close_each(got, want, 1e-6)


def test_inputs_unchanged_and_float32_weights_refuse_or_agree():
    args, tans = _problem(7, seed=11)
    copies = [a.copy() for a in args + tans]
    G = s2sad.grad(mlp_soft, argnums=(0, 1, 2))
    got = s2sad.jvp(G, args, tans)[1]
    for a, c in zip(args + tans, copies):
        assert np.array_equal(a, c)
    W2_32 = args[2].astype(np.float32)          # another dtype: the formed path
    mixed = s2sad.jvp(G, args[:2] + (W2_32,) + args[3:], tans[:2] + (tans[2].astype(np.float32),) + tans[3:])[1]
    assert_close_each(mixed[:2], got[:2], 1e-5)


def test_helpers_form_nothing_where_w_is_one_column():
    from s2sad.passes.array_jvp import tangent_plans
    from s2sad.plans import compiled_array
    args, tans = _problem(12, seed=2)
    s2sad.jvp(s2sad.grad(mlp_leaky, argnums=(0, 1, 2)), args, tans)
    fn = tangent_plans(compiled_array(mlp_leaky)).hvp_implementation((0, 1, 2), (0, 1, 2), "auto", False,
                                                                      hvp_columns.runtime_names)
    k, kt = fn.__globals__["mlp_leaky__h"], fn.__globals__["mlp_leaky__h__rows_tangent"]
    kp = fn.__globals__["mlp_leaky__h__pair_tangent"]
    W1, b1, W2, X, _ = args
    z, zd = X @ W1, X @ tans[0]
    for w, wd, fused in ((W2, tans[2], True), (np.hstack([W2, W2]), np.hstack([tans[2], W2]), False)):
        out, out_dot, values = hvp_columns.kernel_matmul_jvp(k, kt, (z, b1), ("_1", "b1"), (zd, tans[1]), w, wd)
        assert (values is None) == fused
        s = np.where(z + b1 > 0, 1.0, 0.01)
        h, h_dot = s * (z + b1), s * (zd + tans[1])
        assert_close_each((out, out_dot), (h @ w, h_dot @ w + h @ wd), 1e-13)
        bars = hvp_columns.kernel_matmul_hvp_bars(k, kp, (z, b1), (zd, tans[1]), w, wd, True, out, out_dot, values)
        assert_close_each(bars[2:], (h.T @ out, h.T @ out_dot + h_dot.T @ out), 1e-13)
        assert_close_each((np.asarray(bars[0]),), (out @ w.T,), 1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_rows_and_one_row(backend):
    G = s2sad.grad(mlp_soft, argnums=(0, 1, 2), backend=backend)
    args, tans = _problem(0, seed=1)
    got = s2sad.jvp(G, args, tans)[1]
    assert [np.shape(g) for g in got] == [a.shape for a in args[:3]]
    assert all(not np.any(g) for g in got)        # a sum over no rows: every term is zero
    args, tans = _problem(1, seed=1)
    assert_close_each(s2sad.jvp(G, args, tans)[1], directional_fd(G, args, tans), 1e-6)


def test_float32_stays_float32():
    args, tans = _problem(20, seed=4)
    G = s2sad.grad(mlp_soft, argnums=(0, 1, 2))
    r32 = s2sad.jvp(G, tuple(a.astype(np.float32) for a in args), tuple(t.astype(np.float32) for t in tans))[1]
    assert all(r.dtype == np.float32 for r in r32)
    assert_close_each(r32, s2sad.jvp(G, args, tans)[1], 1e-4)
