"""Free data (a global or closure array or list the function reads) whose numbers s2sad
would change is refused where the function reads it: a complex array lost its imaginary
part (numpy only warned: ComplexWarning) and long double its extra precision, on every
route (grad, jvp, vjp, jacfwd, jacrev and their unrolled small paths, hessian), also
when a global becomes complex after warm calls. Real data (float32, int, bool) still
gives the right derivative."""
import warnings

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad.errors import FreeVariableError, HigherOrderNotSupportedError
from s2sad.freedata import lossy_data

A = np.array([[1.0, 2.0], [3.0, 4.0]])
L = [1.0, 2.0]


def loss_reads_a(x):
    return np.sum(np.sin(A @ x) * x)


def map_reads_a(x):
    return np.tanh(A @ x) * x


def elementwise_reads_a(x):
    return np.sum(np.sin(x) * A[0])


def loss_reads_list(x):
    return np.sum(x * np.array(L))


X = np.array([0.3, 0.7])
ROUTES = {
    "grad": lambda: s2sad.grad(loss_reads_a)(X),
    "value_and_grad": lambda: s2sad.value_and_grad(loss_reads_a)(X),
    "grad python": lambda: s2sad.grad(loss_reads_a, backend="python")(X),
    "jvp": lambda: s2sad.jvp(map_reads_a, (X,), (X,)),
    "vjp": lambda: s2sad.vjp(map_reads_a, X),
    "jacfwd": lambda: s2sad.jacfwd(map_reads_a)(X),
    "jacrev": lambda: s2sad.jacrev(map_reads_a)(X),
    "elementwise": lambda: s2sad.grad(elementwise_reads_a)(X),
}


@pytest.fixture
def global_a():
    global A
    before = A
    yield
    A = before


@pytest.mark.parametrize("dtype", [np.complex128, np.longdouble], ids=["complex", "longdouble"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_lossy_global_array_is_refused_at_its_read(route, dtype, global_a):
    global A
    A = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=dtype)
    if dtype == np.longdouble and np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("long double is double here")
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (no ComplexWarning: refused before any cast)
        with pytest.raises(FreeVariableError) as e:
            ROUTES[route]()
    err = e.value
    assert err.location.filename == __file__
    fun = {"jvp": map_reads_a, "vjp": map_reads_a, "jacfwd": map_reads_a, "jacrev": map_reads_a,
           "elementwise": elementwise_reads_a}.get(route, loss_reads_a)
    assert err.location.lineno == line_of(fun, "return np.")
    assert "'A' holds dtype" in str(err) and str(np.dtype(dtype)) in str(err)


def test_hessian_of_a_complex_global_is_refused(global_a):
    global A
    A = A * (1 + 1j)
    with pytest.raises(HigherOrderNotSupportedError) as e:
        s2sad.hessian(loss_reads_a)(X)
    assert "'A' holds dtype complex128" in str(e.value)


@pytest.mark.parametrize("wrapper,fun", [(s2sad.grad, loss_reads_a), (s2sad.jacfwd, map_reads_a),
                                         (s2sad.jacrev, map_reads_a), (s2sad.hessian, loss_reads_a)],
                         ids=["grad", "jacfwd", "jacrev", "hessian"])
def test_a_global_made_complex_after_warm_calls(wrapper, fun, global_a):
    global A
    w = wrapper(fun)
    for _ in range(3):
        w(X)                                # warm: the hot / unrolled paths answer
    A = A * (1 + 1j)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((FreeVariableError, HigherOrderNotSupportedError)) as e:
            w(X)
    assert "complex128" in str(e.value)


def test_a_complex_list_is_refused():
    global L
    before = L
    L = [1j, 2.0]
    try:
        with pytest.raises(FreeVariableError) as e:
            s2sad.grad(loss_reads_list)(X)
        assert "'L' holds dtype complex128" in str(e.value)
    finally:
        L = before


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_real_global_data_still_differentiates(dtype, global_a):
    global A
    A = np.array([[1, 2], [3, 0]]).astype(dtype)
    Af = A.astype(np.float64)
    want = np.cos(Af @ X) * X @ Af + np.sin(Af @ X)      # d/dx sum(sin(A x) * x)
    np.testing.assert_allclose(s2sad.grad(loss_reads_a)(X), want, rtol=1e-6 if dtype == np.float32 else 1e-12)
    h = np.tanh(Af @ X)
    jac = (1 - h ** 2)[:, None] * Af * X[:, None] + np.diag(h)
    np.testing.assert_allclose(s2sad.jacfwd(map_reads_a)(X), jac, rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_lossy_data_reasons():
    assert lossy_data(np.zeros(2)) is None and lossy_data([1, 2.0]) is None
    assert lossy_data(np.zeros(2, np.float32)) is None and lossy_data(np.zeros(2, bool)) is None
    assert "imaginary" in lossy_data(np.zeros(2, complex))
    assert "not numbers" in lossy_data(np.array(["a"]))
    assert lossy_data([[1.0], [2.0, 3.0]]) is None      # ragged: refused where it is read
    assert lossy_data(3j) is None                       # (a number: the frontend's own refusal)
