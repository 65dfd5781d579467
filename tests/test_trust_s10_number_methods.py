"""An array method called on what s2sad computes as a Python number (the sum of a
kernel, where numpy gives a numpy scalar that has `.reshape`, `.astype`) is an
UnsupportedOperationError located at the user's statement with a hint that works (it
was a raw AttributeError from the generated program on grad, vjp, jvp, jacrev); and a
call without a rule on a temporary names the user's expression ('np.sum(x ** 2)', not
'_2')."""

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad.errors import UnsupportedOperationError


def reshaped_sum(x):
    s = np.sum(x ** 2).reshape(1)
    return np.sum(s * x)


def cast_sum(x):
    s = np.sum(x ** 2).astype(np.float64)
    return s * x


def with_item(x):
    return np.sum(x ** 2).item() * x


def with_function(x):
    s = np.reshape(np.sum(x ** 2), 1)
    return np.sum(s * x)


X = np.array([0.1, 0.4, 0.7])


XL = np.linspace(0.1, 0.7, 100)      # past the unrolled plan's 64 elements: the general path


@pytest.mark.parametrize("route", ["grad", "value_and_grad", "grad python", "hot grad"])
def test_reshape_of_a_sum_is_refused_at_its_statement(route):
    calls = {"grad": lambda: s2sad.grad(reshaped_sum)(XL),
             "value_and_grad": lambda: s2sad.value_and_grad(reshaped_sum)(XL),
             "grad python": lambda: s2sad.grad(reshaped_sum, backend="python")(XL),
             "hot grad": lambda: [s2sad.grad(reshaped_sum)(XL) for _ in range(3)]}
    with pytest.raises(UnsupportedOperationError) as e:
        calls[route]()
    err = e.value
    assert err.location.filename == __file__
    assert err.location.lineno == line_of(reshaped_sum, "s = np.sum(x ** 2).reshape(1)")
    assert "'.reshape'" in str(err) and "np.reshape(" in err.hint
    assert isinstance(err.__cause__, AttributeError)     # (chained, never raw)


@pytest.mark.parametrize("route", ["grad", "value_and_grad", "hot grad"])
def test_reshape_of_a_sum_in_a_small_program_is_right_or_refused(route):
    """A 3-vector takes grad's unrolled plan (small_grad), which computes the sum as an
    array: right, or the same located refusal."""
    calls = {"grad": lambda: s2sad.grad(reshaped_sum)(X),
             "value_and_grad": lambda: s2sad.value_and_grad(reshaped_sum)(X)[1],
             "hot grad": lambda: [s2sad.grad(reshaped_sum)(X) for _ in range(3)][-1]}
    try:
        got = calls[route]()
    except UnsupportedOperationError as e:
        assert e.location.lineno == line_of(reshaped_sum, "s = np.sum(x ** 2).reshape(1)")
    else:       # d(sum(x^2) * sum(x))/dx = 2 x sum(x) + sum(x^2)
        np.testing.assert_allclose(got, 2 * X * np.sum(X) + np.sum(X ** 2), rtol=1e-12)


@pytest.mark.parametrize("route", ["jvp", "vjp", "jacrev", "jacfwd"])
def test_astype_of_a_sum_is_refused_at_its_statement(route):
    calls = {"jvp": lambda: s2sad.jvp(cast_sum, (X,), (X,)),
             "vjp": lambda: s2sad.vjp(cast_sum, X),
             "jacrev": lambda: s2sad.jacrev(cast_sum)(X),
             "jacfwd": lambda: s2sad.jacfwd(cast_sum)(X)}
    try:
        got = calls[route]()
    except UnsupportedOperationError as e:
        assert e.location.filename == __file__
        assert e.location.lineno == line_of(cast_sum, "s = np.sum(x ** 2).astype")
        assert "'.astype'" in str(e)
    else:       # a path that computes it right is right too (d(s x)/dx = s I + x 2x^T)
        want = np.sum(X ** 2) * np.eye(3) + np.outer(X, 2 * X)
        jac = got if route in ("jacrev", "jacfwd") else None
        if jac is not None:
            np.testing.assert_allclose(jac, want, rtol=1e-12)


def test_the_hint_works():
    want = 2 * X * np.sum(X) + np.sum(X ** 2)
    np.testing.assert_allclose(s2sad.grad(with_function)(X), want, rtol=1e-12)


def test_a_rule_less_call_names_the_users_expression():
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(lambda x: np.sum(with_item(x)))(X)
    assert "'.item()' is applied to 'np.sum(x ** 2)'" in str(e.value)
    assert "'_2'" not in str(e.value)
    assert e.value.location.lineno == line_of(with_item, "return np.sum(x ** 2).item()")


def test_other_attribute_errors_pass_through():
    from s2sad.arguments import number_method_refusal
    assert number_method_refusal(AttributeError("'list' object has no attribute 'shape'"), None, {}) is None
    assert number_method_refusal(AttributeError("'float' object has no attribute 'reshape'"), None, {}) is None
