"""Bound callables whose state changes between calls of one derivative (session 12,
hostile pass).

Python's functools.partial reads its `keywords` dict at each call, and Python looks an
object's `__call__` up on its class at each call. s2sad copied the partial's keywords
when the derivative was made and kept the class's `__call__` of that moment: after
`p.keywords["c"] = 5.0`, grad(p) and hessian(p) kept answering for the old c, and after
`C.__call__ = other` grad(obj) kept differentiating the old method (silent wrong
numbers). Now the keywords are read at each call (checked against argnums each time) and
a changed `__call__` is a located StaleSourceError; each answer is checked against the
analytic derivative of what the callable computes now.
"""
import functools

import numpy as np
import pytest

import s2sad

X = np.linspace(0.1, 1.0, 4)
W = np.array([1.0, 2.0, 3.0, 4.0])


def scaled_sines(x, w, c=1.0):
    return np.sum(np.sin(x * w) * c)


def grad_x(x, w, c=1.0):
    return np.cos(x * w) * w * c


def hessian_x(x, w, c=1.0):
    return np.diag(-np.sin(x * w) * w * w * c)


def test_a_partials_keywords_set_after_the_grad_was_made():
    p = functools.partial(scaled_sines, w=W.copy(), c=2.0)
    g, vg = s2sad.grad(p), s2sad.value_and_grad(p)
    np.testing.assert_allclose(g(X), grad_x(X, W, 2.0), rtol=1e-12)
    p.keywords["c"] = 5.0
    np.testing.assert_allclose(g(X), grad_x(X, W, 5.0), rtol=1e-12)
    p.keywords["w"] = 2 * W
    value, gv = vg(X)
    assert value == pytest.approx(p(X), rel=1e-14)
    np.testing.assert_allclose(gv, grad_x(X, 2 * W, 5.0), rtol=1e-12)
    p.keywords["w"][:] = 7.0       # the bound array written in place: read at the call
    np.testing.assert_allclose(g(X), grad_x(X, np.full(4, 7.0), 5.0), rtol=1e-12)


@pytest.mark.parametrize("wrapper", ["hessian", "jacfwd of grad", "jacrev of grad"])
def test_second_order_of_a_partial_follows_its_keywords(wrapper):
    p = functools.partial(scaled_sines, w=W.copy(), c=2.0)
    make = {"hessian": lambda: s2sad.hessian(p), "jacfwd of grad": lambda: s2sad.jacfwd(s2sad.grad(p)),
            "jacrev of grad": lambda: s2sad.jacrev(s2sad.grad(p))}[wrapper]
    H = make()
    np.testing.assert_allclose(H(X), hessian_x(X, W, 2.0), rtol=1e-10, atol=1e-14)
    p.keywords["c"] = -3.0
    np.testing.assert_allclose(H(X), hessian_x(X, W, -3.0), rtol=1e-10, atol=1e-14)


def test_a_keyword_added_for_a_differentiated_parameter_is_refused():
    p = functools.partial(scaled_sines, c=2.0)
    g = s2sad.grad(p, argnums=1)        # w, given at the call
    np.testing.assert_allclose(g(X, W), np.cos(X * W) * X * 2.0, rtol=1e-12)
    p.keywords["w"] = W
    with pytest.raises(s2sad.errors.ArgumentError, match="binds by keyword"):
        g(X)
    q = functools.partial(scaled_sines, c=2.0)
    H = s2sad.hessian(q, argnums=1)
    np.testing.assert_allclose(H(X, W), np.diag(-np.sin(X * W) * X * X * 2.0), rtol=1e-10, atol=1e-14)
    q.keywords["w"] = W
    with pytest.raises(s2sad.errors.ArgumentError, match="binds by keyword"):
        H(X)


class Sines:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.sum(np.sin(x * self.w))


def cosines(self, x):
    return np.sum(np.cos(x * self.w))


class Cosines(Sines):
    __call__ = cosines


ENTRIES = {
    "grad": lambda o: s2sad.grad(o),
    "value_and_grad": lambda o: s2sad.value_and_grad(o),
    "hessian": lambda o: s2sad.hessian(o),
    "jacfwd": lambda o: s2sad.jacfwd(o),
    "jvp of grad": lambda o: (lambda x, g=s2sad.grad(o): s2sad.jvp(g, (x,), (np.ones_like(x),))),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("how", ["class attribute", "object's class"])
def test_a_call_method_changed_after_the_derivative_was_made_is_right_or_refused(entry, how, monkeypatch):
    o = Sines(W.copy())
    d = ENTRIES[entry](o)
    d(X)        # made and answered for Sines.__call__
    if how == "class attribute":
        monkeypatch.setattr(Sines, "__call__", cosines)
    else:
        o.__class__ = Cosines
    try:
        got = d(X)
    except s2sad.StaleSourceError as e:
        assert "__call__" in str(e) and "again" in e.hint
        assert e.location.lineno == cosines.__code__.co_firstlineno
        return
    assert entry == "jacfwd"        # (its paths take the callable anew at each call)
    np.testing.assert_allclose(got, -np.sin(X * W) * W, rtol=1e-12)


def test_an_unchanged_object_keeps_its_derivative_and_reads_its_attributes():
    o = Sines(W.copy())
    g, H = s2sad.grad(o), s2sad.hessian(o)
    for w in (W, 3 * W):
        o.w = w
        np.testing.assert_allclose(g(X), grad_x(X, w), rtol=1e-12)
        np.testing.assert_allclose(H(X), hessian_x(X, w), rtol=1e-10, atol=1e-14)
