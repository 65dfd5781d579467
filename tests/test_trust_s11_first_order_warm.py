"""jacfwd / jacrev of a grad check first what the grad refuses (first_order.py: a map's
grad is no Hessian). The check is decided once per plan (FirstOrderCheck): a warm call
whose plan needs no check (an array program, a fused kernel whose sum is the loss)
looks no plan up; before, every warm call looked the plan up twice (1.7-3.9 us of a
warm call). The decision follows the plan: a swapped code or a new plan checks again."""
import numpy as np
import pytest

import s2sad
from s2sad import plans
from s2sad.errors import S2SADError


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def fused(x):
    return np.sum(np.sin(x) * x)


def a_map(x):
    return np.sin(x) * x


X = np.linspace(0.1, 0.9, 6)


def _finds(monkeypatch) -> list:
    seen = []
    real = plans.PLANS.find

    def counting(*a, **k):
        seen.append(a[0])
        return real(*a, **k)
    monkeypatch.setattr(plans.PLANS, "find", counting)
    return seen


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("fun", [rosen, fused], ids=["array", "fused"])
def test_a_warm_call_looks_no_plan_up(fun, jac, monkeypatch):
    J = getattr(s2sad, jac)(s2sad.grad(fun))
    want = J(X)
    seen = _finds(monkeypatch)
    for _ in range(3):
        np.testing.assert_array_equal(J(X), want)
    assert seen == []


def test_the_check_follows_a_swapped_code():
    def f(x):
        return np.sum(np.sin(x) * x)
    J = s2sad.jacfwd(s2sad.grad(f))
    for _ in range(3):
        np.testing.assert_allclose(J(X), np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-12)
    original = f.__code__
    f.__code__ = a_map.__code__
    try:
        with pytest.raises(S2SADError, match="not a scalar"):
            J(X)
    finally:
        f.__code__ = original
    np.testing.assert_allclose(J(X), np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-12)


def test_a_maps_grad_is_refused_warm_or_not():
    J = s2sad.jacfwd(s2sad.grad(a_map))
    for _ in range(2):
        with pytest.raises(S2SADError, match="not a scalar"):
            J(X)
