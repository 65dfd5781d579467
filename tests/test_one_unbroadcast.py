"""One unbroadcast (reduce.unbroadcast): generated adjoints, scans and vjp sum a
broadcast operand's gradient back to its shape with the same function, numpy's bits."""
import numpy as np
import pytest

import s2sad
from s2sad import array_rules, reduce, scans
from conftest import central_fd

T = [0.0]


def decaying(a, b):
    T[0] = T[0] * 0.5 + a * b
    return T[0]


def loss(x, w):
    return np.sum(s2sad.broadcast(decaying, x, w))


@pytest.fixture(autouse=True)
def _reset():
    T[0] = 0.0
    yield
    T[0] = 0.0


def test_the_helpers_and_the_scans_share_it():
    assert array_rules.HELPERS["unbroadcast"] is reduce.unbroadcast
    assert scans.unbroadcast is reduce.unbroadcast


@pytest.mark.parametrize("wshape", [(5,), (1, 5), (4, 1), ()])
def test_a_scans_broadcast_gradient_is_numpys_sum_of_the_full_one(backend, wshape):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5))
    w = rng.normal(size=wshape) if wshape else 0.75
    g = s2sad.grad(loss, argnums=1, backend=backend)(x, w)
    T[0] = 0.0
    full = s2sad.grad(loss, argnums=1, backend=backend)(x, np.broadcast_to(w, x.shape).copy())
    if wshape == ():
        assert g == pytest.approx(float(np.sum(full)), rel=1e-12)
        return
    lead = full.ndim - len(wshape)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(wshape) if n == 1)
    want = np.sum(full, axis=axes).reshape(wshape)
    assert g.shape == np.shape(w)
    np.testing.assert_array_equal(g, want)   # numpy's bits

    def f(wv):
        T[0] = 0.0
        return loss(x, wv)
    np.testing.assert_allclose(g, central_fd(f, [w], 0), rtol=1e-6, atol=1e-8)


def test_unbroadcast_shapes_and_kinds():
    g = np.arange(12.0).reshape(3, 4)
    assert reduce.unbroadcast(g, np.zeros((3, 4))) is g
    np.testing.assert_array_equal(reduce.unbroadcast(g, np.zeros(4)), g.sum(axis=0))
    np.testing.assert_array_equal(reduce.unbroadcast(g, np.zeros((3, 1))), g.sum(axis=1, keepdims=True))
    assert type(reduce.unbroadcast(g, 2.0)) is float and reduce.unbroadcast(g, 2.0) == g.sum()
    np.testing.assert_array_equal(reduce.unbroadcast(np.float64(2.5), np.zeros((2, 2), np.float32)),
                                  np.full((2, 2), 2.5, np.float32))
    assert reduce.unbroadcast(np.ones((2, 3)), np.zeros((2, 3), np.float32)).dtype == np.float64


def test_one_float_dtype_for_adjoints():
    # the helpers main grew (products, reductions, shapes, softmax, linalg) use reduce's
    import ast
    import pathlib
    root = pathlib.Path(reduce.__file__).parent
    defining = [str(p.relative_to(root)) for p in root.rglob("*.py")
                for n in ast.walk(ast.parse(p.read_text()))
                if isinstance(n, ast.FunctionDef) and n.name in ("float_dtype", "_float_dtype")]
    assert defining == ["reduce.py"]
