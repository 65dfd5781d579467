"""s2sad.broadcast of a math module function or a builtin (math.sin, math.atan2, max,
min) outside a loss: applied elementwise, as for any scalar function. It called the
function on the whole array ('only 0-dimensional arrays can be converted to Python
scalars', a raw TypeError; max/min: numpy's 'truth value of an array is ambiguous'),
as if it were a numpy ufunc."""
import math

import numpy as np
import pytest

import s2sad

X = np.array([0.3, -1.2, 2.0, 0.0])
Y = np.array([[0.5], [-0.7]])

ONE = [math.sin, math.exp, math.tanh, math.erf, math.log1p, math.fabs, abs]
TWO = [math.atan2, math.hypot, max, min, math.copysign]


@pytest.mark.parametrize("f", ONE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["auto", "python"])
def test_one_argument(f, backend):
    x = X + 1.5 if f is math.log1p else X
    got = s2sad.broadcast(f, x, backend=backend)
    np.testing.assert_allclose(got, [f(v) for v in x], rtol=1e-14)
    assert got.shape == x.shape


@pytest.mark.parametrize("f", TWO, ids=lambda f: f.__name__)
def test_two_arguments_broadcast(f):
    got = s2sad.broadcast(f, X, Y)
    want = np.array([[f(v, w) for v in X] for w in Y[:, 0]])
    assert got.shape == (2, 4)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_float32_empty_and_numbers():
    assert s2sad.broadcast(math.sin, np.ones(3, np.float32)).dtype == np.float32
    assert s2sad.broadcast(math.sin, np.zeros((2, 0))).shape == (2, 0)
    assert s2sad.broadcast(math.sin, 0.5) == pytest.approx(math.sin(0.5), rel=1e-15)
    np.testing.assert_allclose(s2sad.broadcast(max, X, 0.0), np.maximum(X, 0.0))


def test_ufunc_still_numpys():
    np.testing.assert_array_equal(s2sad.broadcast(np.sin, X), np.sin(X))
    np.testing.assert_array_equal(s2sad.broadcast(np.maximum, X, 0.1), np.maximum(X, 0.1))
