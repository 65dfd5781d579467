"""Row-fused log-sum-exp, softmax and log-softmax (s2sad/rowsoftmax.py, codegen/llvm_rows.py):
scipy.special's functions along the last axis of a 2-D float array run as one compiled
pass per row. Checked against the numpy formula (the unfused program's algorithm), scipy
itself, S2SAD_ROW_FUSION=0, central differences, and on NaN/inf rows.

Tolerance: the fused sums run in order (numpy's are pairwise) and exp/log are s2sad's
own (within 4 ulp of glibc's), so values agree to 1e-13 (float64) / 2e-5 (float32)
relative to the row's scale |x| + 1, not bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import rowsoftmax as R

sps = pytest.importorskip("scipy.special")

from conftest import central_fd  # noqa: E402

KINDS = [(R.row_logsumexp, R.reference_logsumexp), (R.row_softmax, R.reference_softmax),
         (R.row_log_softmax, R.reference_log_softmax)]
TOL = {np.float64: 1e-13, np.float32: 2e-5}


def _close(got, ref, dtype):
    assert got.shape == ref.shape and got.dtype == ref.dtype
    fin = np.isfinite(ref)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
    assert np.all(np.abs(got[fin] - ref[fin]) <= TOL[dtype] * (np.abs(ref[fin]) + 1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 10), (1, 1), (10, 1), (1, 1000), (10_000, 10), (10, 1000), (3, 7)])
def test_fused_rows_match_the_numpy_formula(n, k, dtype):
    x = (np.random.default_rng(n * 7 + k).normal(size=(n, k)) * 4).astype(dtype)
    for fused, ref in KINDS:
        for axis in (1, -1):
            _close(fused(x, axis=axis), ref(x, axis=axis), dtype)
    _close(R.row_logsumexp(x, axis=1, keepdims=True), R.reference_logsumexp(x, axis=1, keepdims=True), dtype)


def test_the_numpy_formula_is_scipys():
    x = np.random.default_rng(1).normal(size=(50, 9)) * 30
    for f, ref in [(sps.logsumexp, R.reference_logsumexp), (sps.softmax, R.reference_softmax),
                   (sps.log_softmax, R.reference_log_softmax)]:
        np.testing.assert_allclose(ref(x, axis=1), f(x, axis=1), rtol=1e-13, atol=1e-13)


def test_strided_rows_and_layouts_the_loop_does_not_take():
    big = np.random.default_rng(2).normal(size=(8, 12))
    x = big[::2, 1:9]                            # rows of a wider array, every other one
    _close(R.row_softmax(x, axis=1), R.reference_softmax(x, axis=1), np.float64)
    xt = big.T                                   # columns: scipy's own
    np.testing.assert_array_equal(R.row_logsumexp(xt, axis=1), sps.logsumexp(xt, axis=1))
    x3 = big.reshape(2, 4, 12)                   # 3-D: scipy's own
    np.testing.assert_array_equal(R.row_log_softmax(x3, axis=-1), sps.log_softmax(x3, axis=-1))
    np.testing.assert_array_equal(R.row_softmax(big, axis=0), sps.softmax(big, axis=0))
    xi = np.arange(12).reshape(3, 4)             # integers: scipy's own (float results)
    np.testing.assert_array_equal(R.row_logsumexp(xi, axis=1), sps.logsumexp(xi, axis=1))
    e = np.zeros((3, 0))                         # empty rows: scipy's own (which raises, as it does unfused)
    np.testing.assert_array_equal(R.row_logsumexp(e, axis=1), sps.logsumexp(e, axis=1))
    with pytest.raises(ValueError):
        R.row_softmax(e, axis=1)


def test_inputs_are_not_mutated_and_outputs_are_fresh():
    x = np.random.default_rng(3).normal(size=(5, 6))
    keep = x.copy()
    outs = [f(x, axis=1) for f, _ in KINDS]
    np.testing.assert_array_equal(x, keep)
    assert all(not np.shares_memory(o, x) for o in outs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_and_inf_rows_follow_scipys_conventions(dtype):
    inf, nan = np.inf, np.nan
    x = np.array([[1, nan, 2], [-inf, -inf, -inf], [inf, 1, 2], [inf, inf, 0], [-inf, 0, 1], [1e30, 1, -1e30]],
                 dtype=dtype)
    with np.errstate(all="ignore"):
        for fused, ref in KINDS:
            _close(fused(x, axis=1), ref(x, axis=1), dtype)
    lse = R.row_logsumexp(x, axis=1)
    assert np.isnan(lse[0]) and lse[1] == -inf and lse[2] == inf and lse[3] == inf


def test_the_python_backend_and_the_switch_take_scipys(monkeypatch):
    x = np.random.default_rng(4).normal(size=(6, 5))
    np.testing.assert_array_equal(R.row_softmax(x, axis=1, backend="python"), sps.softmax(x, axis=1))
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    assert not R.enabled()
    np.testing.assert_array_equal(R.row_log_softmax(x, axis=1), sps.log_softmax(x, axis=1))


# ---------------------------------------------------------------- through grad


def xent(z, Y):
    return -np.mean(np.sum(Y * sps.log_softmax(z, axis=1), axis=1))


def lse_loss(z):
    return np.sum(sps.logsumexp(z, axis=-1) ** 2)


def lse_keep(z, w):
    return np.sum(sps.logsumexp(z * w, axis=1, keepdims=True) * w)


def softmax_loss(z, w):
    return np.sum(sps.softmax(z, axis=1) * w)


def _case(n, k, seed=0):
    rng = np.random.default_rng(seed + n + k)
    z = rng.normal(size=(n, k)) * 2
    Y = np.eye(k)[rng.integers(0, k, n)] if n else np.zeros((0, k))
    w = rng.normal(size=(n, k))
    return z, Y, w


@pytest.mark.parametrize("n,k", [(1, 1), (4, 10), (3, 1000), (1, 3)])
def test_gradients_against_central_differences(n, k):
    z, Y, w = _case(n, k)
    for f, args in [(xent, (z, Y)), (lse_loss, (z,)), (lse_keep, (z, w)), (softmax_loss, (z, w))]:
        got = s2sad.grad(f)(*args)
        fd = central_fd(f, args, 0)
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)   # central differences: ~1e-7 noise


@pytest.mark.parametrize("n,k", [(0, 10), (10_000, 10), (10, 1000)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_and_values_match_the_unfused_program(n, k, dtype, monkeypatch):
    z, Y, w = _case(n, k)
    z, Y, w = z.astype(dtype), Y.astype(dtype), w.astype(dtype)
    cases = [(xent, (z, Y)), (lse_loss, (z,)), (lse_keep, (z, w)), (softmax_loss, (z, w))]
    fused = [s2sad.value_and_grad(f)(*a) for f, a in cases]
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    assert not R.enabled()      # the plans are made: the row functions now run scipy's
    plain = [s2sad.value_and_grad(f)(*a) for f, a in cases]
    rtol = {np.float64: 1e-12, np.float32: 1e-4}[dtype]
    for (v1, g1), (v2, g2) in zip(fused, plain):
        assert np.asarray(g1).dtype == np.asarray(g2).dtype == dtype
        np.testing.assert_allclose(v1, v2, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(g1, g2, rtol=rtol, atol=rtol * 1e-2)


def test_generated_source_and_explain_say_one_pass_per_row():
    z, Y, _ = _case(4, 10)
    g = s2sad.grad(xent)
    g(z, Y)
    assert "row_log_softmax(z, axis=1)" in s2sad.source(g)
    text = str(s2sad.explain(xent))
    assert "one pass per row" in text
    # without an axis it is scipy's whole-array function, and explain does not claim a fusion
    assert "one pass per row" not in str(s2sad.explain(lambda z: sps.logsumexp(z)))


def test_a_nan_row_gives_nan_gradients_in_that_row_only():
    z, _, w = _case(5, 4)
    z[2, 1] = np.nan
    g = s2sad.grad(softmax_loss)(z, w)
    assert np.all(np.isnan(g[2])) and np.all(np.isfinite(np.delete(g, 2, axis=0)))


# ---------------------------------------------------------------- the adjoints' row kernels

BAR_TOL = {np.float64: 1e-12, np.float32: 1e-4}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 10), (1, 1), (10_000, 10), (10, 1000), (3, 7)])
def test_adjoint_row_kernels_match_softmax_rules(n, k, dtype):
    from s2sad import softmax_rules as S
    rng = np.random.default_rng(n + 3 * k)
    x = (rng.normal(size=(n, k)) * 3).astype(dtype)
    g = rng.normal(size=(n, k)).astype(dtype)
    tol = BAR_TOL[dtype]
    s, ls = R.row_softmax(x, axis=1), R.row_log_softmax(x, axis=1)
    for got, ref in [(R.row_softmax_bar(g, s, axis=1), S.softmax_bar(g, s, axis=1)),
                     (R.row_log_softmax_bar(g, ls, axis=-1), S.log_softmax_bar(g, ls, axis=-1))]:
        assert got.dtype == ref.dtype == dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * (1 + np.abs(g).max(initial=0)))
    for keep in (False, True):
        gl = rng.normal(size=(n, 1) if keep else (n,)).astype(dtype)
        out = R.row_logsumexp(x, axis=1, keepdims=keep)
        got = R.row_logsumexp_bar(0, gl, x, None, out, axis=1, keepdims=keep)
        ref = S.logsumexp_bar(0, gl, x, None, out, axis=1, keepdims=keep)
        assert got.dtype == ref.dtype and got.shape == ref.shape == x.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_adjoints_the_loop_does_not_take_are_softmax_rules():
    from s2sad import softmax_rules as S
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 6))
    s = R.row_softmax(x, axis=1)
    g_row = rng.normal(size=(1, 6))                    # a broadcast seed: the helper's own
    np.testing.assert_array_equal(R.row_softmax_bar(g_row, s, axis=1), S.softmax_bar(g_row, s, axis=1))
    g32 = rng.normal(size=(4, 6)).astype(np.float32)   # mixed dtypes: the helper's own
    np.testing.assert_array_equal(R.row_log_softmax_bar(g32, s, axis=1), S.log_softmax_bar(g32, s, axis=1))
    b = rng.random((4, 6))                             # with b=: the helper's own
    out = sps.logsumexp(x, axis=1, b=b)
    g = rng.normal(size=4)
    for i in (0, 1):
        np.testing.assert_array_equal(R.row_logsumexp_bar(i, g, x, b, out, axis=1),
                                      S.logsumexp_bar(i, g, x, b, out, axis=1))
    np.testing.assert_array_equal(R.row_softmax_bar(s, s, axis=0), S.softmax_bar(s, s, axis=0))   # columns


def test_nan_seed_rows_stay_in_their_row():
    x = np.random.default_rng(6).normal(size=(4, 5))
    g = np.ones((4, 5))
    g[1, 2] = np.nan
    for fwd, bar in [(R.row_softmax, R.row_softmax_bar), (R.row_log_softmax, R.row_log_softmax_bar)]:
        got = bar(g, fwd(x, axis=1), axis=1)
        assert np.all(np.isnan(got[1])) and np.all(np.isfinite(np.delete(got, 1, axis=0)))
