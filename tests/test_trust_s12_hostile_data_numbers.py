"""Data arguments that are no numbers (session 12, hostile pass).

A kernel's `prepare` converted each operand with np.asarray(..., dtype=float): a data
argument None was read as NaN (grad answered NaN gradients where numpy's `np.sin(x) * None`
raises), "2" as 2.0 (numpy refuses str * float), an object raised Python's raw TypeError
from s2sad's insides. Now each is a NonDifferentiableInputError located at the user's
statement that reads it, on every entry point and route; numbers, lists of numbers and
0-d arrays keep their answers (checked against the analytic gradient).
"""
import math

import numpy as np
import pytest

import s2sad
from conftest import line_of


def sines(x, c):
    return np.sum(np.sin(x) * c)


def layer(W, X, c):
    return np.sum(np.tanh(X @ W) * c)


def scalar(x, c):
    return math.sin(x) * c


X1 = np.linspace(0.0, 1.0, 5)
W, XM = np.full((3, 2), 0.1), np.arange(12.0).reshape(4, 3) / 10
ENTRIES = {
    "grad": (sines, lambda c: s2sad.grad(sines)(X1, c)),
    "grad python": (sines, lambda c: s2sad.grad(sines, backend="python")(X1, c)),
    "value_and_grad of a layer": (layer, lambda c: s2sad.value_and_grad(layer)(W, XM, c)),
    "jvp": (sines, lambda c: s2sad.jvp(sines, (X1, c), (X1, None))),
    "vjp": (sines, lambda c: s2sad.vjp(sines, X1, c)[1](1.0)),
    "hessian": (sines, lambda c: s2sad.hessian(sines)(X1, c)),
    "scalar grad": (scalar, lambda c: s2sad.grad(scalar)(0.5, c)),
}
NOT_NUMBERS = {"None": None, "str": "2", "object": object(), "datetime": np.datetime64("2020-01-01"),
               "str array": np.array(["a", "b", "c", "d", "e"])}


@pytest.mark.parametrize("what", list(NOT_NUMBERS))
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_data_argument_that_is_no_number_is_refused_at_its_statement(entry, what):
    fun, call = ENTRIES[entry]
    if fun is scalar and what == "str array":
        pytest.skip("a scalar function of an array is another refusal (not a scalar loss)")
    with pytest.raises(s2sad.NonDifferentiableInputError, match="not numbers") as e:
        call(NOT_NUMBERS[what])
    assert e.value.location is not None and e.value.location.lineno == line_of(fun, "return")


def test_the_warm_path_refuses_it_too():
    g = s2sad.grad(sines)
    for _ in range(3):
        np.testing.assert_allclose(g(X1, 2.0), 2.0 * np.cos(X1), rtol=1e-14)
    with pytest.raises(s2sad.NonDifferentiableInputError):
        g(X1, None)
    np.testing.assert_allclose(g(X1, 2.0), 2.0 * np.cos(X1), rtol=1e-14)


@pytest.mark.parametrize("c", [2, 2.0, True, np.float32(2.0), np.array(2.0), [2.0], (2.0,), np.int8(2)],
                         ids=["int", "float", "bool", "float32", "0-d", "list", "tuple", "int8"])
def test_numbers_keep_their_answers(c):
    want = np.cos(X1) * float(np.asarray(c).reshape(-1)[0])
    np.testing.assert_allclose(s2sad.grad(sines)(X1, c), want, rtol=1e-6)
    np.testing.assert_allclose(s2sad.grad(sines, backend="python")(X1, c), want, rtol=1e-6)
