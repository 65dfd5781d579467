"""The route analysis (passes/routes.py) over the shapes main's features accept: items of
a derivative's tuple output, derivatives of array programs and of losses whose gradient
is not elementwise, math.prod/fsum of tuples written out, items of a parameter written
in place, broadcast's signature=. Each is routed by reading the code, and the planner of
the route gives the right answer or the right refusal."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.frontend import parse_function
from s2sad.passes.routes import ARRAY, FUSED, SCALAR, route_of
from s2sad.targets import entry_function, target

X = np.linspace(0.1, 0.9, 5)


def route(fun, entry="grad"):
    return route_of(entry_function(parse_function(target(fun, entry))))


def cubic(z):
    return z**3 + math.sin(z)


def neighbours(a):
    return np.sum(a[1:] * a[:-1])


def mean_loss(v):
    return np.mean(np.sin(v))


vg_cubic = s2sad.value_and_grad(cubic)
d_neighbours = s2sad.grad(neighbours)


def item_of_value_and_grad(z):
    return vg_cubic(z)[1] * 2.0


def sum_of_array_grad(a):
    return np.sum(d_neighbours(a) ** 2)


def folds(v, w):
    return math.prod((v, w, 2.0)) + math.fsum([v, w * w])


def writes(a, v):
    a[0] = v
    return a


def calls_a_writer(x):
    y = x * 2.0
    return np.sum(y * writes(y, 1.0))


def pair_out(r):
    return r[0] * r[1], r[2]


def mean_of_tuples(X2):
    return np.mean(s2sad.broadcast(pair_out, X2, signature="(3)->(2)"))


def test_an_item_of_a_derivatives_tuple_is_scalar_code(backend):
    assert route(item_of_value_and_grad).kind == SCALAR
    want = 2 * (6 * 0.7 - math.sin(0.7))
    assert s2sad.grad(item_of_value_and_grad, backend=backend)(0.7) == pytest.approx(want, rel=1e-13)


def test_a_derivative_of_an_array_program_routes_to_the_array_program_which_differentiates_it():
    r = route(sum_of_array_grad)
    assert r.kind == ARRAY and "a derivative of an array program" in r.reason
    # d/da sum(g(a)^2) = 2 H g(a), H the Hessian of neighbours (reverse over reverse)
    want = 2 * s2sad.hessian(neighbours)(X) @ d_neighbours(X)
    np.testing.assert_allclose(s2sad.grad(sum_of_array_grad)(X), want, rtol=1e-14)


def test_a_derivative_whose_gradient_is_not_elementwise_is_an_array_operation():
    r = route(s2sad.grad(mean_loss))
    assert r.kind == ARRAY and "not elementwise" in r.reason
    # a program calling it (hessian: jvp of it) runs mean_loss's forward over reverse (array_higher)
    want = np.diag(-np.sin(X) / np.size(X))
    np.testing.assert_allclose(s2sad.hessian(mean_loss)(X), want, rtol=1e-14, atol=1e-17)
    assert route(s2sad.grad(lambda a: np.sum(a**3))).kind == FUSED    # 3 a**2, element by element


def test_math_prod_and_fsum_of_tuples_written_out_are_scalar_code(backend):
    assert route(folds).kind == SCALAR
    g = s2sad.grad(folds, argnums=(0, 1), backend=backend)(0.3, -0.7)
    assert g == (pytest.approx(2 * -0.7 + 1.0, rel=1e-14), pytest.approx(2 * 0.3 + 2 * -0.7, rel=1e-14))


def test_an_item_of_a_parameter_written_in_place_is_an_array_operation():
    r = route(calls_a_writer)
    assert r.kind == ARRAY and "written in place" in r.reason
    with pytest.raises(s2sad.UnsupportedOperationError):
        s2sad.grad(calls_a_writer)(np.ones(3))


def test_a_refused_signature_keeps_the_fused_route_whose_planner_says_why():
    r = route(mean_of_tuples)
    assert r.kind == FUSED and "only a fused kernel takes" in r.reason
    with pytest.raises(s2sad.UnsupportedOperationError, match="only a sum of the whole broadcast"):
        s2sad.grad(mean_of_tuples)(np.ones((4, 3)))
