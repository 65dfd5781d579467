"""A number given for a parameter that only a helper function indexes, measures or
loops over: a located ShapeError at the helper's use, naming the call (paramuses.needs
follows the helper calls every call makes). Before: raw TypeError / IndexError /
AttributeError from the generated code ("'float' object is not subscriptable")."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError
from conftest import central_fd


def first(a):
    return a[0]


def length(a):
    return len(a)


def rows(a):
    return a.shape[0]


def first_twice(b):
    return first(b) * 2.0


def first_by_keyword(a, scale=1.0):
    return a[1] * scale


def uses_first(x):
    return np.sum(x) + first(x)


def uses_length(x):
    return np.sum(x) / length(x)


def uses_rows(x):
    return np.sum(x) * rows(x)


def uses_nested(x):
    return np.sum(x * x) + first_twice(x)


def uses_keyword(x):
    return np.sum(x) + first_by_keyword(scale=2.0, a=x)


def uses_second_argument(w, x):
    return np.sum(w * x) + first(x)


def countdown(a, k):
    head = a[0]
    return head if k <= 0 else countdown(a, k - 1)


def uses_recursive(x):
    return np.sum(x) + countdown(x, 2)


FUNS = [(uses_first, "first", "indexes it"), (uses_length, "length", "takes its length"),
        (uses_rows, "rows", "reads a dimension of it"), (uses_nested, "first_twice", "indexes it"),
        (uses_keyword, "first_by_keyword", "indexes it")]
NUMBERS = [0.5, np.float64(0.5), np.array(0.5)]


@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "jvp", "vjp"])
@pytest.mark.parametrize("number", NUMBERS, ids=["float", "float64", "0d"])
@pytest.mark.parametrize("fun, helper, what", FUNS, ids=[f[0].__name__ for f in FUNS])
def test_a_number_for_a_parameter_a_helper_needs_as_an_array_is_located(fun, helper, what, number, entry):
    with pytest.raises(ShapeError, match=f"passes it to {helper}\\(\\).*{what}") as e:
        if entry in ("grad", "value_and_grad"):
            getattr(s2sad, entry)(fun)(number)
        elif entry == "jvp":
            s2sad.jvp(fun, (number,), (1.0,))
        else:
            s2sad.vjp(fun, number)
    loc = e.value.location
    assert loc is not None and loc.filename == __file__
    assert "'x'" in str(e.value)


def test_the_location_is_the_helpers_use():
    with pytest.raises(ShapeError) as e:
        s2sad.grad(uses_first)(0.5)
    assert e.value.location.lineno == first.__code__.co_firstlineno + 1
    assert "return a[0]" in str(e.value)


def test_the_second_argument_and_a_data_argument():
    with pytest.raises(ShapeError, match="argument 'x' of uses_second_argument"):
        s2sad.grad(uses_second_argument)(np.ones(3), 0.5)
    with pytest.raises(ShapeError, match="argument 'x'"):
        s2sad.grad(uses_second_argument, argnums=0)(np.ones(3), np.float64(0.5))


def test_a_recursive_helper_is_read_once():
    """(the planner refuses recursion, located; the reading of helpers ends)"""
    from s2sad.frontend import parse_function
    from s2sad.paramuses import needs
    need = needs(parse_function(uses_recursive))["x"]
    assert "passes it to countdown()" in need.what and need.where.lineno == countdown.__code__.co_firstlineno + 1


X = np.array([0.3, -1.2, 2.0, 0.7])
RIGHT = [(uses_first, lambda x: np.ones_like(x) + np.eye(len(x))[0]),
         (uses_length, lambda x: np.full_like(x, 1.0 / len(x))),
         (uses_rows, lambda x: np.full_like(x, float(len(x)))),
         (uses_nested, lambda x: 2 * x + 2 * np.eye(len(x))[0]),
         (uses_keyword, lambda x: np.ones_like(x) + 2 * np.eye(len(x))[1])]


@pytest.mark.parametrize("fun, expected", RIGHT, ids=[f[0].__name__ for f in RIGHT])
def test_an_array_still_gets_its_gradient(fun, expected, backend):
    g = s2sad.grad(fun, backend=backend)
    for _ in range(3):      # the hot path too
        got = g(X)
        np.testing.assert_allclose(got, expected(X), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got, central_fd(fun, (X,), 0), rtol=1e-6, atol=1e-8)


def maybe_first(a, k):
    if k > 0:
        return np.sum(a[0:1])
    return a * 1.0


def uses_maybe(x):
    return maybe_first(x, 0.0) * 3.0


def rebinds(a):
    a = np.atleast_1d(a)
    return np.sum(a[0:1])


def uses_rebinds(x):
    return rebinds(x) * 2.0


def rebinds_then_calls(x):
    x = np.atleast_1d(x)
    return np.sum(x) + first(x)


@pytest.mark.parametrize("fun, derivative", [(uses_maybe, 3.0), (uses_rebinds, 2.0), (rebinds_then_calls, 2.0)])
def test_a_use_that_may_not_run_refuses_nothing(fun, derivative):
    """A conditional use, a helper that rebinds its parameter first, a caller that
    rebinds before the call: a number runs (its derivative is right)."""
    assert float(s2sad.grad(fun)(0.5)) == pytest.approx(derivative, rel=1e-14)
