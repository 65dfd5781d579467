"""vjp's pullback takes a cotangent of its output's shape only, as JAX does: a (1, 3) or
a number for a (3,) output, a (1,) for a scalar output, and a bool, complex or None
cotangent are refused, located at the function's def, the hint saying the shape
expected (a number for a (3,) output was broadcast before session 12: JAX refuses it).
Ints and floats of another precision are real numbers and are taken (numpy's reading).
Every route: a fused map, a fused sum, an array program, a container output, has_aux,
dask. The adjoints taken are checked against the Jacobian (jacrev)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError
from conftest import line_of

X = np.array([0.3, -0.7, 1.2])


def fmap(x):
    return np.sin(x) * 2.0


def fsum(x):
    return np.sum(np.tanh(x) ** 2)


def program(x):
    return np.sin(x) @ np.cos(x) * x


def program_sum(x):
    return np.sin(x) @ np.cos(x[::-1])


def with_aux(x):
    return np.sin(x) * x, 7


def container_out(x):
    return {"a": np.sin(x), "s": np.sum(x ** 2)}


VECTOR = [fmap, program]
SCALAR = [fsum, program_sum]
WRONG_FOR_VECTOR = {"(1, 3)": np.ones((1, 3)), "number": 1.0, "0-d": np.float64(1.0), "(3, 1)": np.ones((3, 1)),
                    "bool": np.ones(3, bool), "complex": np.ones(3, complex), "None": None}
WRONG_FOR_SCALAR = {"(1,)": np.ones(1), "(1, 1)": np.ones((1, 1)), "(3,)": np.ones(3), "bool": True,
                    "complex": 1 + 0j, "None": None}


def refused(f, pullback, ct, shape):
    with pytest.raises(ShapeError) as info:
        pullback(ct)
    e = info.value
    assert e.location is not None and e.location.lineno == line_of(f, f"def {f.__name__}(")
    assert f"the output it pulls back has shape {shape}" in e.message
    assert (f"shape {shape}" if shape != () else "a float number") in e.hint


@pytest.mark.parametrize("ct", list(WRONG_FOR_VECTOR), ids=list(WRONG_FOR_VECTOR))
@pytest.mark.parametrize("f", VECTOR, ids=lambda f: f.__name__)
def test_a_vector_outputs_pullback_refuses_another_shape_or_dtype(backend, f, ct):
    _, pullback = s2sad.vjp(f, X, backend=backend)
    refused(f, pullback, WRONG_FOR_VECTOR[ct], (3,))


@pytest.mark.parametrize("ct", list(WRONG_FOR_SCALAR), ids=list(WRONG_FOR_SCALAR))
@pytest.mark.parametrize("f", SCALAR, ids=lambda f: f.__name__)
def test_a_scalar_outputs_pullback_refuses_another_shape_or_dtype(backend, f, ct):
    _, pullback = s2sad.vjp(f, X, backend=backend)
    refused(f, pullback, WRONG_FOR_SCALAR[ct], ())


@pytest.mark.parametrize("f", VECTOR, ids=lambda f: f.__name__)
def test_real_cotangents_of_the_outputs_shape_are_taken(backend, f):
    _, pullback = s2sad.vjp(f, X, backend=backend)
    J = s2sad.jacrev(f)(X)
    for ct in (np.array([1.0, -2.0, 0.5]), [1.0, -2.0, 0.5], np.array([1, -2, 0]), np.array([1, 2, 3], np.float32)):
        (got,) = pullback(ct)
        np.testing.assert_allclose(got, np.asarray(ct, dtype=float) @ J, rtol=1e-6)


@pytest.mark.parametrize("f", SCALAR, ids=lambda f: f.__name__)
def test_scalar_cotangents_are_taken(backend, f):
    _, pullback = s2sad.vjp(f, X, backend=backend)
    g = s2sad.grad(f)(X)
    for ct in (2.0, np.float32(2.0), np.array(2.0), 2):
        np.testing.assert_allclose(pullback(ct)[0], 2.0 * g, rtol=1e-6)


def test_has_aux_and_container_outputs():
    _, pullback, aux = s2sad.vjp(with_aux, X, has_aux=True)
    assert aux == 7
    refused(with_aux, pullback, 1.0, (3,))
    refused(with_aux, pullback, np.ones((1, 3)), (3,))
    _, pullback = s2sad.vjp(container_out, X)
    with pytest.raises(ShapeError, match="shape"):
        pullback({"a": 1.0, "s": 1.0})
    with pytest.raises(ShapeError, match="shape"):
        pullback({"a": np.ones(3), "s": np.ones(1)})
    with pytest.raises(ShapeError, match="complex"):
        pullback({"a": np.ones(3, complex), "s": 1.0})
    (got,) = pullback({"a": np.ones(3), "s": 1.0})
    np.testing.assert_allclose(got, np.cos(X) + 2.0 * X, rtol=1e-12)


def test_dask_pullback():
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.linspace(-1.0, 1.0, 40), chunks=10)
    _, pullback = s2sad.vjp(fsum, x)
    for ct in (np.ones(1), np.ones(40), 1 + 0j, None):
        refused(fsum, pullback, ct, ())
    (got,) = pullback(2.0)
    want = 2.0 * s2sad.grad(fsum)(np.linspace(-1.0, 1.0, 40))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
