"""@s2sad.differentiate on a method, and the derivatives of a decorated function given
to s2sad again.

- `m.loss(x)` for a decorated method raised Python's 'missing 1 required positional
  argument' (the decorated object was no descriptor: the instance was never passed);
  `m.loss.grad(x)` and `s2sad.grad(m.loss)` too. Now the method binds like a def's, and
  its derivatives are the bound method's (argnums counted after self, as grad(m.loss)).
- `s2sad.jacfwd(f.grad)` of a decorated f differentiated s2sad's own Differentiable.grad
  (an error located in s2sad/api.py); `f.grad` is now s2sad's grad of f itself."""
import gc
import weakref

import numpy as np
import pytest

import s2sad

X = np.array([0.5, 1.5, -0.3])


class Model:
    def __init__(self, w):
        self.w = w

    @s2sad.differentiate
    def loss(self, x):
        return np.sum(self.w * np.sin(x) * x)


@s2sad.differentiate
def f(x, k=2.0):
    return np.sum(np.sin(x) * x) * k


def dloss(x, w):
    return w * (np.cos(x) * x + np.sin(x))


def test_decorated_method_calls_and_differentiates_bound():
    w = np.array([1.0, 2.0, 3.0])
    m = Model(w)
    assert m.loss(X) == pytest.approx(np.sum(w * np.sin(X) * X), rel=1e-15)
    np.testing.assert_allclose(m.loss.grad(X), dloss(X, w), rtol=1e-13)
    v, g = m.loss.value_and_grad(X)
    assert v == pytest.approx(m.loss(X), rel=1e-15)
    np.testing.assert_allclose(g, dloss(X, w), rtol=1e-13)
    np.testing.assert_allclose(s2sad.grad(m.loss)(X), dloss(X, w), rtol=1e-13)
    np.testing.assert_allclose(s2sad.hessian(m.loss)(X),
                               np.diag(w * (2 * np.cos(X) - X * np.sin(X))), rtol=1e-12, atol=1e-14)
    m.w = 2 * w     # read at each call
    np.testing.assert_allclose(m.loss.grad(X), dloss(X, 2 * w), rtol=1e-13)


def test_decorated_method_read_from_the_class_is_the_function():
    m = Model(np.ones(3))
    assert Model.loss(m, X) == pytest.approx(m.loss(X), rel=1e-15)


def test_decorated_method_keeps_no_instance_alive():
    m = Model(np.ones(3))
    ref = weakref.ref(m)
    m.loss.grad(X)
    s2sad.grad(m.loss)(X)
    del m
    gc.collect()
    assert ref() is None


def test_derivatives_of_a_decorated_function_are_s2sads():
    want = np.diag(2.0 * (2 * np.cos(X) - X * np.sin(X)))
    np.testing.assert_allclose(s2sad.jacfwd(f.grad)(X), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s2sad.jacrev(f.grad)(X), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(f.grad(X, k=3.0), dloss(X, 3.0), rtol=1e-13)
    assert f.value_and_grad(X)[0] == pytest.approx(f(X), rel=1e-15)
