"""A plan compiles free numbers and functions in; rebinding them makes s2sad plan
again, never silently reuse the old value."""
import math

import numpy as np

import s2sad

SCALE = 2.0


def scaled(z):
    return SCALE * math.sin(z)


def loss(x):
    return np.sum(s2sad.broadcast(scaled, x))


def other(z):
    return z * z


def uses_helper(z):
    return HELPER(z)


HELPER = other


def helper_loss(x):
    return np.sum(s2sad.broadcast(uses_helper, x))


def test_rebinding_a_global_constant(backend):
    global SCALE
    x = np.array([0.1, 0.7])
    g = s2sad.grad(loss, backend=backend)
    np.testing.assert_allclose(g(x), 2.0 * np.cos(x), rtol=1e-14)
    SCALE = 3.0
    try:
        np.testing.assert_allclose(g(x), 3.0 * np.cos(x), rtol=1e-14)
        np.testing.assert_allclose(s2sad.broadcast(scaled, x, backend=backend), 3.0 * np.sin(x), rtol=1e-14)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(g(x), 2.0 * np.cos(x), rtol=1e-14)


def test_rebinding_a_global_function(backend):
    global HELPER
    x = np.array([0.5, 1.5])
    g = s2sad.grad(helper_loss, backend=backend)
    np.testing.assert_allclose(g(x), 2 * x)
    HELPER = math.sin
    try:
        np.testing.assert_allclose(g(x), np.cos(x), rtol=1e-14)
    finally:
        HELPER = other
