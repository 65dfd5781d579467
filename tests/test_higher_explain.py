"""Issue 14: `s2sad.explain(hessian(f), x)`, `explain(jacfwd(f), x)`, `explain(jacrev(f), x)`
say which path each level took on the example arguments (s2sad/higher_explain.py): the
diagonal of an elementwise map, a batched sweep with its chunks, per column / per row and
why not batched (the statement, located), nested duals or forward over reverse for the
grad below.
"""
import math

import numpy as np
import pytest

import s2sad
from s2sad.small_jacobian import SmallJacobian
from s2sad import batched_rows

A = np.linspace(-1.0, 1.0, 16).reshape(4, 4)


def mlp(x):
    return np.tanh(A @ x)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def elementwise(x):
    return np.sin(x) * 2.0


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s * 1.1)
    return np.sum(s ** 2)


def looped_map(x):
    s = x * 1.0
    for _ in range(2):
        s = np.tanh(s * 1.1)
    return s[1:] * s[:-1]


def scalar(x):
    return math.sin(x) * x


X = np.linspace(0.1, 0.9, 4)


def text(wrapper, *args) -> str:
    return str(s2sad.explain(wrapper, *args))


def test_jacrev_of_an_array_program_batched_rows_with_chunks(monkeypatch):
    monkeypatch.setattr(SmallJacobian, "full", lambda self, args: None)     # (mlp is small: unrolled otherwise)
    t = text(s2sad.jacrev(mlp), X)
    assert "s2sad.explain: s2sad.jacrev(mlp) at (float64 (4,))" in t
    assert "level 1: s2sad.jacrev(mlp): batched sweep: every row from one pullback of batched cotangents" in t
    assert "1 sweep of 4 rows" in t and "level 0: mlp" in t
    monkeypatch.setattr(batched_rows, "BUDGET", 8)      # 8 // 16 (A's size): one row a pullback
    assert "4 sweeps of 1 row " in text(s2sad.jacrev(mlp), X)


def test_jacrev_per_row_says_why_not_batched():
    t = text(s2sad.jacrev(looped_map), X)
    assert "per row: one pullback per output element, not batched: a loop (" in t
    assert "test_higher_explain.py:" in t


def test_diagonal_of_an_elementwise_map():
    for make in (s2sad.jacfwd, s2sad.jacrev):
        t = text(make(elementwise), X)
        assert "diagonal: an elementwise map of the argument" in t, t


def test_jacfwd_batched_columns(monkeypatch):
    monkeypatch.setattr(SmallJacobian, "full", lambda self, args: None)     # (mlp is small: unrolled otherwise)
    assert "every column from one sweep whose tangents carry a leading batch axis" in text(s2sad.jacfwd(mlp), X)


def test_hessian_of_a_small_program_unrolled():
    t = text(s2sad.hessian(rosen), X)
    assert "level 1: s2sad.hessian(rosen) = jacfwd of s2sad.grad(rosen): unrolled: " in t
    assert "one call into machine code (small_hessian)" in t


def test_hessian_batched_forward_over_reverse_says_why_not_unrolled():
    big = np.linspace(0.1, 0.9, 100)        # more elements than a small program takes
    t = text(s2sad.hessian(rosen), big)
    assert "level 2: s2sad.hessian(rosen) = jacfwd of s2sad.grad(rosen): batched sweep" in t
    assert "1 sweep of 100 columns" in t and "; not unrolled: " in t
    assert "level 1: s2sad.grad(rosen): its adjoint program differentiated in forward mode with batched tangents" in t


def test_hessian_per_column_names_the_statement_and_the_level_below():
    t = text(s2sad.hessian(looped), X)
    assert "level 3: s2sad.hessian(looped) = jacfwd of s2sad.grad(looped), not batched: a loop (" in t
    assert "level 2: s2sad.jacfwd(s2sad.grad(looped)): per column: one jvp per input element (4)" in t
    assert "level 1: s2sad.grad(looped): each jvp is forward over reverse of its adjoint program" in t


def test_hessian_of_a_scalar_function_nested_duals():
    t = text(s2sad.hessian(scalar), 0.3)
    assert "not an array program" in t and "nested duals" in t
    assert "at (float)" in t


def test_without_example_arguments_the_last_call(monkeypatch):
    monkeypatch.setattr(SmallJacobian, "full", lambda self, args: None)     # (mlp is small: unrolled otherwise)
    jac = s2sad.jacrev(mlp)
    assert "not called yet" in text(jac)
    got = jac(X)
    t = text(jac)
    assert "(its last call)" in t and "batched sweep" in t
    np.testing.assert_array_equal(jac(X), got)     # explaining changes nothing


def test_plain_explain_unchanged_and_extra_arguments_refused():
    assert "route:" in str(s2sad.explain(rosen, 0))
    with pytest.raises(s2sad.S2SADError):
        s2sad.explain(rosen, 0, X)
