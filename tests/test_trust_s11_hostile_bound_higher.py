"""Derivatives of derivatives of a bound method, a callable object or a
functools.partial: right numbers, as for the same function with the bound arguments
passed by hand (hessian(Big.loss, argnums=1)(b, x)). They were an ArgumentError that
said the user's call missed its own argument ('Big.loss() missing 1 required
positional argument: x'): the second-order paths bound the call's arguments to the
plain function without the instance (or the partial's arguments) first."""
import functools
import math

import numpy as np
import pytest

import s2sad
import s2sad.errors

X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, -0.5, 2.0])


class Model:
    def __init__(self, w, c):
        self.w, self.c = w, c

    def loss(self, x):
        return np.sum(self.w * x ** 2 * np.sin(x))

    def scalar(self, a):
        return math.sin(a * self.c) * a

    def __call__(self, x):
        return np.sum(self.w * np.cos(x) * x)


def loss_of(w, x):
    return np.sum(w * x ** 2 * np.sin(x))


def loss_of_x_first(x, w):
    return np.sum(w * x ** 2 * np.sin(x))


def scalar_of(c, a):
    return math.sin(a * c) * a


W = np.array([1.0, 2.0, 3.0])
M = Model(W, 2.0)


def hess_diag(x, w):
    """d2/dx2 of w x^2 sin x, elementwise (the Hessian of loss is diagonal)."""
    return w * (2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))


def call_hess_diag(x, w):
    """d2/dx2 of w x cos x."""
    return w * (-2 * np.sin(x) - x * np.cos(x))


FUNS = {
    "bound method": (M.loss, hess_diag),
    "callable object": (M, call_hess_diag),
    "partial": (functools.partial(loss_of, W), hess_diag),
    "partial keyword": (functools.partial(loss_of_x_first, w=W), hess_diag),
}


@pytest.mark.parametrize("kind", sorted(FUNS))
@pytest.mark.parametrize("how", ["hessian", "jacfwd_grad", "jacrev_grad"])
def test_second_order_matrices(kind, how):
    fun, want = FUNS[kind]
    make = {"hessian": lambda f: s2sad.hessian(f),
            "jacfwd_grad": lambda f: s2sad.jacfwd(s2sad.grad(f)),
            "jacrev_grad": lambda f: s2sad.jacrev(s2sad.grad(f))}[how]
    if kind == "partial keyword":
        got = make(fun)(x=X)
    else:
        got = make(fun)(X)
    np.testing.assert_allclose(got, np.diag(want(X, W)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(FUNS))
def test_hvp_and_jvp_of_grad(kind):
    fun, want = FUNS[kind]
    if kind == "partial keyword":
        pytest.skip("jvp and hvp take positional primals: the keyword is bound by the partial only")
    np.testing.assert_allclose(s2sad.hvp(fun, (X,), (V,)), want(X, W) * V, rtol=1e-12)
    g, g_dot = s2sad.jvp(s2sad.grad(fun), (X,), (V,))
    np.testing.assert_allclose(g, s2sad.grad(fun)(X), rtol=1e-12)
    np.testing.assert_allclose(g_dot, want(X, W) * V, rtol=1e-12)


@pytest.mark.parametrize("kind", ["bound method", "callable object", "partial"])
def test_vjp_of_grad(kind):
    fun, want = FUNS[kind]
    out, pullback = s2sad.vjp(s2sad.grad(fun), X)
    np.testing.assert_allclose(out, s2sad.grad(fun)(X), rtol=1e-12)
    (x_bar,) = pullback(V)
    np.testing.assert_allclose(x_bar, want(X, W) * V, rtol=1e-12)


def test_grad_of_grad_of_a_scalar_method():
    want = s2sad.grad(s2sad.grad(scalar_of, argnums=1), argnums=1)(2.0, 0.4)
    assert want == pytest.approx(-4 * math.sin(0.8) * 0.4 + 4 * math.cos(0.8), rel=1e-12)
    assert s2sad.grad(s2sad.grad(M.scalar))(0.4) == pytest.approx(want, rel=1e-12)
    assert s2sad.grad(s2sad.grad(functools.partial(scalar_of, 2.0)))(0.4) == pytest.approx(want, rel=1e-12)


THIRD_ORDER_OF_THE_METHOD = {
    "bound method": lambda: s2sad.grad(s2sad.grad(s2sad.grad(M.scalar)))(0.4),
    "instance passed": lambda: s2sad.grad(s2sad.grad(s2sad.grad(Model.scalar, argnums=1), argnums=1),
                                          argnums=1)(M, 0.4),
}


@pytest.mark.parametrize("kind", sorted(THIRD_ORDER_OF_THE_METHOD))
def test_third_order_of_a_scalar_method_is_refused_at_the_users_def(kind):
    """Third order through an object parameter: the array route has no forward-over-reverse
    rule for a grad call. Refused, located at Model.scalar's def, not at the caller s2sad
    generated for grad(grad(...)) (a file named '<s2sad: derivative ...>')."""
    with pytest.raises(s2sad.errors.HigherOrderNotSupportedError) as e:
        THIRD_ORDER_OF_THE_METHOD[kind]()
    err = e.value
    assert err.location is not None and err.location.filename == __file__
    assert err.location.lineno == Model.scalar.__code__.co_firstlineno
    assert "order 3" in err.message


def test_third_order_of_a_partial_is_right():
    want = s2sad.grad(s2sad.grad(s2sad.grad(scalar_of, argnums=1), argnums=1), argnums=1)(2.0, 0.4)
    # d3/da3 of sin(2a) a: -12 sin(2a) - 8 a cos(2a)
    assert want == pytest.approx(-12 * math.sin(0.8) - 8 * 0.4 * math.cos(0.8), rel=1e-12)
    assert s2sad.grad(s2sad.grad(s2sad.grad(functools.partial(scalar_of, 2.0))))(0.4) == pytest.approx(want, rel=1e-12)


def test_argnums_of_a_parameter_a_partial_binds_by_keyword_is_refused():
    """grad(partial(f, w=W))(x=X) with f(w, x): argnums 0 is w, bound data (it gave dL/dw)."""
    part = functools.partial(loss_of, w=W)
    for make in (lambda: s2sad.grad(part)(x=X), lambda: s2sad.value_and_grad(part)(x=X),
                 lambda: s2sad.hessian(part)(x=X), lambda: s2sad.grad(part, argnums=(0, 1))(x=X)):
        with pytest.raises(s2sad.errors.ArgumentError, match="binds by keyword") as e:
            make()
        assert e.value.location is not None and e.value.location.lineno == loss_of.__code__.co_firstlineno
    np.testing.assert_allclose(s2sad.grad(part, argnums=1)(x=X), 2 * W * X * np.sin(X) + W * X ** 2 * np.cos(X),
                               rtol=1e-12)


def test_a_changed_attribute_is_read_at_the_next_call():
    m = Model(W.copy(), 2.0)
    h = s2sad.hessian(m.loss)
    np.testing.assert_allclose(h(X), np.diag(hess_diag(X, W)), rtol=1e-12)
    m.w = 3 * W
    np.testing.assert_allclose(h(X), np.diag(hess_diag(X, 3 * W)), rtol=1e-12)


def test_no_instance_kept_alive():
    import gc
    import weakref
    m = Model(W.copy(), 2.0)
    ref = weakref.ref(m)
    s2sad.hessian(m.loss)(X)
    s2sad.hvp(m.loss, (X,), (V,))
    s2sad.jacfwd(s2sad.grad(m.loss))(X)
    s2sad.vjp(s2sad.grad(m.loss), X)[1](V)
    del m
    gc.collect()
    assert ref() is None
