"""W's adjoint's tangent of `out = h @ W` (W a parameter of one column) summed in the pass
of h's seeded tangent kernel (tangent_kernels "with column sums", hvp_columns.ColumnSums):
no pass of its own. Checked against a hand-written product and central differences of
s2sad.grad, on both backends, on s2sad.hvp and jvp(grad), and where the fold does not
apply (W made inside the program, W not differentiated) or its sums are not read (W of
several columns: h formed), with NaN, no rows and float32. And the forward's
`out = h @ W` with its tangent as ONE pass of h's "rows" tangent kernel.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from conftest import assert_close_each, directional_fd
from s2sad import array_higher, hvp_columns

BACKENDS = ("python", "llvm")


def soft(z):
    return z / (1.0 + z * z) + 0.5 * z


def mlp(W1, b1, W2, X, y):
    h = s2sad.broadcast(soft, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def mlp_made_w(W1, b1, W2, X, y):
    W = W2 * 2.0          # W made by the program: its adjoint is read back, no fold
    h = s2sad.broadcast(soft, X @ W1 + b1)
    out = h @ W
    return np.mean((out - y) ** 2)


def mlp_w_twice(W1, b1, W2, X, y):
    h = s2sad.broadcast(soft, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2) + np.sum(W2 * W2) * 0.25


def _problem(n, d=4, k=6, cols=1, seed=0):
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=(d, k)), rng.normal(size=(1, k)) * 0.1, rng.normal(size=(k, cols)),
            rng.normal(size=(n, d)), rng.normal(size=(n, cols)))
    tans = tuple(rng.normal(size=a.shape) for a in args[:3]) + (np.zeros((n, d)), np.zeros((n, cols)))
    return args, tans


def _hand(W1, b1, W2, X, y, V1, Vb, V2, scale=2.0):
    """soft's second derivative times the tangent enters h_bar_dot: the whole product by hand."""
    z = X @ W1 + b1
    zd = X @ V1 + Vb
    q = 1.0 + z * z
    h = z / q + 0.5 * z
    s = (1.0 - z * z) / q ** 2 + 0.5
    s2 = (2.0 * z ** 3 - 6.0 * z) / q ** 3
    hd = s * zd
    n = y.size
    ob, obd = scale * (h @ W2 - y) / n, scale * (hd @ W2 + h @ V2) / n
    hb, hbd = ob @ W2.T, obd @ W2.T + ob @ V2.T
    zbd = hbd * s + hb * s2 * zd
    return X.T @ zbd, zbd.sum(0, keepdims=True), hd.T @ ob + h.T @ obd


def test_the_source_sums_w_in_the_kernels_pass():
    text = array_higher.hvp_source(mlp, (0, 1, 2), product_only=True)
    assert "mlp__h__seeded_sums_tangent" in text and "*column_sum_seeds(_W2_g_dot)" in text
    assert "_W2_g_dot = column_sums(_W2_g_dot, _W2_g_dot_sums)" in text
    assert "c_sum * (u * (" in text     # the kernel's column-sum term
    # a W the program makes has no fold (its adjoint is read before the kernel's pullback)
    assert "column_sum_seeds(" not in array_higher.hvp_source(mlp_made_w, (0, 1, 2), product_only=True)
    # W not differentiated: nothing to sum
    assert "column_sum_seeds(" not in array_higher.hvp_source(mlp, (0, 1), argnums=(0, 1), product_only=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [mlp, mlp_made_w, mlp_w_twice])
def test_product_and_jvp_of_grad_match_differences(backend, fn):
    args, tans = _problem(40, seed=1)
    G = s2sad.grad(fn, argnums=(0, 1, 2), backend=backend)
    want = directional_fd(G, args, tans)
    assert_close_each(s2sad.hvp(fn, args, tans, argnums=(0, 1, 2), backend=backend), want, 1e-6)
    assert_close_each(s2sad.jvp(G, args, tans)[1], want, 1e-6)
    g = s2sad.jvp(G, args, tans)[0]
    assert_close_each(g, G(*args), 1e-13)           # the gradient returned beside it unchanged


@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_the_hand_product_to_rounding(backend):
    args, tans = _problem(500, seed=2)
    want = _hand(*args, *tans[:3])
    assert_close_each(s2sad.hvp(mlp, args, tans, argnums=(0, 1, 2), backend=backend), want, 1e-12)
    assert_close_each(s2sad.jvp(s2sad.grad(mlp, argnums=(0, 1, 2), backend=backend), args, tans)[1], want, 1e-12)


def test_several_columns_form_h_and_ignore_the_sums():
    args, tans = _problem(30, cols=3, seed=3)
    G = s2sad.grad(mlp, argnums=(0, 1, 2))
    assert_close_each(s2sad.hvp(mlp, args, tans, argnums=(0, 1, 2)), directional_fd(G, args, tans), 1e-6)


def test_w_not_differentiated_and_w_alone():
    args, tans = _problem(25, seed=4)
    for argnums in ((0, 1), (2,), (1, 2)):
        G = s2sad.grad(mlp, argnums=argnums)
        t = tuple(tans[i] if i in argnums else np.zeros_like(a) for i, a in enumerate(args))
        got = s2sad.hvp(mlp, args, t, argnums=argnums)
        want = directional_fd(G, args, t)
        assert_close_each(got if isinstance(got, tuple) else (got,), want, 1e-6)


def test_nan_in_the_direction_of_w_reaches_its_own_tangent():
    args, tans = _problem(20, seed=5)
    tans = list(tans)
    tans[2] = tans[2].copy()
    tans[2][1, 0] = np.nan
    got = s2sad.hvp(mlp, args, tuple(tans), argnums=(0, 1, 2))
    want = _hand(*args, *tans[:3])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))


def test_no_rows_one_row_float32_inputs_unchanged():
    for n in (0, 1):
        args, tans = _problem(n, seed=6)
        got = s2sad.hvp(mlp, args, tans, argnums=(0, 1, 2))
        assert [np.shape(g) for g in got] == [a.shape for a in args[:3]]
        assert_close_each(got, _hand(*args, *tans[:3]), 1e-12)
    args, tans = _problem(30, seed=7)
    a32, t32 = tuple(a.astype(np.float32) for a in args), tuple(t.astype(np.float32) for t in tans)
    copies = [a.copy() for a in a32 + t32]
    r32 = s2sad.hvp(mlp, a32, t32, argnums=(0, 1, 2))
    assert all(r.dtype == np.float32 for r in r32)
    assert_close_each(r32, _hand(*args, *tans[:3]), 1e-4)
    assert all(np.array_equal(a, c) for a, c in zip(a32 + t32, copies))


def test_column_sum_helpers():
    k, u, ud = 3, np.ones((4, 1)), np.zeros((4, 1))
    cs = hvp_columns.ColumnSums(u, ud, k, (k, 1), np.dtype(np.float64))
    c, got_u, got_ud = hvp_columns.column_sum_seeds(cs)
    assert c.shape == (1, k) and not np.any(c) and got_u is u and got_ud is ud
    assert hvp_columns.column_sums(cs, np.arange(3.0).reshape(1, 3)).shape == (k, 1)
    w = np.arange(3.0)
    assert hvp_columns.column_sum_seeds(w) == (0.0, 0.0, 0.0) and hvp_columns.column_sums(w, None) is w


# ---------------------------------------------------------------- the forward: one rows pass

def _kernels(fn):
    from s2sad.passes.array_jvp import tangent_plans
    from s2sad.plans import compiled_array
    args, tans = _problem(12, seed=8)
    s2sad.hvp(fn, args, tans, argnums=(0, 1, 2))
    impl = tangent_plans(compiled_array(fn)).hvp_implementation((0, 1, 2), (0, 1, 2), "auto", False,
                                                                hvp_columns.runtime_names, False)
    return impl.__globals__["mlp__h"], impl.__globals__["mlp__h__rows_tangent"], args, tans


def test_the_forward_is_one_rows_pass_in_the_source():
    text = array_higher.hvp_source(mlp, (0, 1, 2), product_only=True)
    assert "kernel_matmul_jvp(mlp__h, mlp__h__rows_tangent, " in text
    assert "a * (g * _v) + a_dot * (g * (" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_pass_gives_the_product_and_its_tangent(backend):
    k, rows, args, _ = _kernels(mlp)
    W1, b1, W2, X, _ = args
    rng = np.random.default_rng(11)
    z, zd, bd = X @ W1, rng.normal(size=(12, 6)), rng.normal(size=(1, 6))
    h = soft(z + b1)
    q = 1.0 + (z + b1) ** 2
    hd = ((1.0 - (z + b1) ** 2) / q ** 2 + 0.5) * (zd + bd)
    for w, wd in ((W2, rng.normal(size=W2.shape)), (W2.ravel(), rng.normal(size=6)),
                  (W2, rng.normal(size=W2.shape).astype(np.float32))):    # (a float32 tangent: cast)
        out, out_dot, values = hvp_columns.kernel_matmul_jvp(k, rows, (z, b1), ("_1", "b1"), (zd, bd), w, wd,
                                                             backend=backend)
        assert values is None and out.shape == (h @ w).shape and out_dot.shape == out.shape
        wd64 = np.asarray(wd, np.float64)
        np.testing.assert_allclose(out, h @ w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out_dot, hd @ w + h @ wd64, rtol=1e-12, atol=1e-12)
    # several columns: h and h_dot formed, numpy's products
    w3, wd3 = np.hstack([W2, W2]), np.hstack([W2, -W2])
    out, out_dot, values = hvp_columns.kernel_matmul_jvp(k, rows, (z, b1), ("_1", "b1"), (zd, bd), w3, wd3,
                                                         backend=backend)
    assert values is not None
    np.testing.assert_allclose(out_dot, hd @ w3 + h @ wd3, rtol=1e-12, atol=1e-12)


def test_rows_pass_nan_stays_in_its_row():
    k, rows, args, _ = _kernels(mlp)
    W1, b1, W2, X, _ = args
    z, zd = X @ W1, np.zeros((12, 6))
    zd[3, 2] = np.nan
    out, out_dot, _ = hvp_columns.kernel_matmul_jvp(k, rows, (z, b1), ("_1", "b1"), (zd, np.zeros((1, 6))), W2,
                                                    np.zeros_like(W2))
    assert np.isfinite(out).all() and np.isnan(out_dot[3, 0]) and np.isfinite(np.delete(out_dot, 3, axis=0)).all()
