"""Forward over reverse for array programs: `s2sad.jvp(s2sad.grad(f), primals, tangents)`
(a Hessian-vector product) runs the adjoint program differentiated once more in forward
mode (passes/hvp_sweep.py). Checked against central differences of s2sad.grad along the
tangent, on the python and llvm backends, for an MLP and programs with matmul,
reductions, indexing, joins, loops with a tape and branches; and the bad inputs a user
may try, each a right answer or a located refusal.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from conftest import directional_fd

BACKENDS = ("python", "llvm")
RNG = np.random.default_rng(2024)


def _tangent(a, rng):
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return rng.normal(size=a.shape).astype(a.dtype)
    return rng.normal() if isinstance(a, float) else 0


# ------------------------------------------------------------------ programs


def mlp_tanh(W1, b1, W2, X, y):
    """The bench's two-layer MLP with tanh units."""
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_leaky(W1, b1, W2, X, y):
    """bench/arrays.py's MLP: leaky-ReLU by s2sad.broadcast."""
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def mlp_vector_out(W1, b1, w2, X, y):
    """One output as a vector: `h @ w2` (the adjoint of h an outer product, kept as factors)."""
    h = np.sin(X @ W1 + b1) * 0.5
    return np.sum((h @ w2 - y) ** 2)


def reductions(x, w):
    z = x @ w
    return np.max(z) + np.mean(np.sin(z)) + np.sum(np.min(z * z, axis=1)) + np.sum(np.max(z, axis=0) ** 2)


def indexing(x):
    return np.sum(x[1:, ::2] ** 3) + np.sum(np.exp(x[[0, 2, 0]])) * x[0, 1]


def joins(a, b):
    c = np.concatenate([a, b])
    return np.sum(np.outer(c, c) ** 2) + np.dot(a, b) ** 2 + np.sum(np.stack([a, b]).T.reshape(-1) * np.tile(a, 2))


def taped_loop(x, n):
    acc = 0.0
    y = x
    for i in range(n):
        y = np.sin(y) * x[i]
        acc = acc + np.sum(y * y)
        if i % 2 == 0:
            acc = acc * 1.5
    return acc


def nested_loops(x, W):
    s = 0.0
    for i in range(3):
        v = x
        for j in range(2):
            v = np.tanh(W @ v + 0.1 * i)
        s = s + np.sum(v ** 2)
    return s


def softmax_ce(W, X, Y):
    z = X @ W
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def rnn(W, U, xs):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def branchy(x):
    if np.sum(x) > 0:
        y = np.exp(x)
    else:
        y = x ** 3
    return np.sum(y * x)


def with_scalar(x, s):
    return np.sum(np.exp(s * x)) * s ** 2 + np.sum(x.T @ x)


n, d, hdim = 12, 4, 6
PROGRAMS = [
    (mlp_tanh, [RNG.normal(size=(d, hdim)), RNG.normal(size=hdim), RNG.normal(size=(hdim, 1)),
                RNG.normal(size=(n, d)), RNG.normal(size=(n, 1))], (0, 1, 2)),
    (mlp_leaky, [RNG.normal(size=(d, hdim)), RNG.normal(size=hdim), RNG.normal(size=(hdim, 1)),
                 RNG.normal(size=(n, d)), RNG.normal(size=(n, 1))], (0, 1, 2)),
    (mlp_tanh, [RNG.normal(size=(d, hdim)), RNG.normal(size=hdim), RNG.normal(size=(hdim, 3)),
                RNG.normal(size=(n, d)), RNG.normal(size=(n, 3))], (0, 1, 2)),
    (mlp_vector_out, [RNG.normal(size=(d, hdim)), RNG.normal(size=hdim), RNG.normal(size=hdim),
                      RNG.normal(size=(n, d)), RNG.normal(size=n)], (0, 1, 2)),
    (reductions, [RNG.normal(size=(4, 3)), RNG.normal(size=(3, 5))], (0, 1)),
    (indexing, [RNG.normal(size=(3, 4))], 0),
    (joins, [RNG.normal(size=3), RNG.normal(size=3)], (0, 1)),
    (taped_loop, [RNG.normal(size=5), 4], 0),
    (nested_loops, [RNG.normal(size=3), RNG.normal(size=(3, 3))], (0, 1)),
    (with_scalar, [RNG.normal(size=(3, 2)), 0.7], (0, 1)),
    (softmax_ce, [RNG.normal(size=(3, 4)), RNG.normal(size=(6, 3)), np.eye(4)[RNG.integers(0, 4, 6)]], 0),
    (rnn, [RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 2)), RNG.normal(size=(4, 2))], (0, 1)),
    (branchy, [np.abs(RNG.normal(size=4))], 0),
    (branchy, [-np.abs(RNG.normal(size=4))], 0),
]


@pytest.mark.parametrize("fn,args,argnums", PROGRAMS, ids=[f"{p[0].__name__}-{k}" for k, p in enumerate(PROGRAMS)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_hvp_matches_finite_differences_of_the_gradient(fn, args, argnums, backend):
    rng = np.random.default_rng(7)
    tans = [_tangent(a, rng) for a in args]
    G = s2sad.grad(fn, argnums=argnums, backend=backend)
    g, g_dot = s2sad.jvp(G, tuple(args), tuple(tans), backend=backend)
    want_g, want_dot = G(*args), directional_fd(G, args, tans)
    if not isinstance(argnums, tuple):
        g, g_dot, want_g, want_dot = (g,), (g_dot,), (want_g,), (want_dot,)
    for got, w, got_d, wd, i in zip(g, want_g, g_dot, want_dot, argnums if isinstance(argnums, tuple) else (argnums,)):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)
        assert np.shape(got_d) == np.shape(args[i]) and type(got_d) is type(w)
        np.testing.assert_allclose(got_d, wd, rtol=1e-5, atol=1e-6)


def test_the_hessian_of_a_quadratic_is_exact():
    """f(x) = x^T A x / 2 + b.x: H v = (A + A^T) v / 2, without differences."""
    A, b = RNG.normal(size=(4, 4)), RNG.normal(size=4)

    def quad(x):
        return 0.5 * (x @ (A @ x)) + np.sum(b * x)
    x, v = RNG.normal(size=4), RNG.normal(size=4)
    for backend in BACKENDS:
        g, hv = s2sad.jvp(s2sad.grad(quad), (x,), (v,), backend=backend)
        np.testing.assert_allclose(g, 0.5 * (A + A.T) @ x + b, rtol=1e-13)
        np.testing.assert_allclose(hv, 0.5 * (A + A.T) @ v, rtol=1e-13)


def test_value_and_grad_gives_the_tangent_of_both():
    fn, args, argnums = PROGRAMS[0]
    tans = [_tangent(a, np.random.default_rng(1)) for a in args]
    (value, grads), (value_dot, grad_dots) = s2sad.jvp(s2sad.value_and_grad(fn, argnums=argnums), tuple(args),
                                                       tuple(tans))
    assert value == pytest.approx(fn(*args), rel=1e-13)
    want_value_dot = s2sad.jvp(fn, tuple(args), tuple(tans))[1]
    assert isinstance(value_dot, float) and value_dot == pytest.approx(want_value_dot, rel=1e-12)
    g2, gd2 = s2sad.jvp(s2sad.grad(fn, argnums=argnums), tuple(args), tuple(tans))
    for a, b in zip(grad_dots, gd2):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_the_hvp_of_the_mlp_is_symmetric():
    """<u, H v> == <v, H u>: the Hessian of a C^2 loss is symmetric."""
    fn, args, _ = PROGRAMS[0]
    G = s2sad.grad(fn, argnums=0)
    u, v = RNG.normal(size=args[0].shape), RNG.normal(size=args[0].shape)
    zeros = [np.zeros_like(a) for a in args[1:]]
    hv = s2sad.jvp(G, tuple(args), (v, *zeros))[1]
    hu = s2sad.jvp(G, tuple(args), (u, *zeros))[1]
    assert np.sum(u * hv) == pytest.approx(np.sum(v * hu), rel=1e-10)


def test_source_shows_the_second_order_program():
    from s2sad.passes.array_jvp import tangent_plans
    from s2sad.plans import compiled
    fn, args, argnums = PROGRAMS[0]
    s2sad.jvp(s2sad.grad(fn, argnums=argnums), tuple(args), tuple(np.zeros_like(a) for a in args))
    text = tangent_plans(compiled(fn)).hvp_sweep((0, 1, 2, 3, 4), argnums)[0]
    assert "W1_bar_dot" in text and "seeded_tangent" in text and "jvp(" in text
    assert "# Grad of: h = np.tanh(X @ W1 + b1)" in text


# ------------------------------------------------------------------ bad input


def test_float32_stays_float32():
    fn, args, argnums = PROGRAMS[0]
    args32 = [a.astype(np.float32) for a in args]
    g, g_dot = s2sad.jvp(s2sad.grad(fn, argnums=argnums), tuple(args32), tuple(np.ones_like(a) for a in args32))
    assert all(x.dtype == np.float32 for x in g + g_dot)


def test_inputs_are_not_changed_and_outputs_do_not_alias():
    x = RNG.normal(size=(3, 4))
    keep = x.copy()
    v = np.zeros_like(x)
    g, g_dot = s2sad.jvp(s2sad.grad(lambda x: np.sum(x[0] * 2.0)), (x,), (v,))
    np.testing.assert_array_equal(x, keep)
    assert not np.shares_memory(g, g_dot)
    np.testing.assert_array_equal(g_dot, 0.0)


def test_a_tangent_of_the_wrong_shape_is_refused():
    with pytest.raises(s2sad.ShapeError) as err:
        s2sad.jvp(s2sad.grad(indexing), (np.ones((3, 4)),), (np.ones((4, 3)),))
    assert err.value.location is not None


def test_a_non_scalar_loss_is_refused():
    with pytest.raises(s2sad.NonScalarLossError) as err:
        s2sad.jvp(s2sad.grad(lambda x: x @ np.ones((2, 2))), (np.ones(2),), (np.ones(2),))
    assert err.value.location is not None


def prod_axis(x):
    return np.sum(np.sin(np.prod(x @ np.ones((3, 3)) * 0.5, axis=0))) + np.prod(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_through_its_own_second_order_rule(backend, zeros):
    """prod_bar's tangent (prod_bar_dot), exact with zeros in a product (none, one, two)."""
    x = RNG.normal(size=(4, 3))
    x.flat[[1, 7][:zeros]] = 0.0
    v = RNG.normal(size=x.shape)
    G = s2sad.grad(prod_axis, backend=backend)
    _, hv = s2sad.jvp(G, (x,), (v,), backend=backend)
    np.testing.assert_allclose(hv, directional_fd(G, [x], [v]), rtol=1e-6, atol=1e-7)


def test_a_primitive_without_a_second_order_rule_is_refused_naming_the_level(monkeypatch):
    from s2sad.passes import hvp_reverse
    monkeypatch.delitem(hvp_reverse.SECOND_ORDER, "max")
    with pytest.raises(s2sad.UnsupportedOperationError) as err:
        s2sad.jvp(s2sad.grad(lambda x: np.max(x @ np.ones((2, 2)))), (np.ones(2),), (np.ones(2),))
    e = err.value
    assert "forward over reverse" in e.message and "max" in e.message and e.location is not None


def my_cumsum(x):
    return np.cumsum(x)


s2sad.defvjp(my_cumsum, lambda g, out, x: np.cumsum(g[::-1])[::-1])


def test_a_defvjp_rule_is_refused():
    with pytest.raises(s2sad.UnsupportedOperationError) as err:
        s2sad.jvp(s2sad.grad(lambda x: np.sum(my_cumsum(x) ** 2)), (np.ones(3),), (np.ones(3),))
    assert "my_cumsum" in err.value.message and err.value.location is not None


def test_a_pullback_stays_refused_and_grad_of_grad_needs_a_scalar():
    _, pull = s2sad.vjp(lambda x: np.sum(x @ np.ones((2, 2))), np.ones(2))
    with pytest.raises(s2sad.HigherOrderNotSupportedError):
        s2sad.jvp(pull, (1.0,), (1.0,))
    # grad(f) of a vector is a vector: not a scalar loss for the outer grad (reverse over reverse)
    with pytest.raises(s2sad.NonScalarLossError):
        s2sad.grad(s2sad.grad(lambda x: np.sum(x @ np.ones((2, 2)))))(np.ones(2))


STATE = {"calls": 0.0}


def stateful(x):
    STATE["calls"] = STATE["calls"] + 1.0
    return np.sum(x * STATE["calls"])


def test_a_stateful_function_is_refused_naming_the_level():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.jvp(s2sad.grad(stateful), (np.ones(3),), (np.ones(3),))
    assert err.value.location is not None and "s2sad.grad(stateful)" in err.value.message


def test_int_arguments_and_argnums_subsets():
    def scaled(w, x, k):
        return np.sum(np.tanh(x @ w)) * k
    w, x = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3))
    tw, tx = RNG.normal(size=w.shape), RNG.normal(size=x.shape)
    G = s2sad.grad(scaled, argnums=0)
    g, g_dot = s2sad.jvp(G, (w, x, 3), (tw, tx, 0))
    np.testing.assert_allclose(g_dot, directional_fd(G, [w, x, 3], [tw, tx, 0]), rtol=1e-6, atol=1e-7)


def test_empty_and_zero_d():
    g, g_dot = s2sad.jvp(s2sad.grad(lambda x: np.sum(np.tanh(x) @ np.ones((0, 2)))), (np.ones((3, 0)),),
                         (np.ones((3, 0)),))
    assert g.shape == (3, 0) and g_dot.shape == (3, 0)
    x = np.array(0.3)
    g, g_dot = s2sad.jvp(s2sad.grad(lambda x: np.sum(np.sin(x) * np.reshape(x, (1,)))), (x,), (np.array(1.0),))
    assert g_dot == pytest.approx(2 * np.cos(0.3) - 0.3 * np.sin(0.3))


def test_nan_propagates_without_an_exception():
    x = np.array([1.0, np.nan])
    g, g_dot = s2sad.jvp(s2sad.grad(lambda x: np.sum((x @ np.ones((2, 2))) ** 2)), (x,), (np.ones(2),))
    assert np.isnan(g).all() and g_dot.shape == (2,)     # (NaN * 0 in the tangent: NaN, as JAX gives)
