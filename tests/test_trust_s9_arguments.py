"""A call the differentiated function would not take is refused with Python's own
message, located at the function, as an ArgumentError (an S2SADError and a TypeError,
as Python raises). Before: `grad(f)(x, z=y)` said "missing a required argument: 'y'"
(inspect's order, not Python's), and a keyword-only parameter given by position was
bound silently (`grad(f)(x, y, 2.0)` for `def f(x, y, *, k=1.0)` used k=2.0)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentError, S2SADError

X = np.linspace(0.5, 1.5, 4)


def two(x, y):
    return np.sum(x * y)


def keyword_only(x, y, *, k=1.0):
    return np.sum(x * y) * k


def positional_only(x, /, y):
    return np.sum(x * y)


def scalar_two(x, y):
    return x * y


CALLS = [
    (two, (X,), {"z": X}),
    (two, (X, X, X), {}),
    (two, (X,), {"x": X}),
    (two, (), {}),
    (two, (X,), {}),
    (keyword_only, (X, X, 2.0), {}),
    (keyword_only, (X, X), {"q": 2.0}),
    (positional_only, (X,), {"x": X, "y": X}),
    (scalar_two, (1.0,), {"z": 2.0}),
    (scalar_two, (1.0, 2.0, 3.0), {}),
]


def _pythons_message(fun, args, kwargs) -> str:
    with pytest.raises(TypeError) as e:
        fun(*args, **kwargs)
    return str(e.value)


@pytest.mark.parametrize("what", ["grad", "value_and_grad"])
@pytest.mark.parametrize("fun, args, kwargs", CALLS)
def test_a_call_python_refuses_says_what_python_says(what, fun, args, kwargs):
    message = _pythons_message(fun, args, kwargs)
    with pytest.raises(ArgumentError) as e:
        getattr(s2sad, what)(fun)(*args, **kwargs)
    assert message in str(e.value)
    assert e.value.location is not None and e.value.location.lineno == fun.__code__.co_firstlineno
    assert isinstance(e.value, TypeError) and isinstance(e.value, S2SADError)


def test_the_unexpected_keyword_is_named_not_a_missing_argument():
    with pytest.raises(ArgumentError, match="unexpected keyword argument 'z'") as e:
        s2sad.grad(two)(X, z=X)
    assert "missing" not in str(e.value)


@pytest.mark.parametrize("fun, args, kwargs", CALLS)
def test_a_differentiate_object_refuses_them_too(fun, args, kwargs):
    message = _pythons_message(fun, args, kwargs)
    d = s2sad.differentiate(fun)
    for method in (d.grad, d.value_and_grad):
        with pytest.raises(ArgumentError) as e:
            method(*args, **kwargs)
        assert message in str(e.value)


def test_a_keyword_only_parameter_is_still_taken_by_keyword(backend):
    g = s2sad.grad(keyword_only, backend=backend)
    np.testing.assert_allclose(g(X, X, k=3.0), 3 * X, rtol=1e-15)
    np.testing.assert_allclose(g(X, X), X, rtol=1e-15)
    np.testing.assert_allclose(g(X, y=X), X, rtol=1e-15)
    v, gx = s2sad.value_and_grad(keyword_only, backend=backend)(X, X, k=2.0)
    assert v == pytest.approx(2 * np.sum(X * X), rel=1e-15)
    np.testing.assert_allclose(gx, 2 * X, rtol=1e-15)
