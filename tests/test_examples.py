"""The headline cases and the scalar language, on every backend, against analytic
derivatives and central finite differences."""
import math

import numpy as np
import pytest

import s2sad
from conftest import central_fd
from scalar_funcs import (guarded_sqrt, horner, ident_tanh, is_big, newton_sqrt, ops, softplus,
                          three, two_arg, user_rational, while_loop, with_lambda, early_return)

rng = np.random.default_rng(42)
X = rng.normal(size=7)


def loss_abs(x):
    return np.sum(np.abs(x))


def loss_cbrt(x):
    return np.sum(np.cbrt(x))


def loss_tanh(x):
    return np.sum(np.tanh(x))


def loss_ident_tanh(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def loss_gt(x):
    return np.sum(x > 0.1)


HEADLINE = [
    (loss_abs, lambda x: np.sign(x)),
    (loss_cbrt, lambda x: 1.0 / (3.0 * np.cbrt(x) ** 2)),
    (loss_tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    (loss_ident_tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    (loss_gt, lambda x: np.zeros_like(x)),
]


@pytest.mark.parametrize("loss,analytic", HEADLINE, ids=[h[0].__name__ for h in HEADLINE])
def test_headline_cases(loss, analytic, backend):
    value, g = s2sad.value_and_grad(loss, backend=backend)(X)
    np.testing.assert_allclose(g, analytic(X), rtol=1e-13, atol=1e-15)
    assert value == pytest.approx(float(loss(X)), rel=1e-13)
    assert g.shape == X.shape and g.dtype == X.dtype


def test_sum_of_bools_is_an_int_with_zero_gradient(backend):
    value, g = s2sad.value_and_grad(loss_gt, backend=backend)(X)
    assert value == int(np.sum(X > 0.1)) and isinstance(value, int)
    assert not g.any()


def loss_map(x):
    return sum(map(softplus, x))


def loss_listcomp(x):
    return sum([softplus(z) for z in x])


def loss_genexp(x):
    return sum(softplus(z) for z in x)


def loss_nparray_map(x):
    return np.sum(np.array(list(map(softplus, x))))


def loss_inline_lambda(x):
    return np.sum(s2sad.broadcast(lambda z: z * math.tanh(z), x))


@pytest.mark.parametrize("loss", [loss_map, loss_listcomp, loss_genexp, loss_nparray_map])
def test_map_and_comprehensions(loss, backend):
    g = s2sad.grad(loss, backend=backend)(X)
    np.testing.assert_allclose(g, 1.0 / (1.0 + np.exp(-X)), rtol=1e-13)


def test_inline_lambda(backend):
    g = s2sad.grad(loss_inline_lambda, backend=backend)(X)
    np.testing.assert_allclose(g, np.tanh(X) + X * (1 - np.tanh(X) ** 2), rtol=1e-13)


SCALAR_FUNCS = [softplus, newton_sqrt, horner, while_loop, early_return, ops, with_lambda, user_rational,
                guarded_sqrt]


@pytest.mark.parametrize("f", SCALAR_FUNCS, ids=[f.__name__ for f in SCALAR_FUNCS])
def test_scalar_language_against_finite_differences(f, backend):
    xs = np.array([0.3, 0.77, 1.4, 2.2, 3.1]) if f in (newton_sqrt, guarded_sqrt) else \
        np.array([-1.3, -0.45, 0.23, 0.61, 1.37, 1.9])

    def loss(x):
        return np.sum(s2sad.broadcast(f, x))

    def plain(x):
        return sum(f(float(z)) for z in x)

    value, g = s2sad.value_and_grad(loss, backend=backend)(xs)
    assert value == pytest.approx(plain(xs), rel=1e-12)
    np.testing.assert_allclose(g, central_fd(plain, [xs], 0), rtol=1e-6, atol=1e-7)


def test_scalar_function_of_a_float(backend):
    g = s2sad.grad(softplus, backend=backend)(0.5)
    assert isinstance(g, float)
    assert g == pytest.approx(1.0 / (1.0 + math.exp(-0.5)), rel=1e-14)
    value, (gx, gy) = s2sad.value_and_grad(two_arg, argnums=(0, 1), backend=backend)(0.7, -0.4)
    assert value == pytest.approx(two_arg(0.7, -0.4))
    assert gx == pytest.approx(math.exp(-0.16))
    assert gy == pytest.approx(0.7 * math.exp(-0.16) * 0.8 + 1.0)


def test_branch_is_per_element_control_flow(backend):
    def loss(x):
        return np.sum(s2sad.broadcast(guarded_sqrt, x))
    g = s2sad.grad(loss, backend=backend)(np.array([-1.0, 4.0]))
    assert g[0] == 0.0 and not np.isnan(g[0])
    assert g[1] == pytest.approx(0.25)


def loss_three(x, y, w):
    return np.sum(s2sad.broadcast(three, x, y, w))


def test_three_partials_with_broadcasting(backend):
    x = rng.normal(size=(3, 1))
    y = rng.normal(size=(1, 4))
    w = 0.35
    value, (gx, gy, gw) = s2sad.value_and_grad(loss_three, argnums=(0, 1, 2), backend=backend)(x, y, w)
    assert gx.shape == (3, 1) and gy.shape == (1, 4) and isinstance(gw, float)
    for i, g in enumerate((gx, gy, gw)):
        np.testing.assert_allclose(g, central_fd(lambda *a: float(np.sum(np.vectorize(three)(*a))), [x, y, w], i),
                                   rtol=1e-6, atol=1e-8)


def loss_xy(x, y):
    return np.sum(x * y)


def test_product_broadcast_gradients(backend):
    x = np.arange(1.0, 4.0).reshape(3, 1)
    y = np.arange(1.0, 5.0).reshape(1, 4)
    gx, gy = s2sad.grad(loss_xy, argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_array_equal(gx, np.full((3, 1), 10.0))
    np.testing.assert_array_equal(gy, np.full((1, 4), 6.0))


def test_higher_rank_broadcast(backend):
    x = rng.normal(size=(2, 3, 4))
    y = rng.normal(size=(3, 1))
    gx, gy = s2sad.grad(loss_xy, argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_allclose(gx, np.broadcast_to(y, x.shape), rtol=1e-15)
    np.testing.assert_allclose(gy, x.sum(axis=(0, 2)).reshape(3, 1), rtol=1e-13, atol=1e-14)


def loss_mean(x):
    return np.mean(np.tanh(x) ** 2)


def test_mean(backend):
    g = s2sad.grad(loss_mean, backend=backend)(X)
    t = np.tanh(X)
    np.testing.assert_allclose(g, 2 * t * (1 - t * t) / X.size, rtol=1e-13)


def test_float32(backend):
    x32 = X.astype(np.float32)
    g = s2sad.grad(loss_ident_tanh, backend=backend)(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 1 - np.tanh(x32.astype(float)) ** 2, rtol=1e-5)


def test_inputs_are_not_mutated(backend):
    x = X.copy()
    y = np.arange(1.0, 5.0).reshape(1, 4)
    s2sad.grad(loss_xy, argnums=(0, 1), backend=backend)(x.reshape(7, 1), y)
    s2sad.grad(loss_ident_tanh, backend=backend)(x)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(y, np.arange(1.0, 5.0).reshape(1, 4))


def test_non_contiguous_input(backend):
    big = rng.normal(size=(6, 8))
    view = big[::2, 1::3]
    g = s2sad.grad(loss_tanh, backend=backend)(view)
    np.testing.assert_allclose(g, 1 - np.tanh(view) ** 2, rtol=1e-13)


def test_jvp_and_vjp(backend):
    t = rng.normal(size=X.shape)
    out, out_dot = s2sad.jvp(loss_ident_tanh, (X,), (t,), backend=backend)
    assert out == pytest.approx(float(np.sum(np.tanh(X))))
    assert out_dot == pytest.approx(float(np.sum((1 - np.tanh(X) ** 2) * t)))
    out, pullback = s2sad.vjp(loss_ident_tanh, X, backend=backend)
    (xb,) = pullback(2.0)
    np.testing.assert_allclose(xb, 2.0 * (1 - np.tanh(X) ** 2), rtol=1e-13)


def elementwise_map(x, y):
    return s2sad.broadcast(two_arg, x, y)


def test_vjp_and_jvp_of_an_array_function(backend):
    x = rng.normal(size=(3, 4))
    y = rng.normal(size=(4,))
    out, pullback = s2sad.vjp(elementwise_map, x, y, backend=backend)
    np.testing.assert_allclose(out, np.vectorize(two_arg)(x, y), rtol=1e-14)
    ob = rng.normal(size=(3, 4))
    xb, yb = pullback(ob)
    np.testing.assert_allclose(xb, ob * np.exp(-y * y), rtol=1e-13)
    np.testing.assert_allclose(yb, np.sum(ob * (x * np.exp(-y * y) * -2 * y + 1), axis=0), rtol=1e-12)
    tx, ty = rng.normal(size=x.shape), rng.normal(size=y.shape)
    out2, od = s2sad.jvp(elementwise_map, (x, y), (tx, ty), backend=backend)
    np.testing.assert_allclose(od, np.exp(-y * y) * tx + (x * np.exp(-y * y) * -2 * y + 1) * ty, rtol=1e-12)


def test_broadcast_outside_differentiation(backend):
    x = rng.normal(size=(2, 5))
    np.testing.assert_allclose(s2sad.broadcast(softplus, x, backend=backend), np.vectorize(softplus)(x), rtol=1e-14)
    mask = s2sad.broadcast(is_big, x, backend=backend)
    assert mask.dtype == bool and (mask == (x > 0.1)).all()
    assert s2sad.broadcast(two_arg, 0.5, 0.25, backend=backend) == pytest.approx(two_arg(0.5, 0.25))


@s2sad.differentiate
def decorated(x):
    return np.sum(s2sad.broadcast(softplus, x))


@s2sad.differentiate(argnums=(0, 1), backend="python")
def decorated2(x, y):
    return np.sum(s2sad.broadcast(two_arg, x, y))


def test_differentiate_decorator():
    assert decorated(X) == pytest.approx(sum(softplus(z) for z in X))
    np.testing.assert_allclose(decorated.grad(X), 1 / (1 + np.exp(-X)), rtol=1e-13)
    v, g = decorated.value_and_grad(X)
    assert v == pytest.approx(decorated(X))
    assert "softplus" in str(decorated.explain()) and "dual" in str(decorated.explain())
    assert "def softplus__dual(z):" in decorated.source()
    gx, gy = decorated2.grad(X, X[::-1].copy())
    assert gx.shape == X.shape and gy.shape == X.shape
    assert s2sad.source(decorated) == decorated.source()


def test_source_and_explain_name_the_path():
    g = s2sad.grad(loss_ident_tanh)
    text = s2sad.source(g)
    assert "# Grad of: return np.sum(s2sad.broadcast(ident_tanh, x))" in text
    assert "def ident_tanh__dual(z):" in text
    report = str(s2sad.explain(loss_ident_tanh))
    assert "test_examples.py" in report and "dual" in report and "pure" in report
    assert "rule" in str(s2sad.explain(loss_tanh))


def test_backends_agree_to_1e13():
    xs = rng.normal(size=33)
    for loss in [loss_abs, loss_cbrt, loss_tanh, loss_ident_tanh, loss_map, loss_mean]:
        a = s2sad.grad(loss, backend="python")(xs)
        b = s2sad.grad(loss, backend="llvm")(xs)
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-300)
