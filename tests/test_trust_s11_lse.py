"""Log-sum-exp gradients that were wrong or raised numpy's errors (session 11, trust):

1. scipy.special.logsumexp's adjoint and tangent were e^(a - value): where the value's
   log(sum) is lost in rounding (a row of 1e308: value == 1e308) that gives 1 each, not
   1/4. They are now e^a / sum e^a with both shifted by a's max (softmax_rules._weights,
   rowsoftmax.row_logsumexp_bar's lsezbar kernels): checked here against that softmax
   computed independently, the exact b/sum(b) of equal huge entries, central finite
   differences where the values are moderate, JAX's answers on non-finite rows, on both
   backends and every route (grad, value_and_grad, vjp, jvp, hessian).
2. The numpy idiom (max, shift, exp, sum, log) and softmax on rows of no element raised
   numpy's raw ValueError out of s2sad: now a ShapeError located in the user's function;
   scipy's logsumexp on (n, 0) and (0, k) gives scipy's value and an empty gradient.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import s2sad
from conftest import central_fd

BACKENDS = ["llvm", "python"]
INF, NAN = np.inf, np.nan


def lse_rows(a):
    return np.sum(sp.logsumexp(a, axis=1))


def lse_rows_keep(a):
    return np.sum(sp.logsumexp(a, axis=-1, keepdims=True))


def lse_all(a):
    return sp.logsumexp(a)


def lse_b(a, b):
    return np.sum(sp.logsumexp(a, axis=1, b=b))


def idiom(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def softmax_idiom(z):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return np.sum(e / np.sum(e, axis=-1, keepdims=True) * np.arange(z.shape[-1]))


def softmax(a, axis=-1, b=1.0):
    """b e^a / sum b e^a along axis, shifted by the max: the oracle, written apart."""
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return b * e / np.sum(b * e, axis=axis, keepdims=True)


def huge_rows(dtype=np.float64):
    big = np.finfo(dtype).max / 2
    return np.array([[big] * 4, [big, big, big / 2, big / 4], [1e16, 1e16 + 2, 1e16 + 4, 1e16 + 6],
                     [-big, -big, -big, -big], [0.0, 1.0, 2.0, 3.0]], dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_huge_rows_grad_is_the_softmax_not_ones(backend, dtype):
    a = huge_rows(dtype)
    a[2] = np.array([0, 2, 4, 6], dtype) + (dtype(1e16) if dtype == np.float64 else dtype(1e7))
    before = a.copy()
    want = softmax(a.astype(np.float64))
    tol = 1e-13 if dtype == np.float64 else 2e-6
    for f in (lse_rows, lse_rows_keep):
        got = s2sad.grad(f, backend=backend)(a)
        assert got.dtype == dtype and got.shape == a.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(want[0], 0.25)
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_huge_whole_array_axis_none_tuple_and_keepdims(backend):
    x = np.full((2, 3, 2), 1e308)
    x[1, 2, 1] = 1e308 - 1e293     # still the same value as all the others, to a few ulp
    x[0, 0, 0] = -1e308
    for axis, keep in ((None, False), ((0, 2), False), ((0, 2), True), ((1,), True)):
        def f(a, axis=axis, keep=keep):
            return np.sum(sp.logsumexp(a, axis=axis, keepdims=keep) * 0.5)
        got = s2sad.grad(f, backend=backend)(x)
        want = 0.5 * softmax(x, axis=tuple(range(3)) if axis is None else axis)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(s2sad.grad(lse_all, backend=backend)(np.full(4, 1e308)), 0.25)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_vjp_jvp_agree_on_huge_rows(backend):
    a = huge_rows()
    w = softmax(a)
    v, g = s2sad.value_and_grad(lse_rows, backend=backend)(a)
    np.testing.assert_allclose(v, lse_rows(a), rtol=1e-15)
    np.testing.assert_allclose(g, w, rtol=1e-13)
    seed = np.array([1.0, -2.0, 0.5, 3.0, -1.0])
    out, pull = s2sad.vjp(lambda z: sp.logsumexp(z, axis=1), a, backend=backend)
    np.testing.assert_allclose(pull(seed)[0], seed[:, None] * w, rtol=1e-13)
    t = np.arange(20.0).reshape(5, 4) - 7
    _, tan = s2sad.jvp(lambda z: sp.logsumexp(z, axis=1), (a,), (t,), backend=backend)
    np.testing.assert_allclose(tan, np.sum(w * t, axis=1), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_of_the_idiom_on_huge_rows(backend):
    z = np.array([[1e308, 1e308, 1e308, 1e308], [0.3, -1.0, 2.0, 0.5]])
    h = s2sad.hessian(idiom, backend=backend)(z).reshape(8, 8)
    for r in range(2):
        w = softmax(z[r])
        block = h[4 * r:4 * r + 4, 4 * r:4 * r + 4]
        np.testing.assert_allclose(block, np.diag(w) - np.outer(w, w), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(h[:4, 4:], 0.0)
    np.testing.assert_allclose(h[:4, :4], np.diag(np.full(4, 0.25)) - 1 / 16, rtol=1e-13)
    # the moderate row against finite differences of the gradient
    fd = np.array([central_fd(lambda x: softmax(x)[i], [z[1]], 0) for i in range(4)])
    np.testing.assert_allclose(h[4:, 4:], fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(s2sad.UnsupportedOperationError) as e:     # scipy's: refused, located
        s2sad.hessian(lse_all, backend=backend)(z[0])
    assert e.value.location is not None


@pytest.mark.parametrize("backend", BACKENDS)
def test_b_weights_on_huge_rows_and_against_finite_differences(backend):
    a = np.full((2, 3), 1e308)
    b = np.array([[1.0, 2.0, 5.0], [0.5, 0.25, 0.25]])
    ga, gb = s2sad.grad(lse_b, argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(ga, b / b.sum(axis=1, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(gb, 1 / b.sum(axis=1, keepdims=True) * np.ones_like(b), rtol=1e-13)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 4)), rng.uniform(0.2, 2.0, size=(3, 4))
    b[0, 1] = -0.3                        # a negative weight, the sum still positive
    ga, gb = s2sad.grad(lse_b, argnums=(0, 1), backend=backend)(a, b)
    np.testing.assert_allclose(ga, central_fd(lse_b, [a, b], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, central_fd(lse_b, [a, b], 1), rtol=1e-6, atol=1e-8)
    brow = np.array([1.0, 3.0, 0.5])      # b broadcast along the rows: its adjoint summed back
    gb = s2sad.grad(lse_b, argnums=1, backend=backend)(np.full((2, 3), 1e308), brow)
    np.testing.assert_allclose(gb, 2 / brow.sum(), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_finite_rows_give_jaxs_gradient(backend):
    a = np.array([[INF, 0.0, 1.0], [INF, INF, 0.0], [-INF, -INF, -INF], [-INF, 0.0, 1.0], [NAN, 0.0, 1.0]])
    want = np.array([[NAN, 0, 0], [NAN, NAN, 0], [NAN, NAN, NAN], [0, *softmax(np.array([0.0, 1.0]))],
                     [NAN, NAN, NAN]])        # jax.grad(jax.scipy.special.logsumexp) row by row
    with np.errstate(all="ignore"):
        for f in (lse_rows, lse_rows_keep):
            got = s2sad.grad(f, backend=backend)(a)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_b_zero_masks_its_entry_and_zero_or_negative_sums(backend):
    a = np.array([[INF, 0.0, 1.0]])
    b = np.array([[0.0, 1.0, 1.0]])
    with np.errstate(all="ignore"):
        v, ga = s2sad.value_and_grad(lse_b, backend=backend)(a, b)
        np.testing.assert_allclose(v, lse_b(a, b))
        np.testing.assert_allclose(ga, [[0.0, *softmax(np.array([0.0, 1.0]))]], rtol=1e-15)  # as JAX
        a = np.array([[1.0, 2.0, 3.0]])
        b = np.array([[0.0, 1.0, 1.0]])   # b's partial at b == 0 is e^a / S, not 0 (JAX's 0 is wrong)
        gb = s2sad.grad(lse_b, argnums=1, backend=backend)(a, b)
        np.testing.assert_allclose(gb, np.exp(a) / np.exp(a[0, 1:]).sum(), rtol=1e-14)
        np.testing.assert_allclose(gb, central_fd(lse_b, [a, b], 1), rtol=1e-7)
        _, tan = s2sad.jvp(lse_b, (a, b), (np.zeros_like(a), np.ones_like(b)), backend=backend)
        np.testing.assert_allclose(tan, gb.sum(), rtol=1e-14)
        ga, gb = s2sad.grad(lse_b, argnums=(0, 1), backend=backend)(a, np.zeros((1, 3)))
        assert np.isnan(ga).all() and np.isposinf(gb).all()     # -inf value: 0/0 in a, e^a/0 in b
        neg = np.array([[1.0, -3.0, 0.0]])                        # value NaN (no return_sign)
        ga, gb = s2sad.grad(lse_b, argnums=(0, 1), backend=backend)(a, neg)
        assert np.isnan(lse_b(a, neg)) and np.isnan(ga).all() and np.isnan(gb).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0)])
def test_scipy_logsumexp_on_empty_rows(backend, shape):
    x = np.zeros(shape)
    with np.errstate(all="ignore"):
        v, g = s2sad.value_and_grad(lse_rows, backend=backend)(x)
        assert v == lse_rows(x)
        assert g.shape == shape and g.dtype == np.float64
        assert s2sad.grad(lse_rows_keep, backend=backend)(x).shape == shape


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [idiom, softmax_idiom])
def test_idioms_on_rows_of_no_element_are_located_errors(backend, fun):
    x = np.zeros((3, 0))
    with pytest.raises(ValueError):       # numpy itself: np.max has no identity
        fun(x)
    for api in (s2sad.grad, s2sad.value_and_grad, s2sad.hessian):
        with pytest.raises(s2sad.ShapeError) as e:
            api(fun, backend=backend)(x)
        assert e.value.location is not None and "zero-size" in str(e.value)
        assert fun.__name__ in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [idiom, softmax_idiom])
def test_idioms_on_no_rows_give_empty_gradients(backend, fun):
    x = np.zeros((0, 4))
    v, g = s2sad.value_and_grad(fun, backend=backend)(x)
    assert v == fun(x) and g.shape == (0, 4)


def scipy_softmax_loss(z):
    return np.sum(sp.softmax(z, axis=1) * 2.0)


def scipy_log_softmax_loss(z):
    return np.sum(sp.log_softmax(z, axis=1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [scipy_softmax_loss, scipy_log_softmax_loss])
def test_scipy_softmaxes_on_empty_rows(backend, fun):
    with pytest.raises(ValueError):       # scipy itself refuses rows of no element
        fun(np.zeros((3, 0)))
    with pytest.raises(s2sad.ShapeError) as e:
        s2sad.grad(fun, backend=backend)(np.zeros((3, 0)))
    assert e.value.location is not None and "zero-size" in str(e.value)
    v, g = s2sad.value_and_grad(fun, backend=backend)(np.zeros((0, 3)))
    assert v == fun(np.zeros((0, 3))) and g.shape == (0, 3)
