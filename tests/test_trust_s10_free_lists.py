"""A global or closure *list* the differentiated function reads as data, whose elements
turn complex, long double or strings after the plan was made (its first call, or warm
calls on the hot / unrolled paths), is refused where the function reads it, on every
route and both backends: before, the plan cache only checked that it was still a list,
and the call dropped the imaginary part (numpy's ComplexWarning), rounded the long
double, or raised numpy's raw ValueError. A list made ragged is a located ShapeError; a
list whose numbers change (still real) gives the new right derivative; a list of
real numbers keeps its plan (checked per call)."""
import warnings

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad import plans
from s2sad.errors import FreeVariableError, HigherOrderNotSupportedError, S2SADError

L = [1.0, 2.0]


def loss_reads_list(x):
    return np.sum(np.sin(x) * np.array(L) * x)


def map_reads_list(x):
    return np.tanh(x) * np.array(L)


X = np.array([0.3, 0.7])
ROUTES = {
    "grad": lambda b: s2sad.grad(loss_reads_list, backend=b),
    "value_and_grad": lambda b: s2sad.value_and_grad(loss_reads_list, backend=b),
    "jvp": lambda b: lambda x: s2sad.jvp(map_reads_list, (x,), (x,), backend=b),
    "vjp": lambda b: lambda x: s2sad.vjp(map_reads_list, x, backend=b)[1](x),
    "jacfwd": lambda b: s2sad.jacfwd(map_reads_list, backend=b),
    "jacrev": lambda b: s2sad.jacrev(map_reads_list, backend=b),
    "hessian": lambda b: s2sad.hessian(loss_reads_list, backend=b),
}
LOSSY = {"complex": 1j, "string": "a", "longdouble": np.longdouble(1) / 3}


@pytest.fixture
def global_l():
    global L
    L = [1.0, 2.0]
    yield
    L = [1.0, 2.0]


@pytest.mark.parametrize("warm", [0, 3], ids=["first", "warm"])
@pytest.mark.parametrize("kind", sorted(LOSSY))
@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_list_element_turned_lossy_is_refused_at_its_read(route, backend, kind, warm, global_l):
    if kind == "longdouble" and np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("long double is double here")
    call = ROUTES[route](backend)
    for _ in range(warm):
        call(X)
    L[0] = LOSSY[kind]                      # the same list object, one element changed
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (no ComplexWarning: refused before any cast)
        with pytest.raises((FreeVariableError, HigherOrderNotSupportedError)) as e:
            call(X)
    assert "'L' holds dtype" in str(e.value)
    if route != "hessian":                  # (hessian's refusal names the derivative it cannot take)
        fun = loss_reads_list if route in ("grad", "value_and_grad") else map_reads_list
        assert type(e.value) is FreeVariableError
        assert e.value.location.filename == __file__
        assert e.value.location.lineno == line_of(fun, "return np.")


@pytest.mark.parametrize("route", ["grad", "jacfwd", "vjp"])
def test_a_list_rebound_to_a_complex_list_after_warm_calls(route, global_l):
    global L
    call = ROUTES[route]("llvm")
    for _ in range(3):
        call(X)
    L = [2.0, 1j]
    with pytest.raises(FreeVariableError, match="'L' holds dtype complex128"):
        call(X)
    L = [1.0, 2.0]
    call(X)                                 # real again: served again


@pytest.mark.parametrize("route", ["grad", "jacrev"])
def test_a_list_made_ragged_after_warm_calls_is_a_located_error(route, global_l):
    call = ROUTES[route]("llvm")
    for _ in range(3):
        call(X)
    L[0] = [1.0]
    with pytest.raises(S2SADError) as e:
        call(X)
    assert e.value.location.filename == __file__


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_a_list_whose_numbers_change_gives_the_new_derivative(backend, global_l):
    g = s2sad.grad(loss_reads_list, backend=backend)
    for _ in range(3):
        g(X)
    for new in ([3, -1.5], [True, 0.25], [np.float32(0.5), 4.0]):
        L[:] = new
        lv = np.array(new, dtype=np.float64)
        want = lv * (np.cos(X) * X + np.sin(X))          # d/dx sum(sin(x) * l * x)
        np.testing.assert_allclose(g(X), want, rtol=1e-7 if isinstance(new[0], np.float32) else 1e-12)


def test_a_closure_list_turned_complex_is_refused():
    data = [1.0, 2.0]

    def loss(x):
        return np.sum(x * np.array(data))

    g = s2sad.grad(loss)
    for _ in range(3):
        np.testing.assert_allclose(g(X), [1.0, 2.0])
    data[1] = 2 + 1j
    with pytest.raises(FreeVariableError, match="'data' holds dtype complex128"):
        g(X)


def test_a_real_list_keeps_its_plan(global_l):
    """(Checked per call, planned once: new values, new closures, the same plan.)"""
    want = np.array(L) * (np.cos(X) * X + np.sin(X))
    np.testing.assert_allclose(s2sad.grad(loss_reads_list)(X), want, rtol=1e-12)
    before = plans.PLANS.made
    for k in range(3):
        L[1] = float(k)
        want = np.array(L) * (np.cos(X) * X + np.sin(X))
        np.testing.assert_allclose(s2sad.grad(loss_reads_list)(X), want, rtol=1e-12)
    assert plans.PLANS.made == before
