"""Forward over reverse runs each product beside its tangent as one call that may run
them side by side (passes/paired_products.py joins the lines, twocalls.both runs them),
and hvp_columns' two kernel passes likewise (twocalls.two_calls). The numbers must not
depend on it: the results are bit for bit those of the calls one after the other, on
one thread or two, and right against central differences of the gradient.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import s2sad
from s2sad import array_higher, threads, twocalls
from s2sad.passes.emitted import ProductCall, product_line
from s2sad.passes.paired_products import pair_products


def leaky(z):
    return z if z > 0 else 0.01 * z


def mlp_leaky(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def mlp_tanh(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def _problem(n=3000, d=8, k=16, seed=0):
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=(d, k)) / 3, rng.normal(size=(1, k)) * 0.1, rng.normal(size=(k, 1)) / 4,
            rng.normal(size=(n, d)), rng.normal(size=(n, 1)))
    tans = tuple(rng.normal(size=a.shape) for a in args[:3]) + (np.zeros((n, d)), np.zeros((n, 1)))
    return args, tans


# ---------------------------------------------------------------- the lines joined

def _p(target, helper, *operands, ind="    "):
    """A product's line as the sweeps write it: recorded (passes/emitted.py)."""
    return product_line(ind, target, ProductCall(helper, operands))


def test_a_product_and_its_tangent_are_joined():
    got = pair_products([_p("_1", "matmul", "X", "W1"), _p("_1_dot", "matmul", "X", "W1_dot")])
    assert got == ["    _1, _1_dot = both(matmul, (X, W1), (X, W1_dot))"]


def test_adjoints_of_the_right_factor_are_joined_inside_a_loop_too():
    got = pair_products([_p("a", "matmul_rhs_bar", "g", "X", "W", ind=" " * 8),
                         _p("a_dot", "matmul_rhs_bar", "g_dot", "X", "W", ind=" " * 8)])
    assert got == ["        a, a_dot = both(matmul_rhs_bar, (g, X, W), (g_dot, X, W))"]


@pytest.mark.parametrize("lines", [
    [_p("a", "matmul", "X", "W"), _p("b", "matmul", "a", "V")],            # the second reads the first's result
    [_p("a", "matmul", "X", "W"), _p("a", "matmul", "X", "V")],            # one target
    [_p("a", "matmul", "X", "W"), _p("b", "dot", "X", "V")],               # two helpers
    [_p("a", "matmul", "X", "W"), _p("b", "matmul", "X", "V", ind=" " * 8)],        # two blocks
    [_p("a", "matmul", "f(X)", "W"), _p("b", "matmul", "X", "V")],         # an argument that calls
    [_p("a", "matmul", "X", "W"), _p("b", "matmul", "X + 1", "V")],        # an operator (may run user code)
    [_p("a", "unbroadcast", "X", "W"), _p("b", "unbroadcast", "X", "V")],  # not a product
    [_p("a", "matmul", "X", "W"), "    # a comment", _p("b", "matmul", "X", "V")],
    # lines written as text, whatever they read like (no record: passes/emitted.py)
    ["    a = matmul(X, W)", "    b = matmul(X, V)"],
    [_p("a", "matmul", "X", "W"), "    b = matmul(X, V)"],
    ["    a = matmul(X, W, backend='llvm')", "    b = matmul(X, V)"],
    ["    a = matmul(*XW)", "    b = matmul(X, V)"],
    ["    a, c = matmul(X, W)", "    b = matmul(X, V)"],
])
def test_what_is_not_joined(lines):
    assert pair_products(lines) == lines


def test_three_products_in_a_row_join_the_first_two():
    lines = [_p("a", "matmul", "X", "W"), _p("b", "matmul", "X", "V"), _p("c", "matmul", "X", "U")]
    assert pair_products(lines) == ["    a, b = both(matmul, (X, W), (X, V))", "    c = matmul(X, U)"]


def test_the_second_may_rebind_what_the_first_reads():
    # (the arguments are all evaluated before either call: the old y, as before)
    got = pair_products([_p("x", "matmul", "y", "W"), _p("y", "matmul", "X", "V")])
    assert got == ["    x, y = both(matmul, (y, W), (X, V))"]


def test_the_hvp_source_joins_the_products_with_X():
    src = array_higher.hvp_source(mlp_leaky, (0, 1, 2))
    assert "_1, _1_dot = both(matmul, (X, W1), (X, W1_dot))" in src
    assert "W1_bar, W1_bar_dot = both(matmul_rhs_bar, (_1_bar, X, W1), (_1_bar_dot, X, W1))" in src


# ---------------------------------------------------------------- running them

def test_both_gives_the_two_calls_results_on_any_count(monkeypatch):
    rng = np.random.default_rng(1)
    X, W, V = rng.normal(size=(5000, 32)), rng.normal(size=(32, 64)), rng.normal(size=(32, 64))
    from s2sad.gemm import matmul
    want = (matmul(X, W), matmul(X, V))
    for count in ("1", "2", "1", "2"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", count)
        got = twocalls.both(matmul, (X, W), (X, V))
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_side_by_side_each_call_runs_on_one_thread(monkeypatch):
    seen = []

    def call(tag):
        seen.append((tag, threads.forced_threads()))
        return tag

    a = np.zeros(10)
    kind = ("test side by side", object())
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    assert twocalls.two_calls(kind, lambda: call(0), lambda: call(1), a.size) == (0, 1)
    assert seen == [(0, 2), (1, 2)]          # the first call: one after the other, as they are
    seen.clear()
    assert twocalls.two_calls(kind, lambda: call(0), lambda: call(1), a.size) == (0, 1)
    assert sorted(seen) == [(0, 1), (1, 1)]  # then side by side, each alone on its thread
    assert threads.forced_threads() == 2     # (the caller's count is left as it was)


def test_the_first_calls_exception_is_raised_where_both_raise(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    kind = ("test errors", object())

    def bad(e):
        raise e

    for _ in range(3):
        with pytest.raises(KeyError):
            twocalls.two_calls(kind, lambda: bad(KeyError("first")), lambda: bad(ValueError("second")), 10)
    with pytest.raises(ValueError):
        twocalls.two_calls(kind, lambda: 1, lambda: bad(ValueError("second")), 10)


def test_other_arguments_than_arrays_and_scalars_run_one_after_the_other(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    where = []

    def f(tag, _):
        where.append(threading.get_ident())
        return tag

    for _ in range(3):
        assert twocalls.both(f, ("a", [1]), ("b", [2])) == ("a", "b")
    assert set(where) == {threading.get_ident()}


def test_a_pool_thread_allocates_from_the_callers_memory_handler(monkeypatch):
    # numpy's memory handler is a context variable: the side-by-side call runs in a copy
    # of the caller's context, so what a pool thread makes inside an s2sad call's scope
    # comes from s2sad's pool too
    from s2sad import mempool
    if not mempool.stats()["on"]:
        pytest.skip("s2sad's memory pool is off here")
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    kind = ("test handler", object())
    names, idents = [], set()
    meet = threading.Barrier(2, timeout=10)

    def make():
        meet.wait()             # side by side: each call waits for the other, on another thread
        a = np.empty(1 << 16)
        names.append(np._core.multiarray.get_handler_name(a))
        idents.add(threading.get_ident())
        return a

    with mempool.scope():
        twocalls.two_calls(kind, lambda: None, lambda: None, 4)     # (its first call: one after the other)
        for _ in range(3):
            twocalls.two_calls(kind, make, make, 4)
    # (at least two threads: the pool may have grown beyond one worker in an earlier test)
    assert len(idents) >= 2 and len(names) == 6 and set(names) == {mempool.NAME.decode()}


# ---------------------------------------------------------------- the hvp, side by side or not

@pytest.mark.parametrize("loss", [mlp_leaky, mlp_tanh])
def test_the_hvp_is_the_same_bits_on_one_thread_and_two(monkeypatch, loss):
    args, tans = _problem()
    g = s2sad.grad(loss, argnums=(0, 1, 2))
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    want = s2sad.jvp(g, args, tans)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    for _ in range(3):          # the first call of each pair runs them one after the other
        got = s2sad.jvp(g, args, tans)
        for gs, ws in zip(got, want):
            assert all(np.array_equal(a, b) for a, b in zip(gs, ws))


@pytest.mark.parametrize("loss", [mlp_leaky, mlp_tanh])
def test_the_hvp_side_by_side_against_central_differences(monkeypatch, loss):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    args, tans = _problem(n=400, seed=3)
    g = s2sad.grad(loss, argnums=(0, 1, 2))
    for _ in range(2):
        (_, hv) = s2sad.jvp(g, args, tans)
    h = 1e-6
    plus = g(*[a + h * t for a, t in zip(args, tans)])
    minus = g(*[a - h * t for a, t in zip(args, tans)])
    for got, p, m in zip(hv, plus, minus):
        want = (p - m) / (2 * h)
        assert np.max(np.abs(got - want)) <= 1e-5 * (1.0 + np.max(np.abs(want)))


def test_the_hvp_side_by_side_on_the_python_backend_agrees(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    args, tans = _problem(n=300, seed=4)
    llvm = s2sad.grad(mlp_leaky, argnums=(0, 1, 2))
    py = s2sad.grad(mlp_leaky, argnums=(0, 1, 2), backend="python")
    for _ in range(2):
        a = s2sad.jvp(llvm, args, tans)[1]
        b = s2sad.jvp(py, args, tans)[1]
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
