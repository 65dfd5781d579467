"""A grad of an array program made inline (`s2sad.grad(f)(a, b)`) or bound to a local
(`g = s2sad.grad(f)` inside the loss) and called in a differentiated function is
refused as the composition it is: a HigherOrderNotSupportedError located where the
derivative is made, naming f's array operation and saying to name it at module level
(which works: reverse over reverse). It was a NoSourceError saying that np.sum has no
Python source, located in f: the route analysis (passes/routes.py) did not see the
inline or local derivative, so the loss went to the fused planner and the normalizer."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.errors import HigherOrderNotSupportedError

X = np.array([0.1, -0.4, 0.7])
Y = np.array([0.3, 0.5, -0.2])


def f(a, b):
    return np.sum(np.sin(a * b) * a) + np.sum(a ** 2 * b ** 3)


G1 = s2sad.grad(f, argnums=1)


def penalty_by_global_name(a, b):
    return np.sum(G1(a, b) ** 2)


def penalty_inline(a, b):
    return np.sum(s2sad.grad(f, argnums=1)(a, b) ** 2)


def penalty_local(a, b):
    g = s2sad.grad(f, argnums=1)
    return np.sum(g(a, b) ** 2)


def _lines_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return [first + i for i, line in enumerate(lines) if text in line]


@pytest.mark.parametrize("loss, text", [(penalty_inline, "s2sad.grad(f, argnums=1)(a, b)"),
                                        (penalty_local, "g = s2sad.grad(f, argnums=1)")])
def test_inline_or_local_grad_of_an_array_program_is_refused_with_what_works(loss, text):
    with pytest.raises(HigherOrderNotSupportedError) as e:
        s2sad.grad(loss)(X, Y)
    err = e.value
    assert err.location.lineno in _lines_of(loss, text)
    assert "module level" in err.message and "np.sum" in err.message
    assert "module level" in err.hint and "s2sad.grad(f" in err.hint


def test_the_named_form_it_points_to_is_right():
    from conftest import central_fd
    got = s2sad.grad(penalty_by_global_name)(X, Y)
    np.testing.assert_allclose(got, central_fd(penalty_by_global_name, (X, Y), 0), rtol=1e-6, atol=1e-8)


def scalar(a):
    return math.sin(a) * a


def test_inline_grad_of_a_scalar_function_still_works():
    got = s2sad.grad(lambda v: np.sum(s2sad.broadcast(s2sad.grad(scalar), v)))(X)
    np.testing.assert_allclose(got, 2 * np.cos(X) - X * np.sin(X), rtol=1e-13)


def loss_of_one(x):
    return np.sum(np.sin(x) * x)


def product_of_two(a, b):
    return np.sum(a * b ** 2)


def elementwise_inline(x):
    return np.sum(s2sad.grad(loss_of_one)(x) ** 2)


def elementwise_local(x):
    g = s2sad.grad(loss_of_one)
    return np.sum(g(x) ** 2)


def value_and_grad_inline(a, b):
    return np.sum(s2sad.value_and_grad(product_of_two, argnums=1)(a, b)[1] ** 2)


def two_argument_inline(a, b):
    return np.sum(s2sad.grad(product_of_two)(a, b) ** 2)


@pytest.mark.parametrize("loss", [elementwise_inline, elementwise_local])
def test_inline_or_local_grad_with_an_elementwise_gradient_still_works(loss):
    """grad of np.sum(E(x)) is E'(x) per element: the normalizer inlines it, whichever form."""
    want = 2 * (np.cos(X) * X + np.sin(X)) * (2 * np.cos(X) - X * np.sin(X))
    np.testing.assert_allclose(s2sad.grad(loss)(X), want, rtol=1e-12)


@pytest.mark.parametrize("loss, text", [(value_and_grad_inline, "s2sad.value_and_grad(product_of_two"),
                                        (two_argument_inline, "s2sad.grad(product_of_two)(a, b)")])
def test_inline_grad_whose_gradient_is_not_elementwise_is_refused(loss, text):
    """A fused loss of two arguments: its gradient is not elementwise, an array program's
    derivative call, which only the named form takes."""
    with pytest.raises(HigherOrderNotSupportedError) as e:
        s2sad.grad(loss)(X, Y)
    assert e.value.location.lineno in _lines_of(loss, text)
    assert "module level" in e.value.message and "not elementwise" in e.value.message


def test_route_of_an_inline_grad_of_an_array_program_is_array():
    from s2sad.frontend import parse_function
    from s2sad.passes.routes import ARRAY, route_of
    for loss in (penalty_inline, penalty_local):
        route = route_of(parse_function(loss))
        assert route.kind == ARRAY and "s2sad.grad of 'f'" in route.reason
