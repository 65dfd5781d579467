"""jvp and vjp called wrongly (session 8, trust): a pullback given a cotangent of another
shape raised a raw ValueError from numpy's broadcasting, None a raw TypeError, and a (1, 3)
cotangent for a (3,) output was taken; jvp given an array where its tuple of primals goes
read the array's rows as primals (a raw TypeError). Each is now a located refusal; a
number for an array output is refused too, as JAX refuses it (session 12: it broadcast)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError


def f(x):
    return np.sin(x) * x[::-1]


def two(x, y):
    return x * y, np.sum(x)


def summed(x):
    return np.sum(np.tanh(x) ** 2)


X = np.array([0.3, -0.7, 1.2])


@pytest.mark.parametrize("ct", [np.ones(2), None, np.ones((1, 3)), np.array([1j, 0, 0]), "abc"],
                         ids=["short", "None", "wider", "complex", "str"])
def test_a_cotangent_that_is_not_the_outputs_is_refused(ct):
    _, pullback = s2sad.vjp(f, X)
    with pytest.raises(ShapeError, match="cotangent given to the pullback of f") as info:
        pullback(ct)
    assert "test_trust_pullbacks.py:" in str(info.value) and "shape (3,)" in str(info.value)


def test_cotangents_that_are_the_outputs_are_taken():
    out, pullback = s2sad.vjp(f, X)
    J = s2sad.jacrev(f)(X)
    for ct in (np.array([1.0, -2.0, 0.5]), [1.0, -2.0, 0.5], np.array([1, -2, 0]), np.ones(3, np.float32)):
        (got,) = pullback(ct)
        np.testing.assert_allclose(got, np.asarray(ct, dtype=float) @ J, rtol=1e-12)
    with pytest.raises(ShapeError, match="shape \\(\\); the output it pulls back has shape \\(3,\\)"):
        pullback(1.0)     # a number for a (3,) output: JAX refuses it (it broadcast before session 12)
    _, pb = s2sad.vjp(summed, X)
    (g,) = pb(2.0)
    np.testing.assert_allclose(g, 2 * s2sad.grad(summed)(X), rtol=1e-12)
    with pytest.raises(ShapeError):
        pb(np.ones(3))
    _, pb2 = s2sad.vjp(two, X, X)
    with pytest.raises(ShapeError, match="has shape \\(2,\\)"):
        pb2((np.ones(2), 1.0))


def test_jvp_wants_tuples():
    for primals, tangents in ((X, X), ((X,), X), (X, (X,))):
        with pytest.raises(s2sad.S2SADError, match="tuples or lists") as info:
            s2sad.jvp(f, primals, tangents)
        assert "test_trust_pullbacks.py:" in str(info.value)
    out, dot = s2sad.jvp(f, [X], [np.ones(3)])
    np.testing.assert_allclose(dot, s2sad.jacfwd(f)(X) @ np.ones(3), rtol=1e-12)


@pytest.mark.parametrize("argnums", [1.0, "x", None, True, (0, 1.5)], ids=repr)
def test_argnums_that_are_not_ints_are_refused(argnums):
    """They raised raw TypeErrors from s2sad's insides (True was taken as 1)."""
    for make in (s2sad.grad, s2sad.value_and_grad, s2sad.hessian):
        with pytest.raises(s2sad.S2SADError, match="argnums") as info:
            make(two_args, argnums=argnums)(X, X)
        assert "test_trust_pullbacks.py:" in str(info.value)


def two_args(x, y):
    return np.sum(x * y ** 2)


def test_empty_argnums_give_nothing():
    assert s2sad.grad(two_args, argnums=())(X, X) == ()
    assert s2sad.jacfwd(f, argnums=())(X) == ()
    assert s2sad.hessian(two_args, argnums=())(X, X) == ()
