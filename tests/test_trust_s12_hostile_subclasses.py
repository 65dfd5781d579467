"""ndarray subclasses that change what numpy computes (session 12, hostile pass).

A user subclass overriding `__array_ufunc__`, `__getitem__` or an operator makes numpy
compute what the subclass says; s2sad's plan computes numpy's plain arithmetic. Before,
value_and_grad of sum(sin(x) * x[1:2]) on a subclass tripling np.sin returned the plain
value 0.81 where the function gives 2.42, and its gradient: silent wrong numbers. Now
every entry point refuses such an argument with a located NonDifferentiableInputError
naming what the subclass overrides; a subclass that only adds attributes and methods
(or np.memmap) is read as its values, each answer checked against central differences.
"""
import numpy as np
import pytest

import s2sad
from conftest import central_fd


class TripledSine(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        r = getattr(ufunc, method)(*[np.asarray(i) for i in inputs], **kwargs)
        return r * 3 if ufunc is np.sin else r


class DoubledItems(np.ndarray):
    def __getitem__(self, key):
        return np.asarray(self)[key] * 2


class ShiftedProduct(np.ndarray):
    def __mul__(self, other):
        return np.multiply(np.asarray(self), other) + 1


class Tagged(np.ndarray):      # attributes and a method of its own: numpy's numbers
    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", None)

    def describe(self):
        return "tagged"


def loss(x):
    return np.sum(np.sin(x) * x[1:2])


X = np.linspace(0.1, 1.0, 5)
T = np.ones(5)
ENTRIES = {
    "grad": lambda x: s2sad.grad(loss)(x),
    "value_and_grad": lambda x: s2sad.value_and_grad(loss)(x),
    "jvp": lambda x: s2sad.jvp(loss, (x,), (T,)),
    "vjp": lambda x: s2sad.vjp(loss, x)[0],
    "hessian": lambda x: s2sad.hessian(loss)(x),
    "jacfwd": lambda x: s2sad.jacfwd(loss)(x),
    "hvp": lambda x: s2sad.hvp(loss, (x,), (T,)),
    "as data": lambda x: s2sad.grad(lambda w, d: w * loss(d))(1.0, x),
    "in a dict": lambda x: s2sad.grad(lambda p: loss(p["x"]))({"x": x}),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("cls", [TripledSine, DoubledItems, ShiftedProduct])
def test_a_subclass_that_changes_numpys_numbers_is_refused(cls, entry):
    x = X.copy().view(cls)
    with pytest.raises(s2sad.NonDifferentiableInputError) as e:
        ENTRIES[entry](x)
    assert cls.__name__ in str(e.value) and "np.asarray" in e.value.hint
    assert e.value.location is not None and e.value.location.lineno


def test_the_refusal_names_what_is_overridden():
    with pytest.raises(s2sad.NonDifferentiableInputError, match="__array_ufunc__"):
        s2sad.grad(loss)(X.view(TripledSine))
    with pytest.raises(s2sad.NonDifferentiableInputError, match="__getitem__"):
        s2sad.grad(loss)(X.view(DoubledItems))


@pytest.mark.parametrize("make", ["tagged", "memmap"])
def test_a_subclass_that_keeps_numpys_numbers_is_its_values(make, tmp_path):
    if make == "tagged":
        x = X.copy().view(Tagged)
    else:
        x = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=X.shape)
        x[:] = X
    value, g = s2sad.value_and_grad(loss)(x)
    assert value == pytest.approx(loss(X), rel=1e-14)
    np.testing.assert_allclose(g, central_fd(loss, [X.copy()], 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2sad.hessian(loss)(x), s2sad.hessian(loss)(X.copy()), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(x), X)
