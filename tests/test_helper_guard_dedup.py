"""A helper reached through several of a plan's resolvers (broadcast of a function that
calls another) is tested once a call (assumptions._hold_others), and still every time:
rebinding the inner helper, or the math function it calls, after warm calls plans again."""
import math

import numpy as np
import pytest

import s2sad


def inner(z):
    return z


def outer(z):
    return inner(math.tanh(z))


def loss(x):
    return np.sum(s2sad.broadcast(outer, x))


def test_rebound_inner_helper_is_planned_again():
    x = np.linspace(-1.0, 1.0, 7)
    g = s2sad.grad(loss)
    for _ in range(3):
        np.testing.assert_allclose(g(x), 1.0 - np.tanh(x) ** 2, rtol=1e-13)
    saved = globals()["inner"]
    try:
        globals()["inner"] = lambda z: 3.0 * z
        for _ in range(2):
            np.testing.assert_allclose(g(x), 3.0 * (1.0 - np.tanh(x) ** 2), rtol=1e-13)
    finally:
        globals()["inner"] = saved
    np.testing.assert_allclose(g(x), 1.0 - np.tanh(x) ** 2, rtol=1e-13)


def test_patched_math_function_in_a_helper_is_planned_again(monkeypatch):
    x = np.linspace(-1.0, 1.0, 7)
    g = s2sad.grad(loss)
    for _ in range(3):
        g(x)
    monkeypatch.setattr(math, "tanh", math.sin)
    np.testing.assert_allclose(g(x), np.cos(x), rtol=1e-13)
    monkeypatch.undo()
    np.testing.assert_allclose(g(x), 1.0 - np.tanh(x) ** 2, rtol=1e-13)


SCALE = np.array([2.0])


def scaled(z):
    return SCALE[0] * inner(z)      # an array read at call time, beside a helper and its helper


def scaled_loss(x):
    return np.sum(s2sad.broadcast(scaled, x))


def test_a_helper_with_tests_left_to_the_loop_still_plans_and_guards():
    """(A helper whose names are partly tested inline and partly not: planning ends, and
    both kinds of change are noticed.)"""
    global SCALE
    x = np.linspace(-1.0, 1.0, 5)
    g = s2sad.grad(scaled_loss)
    for _ in range(3):
        np.testing.assert_allclose(g(x), 2.0 * np.ones_like(x))
    saved = SCALE
    try:
        SCALE = np.array([5.0])          # same kind: read at call time
        np.testing.assert_allclose(g(x), 5.0 * np.ones_like(x))
        globals()["inner"] = lambda z: z * z
        np.testing.assert_allclose(g(x), 10.0 * x)
    finally:
        SCALE = saved
        globals()["inner"] = _INNER
    np.testing.assert_allclose(g(x), 2.0 * np.ones_like(x))


_INNER = inner


def test_helper_defaults_code_and_deletion_after_warm_calls():
    """The inline helper tests (assumptions._inline_helpers): a helper given defaults, its
    code swapped in place (autoreload), or deleted from its module after warm calls."""
    x = np.linspace(-1.0, 1.0, 6)
    g = s2sad.grad(loss)
    want = 1.0 - np.tanh(x) ** 2
    for _ in range(3):
        np.testing.assert_allclose(g(x), want, rtol=1e-13)
    code = inner.__code__
    try:
        inner.__code__ = (lambda z: 4.0 * z).__code__
        np.testing.assert_allclose(g(x), 4.0 * want, rtol=1e-13)
    finally:
        inner.__code__ = code
    np.testing.assert_allclose(g(x), want, rtol=1e-13)
    try:
        inner.__defaults__ = (1.0,)          # a plain helper no more: planned again, same derivative
        np.testing.assert_allclose(g(x), want, rtol=1e-13)
    finally:
        inner.__defaults__ = None
    saved = globals().pop("inner")
    try:
        with pytest.raises(s2sad.S2SADError, match="cannot resolve the function 'inner'"):
            g(x)                              # refused, located: never the old derivative
    finally:
        globals()["inner"] = saved
    np.testing.assert_allclose(g(x), want, rtol=1e-13)
