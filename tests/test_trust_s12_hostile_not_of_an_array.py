"""`not` of an array (session 12, hostile pass).

numpy refuses an array's truth value (`not x` raises ValueError for more than one
element); s2sad's elementwise translation read `np.sum(np.sin(x) * (not x))` as
elementwise logical not and answered, for a function the user's code cannot compute.
Now it is an UnsupportedOperationError at the `not`, on the fused and array routes and
both backends; `not` of a Python number (a shape, a scalar function's argument, inside
a function applied elementwise) keeps Python's meaning, checked against its derivative.
"""
import math

import numpy as np
import pytest

import s2sad
from conftest import line_of


def fused(x):
    return np.sum(np.sin(x) * (not x))


def array_level(x):
    y = x @ np.ones((2, 2))
    return np.sum(np.sin(y) * (not y))


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("fun", [fused, array_level])
def test_not_of_an_array_is_refused_at_it(fun, backend):
    with pytest.raises(s2sad.errors.UnsupportedOperationError, match="not") as e:
        s2sad.grad(fun, backend=backend)(np.array([0.0, 1.0]))
    assert e.value.location.lineno == line_of(fun, "(not ")
    assert "np.logical_not" in e.value.hint


def not_of_a_shape(x):
    k = x.shape[0]
    return np.sum(x * (not k) + x * (not (k - 2)))


def scalar(x):
    return math.sin(x) * (not x) + x * (not 0.0)


def applied(x):
    return np.sum(s2sad.broadcast(lambda v: v * (not v), x))


def test_not_of_a_number_keeps_pythons_meaning():
    np.testing.assert_array_equal(s2sad.grad(not_of_a_shape)(np.array([0.5, 1.0])), [1.0, 1.0])
    assert s2sad.grad(scalar)(0.5) == 1.0 and s2sad.grad(scalar)(0.0) == 2.0
    np.testing.assert_array_equal(s2sad.grad(applied)(np.array([0.0, 1.0])), [1.0, 0.0])
