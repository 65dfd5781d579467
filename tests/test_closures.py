"""Closures take the dual path: captured values become kernel arguments with their own
partials, scattered back to where they were read (the reference system dropped them)."""
import math

import numpy as np
import pytest

import s2sad
from conftest import central_fd

DATA = np.array([0.5, -1.5, 2.0])
C = 2.0


def test_the_reference_failure_case(backend):
    g = s2sad.grad(lambda x, y: np.sum(s2sad.broadcast(lambda z: z**2 + y[0], x)), argnums=(0, 1),
                   backend=backend)([1., 2, 3], [4., 5])
    np.testing.assert_array_equal(g[0], [2, 4, 6])
    np.testing.assert_array_equal(g[1], [3, 0])


def via_map(x, y):
    return sum(map(lambda z: z**2 + y[0], x))


def via_listcomp(x, y):
    return sum([z**2 + y[0] for z in x])


def via_genexp(x, y):
    return sum(z**2 + y[0] for z in x)


@pytest.mark.parametrize("loss", [via_map, via_listcomp, via_genexp])
def test_every_site_kind(loss, backend):
    gx, gy = s2sad.grad(loss, argnums=(0, 1), backend=backend)(np.array([1., 2, 3]), np.array([4., 5]))
    np.testing.assert_array_equal(gx, [2, 4, 6])
    np.testing.assert_array_equal(gy, [3, 0])


def scaled_loss(x, w):
    def scaled(z):
        return math.tanh(w * z)
    return np.sum(s2sad.broadcast(scaled, x))


def test_scalar_of_enclosing_function_gets_its_full_gradient(backend):
    x = np.linspace(-1, 1, 5)
    gx, gw = s2sad.grad(scaled_loss, argnums=(0, 1), backend=backend)(x, 0.7)
    t = np.tanh(0.7 * x)
    np.testing.assert_allclose(gx, 0.7 * (1 - t * t), rtol=1e-14)
    assert gw == pytest.approx(float(np.sum(x * (1 - t * t))), rel=1e-14)


def several_captures(x, y):
    def f(z):
        def g(t):
            return t * y[1] - y[0]
        return g(z) ** 2 + y[-1]
    return np.sum(s2sad.broadcast(f, x))


def test_nested_defs_and_several_elements(backend):
    x = np.array([0.3, -0.8, 1.1, 2.0])
    y = np.array([0.2, 1.5, -0.4])
    gx, gy = s2sad.grad(several_captures, argnums=(0, 1), backend=backend)(x, y)
    plain = lambda x, y: sum((z * y[1] - y[0]) ** 2 + y[-1] for z in x)  # noqa: E731
    np.testing.assert_allclose(gx, central_fd(plain, [x, y], 0), rtol=1e-7)
    np.testing.assert_allclose(gy, central_fd(plain, [x, y], 1), rtol=1e-7)
    assert "dual+closure" in str(s2sad.explain(several_captures))


def reads_data(z):
    return z * DATA[2] + DATA[0]


def data_loss(x):
    return np.sum(s2sad.broadcast(reads_data, x))


def test_free_data_is_read_at_call_time(backend):
    x = np.arange(3.0)
    assert s2sad.value_and_grad(data_loss, backend=backend)(x)[0] == pytest.approx(3 * 2.0 + 3 * 0.5)
    np.testing.assert_array_equal(s2sad.grad(data_loss, backend=backend)(x), [2.0, 2.0, 2.0])
    old = DATA.copy()
    try:
        DATA[2] = 5.0  # as Python would: the function sees the array's current value
        np.testing.assert_array_equal(s2sad.grad(data_loss, backend=backend)(x), [5.0, 5.0, 5.0])
    finally:
        DATA[:] = old
    report = str(s2sad.explain(data_loss))
    assert "dual+closure" in report and "DATA[2]" in report


def constant_closure(x):
    return np.sum(s2sad.broadcast(lambda z: C * z, x))


def test_closure_over_a_constant_is_pure(backend):
    np.testing.assert_array_equal(s2sad.grad(constant_closure, backend=backend)(np.ones(3)), [2.0] * 3)
    report = str(s2sad.explain(constant_closure))
    assert "-> dual: pure" in report and "dual+closure" not in report


def test_closure_gradients_in_jvp_and_vjp(backend):
    x, y = np.array([1., 2, 3]), np.array([4., 5])
    out, pullback = s2sad.vjp(via_map, x, y, backend=backend)
    gx, gy = pullback(2.0)
    np.testing.assert_array_equal(gx, [4, 8, 12])
    np.testing.assert_array_equal(gy, [6, 0])
    _, tangent = s2sad.jvp(via_map, (x, y), (np.ones(3), np.array([1.0, 0.0])), backend=backend)
    assert tangent == pytest.approx(2 + 4 + 6 + 3)


def test_generated_source_scatters_back():
    text = s2sad.source(s2sad.grad(via_map, argnums=(0, 1)))
    assert "y_bar[0] += y_0_bar" in text and "captured at" in text


def test_broadcast_of_a_closure_outside_differentiation(backend):
    w = np.array([3.0, 4.0])
    out = s2sad.broadcast(lambda z: z * w[0] + DATA[0], np.arange(3.0), backend=backend)
    np.testing.assert_array_equal(out, np.arange(3.0) * 3.0 + 0.5)
    with pytest.raises(s2sad.S2SADError, match="takes 1 argument"):
        s2sad.broadcast(lambda z: z * w[0], np.ones(2), np.ones(2))
