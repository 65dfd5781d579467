"""The log-sum-exp idiom on rows of no element is a located ShapeError (session 11): it
pointed at the return, the statement the row-fused call runs under (the fused chain maps
to the last statement it replaced). It now points at the statement that reduces the
empty rows first, the max, where numpy itself raises running the function, on every
route that runs it (grad, value_and_grad, hessian, jvp, vjp). Any other error of the
return statement is still located at the return."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError
from conftest import line_of

V = np.ones(4)


def lse_lines(z):
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    s = np.sum(e, axis=1, keepdims=True)
    return np.sum(np.log(s) + m)


def lse_two_lines(z):
    m = np.max(z, axis=-1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)) + m)


def lse_then_a_bad_product(z):
    m = np.max(z, axis=1, keepdims=True)
    l = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return np.sum(l.T @ V)


ROUTES = {"grad": lambda f, x, b: s2sad.grad(f, backend=b)(x),
          "value_and_grad": lambda f, x, b: s2sad.value_and_grad(f, backend=b)(x),
          "hessian": lambda f, x, b: s2sad.hessian(f, backend=b)(x),
          "jvp": lambda f, x, b: s2sad.jvp(f, (x,), (np.ones_like(x),), backend=b),
          "vjp": lambda f, x, b: s2sad.vjp(f, x, backend=b)}


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("f", [lse_lines, lse_two_lines], ids=lambda f: f.__name__)
def test_empty_rows_point_at_the_max(backend, f, route):
    x = np.zeros((3, 0))
    with pytest.raises(ValueError) as numpy_says:     # numpy itself, at the max
        f(x)
    assert numpy_says.traceback[1].lineno + 1 == line_of(f, "np.max(")
    for _ in range(2):
        with pytest.raises(ShapeError) as info:
            ROUTES[route](f, x, backend)
        e = info.value
        assert "zero-size" in e.message
        assert e.location.lineno == line_of(f, "np.max("), (route, e.location)


def test_another_error_of_the_return_stays_at_the_return(backend):
    x = np.zeros((3, 2))    # rows of two: the fused chain runs; (1, 3) @ (4,) is numpy's refusal
    with pytest.raises(ValueError):
        lse_then_a_bad_product(x)
    with pytest.raises(ShapeError) as info:
        s2sad.grad(lse_then_a_bad_product, backend=backend)(x)
    assert info.value.location.lineno == line_of(lse_then_a_bad_product, "return ")


def test_rows_of_elements_still_differentiate(backend):
    x = np.random.default_rng(5).normal(size=(3, 4))
    g = s2sad.grad(lse_lines, backend=backend)(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
