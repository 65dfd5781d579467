"""An elementwise kernel whose operands do not broadcast names what the user wrote (the
expression `x @ A`, the variable `h`), not the generated program's names (`_1`, `h_2`),
and is located at the user's statement; a fused function's kernel (the whole loss one
kernel) is located at its return on grad (it was an unlocated ShapeError) and under a
Hessian (it was located in s2sad's own generated wrapper, `<s2sad: derivative ...>`)."""

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad.arguments import users_names
from s2sad.errors import ShapeError

A = np.ones((3, 3)) * 0.5


def product_then_kernel(x, y):
    return np.sum(np.sin(x @ A) * y)


def map_product_then_kernel(x, y):
    return np.sin(x @ A) * y


def second_version(x, y):
    h = x @ A
    h = h @ A
    return np.sum(np.sin(h) * y)


def after_a_loop(x, y):
    h = x @ A
    for i in range(2):
        h = np.tanh(h @ A)
    return np.sum(np.sin(h) * y)


def all_one_kernel(x, y):
    z = np.sin(x)
    w = z * y
    return np.sum(np.tanh(w))


X3, Y4 = np.ones(3), np.ones(4)


def _located(e, fun, text):
    err = e.value
    assert isinstance(err, ShapeError) and err.location is not None, err
    assert err.location.filename == __file__
    assert err.location.lineno == line_of(fun, text), str(err)


@pytest.mark.parametrize("route", ["grad", "value_and_grad", "jvp", "vjp", "jacrev"])
def test_a_temporary_is_named_by_its_expression(route):
    fun = map_product_then_kernel if route in ("jvp", "vjp", "jacrev") else product_then_kernel
    calls = {"grad": lambda: s2sad.grad(fun)(X3, Y4),
             "value_and_grad": lambda: s2sad.value_and_grad(fun)(X3, Y4),
             "jvp": lambda: s2sad.jvp(fun, (X3, Y4), (X3, Y4)),
             "vjp": lambda: s2sad.vjp(fun, X3, Y4),
             "jacrev": lambda: s2sad.jacrev(fun)(X3, Y4)}
    with pytest.raises(ShapeError) as e:
        calls[route]()
    msg = str(e.value)
    assert "(x @ A: (3,), y: (4,))" in msg, msg
    assert "_1" not in msg
    _located(e, fun, "return np.sin(x @ A) * y" if fun is map_product_then_kernel else "return np.sum(")


@pytest.mark.parametrize("fun", [second_version, after_a_loop], ids=lambda f: f.__name__)
def test_a_new_version_of_a_variable_is_named_as_the_user_named_it(fun):
    with pytest.raises(ShapeError) as e:
        s2sad.grad(fun)(X3, Y4)
    msg = str(e.value)
    assert "(h: (3,), y: (4,))" in msg, msg
    assert "h_2" not in msg
    _located(e, fun, "return np.sum(np.sin(h) * y)")
    # right shapes: the gradient is still right (python backend as an independent check)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-1, 1, 3)
    np.testing.assert_allclose(s2sad.grad(fun)(x, y), s2sad.grad(fun, backend="python")(x, y), rtol=1e-12)


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_one_kernel_grad_is_located_first_call_and_hot(backend):
    g = s2sad.grad(all_one_kernel, backend=backend)
    with pytest.raises(ShapeError) as e:
        g(X3, Y4)
    _located(e, all_one_kernel, "return np.sum(np.tanh(w))")
    assert "(x: (3,), y: (4,))" in str(e.value) and "all_one_kernel" in str(e.value)
    x, y = np.linspace(0.1, 0.9, 4), np.linspace(-1, 1, 4)
    want = np.cos(x) * y * (1 - np.tanh(np.sin(x) * y) ** 2)
    for _ in range(4):
        np.testing.assert_allclose(g(x, y), want, rtol=1e-13)
    with pytest.raises(ShapeError) as e:
        g(X3, Y4)
    _located(e, all_one_kernel, "return np.sum(np.tanh(w))")


def test_one_kernel_under_a_hessian_is_located_in_the_users_file():
    with pytest.raises(ShapeError) as e:
        s2sad.hessian(all_one_kernel)(X3, Y4)
    assert not e.value.location.filename.startswith("<"), str(e.value)
    _located(e, all_one_kernel, "return np.sum(np.tanh(w))")


def test_users_names_replaces_whole_names_only():
    msg = "do not broadcast together (_1: (3,), _12: (4,), y_1: (2,))"
    assert users_names(msg, {"_1": "x @ A", "y_1": "y"}) == \
        "do not broadcast together (x @ A: (3,), _12: (4,), y: (2,))"


def map_one_kernel(x, y):
    w = np.sin(x) * y
    return np.tanh(w)


@pytest.mark.parametrize("route", ["jvp", "vjp"])
def test_one_kernel_map_is_located_at_its_return(route):
    """jvp / vjp run a fused kernel with no generated program around it: the kernel is
    the function's return (it was located at the def). (jacfwd / jacrev of it take the
    diagonal path, where numpy refuses first: located at the def, as before.)"""
    calls = {"jvp": lambda: s2sad.jvp(map_one_kernel, (X3, Y4), (X3, Y4)),
             "vjp": lambda: s2sad.vjp(map_one_kernel, X3, Y4)}
    with pytest.raises(ShapeError) as e:
        calls[route]()
    _located(e, map_one_kernel, "return np.tanh(w)")
    assert "(x: (3,), y: (4,))" in str(e.value)
