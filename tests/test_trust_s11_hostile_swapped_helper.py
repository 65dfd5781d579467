"""A helper function whose code is swapped in place (IPython's autoreload does this when
the module is edited: `helper.__code__ = new_code`) or whose number defaults are
replaced: every derivative that calls it is planned again. It kept the old plan on
every path (grad, a fresh grad, the python backend, the fused kernel, scalar functions,
broadcast, hessian): silent wrong numbers, since the plan's guard checked only that the
name still held the same function object."""
import math

import numpy as np
import pytest

import s2sad


def _fresh_helper():
    def helper(a, k=2.0):
        return a * k
    return helper


def _times_five(a, k=2.0):
    return a * 5.0


def _sin_times(a, k=2.0):
    return math.sin(a) * k


CASES = {
    # name: (loss of helper, x, d loss/dx for helper(a) = c * a)
    "array program (small)": (lambda h: lambda x: np.sum(h(x) ** 2), np.array([0.5, 1.0, 2.0]),
                              lambda x, c: 2 * c * c * x),
    "array program (large)": (lambda h: lambda x: np.sum(h(x) ** 2), np.linspace(0.1, 2.0, 500),
                              lambda x, c: 2 * c * c * x),
    "fused kernel": (lambda h: lambda x: np.sum(np.sin(h(x))), np.linspace(0.1, 2.0, 500),
                     lambda x, c: c * np.cos(c * x)),
    "scalar function": (lambda h: lambda x: math.sin(h(x)), 0.3, lambda x, c: c * math.cos(c * x)),
}


def _loss(kind, helper):
    """The case's loss calling `helper` through a global of this module (as a user's helper)."""
    globals()["HELPER"] = helper
    make, x, want = CASES[kind]
    return make(lambda a: HELPER(a)), x, want      # noqa: F821 (set just above)


@pytest.mark.parametrize("backend", ["auto", "python"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_swapped_code_is_planned_again(kind, backend):
    helper = _fresh_helper()
    loss, x, want = _loss(kind, helper)
    g = s2sad.grad(loss, backend=backend)
    for _ in range(3):      # warm: the hot path and its caches
        np.testing.assert_allclose(g(x), want(x, 2.0), rtol=1e-12)
    helper.__code__ = _times_five.__code__
    np.testing.assert_allclose(g(x), want(x, 5.0), rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(x), want(x, 5.0), rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_new_defaults_are_planned_again(kind):
    helper = _fresh_helper()
    loss, x, want = _loss(kind, helper)
    g = s2sad.grad(loss)
    np.testing.assert_allclose(g(x), want(x, 2.0), rtol=1e-12)
    helper.__defaults__ = (3.0,)
    np.testing.assert_allclose(g(x), want(x, 3.0), rtol=1e-12)


def test_broadcast_and_hessian_see_a_swapped_elementwise_function():
    def f(a):
        return math.sin(a) * 2.0
    x = np.array([0.3, -0.4, 1.2])
    loss = lambda v: np.sum(s2sad.broadcast(f, v))     # noqa: E731
    g, h = s2sad.grad(loss), s2sad.hessian(loss)
    np.testing.assert_allclose(g(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(h(x), np.diag(-2 * np.sin(x)), rtol=1e-12, atol=1e-15)
    f.__code__ = _sin_times.__code__     # math.sin(a) * k, k = its own default now: none, so give one
    f.__defaults__ = (4.0,)
    np.testing.assert_allclose(g(x), 4 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(h(x), np.diag(-4 * np.sin(x)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s2sad.broadcast(f, x), 4 * np.sin(x), rtol=1e-12)
