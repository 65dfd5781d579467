"""numpy refusing the user's shapes inside an array program's generated derivative (a
product whose inner dimensions differ, operands that do not broadcast, an index past
the end) is a ShapeError located at the user's function that keeps numpy's message, on
grad's first call and on its hot path; it was numpy's raw ValueError from s2sad's
runtime (gemm.matmul). Other errors pass through unchanged."""
import numpy as np
import pytest

import s2sad
from s2sad.arguments import shape_refusal
from s2sad.errors import ShapeError

A = np.ones((5, 7)) * 0.1


def reads_a(x):
    h = A @ x
    return np.sum(np.tanh(h))


def two_products(W, x):
    return np.sum(np.tanh(W @ x))


def broadcasts(W, x, b):
    return np.sum(np.tanh(W @ x + b))


def _check(e, name):
    assert isinstance(e.value, ShapeError) and e.value.location is not None
    assert e.value.location.filename == __file__
    assert f"differentiating {name}" in str(e.value)
    assert isinstance(e.value.__cause__, ValueError)
    assert name in e.value.hint


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_arguments_whose_product_numpy_refuses(backend):
    g = s2sad.grad(two_products, backend=backend)
    with pytest.raises(ShapeError) as e:
        g(np.ones((5, 7)), np.ones(12))
    _check(e, "two_products")
    assert "core dimension" in str(e.value)
    # right shapes still give the right gradient, and the hot path refuses as the first call
    W, x = np.ones((5, 7)) * 0.2, np.linspace(0, 1, 7)
    want = np.outer(1 - np.tanh(W @ x) ** 2, x)
    for _ in range(3):
        np.testing.assert_allclose(g(W, x), want, rtol=1e-13)
    with pytest.raises(ShapeError) as e:
        g(np.ones((5, 7)), np.ones(12))
    _check(e, "two_products")


def test_a_global_changed_to_a_shape_the_product_refuses():
    global A
    g = s2sad.grad(reads_a)
    x = np.linspace(0, 1, 7)
    before = A
    try:
        for _ in range(3):
            g(x)                        # warm: the hot path answers
        A = np.ones((5, 12))
        with pytest.raises(ShapeError) as e:
            g(x)
        _check(e, "reads_a")
    finally:
        A = before
    np.testing.assert_allclose(g(x), A.T @ (1 - np.tanh(A @ x) ** 2), rtol=1e-13)


def test_operands_that_do_not_broadcast():
    vg = s2sad.value_and_grad(broadcasts, argnums=(0, 2))
    with pytest.raises(ShapeError) as e:
        vg(np.ones((5, 7)), np.ones(7), np.ones(3))
    assert e.value.location is not None and e.value.location.filename == __file__
    assert "while differentiating broadcasts" in str(e.value)


def test_other_errors_are_not_taken_for_shapes():
    assert shape_refusal(two_products, ValueError("math domain error")) is None
    located = ShapeError("already located", s2sad.errors.SourceLocation(__file__, 1, 0))
    assert shape_refusal(two_products, located) is None
    refused = shape_refusal(two_products, IndexError("index 12 is out of bounds for axis 0 with size 7"))
    assert isinstance(refused, ShapeError) and "two_products" in str(refused)


def products(W, x):
    return np.tanh(W @ x)


@pytest.mark.parametrize("route", ["jvp", "vjp", "jvp of grad", "jacfwd", "jacrev", "hessian"])
def test_every_route_locates_it(route):
    W, x = np.ones((5, 7)), np.ones(12)
    calls = {
        "jvp": lambda: s2sad.jvp(products, (W, x), (W, x)),
        "vjp": lambda: s2sad.vjp(products, W, x),
        "jvp of grad": lambda: s2sad.jvp(s2sad.grad(two_products), (W, x), (W, x)),
        "jacfwd": lambda: s2sad.jacfwd(products, argnums=1)(W, x),
        "jacrev": lambda: s2sad.jacrev(products, argnums=1)(W, x),
        "hessian": lambda: s2sad.hessian(two_products, argnums=1)(W, x),
    }
    with pytest.raises(ShapeError) as e:
        calls[route]()
    name = "two_products" if route in ("jvp of grad", "hessian") else "products"
    _check(e, name)
