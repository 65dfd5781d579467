"""Reverse over reverse (issue 14): a grad or value_and_grad s2sad made of an array
program, called inside another array program (array_prims/derivcall.py: forward = the
inner gradient's compiled call, VJP = the inner program's forward-over-reverse sweep).

Checked against central differences of s2sad's own first derivative, against
`hessian(f) @ v`, on the python and llvm backends, float64 and float32; and what a
hostile user tries: argnums=(0, 1), an integer data argument, the derivative called
twice, an outer argument the derivative does not see, the data differentiated (the
H_yx block), closures, state, keywords, wrong shapes, NaN, 0-d and empty arrays, a
third derivative (a located refusal).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad

from conftest import central_fd

BACKENDS = ("python", "llvm")
RNG = np.random.default_rng(14)
W0 = RNG.normal(size=3) * 0.5
X0 = RNG.normal(size=(5, 3))


def f(W, X):
    return np.sum(np.tanh(X @ W) ** 2)


g_python = s2sad.grad(f, backend="python")
g_llvm = s2sad.grad(f, backend="llvm")
G = {"python": g_python, "llvm": g_llvm}
G01 = s2sad.grad(f, argnums=(0, 1))
VG = s2sad.value_and_grad(f)


def squared_norm_of_grad_python(W, X):
    return np.sum(g_python(W, X) ** 2)


def squared_norm_of_grad_llvm(W, X):
    return np.sum(g_llvm(W, X) ** 2)


SQUARED = {"python": squared_norm_of_grad_python, "llvm": squared_norm_of_grad_llvm}


def _fd(fun, args, i, h=1e-6):
    return central_fd(fun, args, i, h)


# ------------------------------------------------------------------ the brief's compositions


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_of_a_loss_of_the_gradient_is_twice_the_hessian_times_it(backend):
    h = SQUARED[backend]
    got = s2sad.grad(h, backend=backend)(W0, X0)
    want = 2 * s2sad.hessian(f)(W0, X0) @ G["llvm"](W0, X0)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, _fd(h, [W0, X0], 0), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jacrev_and_jacobian_of_the_gradient_are_the_hessian(backend):
    H = s2sad.hessian(f, backend=backend)(W0, X0)
    np.testing.assert_allclose(s2sad.jacrev(G[backend], backend=backend)(W0, X0), H, rtol=1e-12)
    np.testing.assert_allclose(s2sad.jacobian(G[backend], backend=backend)(W0, X0), H, rtol=1e-12)
    # the H_yx block: the gradient in W differentiated in X, shape (3,) + (5, 3)
    block = s2sad.jacrev(G[backend], argnums=1, backend=backend)(W0, X0)
    assert block.shape == (3, 5, 3)
    for k in range(3):
        np.testing.assert_allclose(block[k], _fd(lambda W, X: G[backend](W, X)[k], [W0, X0], 1), rtol=1e-6,
                                   atol=1e-8)


def test_grad_of_the_sum_of_the_gradient_is_the_hessian_times_ones():
    got = s2sad.grad(lambda W, X: np.sum(g_llvm(W, X)))(W0, X0)
    np.testing.assert_allclose(got, s2sad.hessian(f)(W0, X0) @ np.ones(3), rtol=1e-12)


def test_value_and_grad_and_vjp_of_a_loss_calling_the_gradient():
    h = SQUARED["llvm"]
    v, g = s2sad.value_and_grad(h)(W0, X0)
    assert v == pytest.approx(h(W0, X0), rel=1e-14)
    out, pull = s2sad.vjp(h, W0, X0)
    gW, gX = pull(2.0)
    np.testing.assert_allclose(gW, 2 * g, rtol=1e-14)
    np.testing.assert_allclose(gX, 2 * _fd(h, [W0, X0], 1), rtol=1e-6)


def test_jvp_of_a_loss_calling_the_gradient():
    t = RNG.normal(size=3)
    _, dot = s2sad.jvp(SQUARED["llvm"], (W0, X0), (t, np.zeros_like(X0)))
    assert dot == pytest.approx(float(s2sad.grad(SQUARED["llvm"])(W0, X0) @ t), rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32(backend):
    W, X = W0.astype(np.float32), X0.astype(np.float32)
    got = s2sad.grad(SQUARED[backend], backend=backend)(W, X)
    assert got.dtype == np.float32
    want = 2 * s2sad.hessian(f)(W0, X0) @ G["llvm"](W0, X0)
    np.testing.assert_allclose(got, want, rtol=2e-4)


# ------------------------------------------------------------------ what a user may try


def loss_of_both_gradients(W, X):
    gW, gX = G01(W, X)
    return np.sum(gW ** 2) + np.sum(np.sin(gX))


def loss_of_value_and_gradient(W, X):
    v, g = VG(W, X)
    return v * np.sum(g * g) + VG(W, X)[1][0]


@pytest.mark.parametrize("loss", [loss_of_both_gradients, loss_of_value_and_gradient])
def test_tuple_outputs_argnums_0_1_and_value_and_grad(loss):
    gW, gX = s2sad.grad(loss, argnums=(0, 1))(W0, X0)
    np.testing.assert_allclose(gW, _fd(loss, [W0, X0], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gX, _fd(loss, [W0, X0], 1), rtol=1e-6, atol=1e-8)


def weighted(W, X, y):
    return np.sum((np.tanh(X @ W) - y) ** 2)


G_weighted = s2sad.grad(weighted)


def loss_with_int_data(W, X, y):
    return np.sum(G_weighted(W, X, y) ** 2)


def test_an_integer_data_argument():
    y = np.array([0, 1, 1, 0, 1])
    got = s2sad.grad(loss_with_int_data)(W0, X0, y)
    np.testing.assert_allclose(got, _fd(loss_with_int_data, [W0, X0, y], 0), rtol=1e-6)
    with pytest.raises(s2sad.NonDifferentiableInputError):
        s2sad.grad(loss_with_int_data, argnums=2)(W0, X0, y)


def called_twice(W, X):
    return np.sum(g_llvm(W, X) * g_llvm(2.0 * W, X))


def test_the_gradient_called_twice():
    np.testing.assert_allclose(s2sad.grad(called_twice)(W0, X0), _fd(called_twice, [W0, X0], 0), rtol=1e-6)


def unseen_argument(W, X, b):
    return np.sum(g_llvm(W, X) * b) + np.sum(b * b)


def test_an_argument_the_gradient_does_not_see():
    b = RNG.normal(size=3)
    gW, gb = s2sad.grad(unseen_argument, argnums=(0, 2))(W0, X0, b)
    np.testing.assert_allclose(gb, G["llvm"](W0, X0) + 2 * b, rtol=1e-14)
    np.testing.assert_allclose(gW, s2sad.hessian(f)(W0, X0) @ b, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_data_differentiated_the_H_yx_block(backend):
    h = SQUARED[backend]
    got = s2sad.grad(h, argnums=1, backend=backend)(W0, X0)
    np.testing.assert_allclose(got, _fd(h, [W0, X0], 1), rtol=1e-6, atol=1e-8)


def make_closure(X):
    return s2sad.grad(lambda W: np.sum(np.tanh(X @ W) ** 2))


def test_closures_over_data_of_the_same_code_each_read_their_own():
    X2 = X0 * 3.0
    for X in (X0, X2):
        g = make_closure(X)
        loss = lambda W: np.sum(g(W) ** 2)     # noqa: E731
        np.testing.assert_allclose(s2sad.grad(loss)(W0), _fd(loss, [W0], 0), rtol=1e-6)


def grad_made_inside(W, X):
    g = s2sad.grad(lambda w: np.sum(np.tanh(X @ w)))
    return np.sum(g(W))


def test_a_gradient_made_inside_the_loss_is_refused_located():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(grad_made_inside)(W0, X0)
    assert err.value.location is not None and err.value.location.lineno == grad_made_inside.__code__.co_firstlineno + 1


STATE = [0.0]


def counting(x):
    STATE[0] += x
    return STATE[0] * x


def scan_loss(v):
    return np.sum(s2sad.broadcast(counting, v) * v)


G_scan = s2sad.grad(scan_loss)


def loss_of_a_scan_gradient(v, X):
    return np.sum((X @ G_scan(v)) ** 2)


def test_the_gradient_of_a_stateful_scan_stays_refused_naming_the_level():
    before = list(STATE)
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
        s2sad.grad(loss_of_a_scan_gradient)(W0, X0)
    e = err.value
    assert "s2sad.grad(scan_loss)" in e.message and e.location is not None
    assert STATE == before      # nothing ran


def keyword_call(W, X):
    return np.sum(g_llvm(W, X=X))


def too_few(W, X):
    return np.sum(g_llvm(W))


@pytest.mark.parametrize("loss, what", [(keyword_call, "keyword"), (too_few, "1 argument")])
def test_calls_it_cannot_take_are_refused_at_the_call(loss, what):
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
        s2sad.grad(loss)(W0, X0)
    e = err.value
    assert what in e.message and "s2sad.grad(f)" in e.message
    assert e.location.lineno == loss.__code__.co_firstlineno + 1


def test_wrong_shapes_are_the_inner_programs_error():
    with pytest.raises((s2sad.S2SADError, ValueError)):
        s2sad.grad(SQUARED["llvm"])(np.ones(4), X0)


def test_inputs_are_not_mutated_and_nan_propagates():
    W, X = W0.copy(), X0.copy()
    s2sad.grad(SQUARED["llvm"], argnums=(0, 1))(W, X)
    assert np.array_equal(W, W0) and np.array_equal(X, X0)
    Wn = W0.copy()
    Wn[1] = np.nan
    assert np.isnan(s2sad.grad(SQUARED["llvm"])(Wn, X0)).all()


def zero_d(x):
    return np.sum(np.sin(x) * np.reshape(x, (1,)))


G_zero_d = s2sad.grad(zero_d)


def test_zero_d_and_empty():
    x = np.array(0.3)
    got = s2sad.grad(lambda x: G_zero_d(x) ** 2)(x)
    g = 2 * np.cos(0.3) * 0 + np.sin(0.3) + 0.3 * np.cos(0.3)          # d/dx (x sin x)
    g2 = 2 * np.cos(0.3) - 0.3 * np.sin(0.3)
    assert float(got) == pytest.approx(2 * g * g2, rel=1e-13)
    empty = s2sad.grad(SQUARED["llvm"])(W0, np.ones((0, 3)))
    assert empty.shape == (3,) and not empty.any()


def test_a_third_derivative_is_a_located_refusal():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.hessian(SQUARED["llvm"])(W0, X0)
    assert err.value.location is not None


def test_explain_says_the_inner_levels_path():
    text = str(s2sad.explain(s2sad.grad(SQUARED["llvm"])))
    assert "s2sad.grad(f)" in text and "forward over reverse" in text


# ------------------------------------------------------------------ loops whose count is known by running them


def while_loss(w, X):
    h = X @ w
    k = 0
    while np.sum(h * h) > 1.0 and k < 20:
        h = 0.8 * h + 0.01 * np.tanh(h)
        k += 1
    return np.sum(np.sin(h))


def break_loss(w, X):
    h = X @ w
    for i in range(10):
        h = np.tanh(h) + 0.5 * h
        if np.sum(h) > -7.2:     # (the 6th iteration here)
            break
    return np.sum(h ** 2)


G_while, G_break = s2sad.grad(while_loss), s2sad.grad(break_loss)


def loss_of_while_gradient(w, X):
    return np.sum(G_while(w, X) ** 2)


def loss_of_break_gradient(w, X):
    return np.sum(G_break(w, X) ** 2)


@pytest.mark.parametrize("loss", [while_loss, break_loss])
@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_mode_and_forward_over_reverse_through_while_and_break(loss, backend):
    w, X, t = W0 * 3.0, X0, RNG.normal(size=3)
    _, dot = s2sad.jvp(loss, (w, X), (t, np.zeros_like(X)), backend=backend)
    h = 1e-6
    assert dot == pytest.approx((loss(w + h * t, X) - loss(w - h * t, X)) / (2 * h), rel=1e-6)
    g = s2sad.grad(loss, backend=backend)
    _, hv = s2sad.jvp(g, (w, X), (t, np.zeros_like(X)), backend=backend)
    np.testing.assert_allclose(hv, (g(w + h * t, X) - g(w - h * t, X)) / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss", [loss_of_while_gradient, loss_of_break_gradient])
def test_a_loss_of_a_loops_gradient(loss):
    w = W0 * 3.0
    np.testing.assert_allclose(s2sad.grad(loss)(w, X0), _fd(loss, [w, X0], 0), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ in-place writes and lists grown in loops


def writes_loss(w, X):
    h = X @ w
    y = np.zeros(6)
    y[1:] = np.tanh(h)
    y[0] = h[0] * h[1]
    y[[1, 2, 1]] += h[:3] ** 2          # repeated indices: numpy keeps one
    return np.sum(y * y)


def list_loss(w, X):
    h = X @ w
    hs = []
    k = 0
    while k < 3:
        h = np.tanh(h) * w[0]
        hs.append(h)
        k += 1
    return np.sum(np.stack(hs) ** 2)


def int_write_loss(w, X):
    h = X @ w
    y = np.zeros(5, dtype=int)
    y[0] = h[0]
    return np.sum(y * h)


@pytest.mark.parametrize("loss", [writes_loss, list_loss])
@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_and_lists_in_forward_mode_forward_over_reverse_and_reverse_over_reverse(loss, backend):
    t, h = RNG.normal(size=3), 1e-6
    _, dot = s2sad.jvp(loss, (W0, X0), (t, np.zeros_like(X0)), backend=backend)
    assert dot == pytest.approx((loss(W0 + h * t, X0) - loss(W0 - h * t, X0)) / (2 * h), rel=1e-6)
    g = s2sad.grad(loss, backend=backend)
    _, hv = s2sad.jvp(g, (W0, X0), (t, np.zeros_like(X0)), backend=backend)
    np.testing.assert_allclose(hv, (g(W0 + h * t, X0) - g(W0 - h * t, X0)) / (2 * h), rtol=1e-6, atol=1e-8)
    outer = lambda w, X: np.sum(g(w, X) ** 2)     # noqa: E731
    np.testing.assert_allclose(s2sad.grad(outer, backend=backend)(W0, X0), _fd(outer, [W0, X0], 0), rtol=1e-6)


def test_a_differentiated_value_written_into_an_int_array_is_refused_in_forward_mode():
    with pytest.raises(s2sad.UnsupportedOperationError) as err:
        s2sad.jvp(int_write_loss, (W0, X0), (W0, X0))
    assert "truncates" in err.value.message
    assert err.value.location.lineno == int_write_loss.__code__.co_firstlineno + 3


def test_the_plan_keeps_no_gradient_alive_and_follows_a_rebound_name():
    import gc
    import weakref

    def run(scale):
        def inner(W, X):
            return np.sum(np.tanh(X @ W) ** 2) * scale
        g = s2sad.grad(inner)
        outer = lambda W, X: np.sum(g(W, X) ** 2)     # noqa: E731
        got = s2sad.grad(outer)(W0, X0)
        np.testing.assert_allclose(got, _fd(outer, [W0, X0], 0), rtol=1e-6)
        return weakref.ref(inner), weakref.ref(g)

    refs = run(1.0) + run(2.0)      # the second closure of the same code: its own g, its own scale
    gc.collect()
    assert all(r() is None for r in refs)


def unrolled_descent(W, X):
    """Three gradient steps, then a loss of where they end: differentiated through the steps."""
    for i in range(3):
        W = W - 0.1 * g_llvm(W, X)
    return np.sum(W ** 2)


def twice_in_a_helper(W, X):
    return g_llvm(W, X) * 2.0


def loss_through_a_helper_and_a_branch(W, X):
    if np.sum(W) > -10.0:
        return np.sum(twice_in_a_helper(W, X) ** 2)
    return np.sum(W)


@pytest.mark.parametrize("loss", [unrolled_descent, loss_through_a_helper_and_a_branch])
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_gradient_called_in_a_loop_a_helper_and_a_branch(loss, backend):
    got = s2sad.grad(loss, argnums=(0, 1), backend=backend)(W0, X0)
    for i in range(2):
        np.testing.assert_allclose(got[i], _fd(loss, [W0, X0], i), rtol=1e-6, atol=1e-8)


def calls_its_own_gradient(W, X):
    return np.sum(np.tanh(X @ W)) + np.sum(G_self(W, X) ** 2)


G_self = s2sad.grad(calls_its_own_gradient)


def test_a_function_calling_its_own_gradient_is_refused_located():
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
        G_self(W0, X0)
    assert "recursion" in err.value.message and "calls_its_own_gradient" in err.value.message
    assert err.value.location.lineno == calls_its_own_gradient.__code__.co_firstlineno + 1
