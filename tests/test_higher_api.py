"""Issue 14, the new API: hessian, jacfwd, jacrev, jacobian, hvp (JAX's names, shapes
out.shape + in.shape, tuples for tuples of argnums), checked against analytic values.

For scalar functions of numbers every level is compiled (nested duals); for array
programs they are built on the public jvp/vjp/grad, and a composition jvp cannot take
yet is a located refusal, never a wrong number.
"""
import math

import numpy as np
import pytest

import s2sad
from conftest import central_fd, rosen, rosen_hessian

X10 = np.linspace(-1.0, 1.3, 10)


def emap(x):
    return np.tanh(x) * x


def emap_jacobian_diagonal(x):
    t = np.tanh(x)
    return (1 - t * t) * x + t


def two(a, b):
    return a * a * b + math.exp(a * b)


def two_hessian(a, b):
    e = math.exp(a * b)
    return ((2 * b + b * b * e, 2 * a + e + a * b * e), (2 * a + e + a * b * e, a * a * e))


# ---------------------------------------------------------------- scalar functions of numbers

def test_hessian_of_a_scalar_function_with_argnums(backend):
    got = s2sad.hessian(two, argnums=(0, 1), backend=backend)(0.4, -0.9)
    want = two_hessian(0.4, -0.9)
    assert isinstance(got, tuple) and len(got) == 2 and all(len(r) == 2 for r in got)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-14)
    assert s2sad.hessian(two, backend=backend)(0.4, -0.9) == pytest.approx(want[0][0], rel=1e-14)
    assert s2sad.hessian(two, argnums=1, backend=backend)(0.4, -0.9) == pytest.approx(want[1][1], rel=1e-14)


@pytest.mark.parametrize("jac", [s2sad.jacfwd, s2sad.jacrev, s2sad.jacobian])
def test_jacobians_of_a_scalar_function(jac, backend):
    a, b = 0.4, -0.9
    e = math.exp(a * b)
    got = jac(two, argnums=(0, 1), backend=backend)(a, b)
    assert got == (pytest.approx(2 * a * b + b * e, rel=1e-14), pytest.approx(a * a + a * e, rel=1e-14))
    assert isinstance(jac(two, backend=backend)(a, b), float)


def test_hvp_of_a_scalar_function(backend):
    h = two_hessian(0.4, -0.9)
    got = s2sad.hvp(lambda a: two(a, -0.9), (0.4,), (2.0,), backend=backend)
    assert got == pytest.approx(2 * h[0][0], rel=1e-14)


def test_hessian_of_a_hessian_entry_is_a_third_derivative(backend):
    def f(z):
        return math.sin(z) * z
    h = s2sad.hessian(f, backend=backend)
    third = s2sad.jacfwd(s2sad.grad(s2sad.grad(f)), backend=backend)(0.7)
    assert h(0.7) == pytest.approx(2 * math.cos(0.7) - 0.7 * math.sin(0.7), rel=1e-14)
    assert third == pytest.approx(-3 * math.sin(0.7) - 0.7 * math.cos(0.7), rel=1e-14)


# ---------------------------------------------------------------- arrays

@pytest.mark.parametrize("jac", [s2sad.jacfwd, s2sad.jacrev])
def test_jacobian_of_a_10_to_10_elementwise_map(jac, backend):
    got = jac(emap, backend=backend)(X10)
    assert got.shape == (10, 10)
    np.testing.assert_allclose(got, np.diag(emap_jacobian_diagonal(X10)), rtol=1e-14, atol=0)


def test_jacobian_shapes_are_out_shape_plus_in_shape(backend):
    x = np.linspace(0.1, 1.2, 6).reshape(2, 3)
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        got = jac(emap, backend=backend)(x)
        assert got.shape == (2, 3, 2, 3)
        want = np.zeros((6, 6))
        want[np.arange(6), np.arange(6)] = emap_jacobian_diagonal(x).ravel()
        np.testing.assert_allclose(got.reshape(6, 6), want, rtol=1e-14, atol=0)
    g = s2sad.jacrev(rosen, backend=backend)(X10)
    assert g.shape == (10,)
    np.testing.assert_allclose(g, [central_fd(rosen, [X10], 0)[i] for i in range(10)], rtol=1e-6)


def test_jacobian_of_a_broadcast_map_is_not_taken_as_diagonal(backend):
    # f(x, w) = x * w with w a vector and x a number: d out / d x is a column, not a diagonal
    w = np.array([1.0, 2.0, 3.0])
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        got = jac(lambda x, v: np.tanh(x * v), argnums=0, backend=backend)(0.3, w)
        np.testing.assert_allclose(got, w * (1 - np.tanh(0.3 * w) ** 2), rtol=1e-14)
        got = jac(lambda x, v: np.tanh(x * v), argnums=1, backend=backend)(0.3, w)
        np.testing.assert_allclose(got, np.diag(0.3 * (1 - np.tanh(0.3 * w) ** 2)), rtol=1e-14)


LOWER = np.tril(np.ones((10, 10)))


def mix(x):
    return (LOWER @ x) * 0.5 + np.sum(x * x)


def test_jacrev_of_an_array_program(backend):
    got = s2sad.jacrev(mix, backend=backend)(X10)
    want = 0.5 * np.tril(np.ones((10, 10))) + 2 * np.outer(np.ones(10), X10)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


def test_rosenbrock_hessian(backend):
    # an array program's Hessian: jacfwd of its grad, each column the jvp of the grad
    # (forward over the generated adjoint program)
    got = s2sad.hessian(rosen, backend=backend)(X10)
    np.testing.assert_allclose(got, rosen_hessian(X10), rtol=1e-12, atol=1e-10)


# ---------------------------------------------------------------- bad input

def test_bad_argnums_and_arguments_are_refused():
    with pytest.raises(s2sad.S2SADError, match="argnums 2"):
        s2sad.jacfwd(two, argnums=2)(0.4, 0.5)
    with pytest.raises(s2sad.S2SADError, match="argnums 5"):
        s2sad.hessian(two, argnums=(0, 5))(0.4, 0.5)
    with pytest.raises(s2sad.S2SADError):
        s2sad.hessian(two)(1, 2)           # ints are not differentiated
    with pytest.raises(s2sad.S2SADError):
        s2sad.hvp(lambda a: a * a * a, (1,), (1.0,))
    with pytest.raises(s2sad.S2SADError):
        s2sad.jacfwd(emap)(np.arange(3))
    with pytest.raises(s2sad.S2SADError):
        s2sad.jacrev(two)(np.array([1 + 2j]), 0.5)


def test_empty_and_nan_inputs(backend):
    empty = np.zeros(0)
    assert s2sad.jacrev(emap, backend=backend)(empty).shape == (0, 0)
    assert s2sad.jacfwd(emap, backend=backend)(empty).shape == (0, 0)
    got = s2sad.jacfwd(emap, backend=backend)(np.array([np.nan, 1.0]))
    assert np.isnan(got[0, 0]) and got[1, 0] == 0.0


def test_inputs_are_not_mutated(backend):
    x = X10.copy()
    s2sad.jacfwd(emap, backend=backend)(x)
    s2sad.jacrev(emap, backend=backend)(x)
    np.testing.assert_array_equal(x, X10)


# ---------------------------------------------------------------- a summed elementwise loss: a diagonal Hessian

def user(z):
    return math.tanh(z) * z / (1.0 + z * z)


def user_loss(v):
    return np.sum(s2sad.broadcast(user, v))


def sin_loss(v):
    return np.sum(np.sin(v))


def test_hessian_of_a_summed_elementwise_loss_is_its_diagonal(backend):
    got = s2sad.hessian(sin_loss, backend=backend)(X10)
    assert got.shape == (10, 10)
    np.testing.assert_allclose(got, np.diag(-np.sin(X10)), rtol=1e-14, atol=0)
    second = s2sad.grad(s2sad.grad(user))
    got = s2sad.hessian(user_loss, backend=backend)(X10)
    np.testing.assert_allclose(got, np.diag([second(z) for z in X10]), rtol=1e-13, atol=0)
    d1 = s2sad.grad(user)
    fd = np.array([central_fd(d1, [z], 0) for z in X10])
    np.testing.assert_allclose(np.diag(got), fd, rtol=1e-6, atol=1e-8)


def test_hvp_and_jvp_of_the_grad_of_a_summed_loss(backend):
    v = np.cos(3 * X10)
    np.testing.assert_allclose(s2sad.hvp(sin_loss, (X10,), (v,), backend=backend), -np.sin(X10) * v, rtol=1e-14)
    g, t = s2sad.jvp(s2sad.grad(lambda a: np.sum(a**3)), (X10,), (v,), backend=backend)
    np.testing.assert_allclose(g, 3 * X10**2, rtol=1e-14)
    np.testing.assert_allclose(t, 6 * X10 * v, rtol=1e-14)


def two_arg_loss(v, w):
    return np.sum(np.sin(v) * w)


def mean_loss(v):
    return np.mean(np.sin(v))


@pytest.mark.parametrize("loss, args, want", [(two_arg_loss, (X10, X10), np.diag(-np.sin(X10) * X10)),
                                               (mean_loss, (X10,), np.diag(-np.sin(X10) / X10.size))])
def test_a_summed_loss_that_is_not_elementwise_in_its_argument(loss, args, want, backend):
    # its grad is not E' element by element (another argument, a mean's 1/n): not nested duals but the
    # loss's forward over reverse, as an array program (array_higher.derivative_jvp), never a wrong diagonal
    np.testing.assert_allclose(s2sad.hessian(loss, backend=backend)(*args), want, rtol=1e-14, atol=1e-17)
