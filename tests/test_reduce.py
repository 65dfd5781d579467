"""s2sad.reduce: sums, means, maxima and minima along one axis of a 2-D float array in
compiled loops, with numpy's bits; where numpy's reduction is taken instead; and a
softmax cross-entropy through them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s2sad
from s2sad import reduce as R
from conftest import central_fd

OPS = ("sum", "mean", "max", "min")


def _data(rng, n, k, dtype, specials=True):
    a = rng.standard_normal((n, k)) * np.exp(rng.standard_normal((n, k)) * 4)
    if specials and n * k > 4:
        flat = a.reshape(-1)
        idx = rng.choice(flat.size, size=4, replace=False)
        flat[idx] = [np.nan, np.inf, -np.inf, -0.0]
    return a.astype(dtype)


def _same(got, ref):
    assert type(got) is type(ref) or np.isscalar(ref)
    assert np.shape(got) == np.shape(ref) and np.asarray(got).dtype == np.asarray(ref).dtype
    np.testing.assert_array_equal(got, ref)       # NaN where numpy has NaN, the same numbers


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(1, 1), (1, 7), (9, 1), (10000, 10), (7, 3), (33, 8), (20, 9), (40, 16), (30, 17),
                                 (25, 64), (5, 128), (5, 129), (4, 300), (3, 1000)])
def test_bits_are_numpys(dtype, n, k):
    rng = np.random.default_rng(n * 1000 + k)
    for specials in (False, True):
        a = _data(rng, n, k, dtype, specials)
        for op in OPS:
            for axis in (0, 1, -1, -2, (1,)):
                for keepdims in (False, True):
                    with np.errstate(invalid="ignore"):
                        _same(R.reduce(op, a, axis, keepdims), getattr(np, op)(a, axis=axis, keepdims=keepdims))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 50), k=st.integers(1, 300), op=st.sampled_from(OPS), axis=st.sampled_from([0, 1]),
       f32=st.booleans(), pad=st.integers(0, 3))
def test_random_shapes_and_row_strides(n, k, op, axis, f32, pad):
    """Rows that are contiguous but further apart than their length (a column slice of
    a wider array) too."""
    rng = np.random.default_rng(n + 31 * k + pad)
    wide = _data(rng, n, k + pad, np.float32 if f32 else np.float64, specials=False)
    a = wide[:, :k]
    _same(R.reduce(op, a, axis), getattr(np, op)(a, axis=axis))


def _pairwise(a):
    """numpy's pairwise summation, as its source states it (the rule llvm_reduce follows)."""
    n = len(a)
    if n < 8:
        r = 0.0
        for v in a:
            r += v
        return r
    if n <= 128:
        r = list(a[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in a[i:]:
            res += v
        return res
    h = n // 2
    h -= h % 8
    return _pairwise(a[:h]) + _pairwise(a[h:])


def test_the_row_sum_is_the_pairwise_rule():
    """The rule, stated in Python: s2sad's row sums follow it, and so does this numpy
    (if a numpy changes its rule, this says which side moved)."""
    rng = np.random.default_rng(9)
    a = _data(rng, 60, 300, np.float64, specials=False)
    for k in (1, 5, 8, 13, 64, 128, 129, 255, 300):
        rule = np.array([_pairwise(row.tolist()) for row in a[:, :k]])
        np.testing.assert_array_equal(R.reduce("sum", a[:, :k], 1), rule)
        np.testing.assert_array_equal(np.sum(a[:, :k], axis=1), rule)


def test_when_numpy_reduces(monkeypatch):
    calls = []
    real = R._function
    monkeypatch.setattr(R, "_function", lambda *a: calls.append(a[:2]) or real(*a))
    rng = np.random.default_rng(10)
    a = rng.standard_normal((50, 20))
    cases = [(a[None], 1), (a.astype(int), 1), (a[:, ::2], 1), (np.asfortranarray(a), 1), (a, (0, 1)), (a, None),
             (a[:, :1], 0),                       # one column: contiguous along axis 0, pairwise in numpy
             (a, 1, "max")]                       # max over rows of 20 > MAX_EXTREME_ROW: numpy's SIMD loop
    for case in cases:
        x, axis = case[:2]
        op = case[2] if len(case) > 2 else "sum"
        _same(R.reduce(op, x, axis), getattr(np, op)(x, axis=axis))
    _same(R.reduce("sum", a, 1, backend="python"), np.sum(a, axis=1))
    assert calls == []
    for op in ("max", "min"):           # an empty reduction: numpy's error
        with pytest.raises(ValueError):
            R.reduce(op, np.zeros((3, 0)), 1)
    _same(R.reduce("sum", np.zeros((0, 3)), 1), np.sum(np.zeros((0, 3)), axis=1))


def softmax_xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def test_softmax_cross_entropy(monkeypatch):
    """A 5-class softmax: its max through s2sad.reduce, its sums with their kernels
    (kernel_rowsum); the gradients against central differences and the python backend.
    Without row fusion (which takes the whole chain: tests/test_row_fusion_idioms.py)."""
    from s2sad.plans import PLANS
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    PLANS.clear()
    rng = np.random.default_rng(11)
    X = rng.standard_normal((40, 6))
    Y = np.eye(5)[rng.integers(0, 5, 40)]
    args = [rng.standard_normal((6, 5)) * 0.3, rng.standard_normal((1, 5)) * 0.1, X, Y]
    g = s2sad.grad(softmax_xent, argnums=(0, 1))
    text = s2sad.source(g)
    assert "reduce_max(z, axis=1, keepdims=True)" in text and "kernel_rowsum(" in text, text
    got = g(*args)
    for i, gi in enumerate(got):
        np.testing.assert_allclose(gi, central_fd(lambda *a: float(softmax_xent(*a)), args, i), rtol=1e-6, atol=1e-9)
    ref = s2sad.grad(softmax_xent, argnums=(0, 1), backend="python")(*args)
    for u, v in zip(got, ref):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15)
