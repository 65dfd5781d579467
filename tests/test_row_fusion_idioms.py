"""Row fusion of the numpy idioms (passes/rowfusion.py): a max-shifted log-softmax,
softmax and log-sum-exp written with np.max/np.exp/np.sum/np.log run as one pass per
row forward and one backward. Checked against central differences and against the
unfused program (S2SAD_ROW_FUSION=0 when the plan is built keeps the statements).

Tolerance against the unfused program: 1e-12 (float64) / 1e-4 (float32) relative,
because the fused sums run in order where numpy's are pairwise, exp and log are
s2sad's own (within 4 ulp of glibc's), and the fused adjoint is the exact-math formula
(g - softmax * sum(g)) where the unfused one also carries the max's rounding-level
gradient (-sum of the shifted values' adjoint, at the argmax).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.plans import PLANS

from conftest import central_fd, no_value_join


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def lse(z):
    m = np.max(z, axis=-1, keepdims=True)
    return np.sum(np.sin(np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)) + m))


def lse_m_first(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.sin(m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))))


def softmax(z, w):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * w)


def softmax_two_lines(z, w):
    t = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(t)
    return np.sum(e / np.sum(e, axis=-1, keepdims=True) * w)


def layer_norm_softmax(z, g, c):
    """A layer normalisation (row_layer_norm: passes/layernorm) feeding a softmax (fused)."""
    mu = np.mean(z, axis=1, keepdims=True)
    v = np.mean((z - mu) ** 2, axis=1, keepdims=True)
    h = (z - mu) / np.sqrt(v + 1e-5) * g + c
    e = np.exp(h - np.max(h, axis=1, keepdims=True))
    return np.sum(np.log(e / np.sum(e, axis=1, keepdims=True) + 0.5))


def max_read_twice(z):
    """The max is read beyond the chain: not fused."""
    m = np.max(z, axis=1, keepdims=True)
    t = z - m
    return np.sum(t - np.log(np.sum(np.exp(t), axis=1, keepdims=True))) + np.sum(m)


def exp_read_twice(z):
    """The exponentials are read beyond the chain: not fused."""
    t = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(t)
    return np.sum(t - np.log(np.sum(e, axis=1, keepdims=True))) + np.sum(e)


def first_axis(z):
    """Along axis 0: not this pass's (rows are the last axis)."""
    t = z - np.max(z, axis=0, keepdims=True)
    return np.sum(np.sin(t - np.log(np.sum(np.exp(t), axis=0, keepdims=True))))


def _args(name, n, k, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + 31 * n + k)
    z = (rng.normal(size=(n, k)) * 2).astype(dtype)
    w = rng.normal(size=(n, k)).astype(dtype)
    if name == "xent":
        W = (rng.normal(size=(3, k)) * 0.5).astype(dtype)
        b = (rng.normal(size=(1, k)) * 0.1).astype(dtype)
        X = rng.normal(size=(n, 3)).astype(dtype)
        Y = np.eye(k, dtype=dtype)[rng.integers(0, k, n)] if n else np.zeros((0, k), dtype)
        return (W, b, X, Y), (0, 1)
    if name in ("lse", "lse_m_first"):
        return (z,), 0
    if name == "layer_norm_softmax":
        return (z, rng.normal(size=(1, k)).astype(dtype), rng.normal(size=(1, k)).astype(dtype)), (0, 1, 2)
    return (z, w), 0


FUNS = {"xent": xent, "lse": lse, "lse_m_first": lse_m_first, "softmax": softmax,
        "softmax_two_lines": softmax_two_lines, "layer_norm_softmax": layer_norm_softmax}


def _source(f, args, argnums, make=s2sad.grad):
    g = make(f, argnums=argnums)
    g(*args)
    return s2sad.source(g)


@pytest.mark.parametrize("name,kind", [("xent", "row_dot_log_softmax"), ("lse", "row_logsumexp"),
                                       ("lse_m_first", "row_logsumexp"), ("softmax", "row_softmax"),
                                       ("softmax_two_lines", "row_softmax"), ("layer_norm_softmax", "row_softmax")])
def test_each_idiom_is_one_row_fused_statement(name, kind):
    args, argnums = _args(name, 4, 5)
    # (value_and_grad: grad runs no forward pass whose values only a mean's shape reads;
    # written without the cross-entropy's value join, passes/xentvalues)
    with no_value_join():
        src = _source(FUNS[name], args, argnums, s2sad.value_and_grad)
    # (the log-sum-exp's adjoint reads z alone, not the forward's value: row_logsumexp_max_bar)
    bar = "row_logsumexp_max_bar(" if kind == "row_logsumexp" else f"{kind}_bar("
    assert f"{kind}(" in src and bar in src
    assert "reduce_max" not in src and "maxmin_bar" not in src
    text = str(s2sad.explain(FUNS[name], argnums))
    assert "one pass per row forward and one backward" in text


@pytest.mark.parametrize("f", [max_read_twice, exp_read_twice, first_axis])
def test_chains_read_elsewhere_or_along_rows_are_not_fused(f):
    z = np.random.default_rng(1).normal(size=(4, 5))
    src = _source(f, (z,), 0)
    assert not any(f"{k}(" in src for k in ("row_softmax", "row_log_softmax", "row_logsumexp"))
    np.testing.assert_allclose(s2sad.grad(f)(z), central_fd(f, (z,), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(FUNS))
@pytest.mark.parametrize("n,k", [(1, 1), (3, 10), (2, 1000)])
def test_gradients_against_central_differences(name, n, k):
    args, argnums = _args(name, n, k)
    got = s2sad.grad(FUNS[name], argnums=argnums)(*args)
    got = got if isinstance(got, tuple) else (got,)
    for i, gi in zip(argnums if isinstance(argnums, tuple) else (argnums,), got):
        fd = central_fd(FUNS[name], args, i)
        np.testing.assert_allclose(gi, fd, rtol=1e-5, atol=2e-6 * (1 + np.abs(fd).max()))


def _value_and_grad(f, args, argnums, fused: bool, monkeypatch):
    monkeypatch.setenv("S2SAD_ROW_FUSION", "1" if fused else "0")
    PLANS.clear()
    try:
        return s2sad.value_and_grad(f, argnums=argnums)(*args)
    finally:
        PLANS.clear()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 10), (1, 1), (10_000, 10), (10, 1000)])
@pytest.mark.parametrize("name", ["xent", "lse", "softmax", "layer_norm_softmax"])
def test_fused_and_unfused_programs_agree(name, n, k, dtype, monkeypatch):
    args, argnums = _args(name, n, k, dtype)
    v1, g1 = _value_and_grad(FUNS[name], args, argnums, True, monkeypatch)
    v2, g2 = _value_and_grad(FUNS[name], args, argnums, False, monkeypatch)
    tol = {np.float64: 1e-12, np.float32: 1e-4}[dtype]
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(v1, v2, rtol=tol, atol=tol)
    for a, b in zip(g1 if isinstance(g1, tuple) else (g1,), g2 if isinstance(g2, tuple) else (g2,)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * (1 + np.abs(b).max(initial=0)))


def test_the_switch_is_read_when_the_plan_is_built(monkeypatch):
    args, argnums = _args("xent", 4, 5)
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    PLANS.clear()
    try:
        src = _source(xent, args, argnums)
    finally:
        PLANS.clear()
    assert "row_log_softmax" not in src and "reduce_max" in src


@pytest.mark.parametrize("f,extra", [(softmax, True), (lse, False)])
def test_nan_and_inf_rows_give_what_the_numpy_statements_give(f, extra, monkeypatch):
    z = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf],
                  [1e300, -1e300, 0.0]])
    args = (z, np.ones_like(z)) if extra else (z,)
    with np.errstate(all="ignore"):
        v1, g1 = _value_and_grad(f, args, 0, True, monkeypatch)
        v2, g2 = _value_and_grad(f, args, 0, False, monkeypatch)
        assert np.isnan(v1) == np.isnan(v2)
        # the rows without NaN/inf give the same gradients; rows with them give NaN in both
        good = np.isfinite(g2).all(axis=1)
        np.testing.assert_allclose(g1[good], g2[good], rtol=1e-12, atol=1e-14)
        assert np.array_equal(np.isnan(g1[~good]).any(axis=1), np.isnan(g2[~good]).any(axis=1))


def test_a_3d_array_takes_the_numpy_formula():
    z = np.random.default_rng(2).normal(size=(2, 3, 4))
    np.testing.assert_allclose(s2sad.grad(lse)(z), central_fd(lse, (z,), 0), rtol=1e-6, atol=1e-8)


def test_forward_over_reverse_through_a_fused_softmax():
    args, argnums = _args("softmax", 3, 4)
    z, w = args
    t = np.random.default_rng(3).normal(size=z.shape)
    _, hv = s2sad.jvp(s2sad.grad(softmax), (z, w), (t, np.zeros_like(w)))
    h = 1e-6
    g = s2sad.grad(softmax)
    fd = (g(z + h * t, w) - g(z - h * t, w)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def test_the_python_backend_runs_the_numpy_formula_as_the_oracle():
    args, argnums = _args("xent", 50, 10)
    fast = s2sad.grad(xent, argnums=argnums)(*args)
    oracle = s2sad.grad(xent, argnums=argnums, backend="python")(*args)
    for a, b in zip(fast, oracle):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_cuda_takes_the_numpy_formula_not_a_fused_kernel():
    """No CUDA C is written for the row-fused ops: on the cuda backend (cupy arrays) the
    entries run the numpy formula, i.e. the unfused operations, through cupy."""
    from s2sad import rowsoftmax as R
    x = np.random.default_rng(4).normal(size=(6, 5))
    for f, ref in [(R.row_log_softmax, R.reference_log_softmax), (R.row_softmax, R.reference_softmax)]:
        np.testing.assert_array_equal(f(x, axis=1, shift="max", backend="cuda"), ref(x, axis=1, shift="max")
                                      if f is R.row_log_softmax else ref(x, axis=1))
    np.testing.assert_array_equal(R.row_logsumexp(x, axis=1, keepdims=True, shift="max", backend="cuda"),
                                  R.reference_logsumexp(x, axis=1, keepdims=True, shift="max"))
