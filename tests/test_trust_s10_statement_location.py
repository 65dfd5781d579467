"""A shape numpy refuses while a derivative runs is a ShapeError located at the user's
STATEMENT that refused it (its file, line and source text), not at the function's def:
the generated programs tie each of their lines to the statement they run for
(passes/linemap), on grad / value_and_grad (first call and hot path), jvp, vjp, jvp of
a grad, and the Jacobian and Hessian wrappers."""

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad.errors import ShapeError
from s2sad.passes.linemap import LocatedLine, line_table, statement_at

A = np.ones((5, 7)) * 0.1


def two_steps(W, x):
    y = np.sin(x)
    h = W @ y
    return np.sum(np.tanh(h))


def map_two_steps(W, x):
    y = np.sin(x)
    h = W @ y
    return np.tanh(h)


def reads_global(x):
    u = np.cos(x)
    h = A @ u
    return np.sum(h * h)


def _check(e, fun, text):
    err = e.value
    assert isinstance(err, ShapeError), err
    assert err.location is not None
    assert err.location.filename == __file__
    assert err.location.lineno == line_of(fun, text), (str(err), line_of(fun, text))
    assert text in str(err)                         # the statement's source is shown
    assert fun.__name__ in str(err)


W_BAD, X_BAD = np.ones((5, 7)), np.ones(12)


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_grad_locates_the_product_first_call_and_hot_path(backend):
    g = s2sad.grad(two_steps, backend=backend)
    with pytest.raises(ShapeError) as e:
        g(W_BAD, X_BAD)
    _check(e, two_steps, "h = W @ y")
    W, x = np.ones((5, 7)) * 0.2, np.linspace(0, 1, 7)
    want = np.outer(1 - np.tanh(W @ np.sin(x)) ** 2, np.sin(x))
    for _ in range(4):                              # warm: the hot path answers
        np.testing.assert_allclose(g(W, x), want, rtol=1e-13)
    with pytest.raises(ShapeError) as e:
        g(W_BAD, X_BAD)
    _check(e, two_steps, "h = W @ y")


def test_value_and_grad_locates_it():
    with pytest.raises(ShapeError) as e:
        s2sad.value_and_grad(two_steps, argnums=(0, 1))(W_BAD, X_BAD)
    _check(e, two_steps, "h = W @ y")


def test_a_global_changed_under_a_warm_grad():
    global A
    g = s2sad.grad(reads_global)
    x = np.linspace(0, 1, 7)
    before = A
    try:
        for _ in range(3):
            g(x)
        A = np.ones((5, 12))
        with pytest.raises(ShapeError) as e:
            g(x)
        _check(e, reads_global, "h = A @ u")
    finally:
        A = before


@pytest.mark.parametrize("route", ["jvp", "vjp", "jvp of grad", "jacfwd", "jacrev", "hessian"])
def test_every_route_locates_the_statement(route):
    calls = {
        "jvp": (map_two_steps, lambda: s2sad.jvp(map_two_steps, (W_BAD, X_BAD), (W_BAD, X_BAD))),
        "vjp": (map_two_steps, lambda: s2sad.vjp(map_two_steps, W_BAD, X_BAD)),
        "jvp of grad": (two_steps, lambda: s2sad.jvp(s2sad.grad(two_steps), (W_BAD, X_BAD), (W_BAD, X_BAD))),
        "jacfwd": (map_two_steps, lambda: s2sad.jacfwd(map_two_steps, argnums=1)(W_BAD, X_BAD)),
        "jacrev": (map_two_steps, lambda: s2sad.jacrev(map_two_steps, argnums=1)(W_BAD, X_BAD)),
        "hessian": (two_steps, lambda: s2sad.hessian(two_steps, argnums=1)(W_BAD, X_BAD)),
    }
    fun, call = calls[route]
    with pytest.raises(ShapeError) as e:
        call()
    _check(e, fun, "h = W @ y")


def test_the_statement_not_the_first_nor_the_return():
    """Two products, the second refuses: the location is the second's line."""
    def two_products(W, V, x):
        a = W @ x
        b = V @ a
        return np.sum(np.sin(b))
    with pytest.raises(ShapeError) as e:
        s2sad.grad(two_products)(np.ones((5, 7)), np.ones((3, 4)), np.ones(7))
    _check(e, two_products, "b = V @ a")


def test_line_table_matches_in_order_and_skips_dropped_lines():
    loc = [s2sad.errors.SourceLocation("f.py", n, 4) for n in (3, 4, 5, 9)]
    located = [LocatedLine("    # x = 1", loc[0]), LocatedLine("    # gone", loc[1]),
               LocatedLine("    # x = 1", loc[2]), LocatedLine("    # y", loc[3])]
    text = "def f():\n    # x = 1\n    a = 1\n    # x = 1\n    b = 2\n    # y\n    c = 3"
    starts, locations = line_table(text, located)
    assert starts == [2, 4, 6]                      # the dropped one is skipped
    assert [l.lineno for l in locations] == [3, 5, 9]


def test_no_located_frame_gives_none():
    try:
        raise ValueError("x")
    except ValueError as e:
        assert statement_at(e.__traceback__) is None
