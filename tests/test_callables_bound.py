"""Issue 15, callables: bound methods (`grad(model.loss)`), objects with `__call__`,
functools.partial, dataclass methods and keyword arguments. The instance's attributes
and a partial's bound arguments are data, read at each call (a changed attribute is
never the stale one); s2sad keeps no instance alive. Gradients against central
differences on every backend."""
import dataclasses
import functools
import gc
import weakref

import numpy as np
import pytest

import s2sad
from conftest import central_fd

rng = np.random.default_rng(7)
W = rng.normal(size=(3, 4))
B = rng.normal(size=3)
X = rng.normal(size=4)


class Model:
    def __init__(self, W, b, scale=2.0):
        self.W, self.b, self.scale = W, b, scale

    def loss(self, x):
        return np.sum((self.W @ x + self.b) ** 2) * self.scale

    def calls_another(self, x):
        return self.loss(x)

    def __call__(self, x):
        return np.sum(np.tanh(self.W @ x))


def model_loss(m, x):
    return np.sum((m.W @ x + m.b) ** 2) * m.scale


@dataclasses.dataclass
class Linear:
    W: np.ndarray
    b: np.ndarray

    def loss(self, x):
        return np.sum(np.sin(self.W @ x + self.b))


def linear_loss(m, x):
    return np.sum(np.sin(m.W @ x + m.b))


def test_a_bound_method_reads_its_instance_as_data(backend):
    m = Model(W, B)
    g = s2sad.grad(m.loss, backend=backend)
    np.testing.assert_allclose(g(X), central_fd(m.loss, (X,), 0), rtol=1e-6)
    value, gx = s2sad.value_and_grad(m.loss, backend=backend)(X)
    assert value == pytest.approx(m.loss(X), rel=1e-12)
    np.testing.assert_allclose(gx, g(X), rtol=1e-12)


def test_a_changed_attribute_is_read_anew_never_stale(backend):
    m = Model(W, B)
    g = s2sad.grad(m.loss, backend=backend)
    first = g(X)
    m.W = W * 3.0                 # a new array
    np.testing.assert_allclose(g(X), central_fd(m.loss, (X,), 0), rtol=1e-6)
    assert not np.allclose(g(X), first)
    m.scale = 0.5                 # a new number
    np.testing.assert_allclose(g(X), central_fd(m.loss, (X,), 0), rtol=1e-6)
    m.b = 1.5                     # an array that became a float
    np.testing.assert_allclose(g(X), central_fd(m.loss, (X,), 0), rtol=1e-6)
    del m.b                       # gone: located, as Python would fail
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="no attribute 'b'") as err:
        g(X)
    assert "self.b" in err.value.location.source_line()


def test_a_method_that_calls_another_method_is_refused_located():
    m = Model(W, B)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="method") as err:
        s2sad.grad(m.calls_another)(X)
    assert "self.loss" in err.value.location.source_line()


def test_an_object_with_call(backend):
    m = Model(W, B)
    np.testing.assert_allclose(s2sad.grad(m, backend=backend)(X), central_fd(m, (X,), 0), rtol=1e-6)


def test_an_object_passed_as_an_argument_is_data(backend):
    m = Model(W, B)
    g = s2sad.grad(model_loss, argnums=1, backend=backend)(m, X)
    np.testing.assert_allclose(g, central_fd(lambda x: model_loss(m, x), (X,), 0), rtol=1e-6)
    with pytest.raises(s2sad.NonDifferentiableInputError, match="Model object") as err:
        s2sad.grad(model_loss)(m, X)
    assert err.value.location is not None


def test_dataclass_methods_and_dataclass_gradients(backend):
    lin = Linear(W, B)
    np.testing.assert_allclose(s2sad.grad(lin.loss, backend=backend)(X), central_fd(lin.loss, (X,), 0), rtol=1e-6)
    g = s2sad.grad(Linear.loss, backend=backend)(lin, X)      # the dataclass itself differentiated
    assert isinstance(g, Linear)
    np.testing.assert_allclose(g.b, central_fd(lambda b: linear_loss(Linear(W, b), X), (B,), 0), rtol=1e-6)
    np.testing.assert_allclose(g.W, central_fd(lambda w: linear_loss(Linear(w, B), X), (W,), 0), rtol=1e-6)


def scaled(x, y, k=1.0, *, power=2.0):
    return np.sum(k * x ** power + y)


def test_functools_partial_binds_data(backend):
    p = functools.partial(scaled, k=3.0)
    np.testing.assert_allclose(s2sad.grad(p, backend=backend)(X, 1.0), 6.0 * X, rtol=1e-12)
    q = functools.partial(scaled, X)            # x bound: argnums counts after it
    assert s2sad.grad(q, backend=backend)(0.5) == pytest.approx(4.0)
    nested = functools.partial(functools.partial(scaled, power=3.0), k=2.0)
    np.testing.assert_allclose(s2sad.grad(nested, backend=backend)(X, 0.0), 6.0 * X ** 2, rtol=1e-12)
    m = Model(W, B)
    pm = functools.partial(m.loss)
    np.testing.assert_allclose(s2sad.grad(pm, backend=backend)(X), central_fd(m.loss, (X,), 0), rtol=1e-6)


def test_keyword_arguments_to_the_gradient_function(backend):
    g = s2sad.grad(scaled, backend=backend)
    np.testing.assert_allclose(g(X, 0.0, k=2.0, power=3.0), 6.0 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(g(y=1.0, x=X), 2.0 * X, rtol=1e-12)
    gk = s2sad.grad(scaled, argnums=2, backend=backend)
    assert gk(X, 0.0, k=2.0) == pytest.approx(float(np.sum(X ** 2)))
    m = Model(W, B)
    np.testing.assert_allclose(s2sad.grad(m.loss, backend=backend)(x=X), central_fd(m.loss, (X,), 0), rtol=1e-6)


def test_vjp_and_jvp_of_a_method(backend):
    m = Model(W, B)
    out, pull = s2sad.vjp(m.loss, X, backend=backend)
    assert out == pytest.approx(m.loss(X))
    (gx,) = pull(1.0)
    np.testing.assert_allclose(gx, central_fd(m.loss, (X,), 0), rtol=1e-6)
    value, dot = s2sad.jvp(m.loss, (X,), (np.ones(4),), backend=backend)
    assert dot == pytest.approx(float(np.sum(central_fd(m.loss, (X,), 0))), rel=1e-6)


def test_has_aux_of_a_method(backend):
    class WithAux:
        def __init__(self):
            self.W = W

        def loss(self, x):
            h = self.W @ x
            return np.sum(h ** 2), h
    obj = WithAux()
    g, h = s2sad.grad(obj.loss, has_aux=True, backend=backend)(X)
    np.testing.assert_allclose(h, W @ X)
    np.testing.assert_allclose(g, 2 * W.T @ (W @ X), rtol=1e-12)


def test_no_instance_is_kept_alive_by_s2sad():
    m = Model(W.copy(), B.copy())
    ref = weakref.ref(m)
    g = s2sad.grad(m.loss)
    g(X)
    s2sad.grad(m)(X)
    s2sad.vjp(m.loss, X)[1](1.0)
    s2sad.grad(functools.partial(model_loss, m), argnums=0)(X)
    del g, m
    gc.collect()
    assert ref() is None


METHOD_V1 = """\
import numpy as np

class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(self.w * x ** 3)
"""


def test_a_method_whose_file_changed_is_refused_as_stale(tmp_path, monkeypatch):
    import importlib
    import os
    import sys
    import uuid
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    name = f"s2sad_method_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(METHOD_V1)
    importlib.invalidate_caches()
    mod = importlib.import_module(name)
    try:
        m = mod.Model(2.0)
        path.write_text(METHOD_V1.replace("x ** 3", "x ** 2 + 0.0 * x"))     # edited, not reloaded
        st = os.stat(path)
        os.utime(path, (st.st_atime + 10, st.st_mtime + 10))
        with pytest.raises(s2sad.StaleSourceError):     # the text is not the code that runs
            s2sad.grad(m.loss)(X)
        mod = importlib.reload(mod)                     # runs the new text: differentiated
        m = mod.Model(2.0)
        np.testing.assert_allclose(s2sad.grad(m.loss)(X), 4.0 * X, rtol=1e-12)
    finally:
        sys.modules.pop(name, None)
