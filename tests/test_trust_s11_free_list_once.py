"""A global or closure list that an array program converts (`np.array(L)`) is converted
once a call: the plan's per-call test asks only that it is still a list, and the
conversion the generated code makes is checked (freedata.RealData around it), refusing a
list turned complex, long double or strings at the read, located. Before, the per-call
test converted the list a second time (np.asarray) to learn its dtype. A list read any
other way (`L[0]`, `sum(L)`, `np.array(L, dtype=...)`) keeps the per-call test: those
reads may raise or compute before a check could see the numbers."""
import numpy as np
import pytest

import s2sad
from s2sad import freedata
from s2sad.errors import FreeVariableError

L = [1.0, 2.0, 3.0, 4.0]
X = np.array([0.3, 0.7, 0.1, 0.2])


def converts(x):
    return np.sum(np.sin(x) * np.array(L) * x)


def converts_asarray(x):
    return np.sum(np.asarray(L) * x * x)


def map_converts(x):
    return np.tanh(x) * np.array(L)


def item_read(x):
    return np.sum(L[0] * x * x)


def with_dtype(x):
    return np.sum(np.array(L, dtype=np.float64) * x)


@pytest.fixture
def global_l():
    L[:] = [1.0, 2.0, 3.0, 4.0]
    yield
    L[:] = [1.0, 2.0, 3.0, 4.0]


def _count_conversions(monkeypatch) -> list:
    seen = []
    real = freedata.lossy_data

    def counting(value):
        seen.append(type(value))
        return real(value)
    monkeypatch.setattr(freedata, "lossy_data", counting)
    return seen


@pytest.mark.parametrize("fun", [converts, converts_asarray], ids=["array", "asarray"])
@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_a_warm_call_does_not_convert_the_list_twice(fun, backend, monkeypatch, global_l):
    g = s2sad.grad(fun, backend=backend)
    g(X)
    seen = _count_conversions(monkeypatch)
    for _ in range(3):
        g(X)
    assert list not in seen         # (before: two list conversions a call, the plan's test's)
    assert "real_data(np." in g.__s2sad__.source()


@pytest.mark.parametrize("fun", [item_read, with_dtype], ids=["item", "dtype"])
def test_other_reads_keep_the_per_call_test(fun, monkeypatch, global_l):
    g = s2sad.grad(fun)
    g(X)
    seen = _count_conversions(monkeypatch)
    g(X)
    assert list in seen
    L[0] = 1j
    with pytest.raises(FreeVariableError, match="'L' holds dtype complex128"):
        g(X)


@pytest.mark.parametrize("lossy", [1j, "a", None], ids=["complex", "string", "none"])
@pytest.mark.parametrize("route", ["grad", "value_and_grad", "jacrev", "jvp"])
def test_the_checked_conversion_refuses_at_the_read(route, lossy, global_l):
    fun = converts
    call = {
        "grad": s2sad.grad(fun),
        "value_and_grad": s2sad.value_and_grad(fun),
        "jacrev": s2sad.jacrev(map_converts),
        "jvp": lambda x: s2sad.jvp(fun, (x,), (x,)),
    }[route]
    for _ in range(3):
        call(X)
    L[1] = lossy
    with pytest.raises(FreeVariableError) as e:
        call(X)
    assert "'L' holds dtype" in str(e.value)
    assert e.value.location is not None and e.value.location.filename == __file__
    L[1] = 2.0
    call(X)                                 # real again: served again


def test_the_explanation_shows_the_users_text(global_l):
    text = str(s2sad.explain(converts))
    assert "np.array(L) ->" in text and "real_data" not in text


def test_numbers_that_change_still_give_the_new_gradient(global_l):
    g = s2sad.grad(converts)
    g(X)
    for new in ([3, -1.5, 0.0, 2.0], [True, 0.25, 1, 1], [np.float32(0.5), 4.0, 1.0, 1.0]):
        L[:] = new
        want = np.array(new, dtype=np.float64) * (np.cos(X) * X + np.sin(X))
        np.testing.assert_allclose(g(X), want, rtol=1e-6)
