"""A loss of one element that is not 0-d ((1,), (1, 1)) is refused by grad, as JAX
refuses it ("Gradient only defined for scalar-output functions. Output had shape:
(1,)"): on every route (a fused map, an array program, the unrolled scalar path,
containers, has_aux, value_and_grad, hessian, hvp, jvp of grad), located at the return
statement, the message naming the shape and the hint saying to index or sum. Before
session 12 s2sad took it as the scalar it holds. vjp and jacobians still take it (an
output of any shape), and the 0-d version of each loss still differentiates."""
from collections import OrderedDict

import numpy as np
import pytest

import s2sad
from s2sad.errors import NonScalarLossError
from conftest import central_fd, line_of

X = np.array([0.3, -0.7, 1.2])


def fused_map(x):
    return np.sin(x) * 2.0


def keepdims(x):
    return np.sum(x ** 2, keepdims=True)


def wrapped(x):
    h = np.sin(x) @ np.cos(x)
    return np.array([h])


def reshaped(x):
    return (x @ x).reshape(1, 1)


def scalar_in_list(a):
    return np.array([a * a])


def from_dict(p):
    return np.sum(np.tanh(p["w"]) * p["s"], keepdims=True)


def with_aux(x):
    return np.sum(np.sin(x), keepdims=True), 3


CASES = [(fused_map, (np.array([0.4]),), (1,)), (fused_map, (np.array([[0.4]]),), (1, 1)),
         (keepdims, (X,), (1,)), (wrapped, (X,), (1,)), (reshaped, (X,), (1, 1)),
         (scalar_in_list, (1.5,), (1,)), (from_dict, ({"w": X, "s": 2.0},), (1,)),
         (from_dict, (OrderedDict([("w", X), ("s", 2.0)]),), (1,))]
IDS = [f"{f.__name__}{shape}" for f, _, shape in CASES]
ROUTES = {"grad": lambda f, a, b: s2sad.grad(f, backend=b)(*a),
          "value_and_grad": lambda f, a, b: s2sad.value_and_grad(f, backend=b)(*a),
          "hessian": lambda f, a, b: s2sad.hessian(f, backend=b)(*a),
          "hvp": lambda f, a, b: s2sad.hvp(f, a, a, backend=b),
          "jvp of grad": lambda f, a, b: s2sad.jvp(s2sad.grad(f, backend=b), a, a)}


def assert_refused_at_return(f, call, shape):
    with pytest.raises(NonScalarLossError) as info:
        call()
    e = info.value
    assert f"returns an array of shape {shape}, not a scalar loss" in e.message
    assert "index it" in e.hint and "np.sum" in e.hint
    assert e.location is not None and e.location.lineno == line_of(f, "return ")


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("f,args,shape", CASES, ids=IDS)
def test_a_one_element_loss_is_refused_at_its_return(backend, f, args, shape, route):
    # (Hessians of a container, refused at the def before session 13, are refused here too)
    for _ in range(2):      # the first call, then the warm one
        assert_refused_at_return(f, lambda: ROUTES[route](f, args, backend), shape)


def test_has_aux_is_refused_too(backend):
    for make in (s2sad.grad, s2sad.value_and_grad):
        assert_refused_at_return(with_aux, lambda: make(with_aux, has_aux=True, backend=backend)(X), (1,))


def test_a_warm_grad_then_a_one_element_argument(backend):
    """A fused map is a loss for a number; given a (1,) array after, it is refused."""
    g = s2sad.grad(fused_map, backend=backend)
    for _ in range(2):
        assert g(0.4) == pytest.approx(2.0 * np.cos(0.4), rel=1e-12)
    assert_refused_at_return(fused_map, lambda: g(np.array([0.4])), (1,))
    assert g(np.array(0.4)) == pytest.approx(2.0 * np.cos(0.4), rel=1e-12)   # 0-d is a scalar


def test_the_0d_losses_still_differentiate(backend):
    def summed(x):
        return np.sum(x ** 2)

    def indexed(x):
        return np.sum(x ** 2, keepdims=True)[0]

    for f in (summed, indexed):
        np.testing.assert_allclose(s2sad.grad(f, backend=backend)(X), central_fd(f, (X,), 0), rtol=1e-6)


def test_vjp_and_jacobians_take_outputs_of_any_shape(backend):
    out, pullback = s2sad.vjp(keepdims, X, backend=backend)
    assert out.shape == (1,)
    np.testing.assert_allclose(pullback(np.ones(1))[0], 2.0 * X, rtol=1e-12)
    J = s2sad.jacrev(keepdims, backend=backend)(X)
    assert J.shape == (1, 3)
    np.testing.assert_allclose(J[0], 2.0 * X, rtol=1e-12)


def test_dask_refuses_it():
    da = pytest.importorskip("dask.array")
    with pytest.raises(s2sad.S2SADError):
        s2sad.grad(keepdims)(da.from_array(np.linspace(-1.0, 1.0, 40), chunks=10))
