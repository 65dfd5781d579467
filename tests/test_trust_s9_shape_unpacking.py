"""`n, d = x.shape` (a shape unpacked into names) at the array level: each name a Python
int, as `x.shape[k]` is, on every route that reads `x.shape[0]` (grad, value_and_grad,
jvp, vjp, hessian, jacfwd, jacrev, hvp), checked against central differences and
between backends. A shape of another length is a located ShapeError at the statement
(Python raises ValueError there); a number for the parameter, a located ShapeError up
front. Before: refused ("tuple unpacking at the array level needs a tuple of the same
length")."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError
from conftest import central_fd

RNG = np.random.default_rng(9)
X = RNG.normal(size=(3, 4))
V = RNG.normal(size=(3, 4))


def unpacked(x):
    n, d = x.shape
    return np.sum(np.sin(x) * np.arange(d)) / n + d * np.sum(x * x) / (n * d)


def by_position(x):
    n = x.shape[0]
    d = x.shape[1]
    return np.sum(np.sin(x) * np.arange(d)) / n + d * np.sum(x * x) / (n * d)


def unpacked_list(x):
    [n, d] = x.shape
    return np.sum(x[: n - 1, : d - 1] ** 2) + np.sum(np.zeros((n, d)) + x)


def unpacked_three(t):
    a, b, c = t.shape
    return np.sum(np.tanh(t)) * (a + 2 * b + 3 * c)


def with_len(x):
    n = len(x)
    return np.sum(np.cos(x)) / n


def unpacked_in_loop(x):
    total = 0.0
    for i in range(2):
        n, d = x.shape
        total = total + np.sum(x[i] ** 2) * d / n
    return total


FUNS = [unpacked, unpacked_list, with_len, unpacked_in_loop]


@pytest.mark.parametrize("fun", FUNS, ids=[f.__name__ for f in FUNS])
def test_the_gradient_is_central_differences(fun, backend):
    g = s2sad.grad(fun, backend=backend)
    for _ in range(3):     # the hot path too
        got = g(X)
    np.testing.assert_allclose(got, central_fd(fun, (X,), 0), rtol=1e-6, atol=1e-8)
    value, g2 = s2sad.value_and_grad(fun, backend=backend)(X)
    assert value == pytest.approx(fun(X), rel=1e-14)
    np.testing.assert_allclose(g2, got, rtol=1e-15)


def test_three_dimensions(backend):
    T = RNG.normal(size=(2, 3, 4))
    got = s2sad.grad(unpacked_three, backend=backend)(T)
    np.testing.assert_allclose(got, (2 + 6 + 12) / np.cosh(T) ** 2, rtol=1e-13)


def test_the_same_as_reading_by_position(backend):
    np.testing.assert_allclose(s2sad.grad(unpacked, backend=backend)(X),
                               s2sad.grad(by_position, backend=backend)(X), rtol=1e-15)


def test_every_route_that_reads_a_dimension(backend):
    out, tangent = s2sad.jvp(unpacked, (X,), (V,), backend=backend)
    _, expected = s2sad.jvp(by_position, (X,), (V,), backend=backend)
    assert out == pytest.approx(unpacked(X), rel=1e-14) and tangent == pytest.approx(expected, rel=1e-13)
    out, pull = s2sad.vjp(unpacked, X, backend=backend)
    np.testing.assert_allclose(pull(1.0)[0], central_fd(unpacked, (X,), 0), rtol=1e-6, atol=1e-8)
    H = s2sad.hessian(unpacked, backend=backend)(X)
    np.testing.assert_allclose(H, s2sad.hessian(by_position, backend=backend)(X), rtol=1e-13, atol=1e-15)
    fd_h = np.stack([central_fd(lambda x: s2sad.grad(by_position)(x)[i, j], (X,), 0)
                     for i in range(3) for j in range(4)]).reshape(3, 4, 3, 4)
    np.testing.assert_allclose(H, fd_h, rtol=1e-5, atol=1e-7)
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        J = jac(s2sad.grad(unpacked), backend=backend)(X)
        np.testing.assert_allclose(J, H, rtol=1e-13, atol=1e-15)
    hv = s2sad.hvp(unpacked, (X,), (V,), backend=backend)
    np.testing.assert_allclose(hv, np.tensordot(H, V, axes=2), rtol=1e-12, atol=1e-14)


def rows_of(x):
    n, d = x.shape
    return x * (n + d)


def test_a_jacobian_of_an_array_output(backend):
    J = s2sad.jacfwd(rows_of, backend=backend)(X)
    np.testing.assert_allclose(J, 7 * np.eye(12).reshape(3, 4, 3, 4), rtol=1e-15)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), (0,), (1, 1, 1)])
def test_a_shape_of_another_length_is_located(shape):
    with pytest.raises(ShapeError, match=f"has {len(shape)} dimension") as e:
        s2sad.grad(unpacked)(np.ones(shape))
    assert e.value.location.lineno == unpacked.__code__.co_firstlineno + 1


@pytest.mark.parametrize("number", [0.5, np.float64(0.5), np.array(0.5)], ids=["float", "float64", "0d"])
def test_a_number_is_located(number):
    with pytest.raises(ShapeError) as e:
        s2sad.grad(unpacked)(number)
    assert e.value.location.lineno == unpacked.__code__.co_firstlineno + 1


def test_an_empty_array_of_two_dimensions():
    E = np.ones((0, 3))
    np.testing.assert_array_equal(s2sad.grad(unpacked_list)(np.ones((2, 3))), np.array([[3.0, 3.0, 1.0], [1.0, 1.0, 1.0]]))
    assert s2sad.grad(with_len)(np.ones(1)).shape == (1,)
    g = s2sad.grad(lambda x: np.sum(x) * x.shape[1])(E)
    assert g.shape == (0, 3)
