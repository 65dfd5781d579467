"""Control flow at the array level as people write it (issue 15): `while` with a
data-dependent test (iterative solvers with a tolerance, with or without a guard on the
iteration count), `break`, `continue`, early `return` in loops and branches, `if` on a
data-dependent scalar inside loops. The tape records the path taken (the iterations,
each `if`'s test) and the derivative is that path's, as JAX and PyTorch give it."""
import time

import numpy as np
import pytest

import s2sad
from flow_helpers import check, refused

rng = np.random.default_rng(1515)


def newton_sqrt(a):
    x = a * 1.0
    err = 1.0
    while err > 1e-13:
        x_new = 0.5 * (x + a / x)
        err = np.max(np.abs(x_new - x))
        x = x_new
    return np.sum(x)


def fixed_point_guarded(A, b):
    x = np.zeros(len(b))
    k = 0
    err = np.inf
    while err > 1e-10 and k < 200:
        x_new = np.tanh(A @ x + b)
        err = np.sum(np.abs(x_new - x))
        x = x_new
        k += 1
    return np.sum(x * x)


def never_runs(x):
    s = x * 2.0
    while np.sum(s) > 1e9:
        s = s / 2.0
    return np.sum(s ** 2)


def many_iterations(x):
    s = x * 1.0
    k = 0
    while k < 10000:
        s = s * 0.9999 + 0.0001 * np.sin(s)
        k += 1
    return np.sum(s)


def nan_test(x):
    s = x * 1.0
    err = np.sum(x) * np.nan     # NaN > tol is False: the loop never runs, as in Python
    while err > 1e-3:
        s = s * 0.5
        err = err * 0.5
    return np.sum(s * s)


def halve_until_small(x):
    s = x * 1.0
    while np.sum(s * s) > 0.1:
        s = s * 0.5
    return np.sum(np.exp(s))


def break_in_for(x):
    s = 0.0
    for i in range(10):
        s = s + np.sum(x * i)
        if s > 5.0:
            break
        s = s * 1.1
    return s


def break_first_iteration(x):
    s = x * 1.0
    for i in range(5):
        if np.sum(s) > -100.0:
            break
        s = s * 2.0
    return np.sum(s ** 3)


def continue_in_for(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        total = total + x[i] ** 2
    return total


def continue_and_break_in_while(x):
    s = x * 1.0
    k = 0
    while True:
        k += 1
        if k > 6:
            break
        if k % 2 == 0:
            continue
        s = np.tanh(s + 0.5)
    return np.sum(s)


def data_dependent_if_in_loop(x, w):
    h = x * 1.0
    for i in range(4):
        if np.sum(h * w) > 0.0:
            h = np.tanh(h * w + i)
        else:
            h = h * 0.5 - w
    return np.sum(h ** 2)


def early_return_in_if(x):
    s = np.sum(x * x)
    if s > 1.0:
        return np.sqrt(s)
    t = np.sum(np.sin(x))
    return s + t


def returns_in_every_branch(x):
    if np.sum(x) > 0.0:
        return np.sum(x ** 2)
    else:
        return np.sum(np.exp(x))


def early_return_in_loop(x):
    s = x * 1.0
    for i in range(20):
        s = s * 1.5
        if np.max(np.abs(s)) > 4.0:
            return np.sum(s) * i
    return np.sum(s)


def nested_break(X):
    total = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] > 1.0:
                break
            total = total + X[i, j] * X[i, j]
    return total


def return_from_nested(X):
    total = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            total = total + np.sin(X[i, j])
            if total > 1.5:
                return total * 2.0
    return total


def solve_helper(a, tol):
    x = a * 1.0
    while True:
        x_new = 0.5 * (x + a / x)
        if np.max(np.abs(x_new - x)) < tol:
            return x_new
        x = x_new


def uses_solver_helper(a):
    r = solve_helper(a, 1e-12)
    return np.sum(r * a)


def tuple_loop_break(x):
    s = x * 1.0
    for c in (0.5, 2.0, 3.0):
        s = s * c
        if np.sum(s) > 2.0:
            break
    return np.sum(s ** 2)


def while_fills_array(x):
    y = np.zeros(8)
    k = 0
    v = x[0]
    while k < 8 and v < 50.0:
        y[k] = v
        v = v * x[1]
        k += 1
    return np.sum(y * y)


POS = np.array([0.3, 0.8, 1.1])


@pytest.mark.parametrize("f,args", [
    (newton_sqrt, [np.array([2.0, 3.0, 5.0])]),
    (never_runs, [rng.normal(size=3)]),
    (nan_test, [rng.normal(size=3)]),
    (halve_until_small, [np.array([1.0, -2.0, 0.5])]),
    (break_in_for, [np.array([0.3, 0.4])]),
    (break_first_iteration, [rng.normal(size=3)]),
    (continue_in_for, [np.array([0.5, -0.2, 1.5, -3.0, 0.7])]),
    (continue_and_break_in_while, [rng.normal(size=3)]),
    (early_return_in_if, [np.array([0.9, 0.8])]),
    (early_return_in_if, [np.array([0.1, -0.2])]),
    (returns_in_every_branch, [np.array([0.5, 0.7])]),
    (returns_in_every_branch, [np.array([-0.5, 0.2])]),
    (early_return_in_loop, [np.array([0.3, -0.2, 0.1])]),
    (early_return_in_loop, [np.array([1e-3, 1e-3])]),
    (nested_break, [np.array([[0.5, 1.5, 0.2], [0.1, 0.2, 0.3]])]),
    (return_from_nested, [np.array([[0.5, 0.4, 0.2], [0.9, 0.2, 0.3]])]),
    (return_from_nested, [np.array([[0.1, 0.1], [0.1, 0.1]])]),
    (uses_solver_helper, [np.array([2.0, 7.0])]),
    (tuple_loop_break, [np.array([0.5, 0.2])]),
    (tuple_loop_break, [np.array([-0.5, 0.2])]),
    (tuple_loop_break, [np.array([2.5, 0.2])]),       # breaks on the first item
    (while_fills_array, [np.array([1.5, 1.7])]),
], ids=lambda a: getattr(a, "__name__", ""))
def test_control_flow_matches_finite_differences(f, args, backend):
    check(f, args, 0, backend)


def test_newton_solver_gradient_is_the_analytic_one(backend):
    a = np.array([2.0, 3.0, 5.0])
    np.testing.assert_allclose(s2sad.grad(newton_sqrt, backend=backend)(a), 0.5 / np.sqrt(a), rtol=1e-10)


def test_guarded_fixed_point_iteration(backend):
    A, b = rng.normal(size=(4, 4)) * 0.3, rng.normal(size=4)
    check(fixed_point_guarded, [A, b], (0, 1), backend, rtol=1e-5)


def test_data_dependent_branches_in_a_loop(backend):
    x, w = rng.normal(size=3), rng.normal(size=3)
    check(data_dependent_if_in_loop, [x, w], (0, 1), backend)


def test_ten_thousand_iterations(backend):
    x = rng.normal(size=2)
    t0 = time.perf_counter()
    check(many_iterations, [x], 0, backend)
    assert time.perf_counter() - t0 < 60


def test_the_tape_counts_iterations_of_a_while():
    text = s2sad.source(s2sad.grad(newton_sqrt))
    assert "while True:" in text and "in reversed(tape)" in text and "break" in text


# ---------------------------------------------------------------- refusals

def recursive_array(x, n):
    if n <= 0:
        return np.sum(x)
    return recursive_array(x * 0.5, n - 1)


def may_fall_off(x):
    if np.sum(x) > 0:
        return np.sum(x)


def bare_return(x):
    for i in range(3):
        if i > 1:
            return
    return np.sum(x)


def test_recursion_stays_a_located_refusal():
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(recursive_array)(np.ones(2), 3)
    assert "recurs" in str(e.value) and e.value.hint and "test_array_flow_control.py" in str(e.value)


def test_a_path_without_return_is_refused():
    refused(may_fall_off, [np.ones(2)], "if np.sum(x) > 0", s2sad.UnsupportedSyntaxError)


def test_a_bare_return_is_refused():
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(bare_return)(np.ones(2))
    assert "test_array_flow_control.py" in str(e.value) and e.value.hint
