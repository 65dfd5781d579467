"""A Jacobian or Hessian in a 0-d array is a 0-d array, as grad's gradient of a 0-d
array is (it was a numpy scalar: np.float64, where grad gave an ndarray); of a float
it stays a float. Values against the analytic derivatives."""
import math

import numpy as np
import pytest

import s2sad


def elementwise(x):
    return np.sin(x) * x


def summed(x):
    return np.sum(np.sin(x) * x)


def two(x, y):
    return np.sum(np.sin(x) * y * y)


X = 0.7
D1 = math.cos(X) * X + math.sin(X)
D2 = -math.sin(X) * X + 2 * math.cos(X)


@pytest.mark.parametrize("make, want", [
    (lambda: s2sad.jacfwd(elementwise), D1),
    (lambda: s2sad.jacrev(elementwise), D1),
    (lambda: s2sad.hessian(summed), D2),
    (lambda: s2sad.jacfwd(s2sad.grad(summed)), D2),
    (lambda: s2sad.jacrev(s2sad.grad(summed)), D2),
])
def test_a_zero_d_array_gives_a_zero_d_array_a_float_a_float(make, want):
    got = make()(np.array(X))
    assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64
    assert got == pytest.approx(want, rel=1e-14)
    assert type(s2sad.grad(summed)(np.array(X))) is np.ndarray        # (the convention followed)
    got = make()(X)
    assert isinstance(got, float) and got == pytest.approx(want, rel=1e-14)


def test_float32_zero_d_keeps_its_dtype():
    got = s2sad.jacfwd(elementwise)(np.array(X, dtype=np.float32))
    assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float32


def test_hessian_blocks_of_a_float_and_a_zero_d_array():
    x, y = np.array(0.3), 1.5
    (hxx, hxy), (hyx, hyy) = s2sad.hessian(two, argnums=(0, 1))(x, y)
    assert type(hxx) is np.ndarray and hxx.shape == ()
    assert hxx == pytest.approx(-math.sin(0.3) * y * y, rel=1e-13)
    assert float(hxy) == pytest.approx(2 * math.cos(0.3) * y, rel=1e-13)
    assert float(hyx) == pytest.approx(2 * math.cos(0.3) * y, rel=1e-13)
    assert float(hyy) == pytest.approx(2 * math.sin(0.3), rel=1e-13)
