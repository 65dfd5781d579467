"""jvp and hvp given a number of tangents other than the number of primals: an
S2SADError located at the user's function that says how many of each (it was an
unlocated error saying only 'jvp needs one tangent per primal', also for s2sad.hvp),
on every route: an array program, one fused kernel, a grad of either (forward over
reverse), a function of containers."""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError

A = np.arange(12.0).reshape(3, 4) / 10


def program(x, y):
    return np.sum(np.sin(A @ x) * y) + np.sum(x ** 2) * np.sum(y ** 3)


def one_kernel(x, y):
    return np.sum(np.sin(x) * y)


def of_a_dict(p):
    return np.sum(p["a"] * 2.0)


X, Y = np.array([0.1, 0.4, 0.7, 0.9]), np.array([0.3, 0.2, 0.5])
CALLS = {
    "hvp of a program": (program, lambda: s2sad.hvp(program, (X, Y), (Y,), argnums=1), "2 primal(s) and 1 tangent(s)"),
    "hvp of one kernel": (one_kernel, lambda: s2sad.hvp(one_kernel, (X, X), (X,)), "2 primal(s) and 1 tangent(s)"),
    "jvp of a program": (program, lambda: s2sad.jvp(program, (X, Y), (X,)), "2 primal(s) and 1 tangent(s)"),
    "jvp of one kernel": (one_kernel, lambda: s2sad.jvp(one_kernel, (X, X), (X, X, X)), "2 primal(s) and 3 tangent(s)"),
    "jvp of a grad": (program, lambda: s2sad.jvp(s2sad.grad(program), (X, Y), (X,)), "2 primal(s) and 1 tangent(s)"),
    "jvp of containers": (of_a_dict, lambda: s2sad.jvp(of_a_dict, ({"a": X},), ({"a": X}, X)), "1 primal(s) and 2 tangent(s)"),
}


@pytest.mark.parametrize("route", sorted(CALLS))
def test_a_wrong_number_of_tangents_is_located(route):
    fun, call, counts = CALLS[route]
    with pytest.raises(S2SADError) as e:
        call()
    err = e.value
    assert err.location is not None and err.location.filename == __file__
    assert err.location.lineno == inspect.getsourcelines(fun)[1]
    assert counts in str(err) and "one tangent per primal" in str(err)
    assert "np.zeros_like" in err.hint


def test_the_right_number_still_gives_the_product():
    v, w = np.array([1.0, -1.0, 0.5, 2.0]), np.array([0.5, 1.0, -1.0])
    H = s2sad.hessian(program, argnums=(0, 1), backend="python")(X, Y)
    got = s2sad.hvp(program, (X, Y), (v, w), argnums=1)
    np.testing.assert_allclose(got, H[1][0] @ v + H[1][1] @ w, rtol=1e-10)
